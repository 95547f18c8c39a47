#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples_test.sh EXAMPLES_DIR CASE - drive an example server with the
# standard clients and check what they see.
#
#   kv_commands    redis-cli: the right reply for every command
#   kv_benchmark   redis-benchmark -t set,get,incr -n 20000: no errors
#   kv_malformed   random bytes, huge bulk lengths, truncated frames, bad
#                  numbers: RESP errors, the server stays up and correct
#   kv_output_limit  a client pipelining GETs of a 1 MiB value without
#                  reading: the server's peak RSS grows by at most the
#                  -output-limit (4 MiB, then the default) and 16 MiB of
#                  slack (more under sanitizers), the client is
#                  disconnected with one log line, other clients are served;
#                  a client that takes no reply is closed after -idle
#   http_curl      curl: 200 with the body, 404, 405, keep-alive reuse,
#                  POST /echo with a chunked body (small and 300 KB)
#   http_framing   raw sockets against RFC 9112's framing rules: each bad
#                  request gets its exact status line and the connection
#                  closed (duplicate and malformed Content-Length, unknown
#                  and misplaced transfer codings, bare LF and CR, control
#                  characters, headers without a colon or with whitespace
#                  before it, obs-fold, Host missing or twice, 414, 431,
#                  413, 505); chunked bodies with extensions and trailers,
#                  pipelined keep-alive, HTTP/1.0 keep-alive
#   http_wrk       wrk -d3s: requests done, no errors, no socket errors
#   http_metrics   curl /metrics: the Prometheus text with Go's metric names,
#                  GOMAXPROCS as set, a goroutine counted per connection,
#                  every sample line well formed
#   http_ipv6      -addr [::1]:0 serves curl over IPv6 and not over IPv4,
#                  logging the address in brackets; -addr :0 serves both
#                  (skipped, 77, without the IPv6 loopback address)
#
# Each case starts the server on a free port, stops it with SIGTERM at the
# end, and fails if it did not exit 0.
set -euo pipefail
dir=$1 case=$2
export NO_PROXY='*' no_proxy='*'
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/log" ] && { echo "--- server log"; cat "$tmp/log"; }; exit 1; }

start() { # start NAME [FLAG...]: sets pid and port; -addr is $addr
    : > "$tmp/log" # a second start must not read the first one's port
    "$dir/$1" -addr "${addr:-127.0.0.1:0}" -procs 2 "${@:2}" > "$tmp/log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        port=$(sed -n 's/.*listening on .*:\([0-9]*\) (GOMAXPROCS.*/\1/p' "$tmp/log")
        [ -n "$port" ] && return 0
        sleep 0.05
    done
    fail "$1 did not log its listening line"
}

stop() {
    kill -TERM "$pid"
    local status=0
    wait "$pid" || status=$?
    pid=
    [ "$status" -eq 0 ] || fail "server exited with status $status after SIGTERM"
}

expect() { # expect WANT CMD...
    local want=$1; shift
    local got
    got=$("$@" 2>&1) || true
    [ "$got" = "$want" ] || fail "$*: got '$got', want '$want'"
}

case $case in
kv_commands)
    start kv
    R="redis-cli -p $port"
    expect PONG $R PING
    expect hello $R PING hello
    expect OK $R SET k1 v1
    expect v1 $R GET k1
    expect "" $R GET missing
    expect 1 $R INCR n
    expect 2 $R INCR n
    expect "ERR value is not an integer or out of range" $R INCR k1
    expect 2 $R EXISTS k1 n missing
    expect "$(printf 'v1\n2\n')" $R MGET k1 n
    expect 2 $R DEL k1 n missing
    expect 0 $R EXISTS k1
    expect "ERR unknown command 'NOPE'" $R NOPE
    # Command names in any case; a value overwritten shorter, then longer.
    expect OK $R set k2 abcdef
    expect OK $R sEt k2 ab
    expect ab $R gEt k2
    expect OK $R SET k2 abcd
    expect abcd $R GET k2
    long=$(printf 'v%.0s' $(seq 300))
    expect OK $R SET k2 "$long"
    expect "$long" $R GET k2
    expect 1 $R del k2
    # Integers at the edges: negative, the largest, one past it.
    expect OK $R SET neg -5
    expect -4 $R INCR neg
    expect OK $R SET big 9223372036854775806
    expect 9223372036854775807 $R INCR big
    expect "ERR increment or decrement would overflow" $R INCR big
    expect "ERR unknown command 'GETX'" $R GETX a
    expect "ERR unknown command 'GE'" $R GE a
    expect "ERR wrong number of arguments for 'GET' command" $R GET
    # Pipelining: many commands in one write, replies in order.
    out=$(printf 'SET p 5\r\nINCR p\r\nINCR p\r\nGET p\r\n' | $R --pipe 2>&1 | tail -1) || true
    expect 7 $R GET p
    stop
    ;;
kv_benchmark)
    start kv
    out=$(redis-benchmark -p "$port" -t set,get,incr -n 20000 -q 2>&1 | tr '\r' '\n')
    echo "$out" | grep -E "requests per second" || fail "no results: $out"
    for t in SET GET INCR; do
        echo "$out" | grep -q "^$t: .*requests per second" || fail "no $t result"
    done
    echo "$out" | grep -qi "error" && fail "errors: $out"
    # The counter is exact: every INCR counted.
    expect 20000 redis-cli -p "$port" GET "counter:__rand_int__"
    stop
    ;;
kv_malformed)
    start kv
    python3 - "$port" <<'PY'
import os, socket, sys
port = int(sys.argv[1])
def talk(data, wait=1.0):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(wait)
    s.sendall(data)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        pass
    s.close()
    return out
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
r = talk(b"*1\r\n$999999999\r\n")
check(r.startswith(b"-ERR Protocol error"), "huge bulk: %r" % r)
r = talk(b"*99999999\r\n")
check(r.startswith(b"-ERR Protocol error"), "huge count: %r" % r)
r = talk(b"*2\r\n$3\r\nGET\r\n$x\r\n")
check(r.startswith(b"-ERR Protocol error"), "bad number: %r" % r)
r = talk(b"*1\r\n$4\r\nPINGxx")
check(r.startswith(b"-ERR Protocol error"), "missing CRLF: %r" % r)
r = talk(b"*1\r\n$-1\r\n")
check(r.startswith(b"-ERR Protocol error"), "negative bulk length: %r" % r)
r = talk(b"*1\r\n$-\r\n")
check(r.startswith(b"-ERR Protocol error"), "sign without digits: %r" % r)
r = talk(b"*1\r\n$" + b"9" * 25 + b"\r\n")
check(r.startswith(b"-ERR Protocol error"), "25-digit length: %r" % r)
r = talk(b"*1\r\n$" + b"0" * 24 + b"4\r\nPING\r\n")
check(r.startswith(b"-ERR Protocol error"), "length padded to 25 digits: %r" % r)
r = talk(b"PING " + b"x" * 70000 + b"\r\n")
check(r.startswith(b"-ERR Protocol error: too big inline"), "70 KB inline line: %r" % r[:60])
r = talk(b"*1\r\n$0004\r\nPING\r\n")
check(r == b"+PONG\r\n", "length with leading zeros: %r" % r)
r = talk(b"*2\r\n$4\r\nping\r\n$2\r\nhi\r\n*1\r\n$4\r\nPING\r\n")
check(r == b"$2\r\nhi\r\n+PONG\r\n", "lower-case ping, then PING: %r" % r)
r = talk(b"*1\r\n$4\r\nPI", wait=0.3)
check(r == b"", "truncated frame answered: %r" % r)
r = talk(b"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI", wait=0.3)
check(r == b"+PONG\r\n", "complete then truncated: %r" % r)
random = __import__("random"); random.seed(7)
for i in range(300):
    talk(bytes(random.getrandbits(8) for _ in range(random.randint(1, 2000))), wait=0.05)
for i in range(100):
    talk(b"*3\r\n$3\r\nSET\r\n$" + str(random.randint(-5, 10**12)).encode() + b"\r\nabc", wait=0.02)
r = talk(b"PING\r\n", wait=0.3)
check(r == b"+PONG\r\n", "server still answers: %r" % r)
print("malformed input: ok")
PY
    expect PONG redis-cli -p "$port" PING
    stop
    ;;
kv_output_limit)
    # Bad flag values are refused before the server starts.
    for bad in x 12q -1 k; do
        st=0; "$dir/kv" -output-limit "$bad" 2> "$tmp/err" || st=$?
        [ "$st" -eq 2 ] && grep -q "output-limit wants bytes" "$tmp/err" ||
            fail "-output-limit $bad: status $st, $(cat "$tmp/err")"
    done
    # mib is the limit in MiB (32 is the default).  The reply buffer never
    # holds more than the limit, so the peak RSS may grow by the limit plus
    # the allocator's slack, not by the gigabytes 3000 replies of 1 MiB
    # would take.  Sanitizers multiply what memory costs: ThreadSanitizer's
    # shadow is several times the memory touched, and AddressSanitizer
    # keeps the buffers the reply buffer grew out of in its quarantine.
    factor=1
    grep -qa __asan_init "$dir/kv" && factor=3
    grep -qa __tsan_init "$dir/kv" && factor=7
    for mib in 4 32; do
        if [ "$mib" -eq 32 ]; then start kv; else start kv -output-limit ${mib}m; fi
        python3 - "$port" "$pid" "$tmp/log" "$mib" "$factor" <<'PY' || fail "output limit of $mib MiB"
import socket, sys, time
port, pid, logpath, mib, factor = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
def status_kb(field):
    for line in open("/proc/%s/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1])
def call(s, req):
    s.sendall(req)
    out = b""
    while not out.endswith(b"\r\n") or (out.startswith(b"$") and len(out) < 1048576):
        b = s.recv(1 << 20)
        check(b, "connection closed while reading a reply")
        out += b
    return out
value = bytes(range(256)) * 4096
good = socket.create_connection(("127.0.0.1", port))
check(call(good, b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$1048576\r\n" + value + b"\r\n") == b"+OK\r\n", "SET")
get = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n"
check(call(good, get) == b"$1048576\r\n" + value + b"\r\n", "GET before")
base = status_kb("VmRSS")
bad = socket.create_connection(("127.0.0.1", port))
bad.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
try:
    bad.sendall(get * 3000)
except OSError:
    pass
deadline = time.time() + 20
while "output limit" not in open(logpath).read():
    check(time.time() < deadline, "no log line about the output limit")
    time.sleep(0.05)
peak = status_kb("VmHWM")
bound = base + (factor * mib + 16) * 1024
print("RSS %d KiB before, peak %d KiB, bound %d KiB" % (base, peak, bound))
check(peak <= bound, "peak RSS %d KiB over %d KiB" % (peak, bound))
lines = [l for l in open(logpath).read().splitlines() if "output limit" in l]
check(len(lines) == 1 and "of %d bytes" % (mib << 20) in lines[0], "log: %r" % lines)
bad.settimeout(10)
try:
    while bad.recv(1 << 20):
        pass
except ConnectionResetError:
    pass
bad.close()
check(call(good, get) == b"$1048576\r\n" + value + b"\r\n", "GET after")
other = socket.create_connection(("127.0.0.1", port))
check(call(other, b"PING\r\n") == b"+PONG\r\n", "a new client")
PY
        stop
    done
    # A client whose pending replies stay under the limit but who takes
    # none of them is closed after -idle seconds, with a log line.
    start kv -idle 1
    python3 - "$port" "$tmp/log" <<'PY' || fail "a client that reads nothing"
import socket, sys, time
port, logpath = int(sys.argv[1]), sys.argv[2]
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$1048576\r\n" + b"v" * 1048576 + b"\r\n")
check(s.recv(16) == b"+OK\r\n", "SET")
bad = socket.create_connection(("127.0.0.1", port))
bad.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
bad.sendall(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * 8)
deadline = time.time() + 15
while "did not read its replies" not in open(logpath).read():
    check(time.time() < deadline, "no log line about the stalled client")
    time.sleep(0.05)
bad.settimeout(10)
try:
    while bad.recv(1 << 20):
        pass
except ConnectionResetError:
    pass
PY
    stop
    ;;
http_curl)
    start http
    url=http://127.0.0.1:$port
    expect "Hello, World!" curl -sS "$url/"
    expect 404 curl -sS -o /dev/null -w '%{http_code}' "$url/nope"
    expect 405 curl -sS -o /dev/null -w '%{http_code}' -X POST -d x "$url/"
    n=$(curl -sS -v "$url/" "$url/hello" 2>&1 | grep -ci "re-using\|reusing") || true
    [ "${n:-0}" -ge 1 ] || fail "curl did not reuse the connection (keep-alive)"
    # A chunked upload (curl sends the body in chunks as it reads stdin).
    expect "hello, chunks" sh -c "printf 'hello, chunks' | curl -sS --data-binary @- -H 'Transfer-Encoding: chunked' $url/echo"
    expect 200 sh -c "printf x | curl -sS -o /dev/null -w '%{http_code}' --data-binary @- -H 'Transfer-Encoding: chunked' $url/echo"
    head -c 300000 /dev/urandom > "$tmp/body"
    curl -sS --data-binary @- -H 'Transfer-Encoding: chunked' "$url/echo" < "$tmp/body" > "$tmp/echoed" ||
        fail "chunked POST of 300 KB"
    cmp -s "$tmp/body" "$tmp/echoed" || fail "300 KB chunked body not echoed intact"
    expect 405 curl -sS -o /dev/null -w '%{http_code}' "$url/echo"
    stop
    ;;
http_metrics)
    start http
    url=http://127.0.0.1:$port/metrics
    curl -sS -D "$tmp/hdr" -o "$tmp/m1" "$url" || fail "curl $url"
    grep -qi '^content-type: text/plain; version=0.0.4' "$tmp/hdr" || fail "content type: $(cat "$tmp/hdr")"
    for line in '# TYPE go_sched_goroutines_goroutines gauge' \
                '# TYPE go_sched_goroutines_created_goroutines_total counter' \
                '# TYPE go_sched_latencies_seconds histogram' \
                '# TYPE gort_sched_steals_goroutines_total counter' \
                'go_sched_gomaxprocs_threads 2'; do
        grep -qxF "$line" "$tmp/m1" || fail "no line '$line' in /metrics"
    done
    grep -q '^go_sched_latencies_seconds_bucket{le="+Inf"} [0-9]*$' "$tmp/m1" || fail "no +Inf bucket"
    # Every line: a comment, or a name (with labels) and an integer.
    bad=$(grep -v '^# \(HELP\|TYPE\) ' "$tmp/m1" | grep -cv '^[a-z_]*\({le="[^"]*"}\)\? [0-9]*$') || true
    [ "$bad" -eq 0 ] || fail "$bad malformed lines"
    # Each connection is a goroutine: three more requests, three more created.
    c1=$(sed -n 's/^go_sched_goroutines_created_goroutines_total //p' "$tmp/m1")
    for _ in 1 2 3; do curl -sS -o /dev/null "http://127.0.0.1:$port/"; done
    curl -sS -o "$tmp/m2" "$url"
    c2=$(sed -n 's/^go_sched_goroutines_created_goroutines_total //p' "$tmp/m2")
    [ "$c2" -eq $((c1 + 4)) ] || fail "goroutines created: $c1 then $c2, want $((c1 + 4))"
    expect 200 curl -sS -o /dev/null -w '%{http_code}' -I "$url"
    stop
    ;;
http_framing)
    start http
    python3 - "$port" <<'PY'
import re, socket, sys
port = int(sys.argv[1])
def exchange(data, wait=3.0):
    """Send data at once; read until the server closes (or wait passes)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(wait)
    try:
        s.sendall(data)
    except OSError:
        pass
    out, closed = b"", False
    try:
        while True:
            b = s.recv(65536)
            if not b:
                closed = True
                break
            out += b
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    s.close()
    return out, closed
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
def status_lines(out):
    return re.findall(rb"HTTP/1\.1 [0-9]{3} [^\r\n]*", out)
def refused(data, status, what):
    out, closed = exchange(data)
    lines = status_lines(out)
    check(lines == [status], "%s: responses %r, want [%r]; got %r" % (what, lines, status, out[:200]))
    check(b"\r\nConnection: close\r\n" in out, "%s: no Connection: close" % what)
    check(closed, "%s: the connection was not closed" % what)
B400 = b"HTTP/1.1 400 Bad Request"
H = b"Host: t\r\n"
GET = b"GET / HTTP/1.1\r\n" + H
# Content-Length: two lines (different: the smuggling case, whose second
# request must never be answered; equal), a list, not digits.
refused(b"GET / HTTP/1.1\r\n" + H + b"Content-Length: 0\r\nContent-Length: 35\r\n\r\n"
        b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n", B400, "Content-Length 0 and 35")
refused(b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", B400, "Content-Length twice")
refused(b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5, 5\r\n\r\nhello", B400, "Content-Length list")
for v in [b"+5", b"-1", b"0x5", b"5a", b"5 5", b"", b"1e3"]:
    refused(b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: " + v + b"\r\n\r\nhello", B400, "Content-Length %r" % v)
# Transfer codings.
B501 = b"HTTP/1.1 501 Not Implemented"
refused(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip\r\n\r\n", B501, "gzip")
refused(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", B501, "gzip, chunked")
refused(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked, gzip\r\n\r\n", B400, "chunked, gzip")
refused(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", B400, "chunked twice")
refused(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", B400, "chunked and Content-Length")
refused(b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", B400, "chunked in HTTP/1.0")
refused(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", B400, "bad chunk size")
refused(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n", B400, "chunk without CRLF")
# Line ends, control characters, field syntax.
refused(b"GET / HTTP/1.1\nHost: t\n\n", B400, "bare LF everywhere")
refused(b"GET / HTTP/1.1\r\nHost: t\n\r\n", B400, "bare LF after a header")
refused(b"GET / HTTP/1.1\r\nHost: t\rX: y\r\n\r\n", B400, "bare CR")
refused(b"GET /\x00 HTTP/1.1\r\n" + H + b"\r\n", B400, "NUL in the request line")
refused(b"GET / HTTP/1.1\r\n" + H + b"X: a\x00b\r\n\r\n", B400, "NUL in a header")
refused(b"GET / HTTP/1.1\r\n" + H + b"X: a\x01b\r\n\r\n", B400, "SOH in a header")
refused(b"GET / HTTP/1.1\r\n" + H + b"X\x7f: a\r\n\r\n", B400, "DEL in a field name")
refused(GET + b"no colon here\r\n\r\n", B400, "a header line without a colon")
refused(GET + b"X-Foo : bar\r\n\r\n", B400, "whitespace before the colon")
refused(GET + b": bar\r\n\r\n", B400, "empty field name")
refused(GET + b"X-Foo: bar\r\n baz\r\n\r\n", B400, "obs-fold")
refused(b"GET / HTTP/1.1\r\n Host: t\r\n\r\n", B400, "whitespace before the first header")
refused(b"GET  / HTTP/1.1\r\n" + H + b"\r\n", B400, "two spaces in the request line")
refused(b"GET / HTTP/1.1 \r\n" + H + b"\r\n", B400, "a space after the version")
refused(b"GET / HTTX/1.1\r\n" + H + b"\r\n", B400, "not HTTP")
# Host.
refused(b"GET / HTTP/1.1\r\n\r\n", B400, "HTTP/1.1 without Host")
refused(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", B400, "two Hosts")
refused(b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", B400, "a space in Host")
# Limits and versions.
refused(b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n" + H + b"\r\n", b"HTTP/1.1 414 URI Too Long", "a 9000-byte request line")
refused(GET + b"X-Big: " + b"b" * 17000 + b"\r\n\r\n", b"HTTP/1.1 431 Request Header Fields Too Large", "a 17 KB header section")
refused(b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 2000000\r\n\r\n", b"HTTP/1.1 413 Content Too Large", "Content-Length over 1 MiB")
chunk = b"%x\r\n" % 65536 + b"c" * 65536 + b"\r\n"
refused(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n" + chunk * 17 + b"0\r\n\r\n",
        b"HTTP/1.1 413 Content Too Large", "a chunked body over 1 MiB")
refused(b"GET / HTTP/2.0\r\n" + H + b"\r\n", b"HTTP/1.1 505 HTTP Version Not Supported", "HTTP/2.0")
# What is accepted: a chunked body with an extension and a trailer, an
# empty line before a request, HTTP/1.0 without Host, pipelined requests on
# one connection, which stays open.
body = b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n" \
       b"5;name=value\r\nhello\r\n7 ; x\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n"
out, closed = exchange(b"\r\n" + GET + b"\r\n" + body + b"GET /hello HTTP/1.1\r\n" + H + b"\r\n", wait=1.0)
check(status_lines(out) == [b"HTTP/1.1 200 OK"] * 3, "pipelined: %r" % out)
check(b"\r\n\r\nhello, world" in out, "echoed chunked body: %r" % out)
check(not closed, "keep-alive connection closed")
out, closed = exchange(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", wait=1.0)
check(status_lines(out) == [b"HTTP/1.1 200 OK"] and b"Connection: keep-alive\r\n" in out and not closed,
      "HTTP/1.0 keep-alive: %r, closed %r" % (out, closed))
out, closed = exchange(b"GET / HTTP/1.0\r\n\r\n")
check(status_lines(out) == [b"HTTP/1.1 200 OK"] and closed, "HTTP/1.0: %r" % out)
print("framing: ok")
PY
    stop
    ;;
http_ipv6)
    grep -q '^00000000000000000000000000000001 ' /proc/net/if_inet6 2>/dev/null ||
        { echo "$case: no IPv6 loopback address (::1): skipped"; exit 77; }
    addr='[::1]:0' start http
    grep -q "listening on \[::1\]:$port " "$tmp/log" || fail "log line: $(head -1 "$tmp/log")"
    expect "Hello, World!" curl -sS -g "http://[::1]:$port/"
    expect 000 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/"
    stop
    # Every address: one dual-stack socket, [::] in the log.
    addr=':0' start http
    grep -q "listening on \[::\]:$port " "$tmp/log" || fail "log line: $(head -1 "$tmp/log")"
    expect "Hello, World!" curl -sS -g "http://[::1]:$port/"
    expect "Hello, World!" curl -sS "http://127.0.0.1:$port/"
    stop
    ;;
http_wrk)
    start http
    out=$(wrk -t2 -c64 -d3s "http://127.0.0.1:$port/" 2>&1)
    echo "$out"
    echo "$out" | grep -q "Socket errors" && fail "socket errors"
    echo "$out" | grep -q "Non-2xx" && fail "non-2xx responses"
    reqs=$(echo "$out" | sed -n 's/^ *\([0-9]*\) requests in.*/\1/p')
    [ "${reqs:-0}" -gt 1000 ] || fail "only ${reqs:-0} requests"
    stop
    ;;
*)
    echo "examples_test.sh: unknown case '$case'"; exit 2 ;;
esac
echo "$case: ok"
