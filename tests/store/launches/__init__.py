"""Tests of :mod:`store.launches`."""
