#!/usr/bin/env python3
"""How many of a binary's dynamic relocations each module's data needs (ANALYSIS.md's "the gap is Courier's
footprint at start").

    Benchmarks/Scripts/relocations_by_module.py Benchmarks/.build/release/courier-bench [--top N]

The dynamic loader reads a binary's whole relocation table at start-up and writes every target, so each relocation
costs resident memory whether or not the code it serves ever runs. Each relocation (`readelf -r --wide`) is charged
to the symbol at its offset (`nm -n --defined-only`): to the module a Swift symbol's mangled name starts with, or
to the first characters of a C or C++ symbol's name.
"""
import argparse
import bisect
import collections
import re
import subprocess


def relocation_offsets(binary):
    listing = subprocess.run(["readelf", "-r", "--wide", binary], capture_output=True, text=True, check=True).stdout
    return [int(line.split()[0], 16) for line in listing.splitlines() if re.match(r"^[0-9a-f]+ +[0-9a-f]+ +R_", line)]


def symbols(binary):
    listing = subprocess.run(["nm", "-n", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    found = []
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            found.append((int(fields[0], 16), fields[2]))
    return found


def module(name):
    swift = re.match(r"^\$s(\d+)(\w+)", name)
    if swift:
        return swift.group(2)[: int(swift.group(1))]
    return "C: " + name[:16]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--top", type=int, default=30)
    arguments = parser.parse_args()
    table = symbols(arguments.binary)
    addresses = [address for address, _ in table]
    counts = collections.Counter()
    offsets = relocation_offsets(arguments.binary)
    for offset in offsets:
        index = bisect.bisect_right(addresses, offset) - 1
        counts[module(table[index][1]) if index >= 0 else "?"] += 1
    print(f"{len(offsets)} relocations")
    for name, count in counts.most_common(arguments.top):
        print(f"{count:8d}  {name}")


if __name__ == "__main__":
    main()
