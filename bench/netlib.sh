# SPDX-License-Identifier: MIT
# netlib.sh - shared helpers for the benchmarks that drive a server with an
# external load generator (bench/http_wrk.sh, bench/kv.sh).  Sourced.

# free_port: print a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port <port> <pid>: wait up to 10 s for 127.0.0.1:<port> to accept
# connections; fail if the server <pid> exits first.
wait_port() {
  local port=$1 pid=$2 i
  for ((i = 0; i < 200; i++)); do
    kill -0 "$pid" 2>/dev/null || { echo "$BENCH_NAME: server exited early" >&2; return 1; }
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "$BENCH_NAME: server not listening on port $port after 10 s" >&2
  return 1
}

# stop_server <pid>: SIGTERM, then SIGKILL after 5 s.
stop_server() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
  return 0
}

# parse_procs "$@": sets PROCS from -procs N / -procs=N (default $1 of the
# caller's choosing in PROCS beforehand).
parse_procs() {
  while (($#)); do
    case $1 in
      -procs | --procs) PROCS=$2; shift 2 ;;
      -procs=* | --procs=*) PROCS=${1#*=}; shift ;;
      *) echo "$BENCH_NAME: unknown argument $1" >&2; exit 2 ;;
    esac
  done
  [[ "$PROCS" =~ ^[1-9][0-9]*$ ]] || { echo "$BENCH_NAME: bad -procs '$PROCS'" >&2; exit 2; }
}
