#!/usr/bin/env python3
"""Live heap per request from a `perf record` of the C library's allocator (the figures of ANALYSIS.md's "live heap").

Set up the probes once (as root), then record a client queueing requests:

    LIBC=/lib/x86_64-linux-gnu/libc.so.6
    perf probe -x $LIBC -a 'mallocsz=malloc bytes' -a 'mallocret=malloc%return ret=$retval' \
        -a 'callocsz=calloc n sz' -a 'callocret=calloc%return ret=$retval' \
        -a 'reallocp=realloc ptr bytes' -a 'reallocret=realloc%return ret=$retval' -a 'freep=free ptr'
    perf record -g -o live.data -e 'probe_libc:*' courier-bench --scenario k --requests 3000 ...
    perf script -i live.data -F tid,time,event,trace,ip,sym > live.txt
    Benchmarks/Scripts/live_heap.py live.txt 3000 [--at SECONDS] [--detail TEXT]

Every allocation not freed by `--at` (a `perf script` timestamp; by default the start of the longest pause between
allocations, when every request is queued and the client waits) is counted, and the bytes are grouped by the first two frames that are not the
allocator or the Swift runtime, per request.
"""
import argparse
import collections
import re

RUNTIME = ("malloc", "calloc", "realloc", "swift_slowAlloc", "swift_allocObject", "swift_allocBox", "operator new",
           "swift::", "_swift", "__swift", "swift_", "[unknown]")


def read_events(path):
    """(time, thread, probe, fields, stack) for each sample, in time order."""
    events, current = [], None
    for line in open(path, errors="replace"):
        if not line.strip():
            continue
        if not line.startswith("\t"):
            match = re.match(r"^\s*(\d+)\s+([\d.]+):\s+probe_libc:(\w+):(.*)$", line)
            current = None
            if match:
                fields = {k: int(v, 0) for k, v in re.findall(r"(\w+)=(0x[0-9a-f]+|\d+)", match.group(4))}
                current = [float(match.group(2)), int(match.group(1)), match.group(3), fields, []]
                events.append(current)
        elif current is not None:
            parts = line.strip().split(None, 1)
            if len(parts) > 1:
                current[4].append(parts[1])
    events.sort(key=lambda event: event[0])
    return events


def live_allocations(events, until):
    """address -> (size, stack) of the allocations not freed by `until`."""
    pending, live = {}, {}
    for time, thread, probe, fields, stack in events:
        if time > until:
            break
        if probe == "mallocsz":
            pending[thread] = (fields.get("bytes", 0), stack)
        elif probe == "callocsz":
            pending[thread] = (fields.get("n", 0) * fields.get("sz", 0), stack)
        elif probe == "reallocp":
            live.pop(fields.get("ptr", 0), None)
            pending[thread] = (fields.get("bytes", 0), stack)
        elif (probe.endswith("__return") or probe.endswith("ret")) and thread in pending:
            live[fields.get("ret", 0)] = pending.pop(thread)
        elif probe == "freep":
            live.pop(fields.get("ptr", 0), None)
    return live


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("script", help="the output of perf script")
    parser.add_argument("requests", type=int, help="how many requests were queued")
    parser.add_argument("--at", type=float, help="the moment to count at (default: the start of the longest pause)")
    parser.add_argument("--detail", help="list the sizes and stacks of the groups whose first frame contains this")
    args = parser.parse_args()
    events = read_events(args.script)
    allocations = [event[0] for event in events if event[2] == "mallocsz"]
    # By default: the start of the longest pause between allocations, which is when every request is queued and the
    # client waits (scenario (k) then cancels them all, freeing everything).
    pause = max(range(len(allocations) - 1), key=lambda i: allocations[i + 1] - allocations[i])
    until = args.at if args.at is not None else allocations[pause]
    live = live_allocations(events, until)
    total = sum(size for size, _ in live.values())
    print(f"live bytes {total}, {total / args.requests:.1f} per request, "
          f"{len(live) / args.requests:.2f} allocations per request")
    groups, counts = collections.Counter(), collections.Counter()
    for size, stack in live.values():
        frames = [frame for frame in stack if not frame.startswith(RUNTIME)]
        key = " <- ".join(frame[:60] for frame in frames[:2]) if frames else "?"
        groups[key] += size
        counts[key] += 1
    for key, size in groups.most_common(40):
        print(f"{size / args.requests:8.1f} B/req {counts[key] / args.requests:5.2f}/req  {key}")
    if args.detail:
        detail = collections.Counter()
        for size, stack in live.values():
            frames = [frame for frame in stack if not frame.startswith(RUNTIME)]
            if frames and args.detail in frames[0]:
                detail[(size, " <- ".join(frame[:70] for frame in stack[:6]))] += 1
        for (size, stack), count in detail.most_common(12):
            print(f"{count / args.requests:.2f}/req  {size} B  {stack}")


if __name__ == "__main__":
    main()
