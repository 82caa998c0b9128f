"""Tests of :mod:`store.access`."""
