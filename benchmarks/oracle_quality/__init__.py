"""MemoryOracle quality: labelled scenarios, an in-process fake of the oracle's tools, and a runner.

``python -m benchmarks.oracle_quality`` runs every provider that needs no model (``judge`` and the
``lexical`` baseline) on every scenario under ``scenarios/`` and prints precision, recall, F1 and
false warnings per clean and per trap patch, overall, per class and for the held-out split.
"""
