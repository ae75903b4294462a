#!/usr/bin/env python3
"""Exact counts of reference-count operations and allocations per request, for comparing two builds.

CPU time per request moves by 5-10 % from run to run on a small virtual machine; these counts do not move at all
(the same binary gives the same figure to the tenth). They count calls, not their cost: a `swift_retain` of a
contended object costs more than one nobody else touches, and a call on `nil` costs almost nothing. Run as root
(uprobes), against a server that is already up (`KEEP=1 Benchmarks/run.sh` leaves its nginx configuration in the work
directory):

    Benchmarks/Scripts/calls_per_request.py --base http://127.0.0.1:PORT --scratch DIR [--scenario a] \
        CLIENT [CLIENT ...]

Each client runs the scenario twice, with 1,000 and 3,000 requests (or `--low`/`--high`); the difference divided by
the difference in requests is what one request costs, without the process's start and end. The probes are
`perf probe -x LIBSWIFTCORE swift_retain` (and `swift_release`) and `perf probe -x LIBC malloc`; the script adds them
when they are missing.
"""
import argparse
import subprocess
import sys

SWIFT_CORE = "/opt/swift/usr/lib/swift/linux/libswiftCore.so"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
PROBES = [("probe_libswiftCore:swift_retain", SWIFT_CORE, "swift_retain"),
          ("probe_libswiftCore:swift_release", SWIFT_CORE, "swift_release"),
          ("probe_libc:malloc", LIBC, "malloc")]


def ensure_probes():
    present = subprocess.run(["perf", "probe", "-l"], capture_output=True, text=True).stdout
    for event, library, function in PROBES:
        if event not in present:
            subprocess.run(["perf", "probe", "-x", library, function], check=True, capture_output=True)


def counts(client, args, requests):
    command = ["perf", "stat", "-x,", "-e", ",".join(event for event, _, _ in PROBES), client,
               "--scenario", args.scenario, "--base", args.base, "--requests", str(requests),
               "--concurrency", str(args.concurrency), "--scratch", args.scratch]
    result = subprocess.run(command, capture_output=True, text=True)
    found = {}
    for line in result.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2] in {event for event, _, _ in PROBES}:
            found[fields[2]] = int(fields[0])
    if len(found) != len(PROBES):
        sys.exit(f"{client}: no counts (is the server up? are you root?)\n{result.stderr}")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clients", nargs="+")
    parser.add_argument("--base", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--scenario", default="a")
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--low", type=int, default=1000)
    parser.add_argument("--high", type=int, default=3000)
    args = parser.parse_args()
    if args.concurrency is None:
        args.concurrency = 1 if args.scenario == "a" else 64
    ensure_probes()
    for client in args.clients:
        low, high = counts(client, args, args.low), counts(client, args, args.high)
        per_request = {event.split(":")[1]: (high[event] - low[event]) / (args.high - args.low)
                       for event, _, _ in PROBES}
        print(client, " ".join(f"{name} {value:.1f}" for name, value in per_request.items()))


if __name__ == "__main__":
    main()
