#!/usr/bin/env python3
"""Where a running client's resident memory is (the figures of ANALYSIS.md's "Peak RSS: where Courier's memory is").

Run a client long enough to look at it, then read its memory map as root:

    courier-bench --scenario a --base http://127.0.0.1:PORT --requests 40000 --concurrency 1 --scratch DIR &
    sleep 3; Benchmarks/Scripts/rss_breakdown.py $! [--binary PATH]

Prints the resident KiB of each mapped file and of anonymous memory (from /proc/PID/smaps). With `--binary` (the
client's executable), it also names the ELF section of each resident page of that file (`readelf -S`) and the module
of each resident page of its code (`nm -n`: the module a Swift symbol's mangled name starts with, or a C symbol's
first characters), with how many KiB of that module's code the file has in all.
"""
import argparse
import bisect
import collections
import os
import re
import struct
import subprocess

PAGE = os.sysconf("SC_PAGE_SIZE")


def mappings(pid):
    """(start, end, permissions, file offset, path) of each mapping."""
    for line in open(f"/proc/{pid}/maps"):
        fields = line.split()
        start, end = (int(x, 16) for x in fields[0].split("-"))
        yield start, end, fields[1], int(fields[2], 16), fields[5] if len(fields) > 5 else "[anon]"


def resident_by_mapping(pid):
    totals = collections.Counter()
    name = None
    for line in open(f"/proc/{pid}/smaps"):
        fields = line.split()
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            name = os.path.basename(fields[5]) if len(fields) > 5 else "[anon]"
        elif fields[0] == "Rss:":
            totals[name] += int(fields[1])
    return totals


def resident_pages(pid, path):
    """(virtual address, file offset, permissions) of each resident page mapped from `path`."""
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for start, end, permissions, offset, mapped in mappings(pid):
            if mapped != path:
                continue
            for address in range(start, end, PAGE):
                pagemap.seek(address // PAGE * 8)
                if struct.unpack("Q", pagemap.read(8))[0] >> 63:
                    yield address, offset + address - start, permissions


def sections(binary):
    table = []
    for line in subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True).stdout.splitlines():
        match = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if match:
            table.append((match.group(1), int(match.group(2), 16), int(match.group(3), 16)))
    return table


def module(symbol):
    match = re.match(r"^\$s(\d+)([A-Za-z_]\w*)", symbol)
    if match:
        return match.group(2)[: int(match.group(1))]
    return "swift (other)" if symbol.startswith("$s") else "C: " + symbol[:12]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pid")
    parser.add_argument("--binary", help="the client's executable, for sections and code modules")
    arguments = parser.parse_args()
    totals = resident_by_mapping(arguments.pid)
    print(f"resident KiB in all: {sum(totals.values())}")
    for name, kib in totals.most_common(20):
        print(f"{kib:8d}  {name}")
    if not arguments.binary:
        return
    binary = os.path.realpath(arguments.binary)
    table = sections(binary)
    by_section = collections.Counter()
    pages = list(resident_pages(arguments.pid, binary))
    for _, offset, permissions in pages:
        name = next((n for n, start, size in table if start <= offset < start + size), "?")
        by_section[name] += PAGE // 1024
    print("\nresident KiB of the binary by section:")
    for name, kib in by_section.most_common(15):
        print(f"{kib:8d}  {name}")
    # Code pages by module. The executable is position-independent: its first mapping (offset 0) is its base.
    base = min(start for start, _, _, offset, path in mappings(arguments.pid) if path == binary and offset == 0)
    symbols = []
    for line in subprocess.run(["nm", "-n", "--defined-only", binary], capture_output=True, text=True).stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "tTwW":
            symbols.append((int(fields[0], 16), fields[2]))
    addresses = [address for address, _ in symbols]
    resident = {address for address, _, _ in pages}
    in_all, in_memory = collections.Counter(), collections.Counter()
    for start, end, permissions, _, path in mappings(arguments.pid):
        if path != binary or "x" not in permissions:
            continue
        for address in range(start, end, PAGE):
            first = max(bisect.bisect_right(addresses, address - base) - 1, 0)
            last = bisect.bisect_right(addresses, address - base + PAGE - 1)
            for name in {module(symbols[k][1]) for k in range(first, last)}:
                in_all[name] += PAGE // 1024
                if address in resident:
                    in_memory[name] += PAGE // 1024
    print("\nresident KiB of code by module (of KiB in the file):")
    for name, kib in in_memory.most_common(25):
        print(f"{kib:8d}  of {in_all[name]:6d}  {name}")


if __name__ == "__main__":
    main()
