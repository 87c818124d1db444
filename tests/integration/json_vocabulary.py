#!/usr/bin/env python3
"""Check ghostvram JSON documents against the shared vocabulary (docs/json.md).

Usage: json_vocabulary.py NAME=FILE...   (a FILE holds one document, or one per line)

Rules, on every object at any depth:
  - a document's top level has schema_version == 2;
  - no key is named `gpu`: a GPU object says `index`, another object `gpu_index`;
  - an object with a GPU `uuid` ("GPU-...") is a GPU object: it has `index` (a number) and
    `pci_bus_id`;
  - `pci_bus_id` is null or "dddd:bb:dd.f" in lower case;
  - `pid`, `ppid`, `pgid`, `sid`, `*_pid` are numbers or null; `pids` and `*_pids` are arrays
    of numbers;
  - `time`, `since` and `*_time` are null or RFC 3339 UTC to the second, each with a sibling
    `*_epoch` (a number or null) that names the same second; no time is written in `*_ns`;
  - memory is `*_bytes` (an integer or null), never `mib`/`*_mib`; `*_seconds` is a number or
    null; `*_count` an integer;
  - a name has one shape: `events`, `errors`, `runs`, `findings`, `holders`, `processes`,
    `actions`, `targets`, `skipped`, `notes`, `limits`, `samples` are arrays; `event` and `command`
    are strings; `kernel_event` is an object;
  - no integer beyond 2^53 (JSON readers lose its digits: such identifiers are text).
Prints what it saw per rule; exits 1 on the first document that breaks one, 2 on bad input.
"""
import calendar
import json
import re
import sys
import time

PCI = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
PID_KEYS = {"pid", "ppid", "pgid", "sid"}
ARRAYS = {"events", "errors", "runs", "findings", "holders", "processes", "actions", "targets", "skipped",
          "notes", "limits", "samples"}
STRINGS = {"event", "command"}
seen = {"documents": 0, "gpu objects": 0, "pci_bus_id": 0, "pid fields": 0, "pids arrays": 0,
        "pids values": 0, "times": 0, "gpu_index": 0}
errors = []


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_time_key(k):
    return k in ("time", "since") or k.endswith("_time")


def check(o, where):
    if isinstance(o, list):
        for i, v in enumerate(o):
            check(v, f"{where}[{i}]")
        return
    if not isinstance(o, dict):
        return
    for k, v in o.items():
        at = f"{where}.{k}"
        if k == "gpu":
            errors.append(f"{at}: a key named 'gpu' (index in a GPU object, gpu_index elsewhere)")
        if k == "gpu_index":
            seen["gpu_index"] += 1
            if v is not None and not isinstance(v, int):
                errors.append(f"{at}: {v!r} is not a number")
        if k == "uuid" and isinstance(v, str) and v.startswith("GPU-"):
            seen["gpu objects"] += 1
            if not isinstance(o.get("index"), int) or "pci_bus_id" not in o:
                errors.append(f"{where}: a GPU object (uuid {v}) without index and pci_bus_id")
        if k == "pci_bus_id" or k.endswith("_pci_bus_id"):
            seen["pci_bus_id"] += 1
            if v is not None and not (isinstance(v, str) and PCI.match(v)):
                errors.append(f"{at}: {v!r} is not dddd:bb:dd.f")
        if k in PID_KEYS or k.endswith("_pid"):
            seen["pid fields"] += 1
            if v is not None and not isinstance(v, int):
                errors.append(f"{at}: {v!r} is not a number")
        if k == "pids" or k.endswith("_pids"):
            seen["pids arrays"] += 1
            if not isinstance(v, list) or not all(isinstance(p, int) for p in v):
                errors.append(f"{at}: {v!r} is not an array of numbers")
            else:
                seen["pids values"] += len(v)
        if k.endswith("_ns"):
            errors.append(f"{at}: a time in nanoseconds (a time is text plus *_epoch)")
        if k == "mib" or k.endswith("_mib"):
            errors.append(f"{at}: memory in MiB (memory is *_bytes)")
        if k.endswith("_bytes") and v is not None and not isinstance(v, int):
            errors.append(f"{at}: {v!r} is not an integer of bytes")
        if k.endswith("_seconds") and v is not None and not is_num(v):
            errors.append(f"{at}: {v!r} is not a number of seconds")
        if k.endswith("_count") and not isinstance(v, int):
            errors.append(f"{at}: {v!r} is not a count")
        if k in ARRAYS and not isinstance(v, list):
            errors.append(f"{at}: {v!r} is not an array (one shape per name)")
        if k in STRINGS and not isinstance(v, str):
            errors.append(f"{at}: {v!r} is not a string (one shape per name)")
        if k == "kernel_event" and not isinstance(v, dict):
            errors.append(f"{at}: {v!r} is not an object")
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2 ** 53:
            errors.append(f"{at}: {v} is beyond 2^53 (write such an identifier as text)")
        if is_time_key(k):
            seen["times"] += 1
            ek = k + "_epoch"
            if ek not in o:
                errors.append(f"{at}: no sibling {ek}")
            elif v is None:
                if o[ek] is not None:
                    errors.append(f"{at}: null while {ek} is {o[ek]!r}")
            elif not (isinstance(v, str) and RFC3339.match(v)):
                errors.append(f"{at}: {v!r} is not RFC 3339 UTC to the second")
            elif not is_num(o[ek]):
                errors.append(f"{at}: {ek} is {o[ek]!r}")
            elif calendar.timegm(time.strptime(v, "%Y-%m-%dT%H:%M:%SZ")) != int(o[ek] // 1):
                errors.append(f"{at}: {v} and {ek} {o[ek]} are not the same second")
        check(v, at)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    for arg in sys.argv[1:]:
        name, _, path = arg.partition("=")
        text = open(path, encoding="utf-8").read()
        try:
            docs = [json.loads(text)]
        except json.JSONDecodeError:
            try:
                docs = [json.loads(line) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError as e:
                print(f"{name}: not JSON: {e}", file=sys.stderr)
                return 2
        if not docs:
            print(f"{name}: no document", file=sys.stderr)
            return 2
        for n, d in enumerate(docs):
            seen["documents"] += 1
            if not isinstance(d, dict) or d.get("schema_version") != 2:
                errors.append(f"{name}#{n}: schema_version is not 2")
            check(d, f"{name}#{n}")
        if errors:
            for e in errors[:20]:
                print("FAIL:", e, file=sys.stderr)
            return 1
    print(" ".join(f"{k}={v}" for k, v in seen.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
