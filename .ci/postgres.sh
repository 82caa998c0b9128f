#!/usr/bin/env bash
# A throwaway PostgreSQL server for the test suite's PostgreSQL runs.
#
#   .ci/postgres.sh start DIR   install PostgreSQL from Debian's packages when missing, create a
#                               cluster in DIR (initdb), start it on a free loopback port and a Unix
#                               socket in DIR, and print its URL (password auth on loopback; the
#                               password is random per server). Idempotent: a running server in DIR
#                               is reused and its URL printed again.
#   .ci/postgres.sh stop DIR    stop the server (fast shutdown) and remove DIR.
#
# PostgreSQL refuses to run as root: as root the cluster belongs to the `postgres` user the Debian
# package creates; as anyone else, to the caller.
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}

pg_bindir() {
  local dir
  for dir in "/usr/lib/postgresql/$PG_MAJOR/bin" /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

install_postgres() {
  if pg_bindir >/dev/null; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "PostgreSQL server binaries are missing and only root can install them (apt-get install postgresql)" >&2
    return 1
  fi
  echo "installing PostgreSQL from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  # The Debian package creates a default cluster and starts it; the suite uses its own.
  apt-get install -y -qq --no-install-recommends postgresql postgresql-contrib >&2 ||
    apt-get install -y -qq --no-install-recommends postgresql >&2
  pg_bindir >/dev/null
}

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
  local dir=$1 bin port password
  install_postgres
  bin=$(pg_bindir)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/url" ] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    cat "$dir/url"
    return 0
  fi
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
  fi
  chmod 0700 "$dir"
  password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  port=$(free_port)
  printf '%s\n' "$password" >"$dir/pwfile"
  chmod 0600 "$dir/pwfile"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir/pwfile"
  fi
  # The superuser is `roundtable`, with a password; local socket connections need it too.
  as_owner "$bin/initdb" -D "$dir/data" -U roundtable --pwfile="$dir/pwfile" \
    --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    return 1
  }
  rm -f "$dir/pwfile"
  # A test server: durability is the kernel's (fsync off), nothing listens past loopback.
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    start >/dev/null || {
    cat "$dir/server.log" >&2
    return 1
  }
  PGPASSWORD=$password psql -q -h 127.0.0.1 -p "$port" -U roundtable -d postgres -c "CREATE DATABASE roundtable" >/dev/null
  printf 'postgresql://roundtable:%s@127.0.0.1:%s/roundtable\n' "$password" "$port" >"$dir/url"
  cat "$dir/url"
}

stop() {
  local dir=$1 bin
  [ -d "$dir" ] || return 0
  if bin=$(pg_bindir) && [ -d "$dir/data" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) start "${2:?usage: $0 start DIR}" ;;
  stop) stop "${2:?usage: $0 stop DIR}" ;;
  install) install_postgres ;;
  *)
    echo "usage: $0 start DIR | stop DIR | install" >&2
    exit 2
    ;;
esac
