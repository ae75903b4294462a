#!/usr/bin/env python3
"""Runs the benchmark processes for Benchmarks/run.sh and writes RESULTS.md.

Every client and scenario runs as its own process; CPU time and peak RSS come from wait4() on that process
(the kernel's rusage of the child), the same way for the Swift clients, wrk, h2load and curl. The clients are
interleaved run by run (their order rotates every run) so that drift on a busy machine hits all alike.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SCENARIOS = {
    "a": "sequential 64 B GETs, one connection",
    "b": "64 B GETs, 64 in flight",
    "c": "1 GiB downloaded to a file",
    "d": "1 GiB streamed to a discarding handler",
    "e": "64 B GETs, 64 in flight, HTTPS",
    "f": "100 MiB upload from a file",
    "g": "64 B GETs, 64 in flight, HTTPS with HTTP/2",
    "h": "64 B GETs, 64 in flight, plain http through an HTTP proxy",
    "i": "10,000 64 B GETs started at once, one session, at most 64 connections",
    "j": "sequential 64 B GETs, a new session for each",
    "k": "10,000 64 B GETs queued at a server that never answers, one session, at most 64 connections",
    "l": "1 GiB downloaded to a file by a background session (courierd)",
}
RATE = {"a", "b", "e", "g", "h", "i", "j"}
# Scenarios without a reference tool (wrk cannot queue 10,000 requests or open a session per request).
NO_REFERENCE = {"i", "j", "k"}
# Scenarios that measure memory, not speed.
MEMORY = {"k"}
REFERENCE_NAME = {"a": "wrk", "b": "wrk", "e": "wrk", "c": "curl", "d": "curl", "f": "curl", "g": "h2load",
                  "h": "wrk at the proxy", "i": "none", "j": "none", "k": "none", "l": "curl"}
# Scenarios whose notes say how many connections each process opened (nginx's count): (g) is about multiplexing,
# and in the others a client that opens more than its 64 (or, in (a), 1) pays for connections the others reuse.
CONNECTIONS_NOTED = {"a", "b", "e", "g", "h", "i"}
# How the newer scenarios are run and checked, printed under their headings.
SCENARIO_NOTES = {
    "l": "The download of (c) through `URLSessionConfiguration.background(withIdentifier:)`: the transfer runs in "
         "`courierd` (the release build beside the clients, started by the first run and reused by the next, as a "
         "system's daemon is; its folders are the run's own), which journals a checkpoint every 16 MiB or second and "
         "flushes the partial file to disk every 30 s, and hands the file to the client's delegate, which moves it. The clock covers `resume()` to the completion. "
         "The daemon's CPU time is not in the client's (it is not the client's waited-for child). Courier only: the "
         "other clients have no background sessions (FoundationNetworking refuses them).",
    "g": "A listener of its own with HTTP/2 on (the one of (e) speaks HTTP/1.1 only); every client offers ALPN h2 "
         "and http/1.1 without any setting. Every response is checked for h2: async-http-client and Go read each "
         "response's version; Courier reads the `X-Server-Protocol` header the listener adds to each response "
         "(nginx's `$server_protocol`), since `URLResponse` has no version and the task metrics that tell it need "
         "a task delegate, which would take a connection of its own. A run that cannot tell the protocol of every "
         "response fails. "
         "FoundationNetworking's libcurl does negotiate h2, but it cannot trust the benchmark's CA (see (e)). "
         "Reference: `h2load -c 1 -m 64`, one connection with up to 64 concurrent streams, duration-based like wrk; "
         "latency percentiles from its per-request log.",
    "i": "Every request is started at once (a Swift task, or a goroutine, each) through one session whose "
         "`httpMaximumConnectionsPerHost` (or `MaxConnsPerHost`) is 64: all but 64 wait in the client. What matters is "
         "memory: the notes give the peak RSS per queued request, (peak − the peak just before the requests) / "
         "requests, from each process's own VmHWM. (The tracker's (h); the letter was taken by the proxy.)",
    "k": "What a queued request costs the client in memory, without the harness's own task per request: every GET "
         "is started the client's own way (a `URLSession` data task with a completion handler, an async-http-client "
         "`HTTPClient.Task`, a goroutine for Go's net/http, whose requests cannot be in flight otherwise) at a "
         "listener of the driver's that accepts connections and reads but never answers, so that all of them stay "
         "queued (64 on connections, the rest waiting in the client). Each process reads its own resident set "
         "(VmRSS) before, after every 1,000 started, after the last, and 300 ms later; then it cancels them all. Per "
         "queued request: (the last reading − the first) / requests; first and last 1,000: what those cost, to show "
         "that the cost does not grow with the queue.",
    "j": "Each request on a new session (a new `URLSession`, `HTTPClient` or Go `Transport`), shut down after it: "
         "session creation and a new connection per request (plain http: no TLS). (The tracker's (i).) Each client's "
         "own shutdown call is inside the clock: async-http-client's `shutdown()` returns once its connections are "
         "closed; `finishTasksAndInvalidate()` and Go's `CloseIdleConnections()` return at once, and Courier closes "
         "its connection on its event loop after that (its CPU time still counts: CPU is the process's).",
    "h": "nginx as an HTTP forward proxy for plain http: clients send absolute-form requests "
         "(`GET http://127.0.0.1:PORT/64b`), nginx passes them to the plain-HTTP listener over kept-alive upstream "
         "connections (`keepalive 64`) and adds `X-Via-Proxy: 1`, which every response must carry. Courier is "
         "given the proxy with `connectionProxyDictionary`, async-http-client with `Configuration.proxy`. "
         "Reference: wrk sends origin-form requests (`GET /64b`) straight to the proxy port, which serves them "
         "through the same proxy location: the proxy's work without a client's proxy handling.",
}
NAMES = {"courier": "Courier", "foundation": "FoundationNetworking", "ahc": "async-http-client", "go": "Go net/http",
         "baseline": "Courier (baseline)", "courier-telemetry": "Courier (in-memory telemetry)"}
TIMEOUT = 900
CURRENT_CHILD = [None]


def stop(signum, _frame):
    """On SIGTERM or SIGINT, end the process being measured (and the launcher) too, then leave (run.sh stops
    nginx)."""
    if LAUNCHER[0]:
        try:
            os.kill(LAUNCHER[0].pid, signal.SIGTERM)
        except OSError:
            pass
    if CURRENT_CHILD[0]:
        try:
            os.kill(CURRENT_CHILD[0], signal.SIGKILL)
        except OSError:
            pass
    sys.exit(128 + signum)


def log(message):
    print(f"[bench.py] {message}", file=sys.stderr, flush=True)


class Launcher:
    """Starts the measured processes from a small process forked when the driver was still small.

    Linux keeps a process's peak RSS across fork and exec: a child inherits the peak of the process it was forked
    from (its `ru_maxrss` is at least that). The driver grows as it runs (it parses h2load's latency logs), so its
    children would all report its peak instead of their own. The launcher, forked at the start, stays small.
    """

    def __init__(self):
        requests_read, requests_write = os.pipe()
        results_read, results_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(requests_write)
            os.close(results_read)
            self._serve(os.fdopen(requests_read, "r"), os.fdopen(results_write, "w"))
            os._exit(0)
        os.close(requests_read)
        os.close(results_write)
        self.pid = pid
        self.requests = os.fdopen(requests_write, "w")
        self.results = os.fdopen(results_read, "r")

    @staticmethod
    def _serve(requests, results):
        # Ended with the driver (see `stop`): it ends the process being measured, too.
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        for line in requests:
            request = json.loads(line)
            result = run_process_here(request["argv"], request["env"], request["timeout"])
            results.write(json.dumps(result) + "\n")
            results.flush()

    def run(self, argv, env, timeout):
        self.requests.write(json.dumps({"argv": list(argv), "env": env, "timeout": timeout}) + "\n")
        self.requests.flush()
        return tuple(json.loads(self.results.readline()))


LAUNCHER = [None]


def run_process(argv, env=None, timeout=TIMEOUT):
    """Runs argv to completion (through the launcher once it exists); returns (exit status, stdout, stderr, cpu
    seconds, max RSS KiB, wall seconds)."""
    if LAUNCHER[0]:
        return LAUNCHER[0].run(argv, dict(env) if env is not None else None, timeout)
    return run_process_here(argv, env, timeout)


def run_process_here(argv, env=None, timeout=TIMEOUT):
    """Runs argv to completion in this process; returns (exit status, stdout, stderr, cpu seconds, max RSS KiB, wall
    seconds)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        CURRENT_CHILD[0] = proc.pid
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            os.kill(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            CURRENT_CHILD[0] = None
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        if timed_out.is_set():
            err.seek(0, 2)
            err.write(f"\nkilled after {timeout} s".encode())
            err.seek(0)
        return (
            proc.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss,
            wall,
        )


class HoldListener:
    """A listener on 127.0.0.1 that accepts every connection and reads what comes but never answers (scenario k):
    requests sent to it stay in flight until the client cancels them."""

    @staticmethod
    def start():
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1024)

        def drain(connection):
            with connection:
                try:
                    while connection.recv(65536):
                        pass
                except OSError:
                    pass

        def accept():
            while True:
                connection, _ = listener.accept()
                threading.Thread(target=drain, args=(connection,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        return listener.getsockname()[1]


class Harness:
    def __init__(self, args):
        self.args = args
        self.base = f"http://127.0.0.1:{args.port}"
        self.tls_base = f"https://127.0.0.1:{args.tls_port}"
        self.h2_base = f"https://127.0.0.1:{args.h2_port}"
        self.proxy_base = f"http://127.0.0.1:{args.proxy_port}"
        self.hold_base = f"http://127.0.0.1:{HoldListener.start()}"
        self.scratch = os.path.join(args.work, "scratch")
        self.upload_file = os.path.join(args.work, "upload.bin")
        self.upload_size = os.path.getsize(self.upload_file)

    # --- Swift clients -----------------------------------------------------------------------------------
    def client_argv(self, client, scenario):
        if scenario == "a":
            requests = self.args.requests_a
        elif scenario == "j":
            requests = min(self.args.requests_a, 1000)
        elif scenario in ("i", "k"):
            requests = min(self.args.requests_b, 10000)
        else:
            requests = self.args.requests_b
        # "baseline" is a courier-bench built from another commit (BASELINE_BIN in run.sh), so a change can be
        # compared with the code before it in the same interleaved runs.
        binary = self.args.baseline_bin if client == "baseline" else os.path.join(self.args.bin, f"{client}-bench")
        return [
            binary,
            "--scenario", scenario,
            "--base", self.base,
            "--tls-base", self.tls_base,
            "--h2-base", self.h2_base,
            "--proxy", self.proxy_base,
            "--hold-base", self.hold_base,
            "--cert", os.path.join(self.args.work, "ca.der"),
            "--cert-pem", os.path.join(self.args.work, "ca.pem"),
            "--requests", str(requests),
            "--concurrency", "64",
            "--big-path", self.args.big_path,
            "--big-size", str(self.args.big_size),
            "--upload-file", self.upload_file,
            "--scratch", self.scratch,
        ]

    def run_client(self, client, scenario, wrapper=()):
        argv = list(wrapper) + self.client_argv(client, scenario)
        # The clients' app data (a persistent cookie jar, a disk cache) in the run's own folders: every client starts
        # as on a fresh machine, whatever earlier runs or other programs left in the user's folders.
        env = dict(
            os.environ,
            TMPDIR=self.scratch,
            XDG_DATA_HOME=os.path.join(self.args.work, "xdg-data"),
            XDG_CACHE_HOME=os.path.join(self.args.work, "xdg-cache"),
            # (l): the run's own courierd, the release build beside the clients.
            XDG_RUNTIME_DIR=os.path.join(self.args.work, "xdg-run"),
            COURIERD_PATH=os.path.join(self.args.bin, "courierd"),
        )
        code, out, err, cpu, rss, wall = run_process(argv, env=env)
        record = None
        for line in out.splitlines():
            if line.startswith("{"):
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    pass
        if record is None:
            record = {"status": "error", "detail": f"exit {code}, no result line; stderr: {err.strip()[-400:]}"}
        elif code != 0 and record.get("status") == "ok":
            record["status"] = "error"
            record["detail"] = f"exit {code}"
        record.update(client=client, scenario=scenario, cpu=cpu, rss_kib=rss, wall=wall)
        # The client's own VmHWM when it reported one: wait4's ru_maxrss starts at the launcher's size (the peak of
        # the process a child was forked from carries over), which hid anything smaller (Go's client).
        if record.get("ownPeakRSSKiB"):
            record["wait4_rss_kib"] = rss
            record["rss_kib"] = record["ownPeakRSSKiB"]
        samples = record.get("queuedRSSKiB") or []
        if len(samples) >= 2 and record.get("requests"):
            record["queuedBytesPerRequest"] = (samples[-1] - samples[0]) * 1024 / record["requests"]
        self.cleanup_scratch()
        return record

    # --- References: wrk, h2load and curl -----------------------------------------------------------------
    def run_reference(self, scenario):
        if scenario in NO_REFERENCE:
            return {"client": "reference", "tool": "none", "scenario": scenario, "status": "n/a",
                    "detail": "no reference tool for this scenario", "cpu": 0.0, "rss_kib": 0, "wall": 0.0}
        if scenario == "g":
            return self.run_h2load(scenario)
        if scenario in RATE:
            return self.run_wrk(scenario)
        return self.run_curl(scenario)

    def run_wrk(self, scenario):
        connections = 1 if scenario == "a" else 64
        # (h): origin-form requests straight to the proxy port; nginx serves them through the proxy location.
        base = {"e": self.tls_base, "h": self.proxy_base}.get(scenario, self.base)
        argv = ["wrk", "-t1", f"-c{connections}", f"-d{self.args.wrk_seconds}s", "--latency", "--timeout", "30s",
                f"{base}/64b"]
        code, out, err, cpu, rss, wall = run_process(argv)
        record = {"client": "reference", "tool": "wrk", "scenario": scenario, "cpu": cpu, "rss_kib": rss,
                  "wall": wall, "status": "ok"}
        try:
            requests = int(re.search(r"(\d+) requests in ([\d.]+)(\w+)", out).group(1))
            rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
            record.update(requests=requests, requestsPerSecond=rps,
                          seconds=requests / rps if rps else 0.0,
                          p50Milliseconds=wrk_latency(out, "50%"), p99Milliseconds=wrk_latency(out, "99%"))
            problems = re.findall(r"(Non-2xx or 3xx responses: \d+|Socket errors: [^\n]+)", out)
            if code != 0 or problems:
                record.update(status="error", detail="; ".join(problems) or f"exit {code}")
        except (AttributeError, ValueError):
            record.update(status="error", detail=f"unreadable wrk output (exit {code}): {out[-300:]} {err[-300:]}")
        return record

    def run_h2load(self, scenario):
        """One HTTP/2 connection with up to 64 concurrent streams for as long as wrk runs; the latency percentiles
        come from h2load's per-request log (start, status, microseconds to the end of the response)."""
        log_file = os.path.join(self.scratch, "h2load.log")
        argv = ["h2load", "-c", "1", "-m", "64", "-D", str(self.args.wrk_seconds), "--log-file", log_file,
                f"{self.h2_base}/64b"]
        code, out, err, cpu, rss, wall = run_process(argv)
        record = {"client": "reference", "tool": "h2load", "scenario": scenario, "cpu": cpu, "rss_kib": rss,
                  "wall": wall, "status": "ok"}
        try:
            value, unit, rps = re.search(r"finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s", out).groups()
            seconds = float(value) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]
            counts = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                               r"(\d+) errored, (\d+) timeout", out).groups()
            done, succeeded, failed, errored, timeouts = (int(c) for c in counts[1:])
            ok_2xx = int(re.search(r"status codes: (\d+) 2xx", out).group(1))
            alpn = re.search(r"Application protocol: (\S+)", out)
            with open(log_file) as f:
                latencies = sorted(int(fields[2]) for fields in (line.split() for line in f)
                                   if len(fields) == 3 and fields[1] == "200")
            record.update(requests=succeeded, requestsPerSecond=float(rps), seconds=seconds,
                          p50Milliseconds=percentile(latencies, 0.50), p99Milliseconds=percentile(latencies, 0.99),
                          verified=f"{alpn.group(1) if alpn else 'no protocol'} negotiated by ALPN")
            problems = []
            if not alpn or alpn.group(1) != "h2":
                problems.append(f"negotiated {alpn.group(1) if alpn else 'no application protocol'}, not h2")
            if failed or errored or timeouts or ok_2xx != succeeded or succeeded != done or not succeeded:
                problems.append(f"{done} done, {succeeded} succeeded, {ok_2xx} 2xx, {failed} failed, "
                                f"{errored} errored, {timeouts} timed out")
            if code != 0 or problems:
                record.update(status="error", detail="; ".join(problems) or f"exit {code}")
        except (AttributeError, ValueError, OSError) as error:
            record.update(status="error", detail=f"unreadable h2load output (exit {code}, {error}): {out[-300:]} "
                                                 f"{err[-300:]}")
        self.cleanup_scratch()
        return record

    def run_curl(self, scenario):
        fmt = "%{http_code} %{size_download} %{size_upload} %{time_total} %header{x-received-length}"
        target = os.path.join(self.scratch, "curl-download")
        if scenario in ("c", "l"):
            argv = ["curl", "-sS", "-o", target, "-w", fmt, f"{self.base}{self.args.big_path}"]
        elif scenario == "d":
            argv = ["curl", "-sS", "-o", "/dev/null", "-w", fmt, f"{self.base}{self.args.big_path}"]
        else:
            argv = ["curl", "-sS", "-o", "/dev/null", "-T", self.upload_file, "-w", fmt, f"{self.base}/sink"]
        code, out, err, cpu, rss, wall = run_process(argv)
        record = {"client": "reference", "tool": "curl", "scenario": scenario, "cpu": cpu, "rss_kib": rss,
                  "wall": wall, "status": "ok", "requests": 1}
        fields = out.split()
        try:
            status, downloaded, uploaded, seconds = int(fields[0]), int(fields[1]), int(fields[2]), float(fields[3])
            if scenario in ("c", "l"):
                ok, size = status == 200 and os.path.getsize(target) == self.args.big_size, self.args.big_size
            elif scenario == "d":
                ok, size = status == 200 and downloaded == self.args.big_size, self.args.big_size
            else:
                received = int(fields[4]) if len(fields) > 4 else -1
                ok, size = status == 204 and uploaded == self.upload_size and received >= self.upload_size, \
                    self.upload_size
            record.update(bytes=size, seconds=seconds, megabytesPerSecond=size / 1e6 / seconds)
            if code != 0 or not ok:
                record.update(status="error", detail=f"exit {code}, curl said: {out.strip()} {err.strip()[-200:]}")
        except (IndexError, ValueError, OSError) as error:
            record.update(status="error", detail=f"exit {code}: {error}: {out} {err[-300:]}")
        self.cleanup_scratch()
        return record

    def accepted_connections(self):
        """The number of connections nginx has accepted so far (stub_status), counting the one that asks."""
        try:
            with urllib.request.urlopen(f"{self.base}/nginx-status", timeout=10) as response:
                status = response.read().decode()
            return int(re.search(r"server accepts handled requests\s+(\d+)", status).group(1))
        except (OSError, AttributeError, ValueError):
            return None

    def cleanup_scratch(self):
        for name in os.listdir(self.scratch):
            path = os.path.join(self.scratch, name)
            try:
                if os.path.isfile(path) or os.path.islink(path):
                    os.unlink(path)
            except OSError:
                pass


def percentile(sorted_microseconds, fraction):
    """Nearest-rank percentile in milliseconds, as the Swift clients compute theirs."""
    if not sorted_microseconds:
        return None
    rank = math.ceil(fraction * len(sorted_microseconds))
    return sorted_microseconds[min(max(rank - 1, 0), len(sorted_microseconds) - 1)] / 1000


def wrk_latency(output, label):
    match = re.search(rf"^\s*{re.escape(label)}\s+([\d.]+)(us|ms|s)\s*$", output, re.M)
    if not match:
        return None
    value, unit = float(match.group(1)), match.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


# --- Report ----------------------------------------------------------------------------------------------
def machine_description():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = "?"
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
            memory = f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass

    def version(argv):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=20)
            return (out.stdout + out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "?"

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    commit = version(["git", "-C", root, "log", "-1", "--format=%h (%cd)", "--date=format:%Y-%m-%d %H:%M"])
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return {
        "commit": commit + (", with uncommitted changes" if dirty else ""),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory": memory,
        "kernel": platform.release(),
        "swift": version(["swift", "--version"]),
        "nginx": version(["nginx", "-v"]),
        "curl": version(["curl", "--version"]),
        "wrk": version(["wrk", "--version"]),
        "h2load": version(["h2load", "--version"]),
    }


def size_label(size):
    return f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size / 2**20:g} MiB"


def metric_key(scenario):
    if scenario in MEMORY:
        return "queuedBytesPerRequest"
    return "requestsPerSecond" if scenario in RATE else "megabytesPerSecond"


def metric_unit(scenario):
    if scenario in MEMORY:
        return "B per queued request"
    return "req/s" if scenario in RATE else "MB/s"


def fmt(value, digits=0):
    if value is None:
        return "–"
    if digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def summarize(records):
    """Median and range of each metric over the runs that passed their checks."""
    ok = [r for r in records if r.get("status") == "ok"]
    summary = {"ok": len(ok), "total": len(records), "records": records}
    if not records:
        return summary
    statuses = {r.get("status") for r in records}
    if not ok:
        summary["status"] = "unsupported" if "unsupported" in statuses else "n/a" if "n/a" in statuses else "error"
        summary["detail"] = next((r.get("detail") for r in records if r.get("detail")), "")
        return summary
    summary["status"] = "ok"
    errors = [r for r in records if r.get("status") != "ok"]
    if errors:
        summary["detail"] = f"{len(errors)} run(s) failed and do not count: {errors[0].get('detail', '')}"

    def stats(values):
        values = [v for v in values if v is not None]
        if not values:
            return None
        return statistics.median(values), min(values), max(values)

    for key in ["requestsPerSecond", "megabytesPerSecond", "p50Milliseconds", "p99Milliseconds", "cpu",
                "rss_kib"]:
        summary[key] = stats([r.get(key) for r in ok])
    # (i): what each queued request cost in memory, from the process's own peak before and after the requests.
    summary["rss_per_request"] = stats([
        (r["ownPeakRSSKiB"] - r["rssBeforeKiB"]) * 1024 / r["requests"]
        if r.get("rssBeforeKiB") is not None and r.get("ownPeakRSSKiB") is not None and r.get("requests") else None
        for r in ok
    ])
    summary["queuedBytesPerRequest"] = stats([r.get("queuedBytesPerRequest") for r in ok])

    # (k): the resident-set readings (KiB) of each run.
    def queued(r, which):
        samples = r.get("queuedRSSKiB") or []
        if len(samples) < 3:
            return None
        if which == "before":
            return samples[0]
        if which == "queued":
            return samples[-1]
        # The first and the last full 1,000 started: the readings after every 1,000, without the settled one and,
        # when the count is not a multiple of 1,000, without the reading after the last (a partial thousand).
        thousands = samples[:-2] if r.get("requests", 0) % 1000 else samples[:-1]
        if len(thousands) < 3:
            return None
        return thousands[1] - thousands[0] if which == "first" else thousands[-1] - thousands[-2]
    for which in ["before", "queued", "first", "last"]:
        summary[f"queued_{which}"] = stats([queued(r, which) for r in ok])
    # Per unit: a client's CPU over its measured work alone (workCPUSeconds: without start-up, client creation and
    # shutdown, which weigh more for the Swift clients than for Go's); the reference tools' whole process.
    def work_cpu(r):
        return r.get("workCPUSeconds", r["cpu"])
    summary["cpu_per_unit"] = stats([
        (work_cpu(r) / r["requests"] * 1e6 if r.get("requests") else None) if r["scenario"] in RATE
        else (work_cpu(r) / (r["bytes"] / 2**30) if r.get("bytes") else None)
        for r in ok
    ])
    return summary


def cell(s, key, digits=0, scale=1.0):
    if s.get("status") != "ok":
        return {"unsupported": "not supported yet", "n/a": "n/a", "error": "error"}.get(s.get("status"), "–")
    triple = s.get(key)
    if triple is None:
        return "–"
    median, low, high = (v * scale for v in triple)
    return f"{fmt(median, digits)} ({fmt(low, digits)}–{fmt(high, digits)})"


def ratio(a, b, key):
    if a.get("status") != "ok" or b.get("status") != "ok" or not a.get(key) or not b.get(key):
        return None
    return a[key][0] / b[key][0] if b[key][0] else None


def fmt_ratio(value):
    return "–" if value is None else f"{value:.2f}×"


def write_report(args, machine, started, finished, load_before, load_after, results, clients):
    scenarios = args.scenarios.split()
    lines = []
    add = lines.append
    add("# Benchmark results")
    add("")
    add(f"- Date: {started:%Y-%m-%d %H:%M} – {finished:%H:%M} UTC")
    add(f"- Courier: the work tree at commit {machine['commit']}")
    add(f"- Command: `{args.command}`" + (" (quick mode: small sizes, a smoke test)" if args.quick == "1" else ""))
    add(f"- Machine: {machine['nproc']} CPUs ({machine['cpu']}), {machine['memory']} memory, Linux "
        f"{machine['kernel']}")
    add(f"- Load average (1 min) before / after: {load_before:.2f} / {load_after:.2f}")
    add(f"- Software: {machine['swift']}; {machine['nginx']} (1 worker); {machine['wrk']}; {machine['h2load']}; "
        f"{machine['curl'].split(' (')[0]}")
    add(f"- Runs: {args.runs}, interleaved (client order rotates every run). Each cell: median (min–max) over "
        "the runs whose every response passed its check; a run with an error does not count.")
    rates = ", ".join(f"({s})" for s in sorted(RATE - {"a"}))
    concurrent = ", ".join(f"({s})" for s in sorted(RATE - {"a", "i", "j"}))
    transfers = ", ".join(f"({s})" for s in sorted(set(SCENARIOS) - RATE - MEMORY))
    add(f"- Sizes: (a) {args.requests_a:,} requests; {concurrent} {args.requests_b:,} requests, 64 in flight; "
        f"(i) {min(args.requests_b, 10000):,} requests started at once; (k) {min(args.requests_b, 10000):,} requests "
        f"queued; (j) {min(args.requests_a, 1000):,} "
        f"requests, a session each; (c), (d) {args.big_size / 2**20:,.0f} MiB; (f) "
        f"{results.get('upload_size', 0) / 2**20:,.0f} MiB. wrk and h2load run {args.wrk_seconds} s per run (they are "
        "duration-based).")
    add("- CPU: the kernel's rusage of each process (wait4), the same for every client, wrk, h2load and curl. Peak "
        "RSS: each client's own VmHWM; the reference tools' from wait4, which never reads below the launcher's "
        f"~18 MiB. CPU/unit is µs of CPU per request for (a), {rates} and CPU seconds per GiB for {transfers}: for "
        "the clients, the CPU of the measured work alone (their own getrusage before the first request and after "
        "the last response: without the process's start-up, the client's creation and its shutdown); for the "
        "reference tools, the whole process's.")
    add("")
    names = [c for c in clients] + ["reference"]
    display = dict(NAMES, reference="reference")
    for scenario in scenarios:
        ref = REFERENCE_NAME[scenario]
        title = SCENARIOS[scenario].replace("1 GiB", size_label(args.big_size)).replace(
            "100 MiB", size_label(results.get("upload_size", 0)))
        add(f"## ({scenario}) {title}")
        add("")
        if scenario in SCENARIO_NOTES:
            add(SCENARIO_NOTES[scenario])
            add("")
        if scenario in MEMORY:
            add("| client | RSS before MiB | RSS with all queued MiB | B per queued request | first 1,000 KiB | "
                "last 1,000 KiB | CPU s |")
            add("| --- | --- | --- | --- | --- | --- | --- |")
        elif scenario in RATE:
            add("| client | req/s | p50 ms | p99 ms | CPU s | CPU µs/req | peak RSS MiB |")
            add("| --- | --- | --- | --- | --- | --- | --- |")
        else:
            add("| client | MB/s | CPU s | CPU s/GiB | peak RSS MiB |")
            add("| --- | --- | --- | --- | --- |")
        notes = []
        for name in names:
            s = results[scenario].get(name, {})
            label = display[name] if name != "reference" else f"reference: {ref}"
            if scenario in MEMORY:
                if name == "reference":
                    continue
                add(f"| {label} | {cell(s, 'queued_before', 1, 1 / 1024)} | {cell(s, 'queued_queued', 1, 1 / 1024)} | "
                    f"{cell(s, 'queuedBytesPerRequest')} | {cell(s, 'queued_first')} | {cell(s, 'queued_last')} | "
                    f"{cell(s, 'cpu', 2)} |")
            elif scenario in RATE:
                add(f"| {label} | {cell(s, 'requestsPerSecond')} | {cell(s, 'p50Milliseconds', 2)} | "
                    f"{cell(s, 'p99Milliseconds', 2)} | {cell(s, 'cpu', 2)} | {cell(s, 'cpu_per_unit', 1)} | "
                    f"{cell(s, 'rss_kib', 1, 1 / 1024)} |")
            else:
                add(f"| {label} | {cell(s, 'megabytesPerSecond')} | {cell(s, 'cpu', 2)} | "
                    f"{cell(s, 'cpu_per_unit', 2)} | {cell(s, 'rss_kib', 1, 1 / 1024)} |")
            if s.get("detail"):
                notes.append(f"- {label}: {s['detail']}")
            facts = []
            ok_records = [r for r in s.get("records", []) if r.get("status") == "ok"]
            if ok_records and ok_records[0].get("verified"):
                facts.append(f"checked {ok_records[0]['verified']}")
            if s.get("rss_per_request"):
                facts.append(f"peak RSS per queued request {s['rss_per_request'][0]:.0f} B (median)")
            counts = [r["connections"] for r in ok_records if r.get("connections") is not None]
            if scenario in CONNECTIONS_NOTED and counts:
                spread = str(min(counts)) if min(counts) == max(counts) else f"{min(counts)}–{max(counts)}"
                facts.append(f"{spread} connection(s) per run (nginx's count)")
            if facts:
                notes.append(f"- {label}: " + "; ".join(facts))
        add("")
        courier = results[scenario].get("courier", {})
        key = metric_key(scenario)
        unit = metric_unit(scenario)
        parts = []
        for other, label in [("ahc", "async-http-client"), ("go", "Go net/http"), ("foundation", "FoundationNetworking"),
                             ("baseline", "baseline"), ("courier-telemetry", "with in-memory telemetry"),
                             ("reference", ref)]:
            if other == "reference" and scenario in NO_REFERENCE:
                continue
            if other in results[scenario]:
                parts.append(f"Courier/{label} {fmt_ratio(ratio(courier, results[scenario][other], key))}")
        if scenario in MEMORY:
            add(f"Ratios of medians ({unit}, lower is better): " + ", ".join(parts) + ".")
        else:
            add(f"Ratios of medians ({unit}): " + ", ".join(parts) + ". Peak RSS Courier/async-http-client: "
                + fmt_ratio(ratio(courier, results[scenario].get("ahc", {}), "rss_kib")) + ".")
        add("")
        lines.extend(notes)
        if notes:
            add("")
    add("## Targets")
    add("")
    add("| target | result | met |")
    add("| --- | --- | --- |")

    def target(label, value, threshold, higher=True):
        if value is None:
            add(f"| {label} | – | not measured |")
            return
        met = value >= threshold if higher else value <= threshold
        add(f"| {label} | {value:.2f}× | {'yes' if met else '**no**'} |")

    for scenario, threshold in [("a", 1.2), ("b", 1.2), ("g", 1.0)]:
        if scenario in results:
            target(f"({scenario}) Courier ≥ {threshold:.1f}× async-http-client req/s",
                   ratio(results[scenario].get("courier", {}), results[scenario].get("ahc", {}),
                         "requestsPerSecond"), threshold)
    # Go's net/http, the peer a Linux user would otherwise pick for speed.
    for scenario, threshold in [("a", 1.0), ("b", 1.2), ("e", 1.0), ("c", 1.0), ("d", 1.0)]:
        if scenario in results and "go" in results[scenario]:
            metric = "requestsPerSecond" if scenario in RATE else "megabytesPerSecond"
            target(f"({scenario}) Courier ≥ {threshold:.1f}× Go net/http",
                   ratio(results[scenario].get("courier", {}), results[scenario].get("go", {}), metric), threshold)
    if "i" in results and results["i"].get("courier", {}).get("rss_per_request"):
        per_request = results["i"]["courier"]["rss_per_request"][0]
        add(f"| (i) Courier < 2 KiB of peak RSS per queued request | {per_request:.0f} B | "
            f"{'yes' if per_request < 2048 else '**no**'} |")
    if "k" in results and results["k"].get("courier", {}).get("queuedBytesPerRequest"):
        courier_k = results["k"]["courier"]
        per_request = courier_k["queuedBytesPerRequest"][0]
        add(f"| (k) Courier < 2 KiB of RSS per queued request | {per_request:.0f} B | "
            f"{'yes' if per_request < 2048 else '**no**'} |")
        if courier_k.get("queued_first") and courier_k.get("queued_last"):
            first, last = courier_k["queued_first"][0], courier_k["queued_last"][0]
            add(f"| (k) Courier: the last 1,000 queued cost no more than the first 1,000 | {last:.0f} KiB against "
                f"{first:.0f} KiB | {'yes' if last <= first else '**no**'} |")
    if "e" in results and "ahc" in results["e"]:
        target("(e) Courier ≥ 1.2× async-http-client req/s",
               ratio(results["e"].get("courier", {}), results["e"].get("ahc", {}), "requestsPerSecond"), 1.2)
    if "l" in results and "c" in results:
        target("(l) Courier's background download ≥ 0.90× its in-process download (c) MB/s",
               ratio(results["l"].get("courier", {}), results["c"].get("courier", {}), "megabytesPerSecond"), 0.9)
        # The same, each scenario against curl in its own slot: (c) and (l) run minutes apart, and the machine's
        # speed moves between them (curl's own figure has differed by 1.6× between the two).
        in_l = ratio(results["l"].get("courier", {}), results["l"].get("reference", {}), "megabytesPerSecond")
        in_c = ratio(results["c"].get("courier", {}), results["c"].get("reference", {}), "megabytesPerSecond")
        target("(l) the same, each against curl in its own slot: ((l) / curl) ÷ ((c) / curl)",
               in_l / in_c if in_l is not None and in_c else None, 0.9)
    for scenario, threshold in [("c", 1.0), ("d", 1.0), ("f", 0.80)]:
        if scenario in results:
            target(f"({scenario}) Courier ≥ {threshold:.2f}× curl MB/s",
                   ratio(results[scenario].get("courier", {}), results[scenario].get("reference", {}),
                         "megabytesPerSecond"), threshold)
    for scenario in [s for s in scenarios if s not in MEMORY]:
        target(f"({scenario}) Courier peak RSS ≤ async-http-client's",
               ratio(results[scenario].get("courier", {}), results[scenario].get("ahc", {}), "rss_kib"), 1.0,
               higher=False)
    add("")
    add("## Every run")
    add("")
    add("Main metric of every process (req/s, MB/s, or for (k) bytes per queued request; `err`, `unsup`, `n/a` where "
        "it did not count), in run order.")
    add("")
    add("| scenario | client | " + " | ".join(f"run {i + 1}" for i in range(args.runs)) + " |")
    add("| --- | --- | " + " | ".join("---" for _ in range(args.runs)) + " |")
    for scenario in scenarios:
        for name in names:
            records = results[scenario].get(name, {}).get("records", [])
            values = []
            for r in records:
                status = r.get("status")
                if status == "ok":
                    values.append(fmt(r.get(metric_key(scenario))))
                else:
                    values.append({"unsupported": "unsup", "n/a": "n/a"}.get(status, "err"))
            add(f"| ({scenario}) | {display[name]} | " + " | ".join(values) + " |")
    add("")
    return "\n".join(lines)


def profile(harness, args):
    """Runs one client process under `perf record` (the cpu-clock software event: this machine has no hardware
    counters, and valgrind 3.19 crashes on the toolchain's binaries) and writes the top costs, demangled."""
    client, scenario = args.profile.split(":")
    stem = os.path.join(os.path.dirname(args.raw), f"perf.{client}.{scenario}")
    if args.profile_event == "offcpu":
        # Where threads block: every context switch, with the stack that led to it.
        stem += ".offcpu"
        event = ["-e", "sched:sched_switch"]
    else:
        event = ["-e", "cpu-clock", "-F", "2000"]
    wrapper = ["perf", "record", "-q", *event, "--call-graph", "dwarf,16384", "-o", f"{stem}.data"]
    record = harness.run_client(client, scenario, wrapper=wrapper)
    log(f"profiled run: {json.dumps(record, sort_keys=True)}")
    for options, suffix in [(["--no-children", "--sort", "dso,symbol", "-g", "none"], "self"),
                            (["--children", "--sort", "symbol", "-g", "none"], "inclusive"),
                            (["--no-children", "--sort", "symbol", "-g", "caller,0.5,callee,function,percent",
                              "--percent-limit", "2"], "callers")]:
        report = subprocess.run(["perf", "report", "-i", f"{stem}.data", "--stdio", "--percent-limit", "0.3",
                                 *options], capture_output=True, text=True, check=False).stdout
        demangled = subprocess.run(["swift", "demangle", "--simplified"], input=report, capture_output=True,
                                   text=True, check=False).stdout
        with open(f"{stem}.{suffix}.txt", "w") as out:
            out.write(demangled or report)
    log(f"wrote {stem}.data and {stem}.{{self,inclusive,callers}}.txt")


def main():
    LAUNCHER[0] = Launcher()
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--port", required=True)
    parser.add_argument("--tls-port", required=True)
    parser.add_argument("--h2-port", required=True, help="HTTPS listener with HTTP/2 (scenario g)")
    parser.add_argument("--proxy-port", required=True, help="the HTTP forward proxy (scenario h)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", default="0")
    parser.add_argument("--scenarios", default="a b c d e f g h i j k")
    parser.add_argument("--clients", default="courier foundation ahc go")
    parser.add_argument("--big-path", default="/1g")
    parser.add_argument("--big-size", type=int, default=1 << 30)
    parser.add_argument("--requests-a", type=int, default=2000)
    parser.add_argument("--requests-b", type=int, default=50000)
    parser.add_argument("--wrk-seconds", type=int, default=10)
    parser.add_argument("--results", required=True)
    parser.add_argument("--raw", required=True)
    parser.add_argument("--command", default="Benchmarks/run.sh")
    parser.add_argument("--baseline-bin", help="courier-bench built from another commit, run as client 'baseline'")
    parser.add_argument("--profile", help="CLIENT:SCENARIO: run that one process under perf record instead")
    parser.add_argument("--profile-event", default="cpu", help="cpu (cpu-clock samples) or offcpu (context switches)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    harness = Harness(args)
    if args.profile:
        profile(harness, args)
        return
    clients = args.clients.split()
    participants = clients + ["reference"]
    scenarios = args.scenarios.split()
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()[0]
    raw = {s: {p: [] for p in participants} for s in scenarios}
    with open(args.raw, "w") as raw_file:
        for run in range(args.runs):
            for scenario in scenarios:
                shift = run % len(participants)
                order = participants[shift:] + participants[:shift]
                for participant in order:
                    before = harness.accepted_connections()
                    if participant == "reference":
                        record = harness.run_reference(scenario)
                    else:
                        record = harness.run_client(participant, scenario)
                    after = harness.accepted_connections()
                    # The connections nginx accepted while the process ran, less the one that read the count
                    # after it; in (h) this includes the proxy's new connections to the origin.
                    if before is not None and after is not None:
                        record["connections"] = after - before - 1
                    record["run"] = run + 1
                    raw[scenario][participant].append(record)
                    raw_file.write(json.dumps(record, sort_keys=True) + "\n")
                    raw_file.flush()
                    value = record.get(metric_key(scenario))
                    log(f"run {run + 1}/{args.runs} ({scenario}) {participant:10} {record['status']:11} "
                        f"{fmt(value) if value else '':>10} {metric_unit(scenario)} "
                        f"cpu {record['cpu']:.2f}s rss {record['rss_kib'] / 1024:.1f}MiB "
                        f"{record.get('detail', '') or ''}"[:300])
    finished = datetime.datetime.now(datetime.timezone.utc)
    load_after = os.getloadavg()[0]
    results = {s: {p: summarize(raw[s][p]) for p in participants} for s in scenarios}
    results["upload_size"] = harness.upload_size
    report = write_report(args, machine_description(), started, finished, load_before, load_after, results,
                          clients)
    with open(args.results, "w") as f:
        f.write(report)
    log(f"wrote {args.results} (raw records: {args.raw})")


if __name__ == "__main__":
    main()
