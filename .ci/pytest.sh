#!/usr/bin/env bash
# Runs the whole suite. pytest exits 5 when it collected no test: that is a
# failure here, never a silent pass.
#
# The store suite also runs against PostgreSQL (tests/store/conftest.py): a throwaway server is
# started here (.ci/postgres.sh, installing PostgreSQL from Debian's packages when missing), its URL
# exported as ROUNDTABLE_TEST_PG_URL, and the server stopped and removed when pytest ends.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -z "${ROUNDTABLE_TEST_PG_URL:-}" ]; then
  pg_dir=$(mktemp -d "${TMPDIR:-/tmp}/roundtable-pg.XXXXXX")
  trap 'bash .ci/postgres.sh stop "$pg_dir"' EXIT
  ROUNDTABLE_TEST_PG_URL=$(bash .ci/postgres.sh start "$pg_dir") || {
    echo "could not start the throwaway PostgreSQL server" >&2
    exit 1
  }
  export ROUNDTABLE_TEST_PG_URL
fi
.venv/bin/python -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
