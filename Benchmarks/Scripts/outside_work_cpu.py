#!/usr/bin/env python3
"""CPU each client process spends outside its measured work (ANALYSIS.md's "CPU per request is the work's own").

    Benchmarks/Scripts/outside_work_cpu.py Benchmarks/results/raw-YYYYMMDDTHHMMSSZ.jsonl [--scenarios abegj]

For every successful client run that reports `workCPUSeconds` (its own getrusage around the requests), the process's
whole CPU (`cpu`, from wait4) less that: start-up, client creation, shutdown and exit. Prints the median per
scenario and client, in milliseconds.
"""
import argparse
import collections
import json
import statistics


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("raw", help="a raw-*.jsonl file written by Scripts/bench.py")
    parser.add_argument("--scenarios", default="abegj", help="scenario letters to print (default: abegj)")
    args = parser.parse_args()
    outside = collections.defaultdict(list)
    with open(args.raw) as f:
        for line in f:
            record = json.loads(line)
            if record.get("status") != "ok" or "workCPUSeconds" not in record:
                continue
            outside[(record["scenario"], record["client"])].append((record["cpu"] - record["workCPUSeconds"]) * 1000)
    clients = sorted({client for _, client in outside})
    print("scenario | " + " | ".join(clients) + "   (ms of CPU outside the work, median)")
    for scenario in args.scenarios:
        cells = [f"{statistics.median(outside[(scenario, c)]):.1f}" if outside[(scenario, c)] else "–" for c in clients]
        print(f"({scenario})      | " + " | ".join(cells))


if __name__ == "__main__":
    main()
