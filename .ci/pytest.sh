#!/usr/bin/env bash
# Runs the whole suite. pytest exits 5 when it collected no test: that is a
# failure here, never a silent pass.
set -uo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
