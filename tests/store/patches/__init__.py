"""Tests of :mod:`store.patches`."""
