#!/usr/bin/env bash
# Fails when a public symbol of the toolchain's FoundationNetworking is missing from Courier, or exists with a
# signature that code written against FoundationNetworking cannot use (see Scripts/api_compat.py for the rules),
# unless it is listed in Scripts/api-compat-allowlist.txt with a reason.
#
# Usage (from anywhere): bash Scripts/api-compat.sh
# Reuses the package's .build: when Courier is already built, extracting its symbol graph takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

triple="$(uname -m)-unknown-linux-gnu"
swift_bin="$(dirname "$(command -v swift)")"
toolchain_modules="${swift_bin%/bin}/lib/swift/linux"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/FoundationNetworking"

# FoundationNetworking as the toolchain ships it.
swift symbolgraph-extract -module-name FoundationNetworking -I "$toolchain_modules" -target "$triple" \
    -output-dir "$work/FoundationNetworking"

# Courier: builds what is not built yet, then writes every target's graph to .build/<triple>/symbolgraph.
swift package dump-symbol-graph --skip-synthesized-members >"$work/dump.log" 2>&1 || {
    cat "$work/dump.log"
    exit 1
}
graphs="$(sed -n 's/^Files written to //p' "$work/dump.log" | tail -n 1)"
graphs="${graphs:-.build/$triple/symbolgraph}"

python3 Scripts/api_compat.py "$work/FoundationNetworking" "$graphs" Scripts/api-compat-allowlist.txt
