"""Tests of :mod:`store.files`."""
