#!/usr/bin/env python3
"""Compares the public API of the toolchain's FoundationNetworking with Courier's.

Usage: api_compat.py FOUNDATION_NETWORKING_GRAPH_DIR COURIER_GRAPH_DIR ALLOWLIST

Both directories hold symbol graphs (`<Module>.symbols.json` plus `<Module>@<Other>.symbols.json` for
extensions of other modules' types). A symbol is identified by its path (pathComponents joined with ".",
which carries argument labels, e.g. `URLRequest.init(url:cachePolicy:timeoutInterval:)`) and its kind
(`swift.method`, `swift.property`, ...). Conformances are compared too, as `Type: Protocol`.

For every FoundationNetworking symbol the script reports
  missing   no Courier symbol with the same path and kind;
  mismatch  the symbol exists but code written against FoundationNetworking may not compile against Courier:
            - optionality of a parameter, of the return type, or of a property's type differs;
            - FoundationNetworking's declaration is `open` and Courier's is not (a subclass or override breaks);
            - Courier's declaration is `async` or `throws` where FoundationNetworking's is not.
Settability (`{ get set }`) is NOT compared: the toolchain's graph prints `{ get set }` for `internal(set)`
properties (e.g. `URLSessionTask.state`), so it cannot tell a public setter from an internal one.

Noise rules (the only symbols ignored without an allowlist entry):
  1. Synthesized members (precise identifier contains `::SYNTHESIZED::`): members a type gets from a
     protocol's default implementation or inherits (`hashValue`, `!=`, ...). The conformance that brings them
     is compared instead.
  2. Any path component starting with `_`: underscored names are not public API by Swift convention.
  3. Conformances to the marker protocols `Copyable`, `Escapable` and `SendableMetatype`, which every type has
     implicitly or which follow from `Sendable`.

Exit status: 0 when nothing is missing or mismatched outside the allowlist, 1 otherwise. An allowlist entry
that matches nothing (stale) or has no `# reason` is an error too, so the list only shrinks.
"""

import glob
import json
import os
import sys

MARKER_PROTOCOLS = {"Copyable", "Escapable", "SendableMetatype"}
CALLABLE_KINDS = {
    "swift.func", "swift.func.op", "swift.method", "swift.type.method", "swift.init", "swift.subscript",
    "swift.type.subscript",
}
PROPERTY_KINDS = {"swift.property", "swift.type.property", "swift.var"}
OPEN_CHECKED_KINDS = CALLABLE_KINDS | PROPERTY_KINDS | {"swift.class"}


def load_graphs(directory, module):
    """Returns (overloads by key, conformance set) for `module` from the graphs in `directory`.

    A key is (path, kind); overloads (same labels, different types, e.g. `dataTask(with:)` taking a URL or a
    URLRequest) share a key, so each key maps to a list of symbols.
    """
    paths = glob.glob(os.path.join(directory, f"{module}.symbols.json"))
    paths += glob.glob(os.path.join(directory, f"{module}@*.symbols.json"))
    if not paths:
        sys.exit(f"api-compat: no symbol graph for {module} in {directory}")
    symbols = {}
    names = {}
    raw_conformances = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)
        for symbol in graph["symbols"]:
            names[symbol["identifier"]["precise"]] = ".".join(symbol["pathComponents"])
            if is_noise(symbol):
                continue
            key = (".".join(symbol["pathComponents"]), symbol["kind"]["identifier"])
            symbols.setdefault(key, []).append(symbol)
        raw_conformances += [r for r in graph["relationships"] if r["kind"] in ("conformsTo", "inheritsFrom")]
    conformances = set()
    for relation in raw_conformances:
        source = names.get(relation["source"])
        if source is None or any(part.startswith("_") for part in source.split(".")):
            continue
        target = relation.get("targetFallback") or names.get(relation["target"], relation["target"])
        target = target.split(".")[-1]  # `Foundation.NSCopying` and `NSCopying` are the same protocol.
        if target in MARKER_PROTOCOLS or target.startswith("_"):
            continue
        conformances.add(f"{source}: {target}")
    return symbols, conformances


def is_noise(symbol):
    if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
        return True
    return any(part.startswith("_") for part in symbol["pathComponents"])


def text(fragments):
    return "".join(fragment["spelling"] for fragment in fragments or [])


def is_optional(type_text):
    type_text = type_text.strip()
    return type_text.endswith("?") or type_text.endswith("!") or type_text.startswith("Optional<")


def parameter_types(symbol):
    """The parameters' type texts, in order (the `name: ` prefix removed)."""
    result = []
    for parameter in (symbol.get("functionSignature") or {}).get("parameters", []):
        fragments = parameter["declarationFragments"]
        spelled = text(fragments)
        result.append(spelled.split(": ", 1)[1] if ": " in spelled else spelled)
    return result


def return_type(symbol):
    signature = symbol.get("functionSignature")
    return text(signature.get("returns")) if signature else ""


def property_type(symbol):
    declaration = text(symbol["declarationFragments"])
    after_colon = declaration.split(": ", 1)[1] if ": " in declaration else ""
    return after_colon.split(" {", 1)[0]


def effects(symbol):
    keywords = {f["spelling"] for f in symbol["declarationFragments"] if f["kind"] == "keyword"}
    return keywords & {"async", "throws", "rethrows"}


def mismatches(path, kind, reference, candidate):
    """Why code compiled against `reference` may not compile against `candidate` (empty when it will)."""
    problems = []
    if kind in OPEN_CHECKED_KINDS and reference["accessLevel"] == "open" and candidate["accessLevel"] != "open":
        problems.append(f"is {candidate['accessLevel']}, FoundationNetworking's is open")
    if kind in CALLABLE_KINDS:
        expected, actual = parameter_types(reference), parameter_types(candidate)
        if len(expected) == len(actual):
            for index, (want, have) in enumerate(zip(expected, actual)):
                if is_optional(want) != is_optional(have):
                    problems.append(f"parameter {index + 1} is `{have}`, FoundationNetworking's is `{want}`")
        else:
            problems.append(f"has {len(actual)} parameters, FoundationNetworking's has {len(expected)}")
        if kind != "swift.init" and is_optional(return_type(reference)) != is_optional(return_type(candidate)):
            problems.append(
                f"returns `{return_type(candidate)}`, FoundationNetworking's returns `{return_type(reference)}`")
        if kind == "swift.init":
            failable = ["init?" in text(s["declarationFragments"]) for s in (reference, candidate)]
            if failable[0] != failable[1]:
                problems.append("failability differs")
    if kind in PROPERTY_KINDS and is_optional(property_type(reference)) != is_optional(property_type(candidate)):
        problems.append(
            f"has type `{property_type(candidate)}`, FoundationNetworking's is `{property_type(reference)}`")
    added = effects(candidate) - effects(reference) - ({"throws"} if "rethrows" in effects(reference) else set())
    if added:
        problems.append(f"is {' '.join(sorted(added))}, FoundationNetworking's is not")
    return problems


def compare(path, kind, symbol, candidates):
    """Problems of the best-matching Courier overload: the one with the same parameter types if there is one,
    otherwise the one with the fewest problems; `["missing"]` when there is none."""
    if not candidates:
        return ["missing"]
    same_types = [c for c in candidates if normalized(parameter_types(c)) == normalized(parameter_types(symbol))]
    results = [mismatches(path, kind, symbol, c) for c in (same_types or candidates)]
    return [f"mismatch: {problem}" for problem in min(results, key=len)]


def normalized(types):
    return [t.replace("any ", "").replace(" ", "") for t in types]


def load_allowlist(path):
    entries, errors = {}, []
    if not os.path.exists(path):
        return entries, errors
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            symbol, _, reason = line.partition(" # ")
            if not reason.strip():
                errors.append(f"{path}:{number}: entry without a `# reason`: {line.strip()}")
            entries[symbol.strip()] = reason.strip()
    return entries, errors


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    reference_dir, courier_dir, allowlist_path = sys.argv[1:]
    reference, reference_conformances = load_graphs(reference_dir, "FoundationNetworking")
    courier, courier_conformances = load_graphs(courier_dir, "Courier")
    allowlist, errors = load_allowlist(allowlist_path)
    used = set()
    failures = []
    matched = allowlisted = 0
    total = 0
    for (path, kind), overloads in sorted(reference.items()):
        for symbol in overloads:
            total += 1
            problems = compare(path, kind, symbol, courier.get((path, kind), []))
            if not problems:
                matched += 1
            elif path in allowlist:
                allowlisted += 1
                used.add(path)
            else:
                failures += [f"  {problem}: {kind} {path}" for problem in problems]
    for conformance in sorted(reference_conformances):
        if conformance in courier_conformances:
            matched += 1
        elif conformance in allowlist:
            allowlisted += 1
            used.add(conformance)
        else:
            failures.append(f"  missing: conformance {conformance}")
    errors += [f"stale allowlist entry (nothing to excuse): {entry}" for entry in sorted(set(allowlist) - used)]
    for line in failures + errors:
        print(line)
    total += len(reference_conformances)
    print(
        f"api-compat: {total} FoundationNetworking symbols, {matched} matched, {allowlisted} allowlisted, "
        f"{sum('missing' in f for f in failures)} missing, {sum('mismatch' in f for f in failures)} mismatched"
        + (f", {len(errors)} allowlist errors" if errors else ""))
    return 1 if failures or errors else 0


if __name__ == "__main__":
    sys.exit(main())
