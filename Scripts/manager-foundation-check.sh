#!/usr/bin/env bash
# CourierManager must use only the URLSession API that Apple's Foundation has too: its sources import Courier when
# it is there, else FoundationNetworking (Foundation on Apple platforms). This compiles them alone, without Courier,
# against the toolchain's FoundationNetworking, which declares Apple's URLSession API. Apple's own Foundation is not
# on this machine; FoundationNetworking stands in for it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mktemp -d "${TMPDIR:-/tmp}/courier-manager-check.XXXXXX")"
trap 'rm -rf "$out"' EXIT
swiftc -swift-version 6 -module-name CourierManager -parse-as-library -emit-library \
    -o "$out/libCourierManager.so" "$here"/Sources/CourierManager/*.swift
echo "manager-foundation-check: CourierManager compiles against FoundationNetworking without Courier"
