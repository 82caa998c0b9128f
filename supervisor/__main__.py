"""``python -m supervisor`` is the ``roundtable`` command."""

from supervisor.cli import run

run()
