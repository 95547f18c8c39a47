#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# kv.sh <gort|go> [-procs N] - a Redis-protocol server under
# `redis-benchmark -t set,get -n 200000 -c 50 -q`, once without and once
# with pipelining (-P 16).
#
#   gort: $BUILD_DIR/examples/kv -procs N (examples/kv.c)
#   go:   redis-server --save '' --appendonly no (the reference for this
#         row is Redis itself, not a Go program; -procs does not apply)
#
# Starts the server on a free port on 127.0.0.1, runs both redis-benchmark
# commands, stops the server and prints (procs is the -procs given, so that
# both sides land on one row)
#   RESULT name=kv procs=N metric=set_requests_per_s value=... unit=req/s
#   RESULT name=kv procs=N metric=get_requests_per_s value=... unit=req/s
#   RESULT name=kv procs=N metric=set_requests_per_s_P16 value=... unit=req/s
#   RESULT name=kv procs=N metric=get_requests_per_s_P16 value=... unit=req/s
#   RESULT name=kv procs=N metric=cpu_us_per_req value=... unit=us
#   RESULT name=kv procs=N metric=cpu_us_per_req_P16 value=... unit=us
# (the server's CPU time over the SET and GET runs, all its threads, from
# /proc/PID/stat in clock ticks, divided by their 2 x KV_REQUESTS).
# Environment: BUILD_DIR (default build), KV_REQUESTS (200000).
set -euo pipefail
BENCH_NAME=kv
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/netlib.sh
. "$ROOT/bench/netlib.sh"
BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
REQS=${KV_REQUESTS:-200000}

side=${1:-}
shift || true
PROCS=2
parse_procs "$@"
command -v redis-benchmark >/dev/null ||
  { echo "kv: redis-benchmark is not installed (apt-get install redis-tools)" >&2; exit 1; }
port=$(free_port)
case "$side" in
  gort)
    bin="$BUILD_DIR/examples/kv"
    [[ -x "$bin" ]] || { echo "kv: no server binary $bin" >&2; exit 1; }
    cmd=("$bin" -addr "127.0.0.1:$port" -procs "$PROCS")
    ;;
  go)
    command -v redis-server >/dev/null ||
      { echo "kv: redis-server is not installed (apt-get install redis-server)" >&2; exit 1; }
    cmd=(redis-server --save '' --appendonly no --bind 127.0.0.1 --port "$port"
      --daemonize no --logfile '' --loglevel warning)
    ;;
  *) echo "usage: kv.sh <gort|go> [-procs N]" >&2; exit 2 ;;
esac

"${cmd[@]}" &
pid=$!
trap 'stop_server $pid' EXIT
wait_port "$port" "$pid"

# The server's CPU time so far (all its threads) in clock ticks:
# utime + stime, fields 14 and 15 of /proc/PID/stat.
cpu_ticks() {
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat"
}
HZ=$(getconf CLK_TCK)

# bench <metric suffix> [redis-benchmark args...]: requests a second of
# each command, and the server's CPU time per request over both.
bench() {
  local suffix=$1 out c0 c1
  shift
  c0=$(cpu_ticks)
  out=$(redis-benchmark -h 127.0.0.1 -p "$port" -t set,get -n "$REQS" -c 50 -q "$@" | tr '\r' '\n')
  c1=$(cpu_ticks)
  printf '%s\n' "$out" | grep -E '^(SET|GET):' >&2 || true
  printf '%s\n' "$out" | awk -v procs="$PROCS" -v suf="$suffix" \
    -v ticks=$((c1 - c0)) -v hz="$HZ" -v reqs=$((2 * REQS)) '
    $1 == "SET:" && $3 == "requests" { set = $2 }
    $1 == "GET:" && $3 == "requests" { get = $2 }
    END {
      if (set == "" || get == "") { print "kv: no figures in redis-benchmark output" > "/dev/stderr"; exit 1 }
      printf "RESULT name=kv procs=%d metric=set_requests_per_s%s value=%.2f unit=req/s\n", procs, suf, set
      printf "RESULT name=kv procs=%d metric=get_requests_per_s%s value=%.2f unit=req/s\n", procs, suf, get
      printf "RESULT name=kv procs=%d metric=cpu_us_per_req%s value=%.3f unit=us\n", procs, suf, ticks / hz * 1e6 / reqs
    }'
}
res1=$(bench "")
res2=$(bench "_P16" -P 16)
stop_server "$pid"
trap - EXIT
printf '%s\n%s\n' "$res1" "$res2"
