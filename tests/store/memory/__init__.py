"""Tests of :mod:`store.memory`."""
