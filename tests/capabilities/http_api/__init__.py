"""Tests of :mod:`capabilities.http_api`."""
