"""Tests of :mod:`supervisor.cli`."""
