#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fanout.sh - many clients of a real server through unmodified C libraries
# (docs/hooks.md): redis_fanout (hiredis on goroutines through gort-hook,
# the same code on pthreads, hiredis's asynchronous API on libevent, and
# hiredis's reader and writer on a hand-written epoll loop: the floor)
# against a redis-server it starts, and pg_fanout (libpq on goroutines
# and on pthreads) against a PostgreSQL server it creates in a temporary
# directory (as the user postgres when run as root: PostgreSQL refuses
# root).  The modes run in turn, RUNS times (default 5); it prints every
# RESULT line, then each figure's median and its ratio to the pthreads'.
#
#   bench/fanout.sh [redis|pg|all]     (BUILD_DIR=build-bench, default build)
#
# Needs redis-server and PostgreSQL's initdb/pg_ctl (Debian: redis-server,
# postgresql); a part whose server is missing is skipped with a message.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
RUNS=${RUNS:-5}
CLIENTS=${CLIENTS:-100}
what=${1:-all}
BENCH_NAME=fanout
# shellcheck source=bench/netlib.sh
. "$ROOT/bench/netlib.sh"
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do stop_server "$p"; done
  if [ -n "${PGCTL:-}" ] && [ -d "$tmp/pg" ]; then
    as_pg "$PGCTL" -D "$tmp/pg" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
results=$tmp/results
: >"$results"

# as_pg CMD...: CMD as the user postgres when root, else as is.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

run_modes() { # run_modes PROGRAM ARGS... ; modes in $MODES
  local prog=$1 r m
  shift
  for ((r = 0; r < RUNS; r++)); do
    for m in $MODES; do
      "$BUILD_DIR/bench/$prog" -mode "$m" -clients "$CLIENTS" "$@" | tee -a "$results"
    done
  done
}

if [ "$what" = redis ] || [ "$what" = all ]; then
  if command -v redis-server >/dev/null && [ -x "$BUILD_DIR/bench/redis_fanout" ]; then
    port=$(free_port)
    redis-server --port "$port" --save "" --appendonly no --bind 127.0.0.1 >/dev/null &
    pids+=($!)
    wait_port "$port" "${pids[-1]}"
    MODES="gort threads libevent epoll" run_modes redis_fanout -addr "127.0.0.1:$port" -n 200000
  else
    echo "fanout: redis part skipped: no redis-server or no $BUILD_DIR/bench/redis_fanout" >&2
  fi
fi

if [ "$what" = pg ] || [ "$what" = all ]; then
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$bindir" ] && [ -x "$BUILD_DIR/bench/pg_fanout" ]; then
    PGCTL=$bindir/pg_ctl
    mkdir -p "$tmp/pg" "$tmp/sock"
    [ "$(id -u)" = 0 ] && chown postgres "$tmp" "$tmp/pg" "$tmp/sock"
    chmod 755 "$tmp"
    as_pg "$bindir/initdb" -D "$tmp/pg" -A trust -U postgres >/dev/null
    port=$(free_port)
    as_pg "$PGCTL" -D "$tmp/pg" -l "$tmp/sock/log" -w \
      -o "-p $port -k $tmp/sock -c listen_addresses='' -c max_connections=300" start >/dev/null
    MODES="gort threads" run_modes pg_fanout \
      -conn "host=$tmp/sock port=$port user=postgres dbname=postgres" -n 100000
  else
    echo "fanout: pg part skipped: no PostgreSQL (initdb, pg_ctl) or no $BUILD_DIR/bench/pg_fanout" >&2
  fi
fi

# Medians, and each figure's ratio to the pthreads' (threads mode).
python3 - "$results" <<'PY'
import re, statistics, sys
vals = {}
for line in open(sys.argv[1]):
    m = re.match(r"RESULT name=(\S+) procs=\S+ metric=(\S+) value=(\S+)", line)
    if m:
        vals.setdefault((m[1], m[2]), []).append(float(m[3]))
med = {k: statistics.median(v) for k, v in vals.items()}
for (name, metric), v in sorted(med.items()):
    base = metric.rsplit("_", 1)[0]
    peer = med.get((name, base + "_threads"))
    ratio = f"  {v / peer:.2f}x the pthreads'" if peer and not metric.endswith("_threads") else ""
    print(f"{name:13} {metric:30} median {v:12.2f}{ratio}")
PY
