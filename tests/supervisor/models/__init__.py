"""Tests of :mod:`supervisor.models`."""
