#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# load.sh [kv] [http] [echo] - the servers' CPU time per request at fixed
# request rates, their latency there, and their cost with 10,000 idle
# connections: gort's example servers against their peers.
#
#   kv    build/examples/kv            vs redis-server --save '' --appendonly no
#   http  build/examples/http          vs nginx (2 workers, `return 200`)
#                                      and Go net/http (bench/go/http_wrk)
#   echo  build/examples/echo          vs a Go echo server (bench/go/echo)
#
# Every server runs on a free port on 127.0.0.1 (gort's and Go's with
# -procs 2) and is driven by build/bench/loadgen (bench/loadgen.c): 50
# connections sharing each rate of LOAD_RATES in an open loop (0 is
# saturation, a closed loop), a warm-up, then a window of LOAD_SECONDS
# over which loadgen reads the server's CPU time (all its threads; for
# nginx the master and both workers).  Then a fresh server holds
# LOAD_IDLE_CONNS idle connections (each has made one request) and its
# CPU time is measured over LOAD_IDLE_SECONDS.  The servers of a group run
# in turn, gort first (gort, peer, gort, peer, ...), LOAD_RUNS times each.
#
# Before the servers, a control checks the CPU accounting: a sleeping
# process must show about 0 ms of CPU a second, a spinning one about
# 1,000 (less when the machine is busy).
#
# Output: per run, the log of loadgen and the server in
# $BUILD_DIR/bench/load/logs/; every figure in $BUILD_DIR/bench/load/raw.tsv;
# then, for each server, the median of its runs as
#   RESULT name=load_<group> procs=2 metric=<metric> value=<v> unit=<u> server=<s>
# and for each pair the ratio of the medians as
#   RESULT name=load_<group> procs=2 metric=<metric>_ratio value=<r> unit=x server=gort/<peer>
# with metrics cpu_us_per_req_r<rate>, latency_p50_r<rate>,
# latency_p99_r<rate>, achieved_rps_r<rate> (r<rate> is rsat for
# saturation), idle_cpu_ms_per_s and idle_rss_mb; and a table of medians
# (min..max) and ratios, also written to $BUILD_DIR/bench/load/results.md.
# Exit status 1 when any run failed (a wrong reply, a server that did not
# start, a timeout): the failures are listed at the end.
#
# Environment:
#   LOAD_RUNS=3              runs per server
#   LOAD_RATES="1000 5000 20000 0"   requests a second; 0 is saturation
#   LOAD_SECONDS=4           the measured window at each rate
#   LOAD_WARMUP=1            seconds of load before each window
#   LOAD_CONNS=50            connections sharing each rate
#   LOAD_IDLE_CONNS=10000    idle connections (0: no idle measurement)
#   LOAD_IDLE_SECONDS=10     the idle window
#   LOAD_PROCS=2             -procs (GOMAXPROCS) of gort's and Go's servers
#   LOAD_CLIENT_PROCS=1      -procs of loadgen
#   LOAD_GORTDEBUG=          GORTDEBUG for gort's servers only, e.g.
#                            netpollspin=0 (docs/benchmarks.md says what
#                            the poller's spin costs at partial load)
#   BUILD_DIR=build          the CMake build directory
#   NO_BUILD=1               use the binaries already built
#
# Needs redis-server, nginx and go (golang-go); a group whose peer is
# missing is skipped with a note.  Client and server share the machine's
# CPUs: see docs/benchmarks.md, "CPU per request at fixed load".
set -euo pipefail
# shellcheck disable=SC2034 # (netlib.sh reads it)
BENCH_NAME=load
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/netlib.sh
. "$ROOT/bench/netlib.sh"
cd "$ROOT"
BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
RUNS=${LOAD_RUNS:-3}
RATES=${LOAD_RATES:-1000 5000 20000 0}
WINDOW=${LOAD_SECONDS:-4}
WARMUP=${LOAD_WARMUP:-1}
CONNS=${LOAD_CONNS:-50}
IDLE_CONNS=${LOAD_IDLE_CONNS:-10000}
IDLE_SECONDS=${LOAD_IDLE_SECONDS:-10}
PROCS=${LOAD_PROCS:-2}
CLIENT_PROCS=${LOAD_CLIENT_PROCS:-1}
SERVER_GORTDEBUG=${LOAD_GORTDEBUG:-}
NO_BUILD=${NO_BUILD:-0}
OUT="$BUILD_DIR/bench/load"
LOADGEN="$BUILD_DIR/bench/loadgen"

die() { printf 'load.sh: %s\n' "$*" >&2; exit 1; }
note() { printf 'load.sh: %s\n' "$*" >&2; }

posint() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
posint "$RUNS" || die "LOAD_RUNS must be a positive integer, not '$RUNS'"
posint "$CONNS" || die "LOAD_CONNS must be a positive integer, not '$CONNS'"
posint "$PROCS" || die "LOAD_PROCS must be a positive integer, not '$PROCS'"
posint "$CLIENT_PROCS" || die "LOAD_CLIENT_PROCS must be a positive integer"
[[ "$IDLE_CONNS" =~ ^[0-9]+$ ]] || die "LOAD_IDLE_CONNS must be an integer"
for v in "$WINDOW" "$WARMUP" "$IDLE_SECONDS"; do
  [[ "$v" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "bad number of seconds '$v'"
done
for r in $RATES; do
  [[ "$r" =~ ^[0-9]+$ ]] || die "LOAD_RATES holds '$r', not a whole rate"
done
[[ -n "${RATES// /}" ]] || die "LOAD_RATES is empty"

# ---------------------------------------------------------------------------
# The groups: the gort server first, then its peers.
# ---------------------------------------------------------------------------
declare -A SIDES=([kv]="gort redis" [http]="gort nginx go" [echo]="gort go")
declare -A PROTO=([kv]=resp [http]=http [echo]=echo)
ALL_GROUPS=(kv http echo)
if (($#)); then
  GROUPS_RUN=("$@")
  for g in "${GROUPS_RUN[@]}"; do
    [[ -n "${SIDES[$g]+set}" ]] || { note "unknown group $g (known: ${ALL_GROUPS[*]})"; exit 2; }
  done
else
  GROUPS_RUN=("${ALL_GROUPS[@]}")
fi

# ---------------------------------------------------------------------------
# Build: gort's servers and loadgen (as bench/run.sh builds), the Go peers.
# ---------------------------------------------------------------------------
HAVE_GO=0
command -v go >/dev/null 2>&1 && HAVE_GO=1
if [[ "$NO_BUILD" != 1 ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null ||
    die "CMake configure failed"
  cmake --build "$BUILD_DIR" -j2 --target bench_load >/dev/null ||
    die "building loadgen and the example servers failed"
  if ((HAVE_GO)); then
    mkdir -p "$BUILD_DIR/bench/go" "$BUILD_DIR/go-cache" "$BUILD_DIR/go-path"
    for name in http_wrk echo; do
      # Offline, whatever the user's Go settings (as bench/run.sh does).
      (cd "bench/go/$name" &&
        GOFLAGS=-mod=mod GOTOOLCHAIN=local GOCACHE="$BUILD_DIR/go-cache" \
          GOPATH="$BUILD_DIR/go-path" go build -o "$BUILD_DIR/bench/go/$name" .) ||
        die "building the Go peer bench/go/$name failed"
    done
  fi
fi
[[ -x "$LOADGEN" ]] || die "no $LOADGEN (build it, or drop NO_BUILD=1)"

# have_side <group> <side>: true when that server can run here.
have_side() {
  case $2 in
    gort) [[ -x "$BUILD_DIR/examples/$1" ]] ;;
    redis) command -v redis-server >/dev/null 2>&1 ;;
    nginx) command -v nginx >/dev/null 2>&1 ;;
    go)
      case $1 in
        http) [[ -x "$BUILD_DIR/bench/go/http_wrk" ]] ;;
        echo) [[ -x "$BUILD_DIR/bench/go/echo" ]] ;;
      esac
      ;;
  esac
}

# ---------------------------------------------------------------------------
# Descriptors: every server and loadgen hold LOAD_IDLE_CONNS sockets.
# ---------------------------------------------------------------------------
WANT_FDS=$((IDLE_CONNS + 4096))
cur=$(ulimit -Sn)
if [[ "$cur" != unlimited ]] && ((cur < WANT_FDS)); then
  hard=$(ulimit -Hn)
  if [[ "$hard" != unlimited ]] && ((hard < WANT_FDS)); then
    ulimit -Hn "$WANT_FDS" 2>/dev/null ||
      die "the hard limit on descriptors is $hard, below the $WANT_FDS that $IDLE_CONNS idle connections need (lower LOAD_IDLE_CONNS, or run as root)"
  fi
  ulimit -Sn "$WANT_FDS"
fi

# ---------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------
TMP=$(mktemp -d)
SRV_PID=
# shellcheck disable=SC2317 # (called by the EXIT trap)
cleanup() {
  [[ -n "$SRV_PID" ]] && stop_server "$SRV_PID"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# nginx_conf <port>: write $TMP/nginx/nginx.conf, listening on port.
nginx_conf() {
  local dir="$TMP/nginx" user=
  mkdir -p "$dir"
  # Workers run as the current user: a master started by root would
  # otherwise switch them to nobody.
  ((EUID == 0)) && user="user $(id -un) $(id -gn);"
  cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 2;
worker_rlimit_nofile $((2 * WANT_FDS));
pid $dir/nginx.pid;
error_log $dir/error.log warn;
$user
events {
    worker_connections $WANT_FDS;
}
http {
    access_log off;
    client_body_temp_path $dir/client_body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    keepalive_timeout 300s;
    keepalive_requests 1000000000;
    server {
        listen 127.0.0.1:$1;
        location / {
            default_type text/plain;
            return 200 "Hello, World!\n";
        }
    }
}
EOF
}

# start_server <group> <side> <port> <log>: start the server in the
# background; sets SRV_PID (the process to stop) and SRV_PIDS (the
# processes whose CPU time counts, comma-separated).
start_server() {
  local group=$1 side=$2 port=$3 log=$4 cmd i
  case $side in
    gort)
      cmd=("$BUILD_DIR/examples/$group" -addr "127.0.0.1:$port" -procs "$PROCS")
      [[ -n "$SERVER_GORTDEBUG" ]] && cmd=(env "GORTDEBUG=$SERVER_GORTDEBUG" "${cmd[@]}")
      ;;
    redis)
      cmd=(redis-server --save '' --appendonly no --bind 127.0.0.1 --port "$port"
        --daemonize no --logfile '' --loglevel warning
        --maxclients $((IDLE_CONNS + 1024)))
      ;;
    nginx)
      nginx_conf "$port"
      cmd=(nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/error.log")
      ;;
    go)
      local bin=$group
      [[ $group == http ]] && bin=http_wrk
      cmd=("$BUILD_DIR/bench/go/$bin" -addr "127.0.0.1:$port" -procs "$PROCS")
      ;;
  esac
  "${cmd[@]}" >>"$log" 2>&1 &
  SRV_PID=$!
  wait_port "$port" "$SRV_PID" || return 1
  SRV_PIDS=$SRV_PID
  if [[ $side == nginx ]]; then
    # The workers: the master's children, once both are up.
    local kids=
    for ((i = 0; i < 200; i++)); do
      kids=$(ps -o pid= --ppid "$SRV_PID" | tr -s ' \n' ' ')
      [[ $(wc -w <<<"$kids") -ge 2 ]] && break
      sleep 0.05
    done
    [[ $(wc -w <<<"$kids") -ge 2 ]] || { note "nginx workers did not start"; return 1; }
    for i in $kids; do SRV_PIDS+=",$i"; done
  fi
}

stop() {
  stop_server "$SRV_PID"
  SRV_PID=
}

# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------
mkdir -p "$OUT/logs"
RAW="$OUT/raw.tsv"
FAILS="$OUT/failures.txt"
: >"$RAW"
: >"$FAILS"
CPU_OFF="$OUT/cpu_mismatch.txt"
: >"$CPU_OFF"
WINDOWS=0
declare -A L

# parse_load <text>: the fields of its last LOAD line into L.
parse_load() {
  local line kv
  L=()
  line=$(grep '^LOAD ' <<<"$1" | tail -n 1) || return 1
  for kv in ${line#LOAD }; do
    L[${kv%%=*}]=${kv#*=}
  done
}

# check_cpu <what>: count the window just parsed, and note it when the
# servers' CPU time by clock and by /proc/PID/stat ticks disagree.
check_cpu() {
  WINDOWS=$((WINDOWS + 1))
  if [[ "${L[cpu_check]:-}" != ok ]]; then
    printf '%s: %s ms by the CPU-time clocks, %s ms by /proc/PID/stat\n' \
      "$1" "${L[server_cpu_ms]:-?}" "${L[server_cpu_ms_stat]:-?}" >>"$CPU_OFF"
  fi
}

# record <group> <side> <run> <metric> <unit> <value>
record() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RAW"
  printf 'RESULT name=load_%s procs=%s metric=%s value=%s unit=%s server=%s\n' \
    "$1" "$PROCS" "$4" "$6" "$5" "$2" >>"$LOG"
}

fail() {
  printf '%s %s run %s: %s; log %s\n' "$1" "$2" "$3" "$4" "$LOG" >>"$FAILS"
  note "FAILED: $1 $2 run $3: $4"
}

# run_loadgen <timeout> <args...>: loadgen's stdout in OUTPUT, its stderr
# into the log; its exit status.
run_loadgen() {
  local limit=$1 rc=0
  shift
  OUTPUT=$(timeout -k 5 "$limit" "$LOADGEN" "$@" 2>>"$LOG") || rc=$?
  printf '%s\n' "$OUTPUT" >>"$LOG"
  return $rc
}

# rate_runs <group> <side> <run>: one server, every rate.
rate_runs() {
  local group=$1 side=$2 run=$3 port rate tag rc limit
  port=$(free_port)
  if ! start_server "$group" "$side" "$port" "$LOG"; then
    fail "$group" "$side" "$run" "the server did not start"
    [[ -n "$SRV_PID" ]] && stop
    return 0
  fi
  limit=$(awk -v w="$WINDOW" -v u="$WARMUP" 'BEGIN { print int(w + u + 60) }')
  for rate in $RATES; do
    tag=r$rate
    ((rate == 0)) && tag=rsat
    printf -- '--- %s %s run %s: rate %s (%s s into the runs)\n' "$group" "$side" \
      "$run" "$rate" "$(($(date +%s) - START))" >>"$LOG"
    rc=0
    run_loadgen "$limit" -proto "${PROTO[$group]}" -addr "127.0.0.1:$port" \
      -conns "$CONNS" -rate "$rate" -seconds "$WINDOW" -warmup "$WARMUP" \
      -procs "$CLIENT_PROCS" -pids "$SRV_PIDS" || rc=$?
    if ((rc != 0)) || ! parse_load "$OUTPUT"; then
      fail "$group" "$side" "$run" "loadgen at rate $rate: exit status $rc"
      continue
    fi
    check_cpu "$group $side run $run, rate $rate"
    record "$group" "$side" "$run" "cpu_us_per_req_$tag" us "${L[server_cpu_us_per_req]}"
    record "$group" "$side" "$run" "latency_p50_$tag" us "${L[p50_us]}"
    record "$group" "$side" "$run" "latency_p99_$tag" us "${L[p99_us]}"
    record "$group" "$side" "$run" "achieved_rps_$tag" req/s "${L[achieved_rps]}"
    record "$group" "$side" "$run" "client_cpu_us_per_req_$tag" us "${L[client_cpu_us_per_req]}"
    # -1: the kernel gives no run-queue times (no schedstat files).
    [[ "${L[server_runq_wait_ms_per_s]:--1}" != -* ]] &&
      record "$group" "$side" "$run" "runq_wait_ms_per_s_$tag" ms "${L[server_runq_wait_ms_per_s]}"
    ((rate > 0)) && record "$group" "$side" "$run" "send_late_p99_$tag" us "${L[late_p99_us]}"
  done
  stop
}

# idle_run <group> <side> <run>: a fresh server holding idle connections.
idle_run() {
  local group=$1 side=$2 run=$3 port rc=0 limit
  ((IDLE_CONNS > 0)) || return 0
  port=$(free_port)
  if ! start_server "$group" "$side" "$port" "$LOG"; then
    fail "$group" "$side" "$run" "the server did not start (idle)"
    [[ -n "$SRV_PID" ]] && stop
    return 0
  fi
  printf -- '--- %s %s run %s: %s idle connections (%s s into the runs)\n' \
    "$group" "$side" "$run" "$IDLE_CONNS" "$(($(date +%s) - START))" >>"$LOG"
  limit=$(awk -v w="$IDLE_SECONDS" 'BEGIN { print int(w + 120) }')
  run_loadgen "$limit" -proto "${PROTO[$group]}" -addr "127.0.0.1:$port" \
    -conns "$IDLE_CONNS" -idle -seconds "$IDLE_SECONDS" -warmup 1 \
    -procs "$CLIENT_PROCS" -pids "$SRV_PIDS" || rc=$?
  if ((rc != 0)) || ! parse_load "$OUTPUT"; then
    fail "$group" "$side" "$run" "loadgen holding $IDLE_CONNS idle connections: exit status $rc"
  else
    check_cpu "$group $side run $run, idle"
    record "$group" "$side" "$run" idle_cpu_ms_per_s ms "${L[server_cpu_ms_per_s]}"
    record "$group" "$side" "$run" idle_rss_mb MB \
      "$(awk -v k="${L[server_rss_kb]}" 'BEGIN { printf "%.1f", k / 1024 }')"
  fi
  stop
}

# control: the CPU accounting of a sleeping and of a spinning process.
control() {
  local pid rc=0
  LOG="$OUT/logs/control.log"
  : >"$LOG"
  sleep 60 &
  pid=$!
  run_loadgen 30 -proto none -pids "$pid" -seconds 2 -warmup 0.5 || rc=$?
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if ((rc != 0)) || ! parse_load "$OUTPUT"; then
    fail control sleep 1 "loadgen could not measure a sleeping process"
  else
    CONTROL_SLEEP=$(printf "%.3f" "${L[server_cpu_ms_per_s]}")
    record control sleep 1 cpu_ms_per_s ms "$CONTROL_SLEEP"
  fi
  bash -c 'while :; do :; done' &
  pid=$!
  rc=0
  run_loadgen 30 -proto none -pids "$pid" -seconds 2 -warmup 0.5 || rc=$?
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if ((rc != 0)) || ! parse_load "$OUTPUT"; then
    fail control spin 1 "loadgen could not measure a spinning process"
  else
    CONTROL_SPIN=$(printf "%.0f" "${L[server_cpu_ms_per_s]}")
    record control spin 1 cpu_ms_per_s ms "$CONTROL_SPIN"
  fi
  note "control: a sleeping process ${CONTROL_SLEEP:-?} ms of CPU a second, a spinning one ${CONTROL_SPIN:-?}"
  if awk -v s="${CONTROL_SLEEP:-99}" 'BEGIN { exit !(s > 1) }'; then
    fail control sleep 1 "a sleeping process shows ${CONTROL_SLEEP:-?} ms of CPU a second (want about 0)"
  fi
}

control
START=$(date +%s)
for group in "${GROUPS_RUN[@]}"; do
  sides=()
  for side in ${SIDES[$group]}; do
    if have_side "$group" "$side"; then
      sides+=("$side")
    else
      note "no $side server for $group here: skipped (see the header of this script)"
    fi
  done
  for ((run = 1; run <= RUNS; run++)); do
    for side in "${sides[@]}"; do
      note "$group $side run $run/$RUNS ($(($(date +%s) - START)) s so far)"
      LOG="$OUT/logs/$group-$side-$run.log"
      : >"$LOG"
      rate_runs "$group" "$side" "$run"
      idle_run "$group" "$side" "$run"
    done
  done
done

# ---------------------------------------------------------------------------
# Medians, ratios, RESULT lines and the table
# ---------------------------------------------------------------------------
STATS="$OUT/stats.tsv"
# Per (group, side, metric): unit, median, min, max, runs.  mawk-compatible.
awk -F '\t' '
  function stats(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) {
      t = a[i] + 0
      for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]
      a[j + 1] = t
    }
    MIN = a[1] + 0; MAX = a[n] + 0
    MED = (n % 2) ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
    return n
  }
  $1 != "control" {
    key = $1 SUBSEP $2 SUBSEP $4
    if (!(key in vals)) { order[++nk] = key; unit[key] = $5 }
    vals[key] = vals[key] " " $6
  }
  END {
    for (k = 1; k <= nk; k++) {
      key = order[k]
      n = stats(vals[key])
      split(key, p, SUBSEP)
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", p[1], p[2], p[3], unit[key], MED, MIN, MAX, n
    }
  }' "$RAW" >"$STATS"

echo
[[ -n "${CONTROL_SLEEP:-}" ]] &&
  printf 'RESULT name=load_control procs=1 metric=sleep_cpu_ms_per_s value=%s unit=ms server=sleep\n' "$CONTROL_SLEEP"
[[ -n "${CONTROL_SPIN:-}" ]] &&
  printf 'RESULT name=load_control procs=1 metric=spin_cpu_ms_per_s value=%s unit=ms server=spin\n' "$CONTROL_SPIN"
awk -F '\t' -v procs="$PROCS" '
  $3 !~ /^(client_cpu|send_late|runq_wait)/ {
    v = $5 + 0
    fmt = (v >= 100) ? "%.1f" : (v >= 1) ? "%.2f" : "%.4f"
    printf "RESULT name=load_%s procs=%s metric=%s value=" fmt " unit=%s server=%s\n", $1, procs, $3, v, $4, $2
    med[$1, $2, $3] = $5
    if (!(($1, $2) in sseen)) { sseen[$1, $2] = 1; ss[$1] = ss[$1] " " $2 }
    if (!(($1, $3) in seen)) { seen[$1, $3] = 1; ms[$1] = ms[$1] " " $3 }
    if (!($1 in gseen)) { gseen[$1] = 1; groups[++ng] = $1 }
  }
  END {
    for (g = 1; g <= ng; g++) {
      grp = groups[g]
      n = split(ms[grp], m, " ")
      np = split(ss[grp], s, " ")
      for (j = 1; j <= np; j++) {
        if (s[j] == "gort") continue
        for (i = 1; i <= n; i++) {
          if (!((grp, "gort", m[i]) in med) || !((grp, s[j], m[i]) in med)) continue
          a = med[grp, "gort", m[i]]; b = med[grp, s[j], m[i]]
          if (b + 0 == 0) continue
          printf "RESULT name=load_%s procs=%s metric=%s_ratio value=%.3f unit=x server=gort/%s\n", grp, procs, m[i], a / b, s[j]
        }
      }
    }
  }' "$STATS"

# The table: one row per pair and load, with the medians (min..max) of
# each side and the ratios gort/peer.
TABLE=$(awk -F '\t' -v rates="$RATES" -v idle="$IDLE_CONNS" -v groups="${GROUPS_RUN[*]}" '
  function f(v) {
    if (v == "") return "-"
    v += 0
    if (v >= 100) return sprintf("%.0f", v)
    if (v >= 10) return sprintf("%.1f", v)
    if (v >= 1 || v == 0) return sprintf("%.2f", v)
    return sprintf("%.3f", v)
  }
  function cell(g, s, m) {
    if (!((g, s, m) in med)) return "-"
    return f(med[g, s, m]) " (" f(lo[g, s, m]) ".." f(hi[g, s, m]) ")"
  }
  function ratio(g, s, m) {
    if (!((g, "gort", m) in med) || !((g, s, m) in med) || med[g, s, m] + 0 == 0) return "-"
    return sprintf("%.2f", med[g, "gort", m] / med[g, s, m])
  }
  { med[$1, $2, $3] = $5; lo[$1, $2, $3] = $6; hi[$1, $2, $3] = $7; side[$1, $2] = 1 }
  END {
    peers["kv"] = "redis"; peers["http"] = "nginx go"; peers["echo"] = "go"
    name["redis"] = "redis-server"; name["nginx"] = "nginx"; name["go"] = "Go"
    print "| pair | load | achieved req/s gort; peer | CPU us/req gort | CPU us/req peer | ratio | p50 us gort | p50 us peer | ratio | p99 us gort | p99 us peer | ratio |"
    print "|---|---|---|---|---|---|---|---|---|---|---|---|"
    ng = split(groups, G, " ")
    nr = split(rates, R, " ")
    for (gi = 1; gi <= ng; gi++) {
      g = G[gi]
      np = split(peers[g], P, " ")
      for (pi = 1; pi <= np; pi++) {
        s = P[pi]
        if (!((g, s) in side)) continue
        pair = g " vs " name[s]
        for (ri = 1; ri <= nr; ri++) {
          t = (R[ri] == 0) ? "rsat" : "r" R[ri]
          load = (R[ri] == 0) ? "saturation" : R[ri] " req/s"
          printf "| %s | %s | %s; %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", pair, load,
            f(med[g, "gort", "achieved_rps_" t]), f(med[g, s, "achieved_rps_" t]),
            cell(g, "gort", "cpu_us_per_req_" t), cell(g, s, "cpu_us_per_req_" t), ratio(g, s, "cpu_us_per_req_" t),
            cell(g, "gort", "latency_p50_" t), cell(g, s, "latency_p50_" t), ratio(g, s, "latency_p50_" t),
            cell(g, "gort", "latency_p99_" t), cell(g, s, "latency_p99_" t), ratio(g, s, "latency_p99_" t)
        }
        if (idle > 0)
          printf "| %s | %d idle conns: CPU ms/s | | %s | %s | %s | RSS MB: %s | %s | %s | | | |\n", pair, idle,
            cell(g, "gort", "idle_cpu_ms_per_s"), cell(g, s, "idle_cpu_ms_per_s"), ratio(g, s, "idle_cpu_ms_per_s"),
            cell(g, "gort", "idle_rss_mb"), cell(g, s, "idle_rss_mb"), ratio(g, s, "idle_rss_mb")
      }
    }
  }' "$STATS")

# The generator's own figures: the rate it reached, how late its sends
# went out (p99, median of the runs) and its CPU time per request.
GEN=$(awk -F '\t' -v rates="$RATES" '
  { med[$1, $2, $3] = $5; lo[$1, $2, $3] = $6; hi[$1, $2, $3] = $7
    if (!(($1, $2) in seen)) { seen[$1, $2] = 1; order[++n] = $1 SUBSEP $2 } }
  END {
    print "| server | rate asked | achieved req/s (min..max) | sends late p99 us | loadgen CPU us/req | server run-queue wait ms/s |"
    print "|---|---|---|---|---|---|"
    nr = split(rates, R, " ")
    for (i = 1; i <= n; i++) {
      split(order[i], k, SUBSEP)
      for (ri = 1; ri <= nr; ri++) {
        t = (R[ri] == 0) ? "rsat" : "r" R[ri]
        if (!((k[1], k[2], "achieved_rps_" t) in med)) continue
        late = ((k[1], k[2], "send_late_p99_" t) in med) ? sprintf("%.0f", med[k[1], k[2], "send_late_p99_" t]) : "-"
        wait = ((k[1], k[2], "runq_wait_ms_per_s_" t) in med) ? sprintf("%.0f", med[k[1], k[2], "runq_wait_ms_per_s_" t]) : "-"
        printf "| %s %s | %s | %.0f (%.0f..%.0f) | %s | %.1f | %s |\n", k[1], k[2],
          (R[ri] == 0) ? "saturation" : R[ri],
          med[k[1], k[2], "achieved_rps_" t], lo[k[1], k[2], "achieved_rps_" t],
          hi[k[1], k[2], "achieved_rps_" t], late,
          med[k[1], k[2], "client_cpu_us_per_req_" t], wait
      }
    }
  }' "$STATS")

# Rates the generator did not reach: the median achieved rate of a server
# more than 3% below the rate asked for.
SHORT=$(awk -F '\t' '$3 ~ /^achieved_rps_r[0-9]+$/ {
    want = substr($3, 15) + 0
    if ($5 < 0.97 * want)
      printf "%s %s: %.0f req/s achieved of %d asked (min %.0f)\n", $1, $2, $5, want, $6
  }' "$STATS")

machine() {
  printf '%s, %s CPUs, kernel %s; %s; %s; %s; %s' "$(uname -m)" "$(nproc)" \
    "$(uname -r)" "$(gcc --version 2>/dev/null | head -n 1)" \
    "$( ((HAVE_GO)) && go version || echo 'go not installed')" \
    "$(redis-server --version 2>/dev/null | awk '{ print $1, $2, $3 }' || echo 'no redis-server')" \
    "$(nginx -v 2>&1 || echo 'no nginx')"
}

{
  printf '# CPU per request at fixed load\n\n'
  printf 'Run %s, commit %s; runs per server: %s, alternating; %s s windows after %s s of warm-up; %s connections; loadgen with -procs %s, servers with -procs %s.\n\n' \
    "$(date -u '+%Y-%m-%d %H:%M UTC')" \
    "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "$RUNS" "$WINDOW" "$WARMUP" "$CONNS" "$CLIENT_PROCS" "$PROCS"
  [[ -n "$SERVER_GORTDEBUG" ]] &&
    printf "gort's servers ran with GORTDEBUG=%s.\n\n" "$SERVER_GORTDEBUG"
  printf 'Machine: %s. Client and server share its CPUs.\n\n' "$(machine)"
  printf 'Control: a sleeping process %s ms of CPU a second, a spinning one %s.\n' \
    "${CONTROL_SLEEP:-?}" "${CONTROL_SPIN:-?}"
  printf 'The CPU-time clocks and /proc/PID/stat agreed (within their ticks) in %s of %s windows.\n\n' \
    "$((WINDOWS - $(wc -l <"$CPU_OFF")))" "$WINDOWS"
  printf '%s\n' "$TABLE"
  printf '\nThe generator:\n\n%s\n' "$GEN"
  if [[ -n "$SHORT" ]]; then
    printf '\nRates not reached (median more than 3%% short):\n\n'
    printf '%s\n' "$SHORT" | sed 's/^/- /'
  fi
  if [[ -s "$CPU_OFF" ]]; then
    printf '\nWindows where the two CPU readings disagreed:\n\n'
    sed 's/^/- /' "$CPU_OFF"
  fi
  if [[ -s "$FAILS" ]]; then
    printf '\nFailures:\n\n'
    sed 's/^/- /' "$FAILS"
  fi
} >"$OUT/results.md"

echo
printf '%s\n' "$TABLE"
if [[ -n "$SHORT" ]]; then
  echo
  echo "Rates not reached (median more than 3% short):"
  printf '%s\n' "$SHORT"
fi
echo
echo "Markdown: $OUT/results.md ($(($(date +%s) - START)) s of runs)"
if [[ -s "$FAILS" ]]; then
  echo
  echo "Failures:"
  cat "$FAILS"
  exit 1
fi
exit 0
