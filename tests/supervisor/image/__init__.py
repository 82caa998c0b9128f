"""Tests of :mod:`supervisor.image`."""
