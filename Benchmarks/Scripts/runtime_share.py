#!/usr/bin/env python3
"""The share of a profile's samples spent in the Swift runtime's type machinery (ANALYSIS.md's "runtime lookups").

Record a client and turn the profile into text:

    perf record -F 4000 -g -o a.data -- courier-bench --scenario a --base http://127.0.0.1:PORT \
        --requests 8000 --concurrency 1 --scratch DIR
    perf script -i a.data > a.txt
    Benchmarks/Scripts/runtime_share.py a.txt

A sample counts when its leaf frame is in `libswiftCore` and one of its six innermost frames is a metadata
lookup, a protocol conformance or witness table lookup, a dynamic cast or a `swift_once` check: work that
specialised code does not do. Those samples are grouped by the first frame of Courier's own modules, the code that
asked for the lookup.

With `--exclusivity` (`runtime_share.py --exclusivity a.txt`) it counts the run-time exclusivity checks instead
(`swift_beginAccess`, `swift_endAccess` and their access set, in any runtime library): what the compiler could not
prove about an access to a class's stored property or a global.
"""
import collections
import subprocess
import sys

LOOKUPS = ("swift_conformsToProtocol", "getCache", "_swift_getGenericMetadata", "instantiateConcreteType",
           "swift_getWitnessTable", "ConcurrentReadableHashMap", "swift_once", "_checkGenericRequirements",
           "swift_getAssociated", "TypeDecoder", "swift_getTypeByMangled", "swift_dynamicCast", "tryCast",
           "MetadataCache", "swift_getSingletonMetadata", "swift_getCanonical", "_gatherGenericParameters",
           "swift_getExistential")
EXCLUSIVITY = ("swift_beginAccess", "swift_endAccess", "AccessSet")
COURIER_MODULES = ("7Courier", "11CourierHTTP", "16CourierTransport")


def samples(path):
    """Each sample's frames (symbol, object), innermost first."""
    frames = []
    for line in open(path, errors="replace"):
        if not line.strip():
            if frames:
                yield frames
            frames = []
            continue
        if line[0] not in " \t":
            continue
        parts = line.strip().split(None, 1)
        if len(parts) == 2:
            symbol, _, dso = parts[1].rpartition(" (")
            frames.append((symbol.split("+0x")[0], dso))
    if frames:
        yield frames


def main():
    exclusivity = "--exclusivity" in sys.argv[1:]
    path = [arg for arg in sys.argv[1:] if arg != "--exclusivity"][0]
    total, hits, askers = 0, 0, collections.Counter()
    for frames in samples(path):
        total += 1
        if exclusivity:
            if not any(check in frames[0][0] for check in EXCLUSIVITY):
                continue
        elif "libswiftCore" not in frames[0][1]:
            continue
        elif not any(lookup in symbol for symbol, _ in frames[:6] for lookup in LOOKUPS):
            continue
        hits += 1
        asker = next((symbol for symbol, _ in frames if any(m in symbol for m in COURIER_MODULES)), "(no Courier frame)")
        askers[asker] += 1
    names = list(askers)
    demangled = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(names),
                               capture_output=True, text=True).stdout.splitlines()
    readable = dict(zip(names, demangled)) if len(demangled) == len(names) else {}
    what = "in exclusivity checks" if exclusivity else "in runtime lookups"
    print(f"samples {total}, {what} {hits} ({100 * hits / max(total, 1):.1f} %)")
    for name, count in askers.most_common(15):
        print(f"{count:6}  {readable.get(name, name)[:140]}")


if __name__ == "__main__":
    main()
