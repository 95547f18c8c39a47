#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hooklibs.py - run one of gort-hook's real-library tests (tests/hooklibs)
against a real server that this script starts for it.

usage: hooklibs.py CASE --bin DIR [--http PATH] [--pg-bin DIR]
                   [--redis-server PATH] [--nginx PATH] [--openssl PATH]
                   [--curl PATH]

  redis        redis-server on a free port; hooklibs_hiredis
  postgres     initdb and pg_ctl in a temporary directory, as the user
               postgres when run as root (PostgreSQL refuses root), TCP on a
               free port and the Unix socket in that directory;
               hooklibs_libpq
  curl_nginx   nginx with a generated configuration (2 workers, pid file and
               logs in a temporary directory, a `return 200` location) on a
               free port; hooklibs_curl, which freezes the workers
  curl_http    gort's http example (-addr 127.0.0.1:0 -procs 2);
               hooklibs_curl, which freezes it
  openssl      a self-signed certificate (openssl req -x509); hooklibs_openssl
               runs its TLS echo server and 1000 clients, then this script
               checks the server with `openssl s_client` and `curl --cacert`

Every server is stopped by its PID (SIGTERM, or SIGINT for PostgreSQL's
fast shutdown; SIGKILL if it does not go) and the temporary directory is
removed, on failure too.  A SIGKILL of this script (ctest's timeout)
leaves the directory but no server: ctest kills the whole process tree,
and this script adopts the postmaster that pg_ctl daemonizes.  The test
programs get 40 s, so that this script's own cleanup runs well before
ctest's 60.  Exit status 77
(skipped) says what is missing at run time: a program, the user postgres,
a temporary directory, or descriptors (RLIMIT_NOFILE's hard limit).
"""
import argparse
import ctypes
import os
import pwd
import queue
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
# The test program's own budget; ctest allows 60 s for the whole case.
PROGRAM_TIMEOUT = 40


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def free_port():
    """A TCP port on 127.0.0.1 that nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raise_nofile(need):
    """The servers inherit this script's descriptor limit: the soft limit
    goes up to the hard one, which must allow need."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        raise Skip(f"RLIMIT_NOFILE's hard limit is {hard}, the servers need "
                   f"{need} descriptors")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def on_free_port(what, start):
    """start(port) on a free port, up to three times: another process may
    take the port between the look and the server's bind."""
    for attempt in range(3):
        port = free_port()
        try:
            start(port)
            return port
        except Fail as e:
            if attempt == 2:
                raise
            log(f"{what} on port {port}: {e}; again on another port")


def wait_for(what, cond, timeout=20.0, proc=None):
    """Poll cond() until true; fail after timeout or when proc exits."""
    deadline = time.monotonic() + timeout
    while True:
        if cond():
            return
        if proc is not None and proc.poll() is not None:
            raise Fail(f"{what}: the server exited with status "
                       f"{proc.returncode}")
        if time.monotonic() > deadline:
            raise Fail(f"{what}: not after {timeout:.0f} s")
        time.sleep(0.05)


def can_connect(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def gone(pid):
    """True once pid has exited (reaped, or a zombie nobody reaps)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:
        pass  # not our child: look at /proc
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def stop_child(proc, sig=signal.SIGTERM, timeout=15.0):
    """Stop a server this script started (a Popen) by its PID; SIGKILL if
    sig does not do it.  Returns True when it exited with status 0."""
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGCONT)  # a frozen process must see sig
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass
    try:
        status = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        log(f"{proc.args[0]} (pid {proc.pid}) did not exit on "
            f"{signal.Signals(sig).name}: SIGKILL")
        proc.kill()
        proc.wait()
        return False
    if status != 0:
        log(f"{proc.args[0]} exited with status {status} after "
            f"{signal.Signals(sig).name}")
    return status == 0


def stop_pid(pid, sig=signal.SIGTERM, timeout=15.0):
    """Stop a server process that is not this script's Popen (one that
    daemonized) by its PID; SIGKILL if sig does not do it.  Returns True
    when it went on sig alone."""
    try:
        os.kill(pid, signal.SIGCONT)  # a frozen process must see sig
        os.kill(pid, sig)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.05)
    log(f"pid {pid} did not exit on {signal.Signals(sig).name}: SIGKILL")
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not gone(pid):
        time.sleep(0.05)
    return False


def children(pid):
    """The PIDs whose parent is pid."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def become_subreaper():
    """Servers that daemonize (pg_ctl's postmaster) become this script's
    children: waitpid reaps them, and ctest, which kills a timed-out test's
    process tree, finds them under it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_CHILD_SUBREAPER = 36
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # gone() falls back to /proc


def need_file(path, what):
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise Skip(f"{what} not found ({path or 'no path'})")


def run_program(argv):
    """Run a test program; its output goes to ours.  Fails on a non-zero
    status, skips on 77."""
    log("+ " + " ".join(argv))
    t0 = time.monotonic()
    try:
        r = subprocess.run(argv, timeout=PROGRAM_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Fail(f"{argv[0]} did not finish in {PROGRAM_TIMEOUT} s")
    if r.returncode == SKIP:
        raise Skip(f"{os.path.basename(argv[0])} skipped")
    if r.returncode != 0:
        raise Fail(f"{os.path.basename(argv[0])} exited with status "
                   f"{r.returncode}")
    log(f"{os.path.basename(argv[0])}: passed in {time.monotonic() - t0:.2f} s")


class Servers:
    """The server processes started so far, stopped in reverse order."""

    def __init__(self):
        self.stops = []

    def add(self, name, stop):
        self.stops.append((name, stop))

    def stop_all(self):
        ok = True
        while self.stops:
            name, stop = self.stops.pop()
            try:
                if not stop():
                    log(f"{name} did not stop cleanly")
                    ok = False
            except Exception as e:  # keep stopping the others
                log(f"stopping {name}: {e}")
                ok = False
        return ok


# ---------------------------------------------------------------------------
# redis
# ---------------------------------------------------------------------------

def case_redis(args, tmp, servers):
    need_file(args.redis_server, "redis-server")
    raise_nofile(4096)

    def start(port):
        proc = subprocess.Popen([
            args.redis_server, "--port", str(port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", tmp,
            "--logfile", os.path.join(tmp, "redis.log"), "--daemonize", "no",
            "--maxclients", "4000", "--tcp-backlog", "4096",
            "--protected-mode", "no"])
        servers.add("redis-server", lambda: stop_child(proc))
        wait_for("redis-server answering PING", lambda: redis_ping(port),
                 proc=proc)

    port = on_free_port("redis-server", start)
    run_program([os.path.join(args.bin, "hooklibs_hiredis"), "127.0.0.1",
                 str(port)])


def redis_ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


# ---------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------

def case_postgres(args, tmp, servers):
    initdb = os.path.join(args.pg_bin or "", "initdb")
    pg_ctl = os.path.join(args.pg_bin or "", "pg_ctl")
    need_file(initdb, "initdb")
    need_file(pg_ctl, "pg_ctl")
    run_as = {}
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root: the cluster is the user
        # postgres's, in a directory it owns.
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            raise Skip("running as root and there is no user postgres to run "
                       "PostgreSQL as")
        os.chown(tmp, pw.pw_uid, pw.pw_gid)
        run_as = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
    data = os.path.join(tmp, "data")
    logf = os.path.join(tmp, "postgres.log")
    env = dict(os.environ, LC_ALL="C", LANG="C")
    r = subprocess.run([initdb, "-D", data, "-U", "postgres", "-A", "trust",
                        "--no-sync", "-E", "UTF8", "--locale=C"],
                       cwd=tmp, env=env, capture_output=True, text=True,
                       timeout=60, **run_as)
    if r.returncode != 0:
        raise Fail(f"initdb failed:\n{r.stdout}{r.stderr}")

    def postmaster_pid():
        try:
            with open(os.path.join(data, "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def stop():
        pid = postmaster_pid()
        return pid is None or stop_pid(pid, signal.SIGINT)  # fast shutdown

    def start(port):
        # TCP on 127.0.0.1 for the clients, the Unix socket (pg_ctl's
        # readiness check) in the temporary directory; 100 clients and the
        # control connection.
        opts = (f"-c port={port} -c listen_addresses=127.0.0.1 "
                f"-c unix_socket_directories={tmp} -c max_connections=120 "
                "-c fsync=off -c synchronous_commit=off "
                "-c full_page_writes=off")
        servers.add("postgres", stop)
        r = subprocess.run([pg_ctl, "-D", data, "-l", logf, "-o", opts, "-w",
                            "-t", "30", "start"], cwd=tmp, env=env,
                           capture_output=True, text=True, timeout=45,
                           **run_as)
        if r.returncode != 0 or postmaster_pid() is None:
            try:
                with open(logf) as f:
                    tail = f.read()[-2000:]
            except OSError:
                tail = ""
            raise Fail(f"pg_ctl start failed:\n{r.stdout}{r.stderr}{tail}")

    port = on_free_port("postgres", start)
    # No TLS or GSSAPI encryption: the server has neither, and Kerberos's
    # credential lookups are no part of this test.
    run_program([os.path.join(args.bin, "hooklibs_libpq"),
                 f"hostaddr=127.0.0.1 port={port} dbname=postgres "
                 "user=postgres sslmode=disable gssencmode=disable "
                 "connect_timeout=20"])


# ---------------------------------------------------------------------------
# nginx and gort's http example, through libcurl
# ---------------------------------------------------------------------------

NGINX_CONF = """\
# Generated by tests/hooklibs/hooklibs.py.
daemon off;
master_process on;
worker_processes 2;
worker_rlimit_nofile 8192;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{
    worker_connections 4096;
}}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            default_type text/plain;
            return 200 "nginx $arg_i\\n";
        }}
    }}
}}
"""


def case_curl_nginx(args, tmp, servers):
    need_file(args.nginx, "nginx")
    raise_nofile(4096)
    conf = os.path.join(tmp, "nginx.conf")
    workers = []

    def start(port):
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(tmp=tmp, port=port))
        proc = subprocess.Popen([args.nginx, "-p", tmp, "-c", conf,
                                 "-e", os.path.join(tmp, "error.log")])

        def stop():
            # The master stops its workers; a worker left behind (the
            # master killed) is stopped by its own PID.
            ok = stop_child(proc)
            for w in workers:
                if not gone(w):
                    ok = stop_pid(w) and ok
            return ok

        servers.add("nginx", stop)
        wait_for("nginx's 2 workers", lambda: len(children(proc.pid)) == 2,
                 proc=proc)
        workers[:] = children(proc.pid)
        wait_for("nginx listening", lambda: can_connect(port), proc=proc)

    port = on_free_port("nginx", start)
    run_program([os.path.join(args.bin, "hooklibs_curl"), "nginx",
                 f"http://127.0.0.1:{port}/"] + [str(w) for w in workers])


def case_curl_http(args, tmp, servers):
    need_file(args.http, "gort's http example")
    raise_nofile(4096)
    logf = open(os.path.join(tmp, "http.log"), "w+")
    # Port 0: the example binds a free port and logs it.
    proc = subprocess.Popen([args.http, "-addr", "127.0.0.1:0", "-procs", "2"],
                            stdout=logf, stderr=subprocess.STDOUT)
    # gort's own server must also stop cleanly (status 0 on SIGTERM).
    servers.add("http", lambda: stop_child(proc))
    port = []

    def listening():
        logf.seek(0)
        for line in logf:
            if "listening on 127.0.0.1:" in line:
                port.append(int(line.split("127.0.0.1:")[1].split()[0]))
                return True
        return False

    wait_for("http's listening line", listening, proc=proc)
    run_program([os.path.join(args.bin, "hooklibs_curl"), "echo",
                 f"http://127.0.0.1:{port[0]}/echo", str(proc.pid)])


# ---------------------------------------------------------------------------
# OpenSSL
# ---------------------------------------------------------------------------

def lines_of(stream):
    """A queue that receives stream's lines (then None at its end)."""
    q = queue.Queue()

    def pump():
        for line in iter(stream.readline, ""):
            q.put(line)
        q.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return q


def expect_line(q, what, pred, timeout, echo=True):
    """Lines from q until pred(line); fails at the end or after timeout."""
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        try:
            line = q.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise Fail(f"{what}: not after {timeout:.0f} s; got {seen!r}")
        if line is None:
            raise Fail(f"{what}: output ended; got {seen!r}")
        if echo:
            print(line, end="", flush=True)
        seen.append(line)
        if pred(line):
            return line


def case_openssl(args, tmp, servers):
    need_file(args.openssl, "openssl")
    need_file(args.curl, "curl")
    cert = os.path.join(tmp, "cert.pem")
    key = os.path.join(tmp, "key.pem")
    r = subprocess.run([args.openssl, "req", "-x509", "-newkey", "ec",
                        "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "1",
                        "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise Fail(f"openssl req failed:\n{r.stdout}{r.stderr}")
    prog = os.path.join(args.bin, "hooklibs_openssl")
    log(f"+ {prog} {cert} {key}")
    t0 = time.monotonic()
    proc = subprocess.Popen([prog, cert, key], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    # Still running at the end only when something failed.
    servers.add("hooklibs_openssl", lambda: proc.poll() is not None or
                stop_child(proc, signal.SIGKILL))
    out = lines_of(proc.stdout)
    ready = expect_line(out, "hooklibs_openssl's ready line",
                        lambda l: l.startswith(("ready ", "SKIP")),
                        PROGRAM_TIMEOUT)
    if ready.startswith("SKIP"):
        proc.wait()
        raise Skip(ready.strip())
    port = int(ready.split(":")[1])

    # openssl s_client: the certificate verifies for localhost, a line
    # comes back as it was sent.
    env = dict(os.environ, NO_PROXY="*", no_proxy="*")
    for v in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(v, None)
    sc = subprocess.Popen([args.openssl, "s_client", "-connect",
                           f"127.0.0.1:{port}", "-servername", "localhost",
                           "-verify_hostname", "localhost", "-CAfile", cert,
                           "-verify_return_error", "-brief"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env)
    try:
        sc.stdin.write("hello from s_client\n")
        sc.stdin.flush()
        expect_line(lines_of(sc.stdout), "s_client's echo",
                    lambda l: l == "hello from s_client\n", 15)
        sc.stdin.close()  # s_client sends close_notify and exits
        sc_err = sc.stderr.read()
        if sc.wait(timeout=15) != 0:
            raise Fail(f"s_client exited with {sc.returncode}:\n{sc_err}")
    finally:
        if sc.poll() is None:
            sc.kill()
            sc.wait()
    if "Verification: OK" not in sc_err:
        raise Fail(f"s_client did not verify the certificate:\n{sc_err}")
    log("s_client: certificate verified for localhost, line echoed")

    # curl: the echo server answers a connection that starts with an HTTP
    # request with a minimal response (an echo is no HTTP response).
    r = subprocess.run([args.curl, "-sS", "--max-time", "15", "--cacert", cert,
                        "--resolve", f"localhost:{port}:127.0.0.1",
                        f"https://localhost:{port}/"],
                       capture_output=True, text=True, env=env, timeout=30)
    if r.returncode != 0 or r.stdout != "hello from the gort TLS echo server\n":
        raise Fail(f"curl --cacert: status {r.returncode}, body {r.stdout!r}, "
                   f"{r.stderr}")
    log("curl --cacert: certificate verified, HTTP response read")

    proc.stdin.close()  # the program's cue to stop serving
    expect_line(out, "hooklibs_openssl's last line",
                lambda l: l.startswith("external clients served"), 15)
    if proc.wait(timeout=15) != 0:
        raise Fail(f"hooklibs_openssl exited with status {proc.returncode}")
    log(f"hooklibs_openssl: passed in {time.monotonic() - t0:.2f} s")


CASES = {
    "redis": ("hooklibs-redis-", case_redis),
    "postgres": ("hooklibs-pg-", case_postgres),
    "curl_nginx": ("hooklibs-nginx-", case_curl_nginx),
    "curl_http": ("hooklibs-http-", case_curl_http),
    "openssl": ("hooklibs-tls-", case_openssl),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--bin", required=True, help="the test programs' directory")
    ap.add_argument("--http")
    ap.add_argument("--pg-bin")
    ap.add_argument("--redis-server")
    ap.add_argument("--nginx")
    ap.add_argument("--openssl")
    ap.add_argument("--curl")
    args = ap.parse_args()

    # ctest stops a test with SIGTERM on some platforms: clean up then too.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    become_subreaper()
    prefix, run = CASES[args.case]
    servers = Servers()
    status = 0
    try:
        tmp = tempfile.mkdtemp(prefix=prefix)
    except OSError as e:
        log(f"SKIP: no temporary directory: {e}")
        return SKIP
    try:
        run(args, tmp, servers)
    except Skip as e:
        log(f"SKIP: {e}")
        status = SKIP
    except Fail as e:
        log(f"FAIL: {e}")
        status = 1
    finally:
        if not servers.stop_all() and status == 0:
            status = 1
        shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
