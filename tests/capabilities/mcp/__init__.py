"""Tests of :mod:`capabilities.mcp`."""
