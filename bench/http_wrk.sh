#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# http_wrk.sh <gort|go> [-procs N] - an HTTP/1.1 hello-world server under
# `wrk -t2 -c64 -d5s --latency`.
#
#   gort: $BUILD_DIR/examples/http -procs N (examples/http.c)
#   go:   $BUILD_DIR/bench/go/http_wrk -procs N (bench/go/http_wrk, net/http)
#
# Starts the server on a free port on 127.0.0.1, waits for it to listen,
# runs wrk once against http://127.0.0.1:PORT/, stops the server and prints
#   RESULT name=http_wrk procs=N metric=requests_per_s value=... unit=req/s
#   RESULT name=http_wrk procs=N metric=latency_p99 value=... unit=us
# Environment: BUILD_DIR (default build), WRK_CONNS (64), WRK_SECONDS (5).
set -euo pipefail
BENCH_NAME=http_wrk
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/netlib.sh
. "$ROOT/bench/netlib.sh"
BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
CONNS=${WRK_CONNS:-64}
SECS=${WRK_SECONDS:-5}

side=${1:-}
shift || true
PROCS=2
parse_procs "$@"
case "$side" in
  gort) bin="$BUILD_DIR/examples/http" ;;
  go) bin="$BUILD_DIR/bench/go/http_wrk" ;;
  *) echo "usage: http_wrk.sh <gort|go> [-procs N]" >&2; exit 2 ;;
esac
[[ -x "$bin" ]] || { echo "http_wrk: no server binary $bin" >&2; exit 1; }
command -v wrk >/dev/null || { echo "http_wrk: wrk is not installed (apt-get install wrk)" >&2; exit 1; }

port=$(free_port)
"$bin" -addr "127.0.0.1:$port" -procs "$PROCS" &
pid=$!
trap 'stop_server $pid' EXIT
wait_port "$port" "$pid"
out=$(wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "http://127.0.0.1:$port/")
printf '%s\n' "$out"
stop_server "$pid"
trap - EXIT
printf '%s\n' "$out" | awk -v procs="$PROCS" '
  function us(s,   v) {
    v = s + 0
    if (s ~ /us$/) return v
    if (s ~ /ms$/) return v * 1000
    if (s ~ /m$/) return v * 60e6
    if (s ~ /s$/) return v * 1e6
    return v
  }
  /^Requests\/sec:/ { rps = $2 }
  $1 == "99%" { p99 = us($2) }
  /Non-2xx or 3xx responses|Socket errors/ { print "http_wrk: wrk: " $0 > "/dev/stderr"; bad = 1 }
  END {
    if (rps == "" || p99 == "") { print "http_wrk: no figures in wrk output" > "/dev/stderr"; exit 1 }
    printf "RESULT name=http_wrk procs=%d metric=requests_per_s value=%.2f unit=req/s\n", procs, rps
    printf "RESULT name=http_wrk procs=%d metric=latency_p99 value=%.2f unit=us\n", procs, p99
    if (bad) exit 1
  }'
