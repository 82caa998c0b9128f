"""Tests of :mod:`store.db`."""
