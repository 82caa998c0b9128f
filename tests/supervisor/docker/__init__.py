"""Tests of :mod:`supervisor.docker`."""
