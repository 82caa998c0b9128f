"""Benchmarks: scripts that print figures beside a baseline measured in the same run.

Run one with ``python -m benchmarks.<name>``; ``python -m benchmarks`` lists them. They are not
tests: this machine is shared and noisy, so every figure is reported as a ratio to a baseline
taken in the same process, right next to it.
"""
