"""Tests of :mod:`store.work`."""
