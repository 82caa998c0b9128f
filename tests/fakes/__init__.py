"""Fakes for injecting faults: never the only proof of a behaviour."""
