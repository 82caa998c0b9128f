"""Tests of :mod:`capabilities.serving`."""
