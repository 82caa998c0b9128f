"""Tests of :mod:`supervisor.launch`."""
