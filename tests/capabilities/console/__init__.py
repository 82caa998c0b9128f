"""Tests of :mod:`capabilities.console`."""
