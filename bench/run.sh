#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh [names...] - build gort's benchmarks and their Go peers, run them
# alternately (gort, Go, gort, Go, ...) and print a table of medians and
# gort/Go ratios.  Without names it runs every benchmark in SUITE below.
#
# Outputs (under $BUILD_DIR, default build/):
#   bench/<name>          the gort programs (the normal CMake build)
#   bench/go/<name>       the Go peers
#   bench/results.md      the table, as markdown, with the machine
#   bench/ratios.png      a bar chart of the ratios (needs gnuplot)
#   bench/raw.tsv         every figure of every run
#   bench/logs/           stdout+stderr of every run
#
# Environment:
#   RUNS=3            runs per side (the table quotes the median, min..max)
#   BENCH_TIMEOUT=300 seconds before a run counts as hung and is killed
#   BUILD_DIR=build   the CMake build directory (relative to the repo root)
#   GORT_CMAKE_ARGS   extra arguments for the CMake configure step
#   NO_BUILD=1        skip both builds and run the binaries already there
#   BASELINE_DIR=dir  compare with another build of gort instead of Go:
#                     its benchmarks (dir/bench, built by the caller, e.g.
#                     from an older commit) take the Go side's turns, and
#                     the table's peer is "base"
#
# The contract (flags, RESULT lines, rows) is in BENCHMARKS.md; see also
# docs/benchmarks.md.  Only ratios from one run of this script count: the
# machine is shared and noisy.
set -euo pipefail

# ---------------------------------------------------------------------------
# The suite: one line per benchmark, "<name> <procs>...", in table order.
# Each procs value is one row, run as `-procs N`; "-" runs the program once
# without -procs, for programs that cover their procs themselves (fib_par).
# A procs value may carry runtime debug settings after a "+", as in
# "1+asyncpreemptoff=1": that row runs both sides with them (GORTDEBUG for
# gort, GODEBUG for Go, appended to any value already in the environment)
# and is named "<name> (<settings>)" in the table.
# Adding a benchmark: bench/<name>.c + bench/CMakeLists.txt, its Go peer in
# bench/go/<name>/, and one line here.
# A benchmark that drives a server with an external load generator
# (http_wrk, kv) is a script instead, bench/<name>.sh, run as
# `bench/<name>.sh <gort|go> -procs N` with BUILD_DIR in its environment;
# it starts the server of that side, runs the load, stops it and prints the
# RESULT lines.  Its bench_<name> CMake target builds the gort server.
# ---------------------------------------------------------------------------
SUITE=(
  "spawn 1 2"
  "yield 1"
  "chanpingpong 1 2"
  "chandeadline 1 2"
  "chanstream 1 2"
  "skynet 1 2"
  "threadring 1"
  "fib_par -"
  "idle 2"
  "timers 1 2"
  "preempt 1 1+asyncpreemptoff=1"
  "timerlat 2"
  "syscallhandoff 1"
  "tcp_echo 2"
  "http_wrk 2"
  "kv 1 2"
)

RUNS=${RUNS:-3}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-300}
BUILD_DIR=${BUILD_DIR:-build}
GORT_CMAKE_ARGS=${GORT_CMAKE_ARGS:-}
NO_BUILD=${NO_BUILD:-0}

die() { printf 'run.sh: %s\n' "$*" >&2; exit 1; }
note() { printf 'run.sh: %s\n' "$*" >&2; }

[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer, not '$RUNS'"
[[ "$BENCH_TIMEOUT" =~ ^[1-9][0-9]*$ ]] ||
  die "BENCH_TIMEOUT must be a positive integer (seconds), not '$BENCH_TIMEOUT'"

# Work from the repository root whatever the caller's directory.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
case "$BUILD_DIR" in
  /*) ;;
  *) BUILD_DIR="$ROOT/$BUILD_DIR" ;;
esac
OUT="$BUILD_DIR/bench"

# ---------------------------------------------------------------------------
# Which benchmarks
# ---------------------------------------------------------------------------
declare -A PROCS=()
ALL=()
for line in "${SUITE[@]}"; do
  read -r name procs <<<"$line"
  ALL+=("$name")
  PROCS[$name]=$procs
done

if (($# > 0)); then
  NAMES=("$@")
  for name in "${NAMES[@]}"; do
    if [[ -z "${PROCS[$name]+set}" ]]; then
      printf 'run.sh: unknown benchmark %s (known: %s)\n' "$name" "${ALL[*]}" >&2
      exit 2
    fi
  done
else
  NAMES=("${ALL[@]}")
fi

# ---------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------
HAVE_GO=0
PEER=Go
BASELINE_DIR=${BASELINE_DIR:-}
if [[ -n "$BASELINE_DIR" ]]; then
  case "$BASELINE_DIR" in
    /*) ;;
    *) BASELINE_DIR="$ROOT/$BASELINE_DIR" ;;
  esac
  [[ -d "$BASELINE_DIR/bench" ]] ||
    die "BASELINE_DIR=$BASELINE_DIR has no bench/ (build its benchmarks first)"
  PEER=base
  HAVE_GO=1 # the peer's turns run the baseline's programs
elif command -v go >/dev/null 2>&1; then
  HAVE_GO=1
else
  note "go is not installed: the Go peers are skipped (install golang-go)"
fi

if [[ "$NO_BUILD" != 1 ]]; then
  targets=()
  for name in "${NAMES[@]}"; do
    targets+=("bench_$name")
  done
  # GORT_CMAKE_ARGS is split into words on purpose.
  # shellcheck disable=SC2086
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release $GORT_CMAKE_ARGS ||
    die "CMake configure failed"
  # Only the benchmarks (and the library they link): a broken test or example
  # elsewhere in the tree must not stop a measurement.
  cmake --build "$BUILD_DIR" -j2 --target "${targets[@]}" ||
    die "building gort's benchmarks failed"

  if ((HAVE_GO)) && [[ -z "$BASELINE_DIR" ]]; then
    mkdir -p "$OUT/go" "$BUILD_DIR/go-cache" "$BUILD_DIR/go-path"
    for name in "${NAMES[@]}"; do
      if [[ ! -f "bench/go/$name/main.go" ]]; then
        note "no Go peer in bench/go/$name: skipped"
        continue
      fi
      # Offline, as root, whatever the user's Go settings: no toolchain
      # download, no module proxy needed (standard library only).
      (cd "bench/go/$name" &&
        GOFLAGS=-mod=mod GOTOOLCHAIN=local GOCACHE="$BUILD_DIR/go-cache" \
          GOPATH="$BUILD_DIR/go-path" go build -o "$OUT/go/$name" .) ||
        die "building the Go peer bench/go/$name failed"
    done
  fi
fi

# ---------------------------------------------------------------------------
# Run
# ---------------------------------------------------------------------------
mkdir -p "$OUT/logs"
RAW="$OUT/raw.tsv"
FAILS="$OUT/failures.txt"
: >"$RAW"
: >"$FAILS"
rm -f "$OUT/ratios.png" "$OUT/ratios.dat"

# run_one <side> <name> <procs> <run> [<debug settings>]: run one program
# once, append its RESULT lines to $RAW, and note any failure (exit status,
# signal, timeout, no RESULT line) in $FAILS.
run_one() {
  local side=$1 name=$2 procs=$3 run=$4 dbg=${5:-} bin log rc=0
  local args=() envs=()
  if [[ -f "$ROOT/bench/$name.sh" ]]; then
    # A script benchmark: the script picks the server of the side.
    bin="$ROOT/bench/$name.sh"
    args=("$side")
    envs=("BUILD_DIR=$BUILD_DIR")
    if [[ "$side" == go && -n "$BASELINE_DIR" ]]; then
      args=(gort)
      envs=("BUILD_DIR=$BASELINE_DIR")
    fi
    [[ -n "$dbg" ]] && envs+=("GORTDEBUG=${GORTDEBUG:+$GORTDEBUG,}$dbg"
      "GODEBUG=${GODEBUG:+$GODEBUG,}$dbg")
  elif [[ "$side" == gort ]]; then
    bin="$OUT/$name"
    [[ -n "$dbg" ]] && envs=("GORTDEBUG=${GORTDEBUG:+$GORTDEBUG,}$dbg")
  elif [[ -n "$BASELINE_DIR" ]]; then
    bin="$BASELINE_DIR/bench/$name"
    [[ -n "$dbg" ]] && envs=("GORTDEBUG=${GORTDEBUG:+$GORTDEBUG,}$dbg")
  else
    bin="$OUT/go/$name"
    [[ -n "$dbg" ]] && envs=("GODEBUG=${GODEBUG:+$GODEBUG,}$dbg")
  fi
  [[ "$procs" != - ]] && args+=(-procs "$procs")
  log="$OUT/logs/$name-p$procs${dbg:++$dbg}-$side-$run.log"
  if [[ ! -x "$bin" ]]; then
    [[ "$side" == go && "$HAVE_GO" == 0 ]] && return 0
    printf '%s %s procs=%s run %s: no binary %s\n' "$side" "$name" \
      "$procs${dbg:++$dbg}" "$run" "$bin" >>"$FAILS"
    return 0
  fi
  if ((${#envs[@]})); then
    timeout -k 10 "$BENCH_TIMEOUT" env "${envs[@]}" "$bin" "${args[@]}" \
      >"$log" 2>&1 || rc=$?
  else
    timeout -k 10 "$BENCH_TIMEOUT" "$bin" "${args[@]}" >"$log" 2>&1 || rc=$?
  fi
  if ((rc != 0)); then
    local why="exit status $rc"
    ((rc == 124)) && why="timed out after ${BENCH_TIMEOUT}s (hung?)"
    ((rc == 137)) && why="killed after the timeout (hung)"
    ((rc > 128 && rc != 137)) && why="killed by signal $((rc - 128)) (exit $rc)"
    printf '%s %s procs=%s run %s: %s: %s%s %s; log %s\n' "$side" "$name" \
      "$procs${dbg:++$dbg}" "$run" "$why" "${envs[*]}${envs[*]:+ }" "$bin" \
      "${args[*]}" "$log" >>"$FAILS"
  fi
  if ! grep -q '^RESULT ' "$log"; then
    ((rc == 0)) && printf '%s %s procs=%s run %s: no RESULT line; log %s\n' \
      "$side" "$name" "$procs${dbg:++$dbg}" "$run" "$log" >>"$FAILS"
    return 0
  fi
  # RESULT name=<name> procs=<N> metric=<metric> value=<number> unit=<unit>
  awk -v side="$side" -v dbg="$dbg" '
    /^RESULT / {
      delete f
      for (i = 2; i <= NF; i++) {
        k = $i; sub(/=.*/, "", k)
        v = $i; sub(/^[^=]*=/, "", v)
        f[k] = v
      }
      if (dbg != "") f["name"] = f["name"] " (" dbg ")"
      printf "%s\t%s\t%s\t%s\t%s\t%s\n", f["name"], f["procs"], f["metric"],
        f["unit"], side, f["value"]
    }' "$log" >>"$RAW"
}

for name in "${NAMES[@]}"; do
  for row in ${PROCS[$name]}; do
    procs=${row%%+*}
    dbg=
    [[ "$row" == *+* ]] && dbg=${row#*+}
    for ((r = 1; r <= RUNS; r++)); do
      printf 'run.sh: %s procs=%s run %d/%d\n' "$name" "$row" "$r" "$RUNS" >&2
      run_one gort "$name" "$procs" "$r" "$dbg"
      if ((HAVE_GO)) || [[ -f "bench/$name.sh" ]]; then
        run_one go "$name" "$procs" "$r" "$dbg"
      fi
    done
  done
done

# ---------------------------------------------------------------------------
# Table: per (name, procs, metric) the median, min and max of each side and
# the ratio of the medians.  mawk-compatible (no asort).
# ---------------------------------------------------------------------------
TABLE="$OUT/table.tsv"
awk -F '\t' '
  function fmt(v) {
    if (v == "") return "-"
    if (v >= 1000 || v <= -1000) return sprintf("%.0f", v)
    if (v >= 100 || v <= -100) return sprintf("%.1f", v)
    return sprintf("%.2f", v)
  }
  # stats(list): sets MED, MIN, MAX from a space-separated list of numbers.
  function stats(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    if (n == 0) { MED = MIN = MAX = ""; return }
    for (i = 2; i <= n; i++) {
      t = a[i] + 0
      for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]
      a[j + 1] = t
    }
    MIN = a[1] + 0; MAX = a[n] + 0
    MED = (n % 2) ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    key = $1 SUBSEP $2 SUBSEP $3
    if (!(key in seen)) { seen[key] = 1; order[++nk] = key; unit[key] = $4 }
    vals[key, $5] = vals[key, $5] " " $6
    cnt[key, $5]++
  }
  END {
    for (k = 1; k <= nk; k++) {
      key = order[k]
      split(key, p, SUBSEP)
      stats(vals[key, "gort"]); gm = MED; gr = (gm == "") ? "-" : fmt(MIN) ".." fmt(MAX)
      stats(vals[key, "go"]);   om = MED; orr = (om == "") ? "-" : fmt(MIN) ".." fmt(MAX)
      ratio = "-"
      if (gm != "" && om != "" && om != 0)
        ratio = sprintf(gm / om < 0.1 ? "%.3f" : "%.2f", gm / om)
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", p[1], p[2], p[3],
        unit[key], fmt(gm), gr, fmt(om), orr, ratio,
        cnt[key, "gort"], cnt[key, "go"]
    }
  }' "$RAW" >"$TABLE"

# cell <median> <min..max>: "median (min..max)", or "-" when the side has no
# figure.
cell() {
  if [[ "$1" == - ]]; then
    printf -- '-'
  else
    printf '%s (%s)' "$1" "$2"
  fi
}

print_table() {
  local w # the name column: 14 wide, or as wide as the longest name
  w=$(awk -F '\t' 'BEGIN { w = 14 } length($1) > w { w = length($1) }
    END { print w }' "$TABLE")
  printf "%-${w}s %5s  %-24s %-26s %-26s %s\n" name procs "metric (unit)" \
    "gort median (min..max)" "$PEER median (min..max)" "gort/$PEER"
  while IFS=$'\t' read -r n p m u gm gr om orr ratio _ _; do
    printf "%-${w}s %5s  %-24s %-26s %-26s %s\n" "$n" "$p" "$m ($u)" \
      "$(cell "$gm" "$gr")" "$(cell "$om" "$orr")" "$ratio"
  done <"$TABLE"
}

machine() {
  printf '%s, %s CPUs, kernel %s; %s; %s' "$(uname -m)" "$(nproc)" \
    "$(uname -r)" "$(gcc --version 2>/dev/null | head -n 1)" \
    "$( ((HAVE_GO)) && go version || echo 'go not installed')"
}

write_markdown() {
  local commit
  commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  {
    printf '# Benchmark results\n\n'
    printf 'Run %s, commit %s, %s runs per side, alternating gort and %s.\n\n' \
      "$(date -u '+%Y-%m-%d %H:%M UTC')" "$commit" "$RUNS" \
      "${BASELINE_DIR:+the build in }${BASELINE_DIR:-Go}"
    printf 'Machine: %s.\n\n' "$(machine)"
    printf '| name | procs | metric (unit) | gort median (min..max) | %s median (min..max) | gort/%s |\n' "$PEER" "$PEER"
    printf '|---|---|---|---|---|---|\n'
    while IFS=$'\t' read -r n p m u gm gr om orr ratio _ _; do
      printf '| %s | %s | %s (%s) | %s | %s | %s |\n' "$n" "$p" "$m" "$u" \
        "$(cell "$gm" "$gr")" "$(cell "$om" "$orr")" "$ratio"
    done <"$TABLE"
    if [[ -s "$FAILS" ]]; then
      printf '\nFailures:\n\n'
      sed 's/^/- /' "$FAILS"
    fi
  } >"$OUT/results.md"
}

plot_ratios() {
  local dat="$OUT/ratios.dat" term=png ymax
  if ! command -v gnuplot >/dev/null 2>&1; then
    note "gnuplot is not installed: no chart (install gnuplot for $OUT/ratios.png)"
    return 0
  fi
  awk -F '\t' '$9 != "-" { printf "\"%s p%s %s\"\t%s\n", $1, $2, $3, $9 }' \
    "$TABLE" >"$dat"
  if [[ ! -s "$dat" ]]; then
    note "no ratio to plot: no chart"
    return 0
  fi
  # Keep the 1.0 line (parity with Go) in view however small the ratios.
  ymax=$(awk -F '\t' 'BEGIN { m = 1 } $2 > m { m = $2 } END { print m * 1.15 }' "$dat")
  if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then
    term=pngcairo
  fi
  gnuplot <<EOF || note "gnuplot failed: no chart"
set terminal $term size 960,600
set output '$OUT/ratios.png'
set title 'gort / Go, ratio of medians of $RUNS runs (times: lower is better)'
set style data histograms
set style fill solid 0.7 border -1
set boxwidth 0.6
set grid ytics
set yrange [0:$ymax]
set xtics rotate by -25 noenhanced
set key off
set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 linewidth 2
plot '$dat' using 2:xtic(1) linecolor rgb '#4477aa', \
     '' using 0:2:(sprintf('%.2f', \$2)) with labels offset 0,0.7
EOF
}

echo
print_table
write_markdown
plot_ratios
echo
if [[ -s "$FAILS" ]]; then
  echo "Failures:"
  cat "$FAILS"
  echo
fi
echo "Markdown: $OUT/results.md"
if [[ -f "$OUT/ratios.png" ]]; then
  echo "Chart:    $OUT/ratios.png"
fi
if [[ -s "$FAILS" ]]; then
  exit 1
fi
exit 0
