"""``python -m supervisor`` is the ``roundtable`` command."""

from supervisor.cli._main import run

run()
