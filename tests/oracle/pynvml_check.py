"""pynvml_check: compare what pynvml read (pynvml_read.py) with `ghostvram snapshot --json` and
with the simulator's truth, for one variant and one scenario. Prints one line per finding and
exits 1 on the first difference. Used by tests/integration/t_oracle_pynvml.sh.

  pynvml_check.py VARIANT PYNVML.json SNAPSHOT.json TRUTH.json RAW.json

TRUTH.json (written by the test from what it started and the sim's `gpus` file):
  {"gpus": [{"index", "uuid", "name", "pci", "total", "reserved", "allocated",
             "listed": [[pid, bytes], ...], "lost": bool, "lost_handle": bool, "mig": bool,
             "mig_instances": N, "mig_listed": [[pid, bytes, gpu instance], ...]}]}
RAW.json: gv-simquery's output (the stand-in's records in list order), for the misread.

What a real driver of each generation exports (docs/nvml-abi.md §6, docs/simulator.md): the
stride of _v3 (None: no _v3 symbols), MemoryInfo_v2, MPS lists, MIG mode, the _v2 handle calls."""
import json
import struct
import sys

MIB = 1 << 20

VARIANTS = {
    "current": {"v3": 24, "mem_v2": True, "mps": True, "mig": True, "v2api": True},
    "535.54.03": {"v3": 32, "mem_v2": True, "mps": True, "mig": True, "v2api": True},
    "535.98": {"v3": None, "mem_v2": True, "mps": True, "mig": True, "v2api": True},
    "470.42.01": {"v3": None, "mem_v2": False, "mps": True, "mig": True, "v2api": True},
    # the real 440 exports the _v2 count/handle calls; the variant drops them on purpose
    "440.33.01": {"v3": None, "mem_v2": False, "mps": False, "mig": False, "v2api": False},
}
NOT_FOUND = 6
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
NA = 0xFFFFFFFF
PAD = 0xA5A5A5A5  # the stand-in's record padding (sim/nvml/nvml_sim.c SIM_PADDING_BYTE)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def eq(got, want, what):
    if got != want:
        fail("%s: got %r, expected %r" % (what, got, want))
    print("ok   %s = %r" % (what, got))


def ok(r, what):
    if "ok" not in r:
        fail("%s: pynvml raised %r" % (what, r))
    return r["ok"]


def error(r, code, what):
    eq(r.get("error"), code, what + " fails with NVML error")


def instances(t):
    """pid -> (GPU instance, compute instance) NVML must report: MIG ids, else 0xFFFFFFFF."""
    return {pid: (gi, 0) for pid, _, gi in t.get("mig_listed", [])}


def misread_32(records, count, inst):
    """The 24-byte records pynvml 11.525 reads from a buffer of 32-byte ones (535.43-535.86):
    the driver writes `count` records of 32 bytes into a zeroed ctypes array sized for
    2*count+5 records of 24; pynvml reads `count` records at a 24-byte stride."""
    buf = bytearray(24 * (2 * count + 5))
    for k, (pid, nbytes) in enumerate(records):
        gi, ci = inst.get(pid, (NA, NA))
        struct.pack_into("<IIQIIQ", buf, 32 * k, pid, PAD, nbytes, gi, ci, 0)
    out = []
    for i in range(count):
        pid, _, mem, gi, ci = struct.unpack_from("<IIQII", buf, 24 * i)
        out.append([pid, mem, gi, ci])
    return out


def ghostvram_checks(v, t, s, raw):
    """What ghostvram reads (through its own fallbacks) against the truth, for every variant."""
    w = "GPU %d: " % t["index"]
    if t["lost"] or t["lost_handle"]:
        eq(s["status"], "lost", w + "ghostvram status")
        return None
    eq(s["uuid"], t["uuid"], w + "UUID (ghostvram)")
    dom, bus, dev = t["pci"].split(":")[0], t["pci"].split(":")[1], t["pci"].split(":")[2].split(".")[0]
    eq(s["pci_bus_id"], ("%04x:%s:%s.0" % (int(dom, 16), bus, dev)).lower(), w + "PCI bus id (ghostvram)")
    sm = s["memory"]
    total, reserved, alloc = t["total"], t["reserved"], t["allocated"]
    eq(sm["total_bytes"], total, w + "total (ghostvram)")
    if v["mem_v2"]:
        eq([sm["used_bytes"], sm["reserved_bytes"], sm["api"]], [alloc, reserved, 2], w + "memory (ghostvram, v2)")
    else:
        eq([sm["used_bytes"], sm["api"], sm["used_includes_reserved"]], [reserved + alloc, 1, True],
           w + "memory (ghostvram, v1)")
    if v["mig"]:
        eq(s["mig_mode"], t["mig"], w + "MIG mode (ghostvram)")
        n = t.get("mig_instances", 0)
        size = (t["total"] - t["reserved"]) // n // MIB * MIB if n else 0
        eq([[m["gpu_instance"], m["compute_instance"], m["total_bytes"], m["used_bytes"]] for m in s["mig_devices"]],
           [[gi, 0, size, sum(b for _, b, g in t.get("mig_listed", []) if g == gi)] for gi in range(1, n + 1)],
           w + "MIG devices [GI, CI, total, used] (ghostvram)")
    listed = sorted(map(list, t["listed"]))
    eq(sorted([p["pid"], p["used_bytes"]] for p in s["nvml_processes"]), listed, w + "processes (ghostvram)")
    if v["v2api"]:
        # the instance ids come with the 24-byte records (_v2 and _v3); ghostvram reads them
        inst = instances(t)
        eq(sorted([p["pid"], p["gpu_instance"], p["compute_instance"]] for p in s["nvml_processes"]),
           sorted([pid, *(inst[pid] if pid in inst else (None, None))] for pid, _ in listed),
           w + "processes' MIG instances (ghostvram)")
    raw_list = [[p["pid"], p["bytes"]] for p in raw["gpus"][t["index"]]["procs"]]
    eq(sorted(raw_list), listed, w + "processes (the stand-in's own records)")
    return raw_list


def mig_checks(v, t, m, w):
    """MIG devices through pynvml: one per GPU instance, its memory and its processes only."""
    n = t.get("mig_instances", 0)
    eq(ok(m["max_count"], "max MIG devices"), 7 if t["mig"] else 0, w + "nvmlDeviceGetMaxMigDeviceCount")
    if not t["mig"]:
        return
    devs = m["devices"]
    eq(len(devs), n + 1, w + "MIG device handles until NOT_FOUND")
    error(devs[n]["handle"], NOT_FOUND, w + "MIG device %d (none)" % n)
    size = (t["total"] - t["reserved"]) // n // MIB * MIB if n else 0
    for i, d in enumerate(devs[:n]):
        x = w + "MIG device %d: " % i
        ok(d["handle"], x + "handle")
        eq(ok(d["is_mig"], "is MIG"), 1, x + "nvmlDeviceIsMigDeviceHandle")
        eq(ok(d["gpu_instance"], "GI"), i + 1, x + "GPU instance id")
        eq(ok(d["compute_instance"], "CI"), 0, x + "compute instance id")
        eq(ok(d["parent_is_gpu"], "parent"), True, x + "parent device (by UUID)")
        eq(ok(d["uuid"], "uuid")[:4], "MIG-", x + "UUID prefix")
        mine = sorted([pid, b] for pid, b, gi in t["mig_listed"] if gi == i + 1)
        used = sum(b for _, b in mine)
        m1 = ok(d["memory_v1"], "memory v1")
        eq([m1["total"], m1["used"], m1["free"]], [size, used, size - used], x + "memory v1 [total, used, free]")
        if v["mem_v2"]:
            m2 = ok(d["memory_v2"], "memory v2")
            eq([m2["total"], m2["reserved"], m2["used"], m2["free"]], [size, 0, used, size - used],
               x + "memory v2 [total, reserved, used, free]")
        if v["v3"] is None:
            error(d["compute"], FUNCTION_NOT_FOUND, x + "compute processes (_v3 absent)")
        elif v["v3"] == 24:
            got = sorted([p["pid"], p["usedGpuMemory"], p["gpuInstanceId"], p["computeInstanceId"]]
                         for p in ok(d["compute"], "procs"))
            eq(got, [[pid, b, i + 1, 0] for pid, b in mine], x + "compute processes: its instance's only")


def main():
    variant, py, snap, truth, raw = sys.argv[1], *(json.load(open(p)) for p in sys.argv[2:6])
    v = VARIANTS[variant]
    ok(py["init"], "nvmlInit (pynvml calls nvmlInitWithFlags(0))")
    eq(ok(py["driver_version"], "driver version"), snap["driver"]["version"], "driver version (pynvml = ghostvram)")
    eq(ok(py["nvml_version"], "NVML version"), snap["driver"]["nvml_version"], "NVML version (pynvml = ghostvram)")
    eq(len(snap["gpus"]), len(truth["gpus"]), "GPU count (ghostvram)")
    raw_lists = [ghostvram_checks(v, t, s, raw) for t, s in zip(truth["gpus"], snap["gpus"])]
    if not v["v2api"]:
        # pynvml only knows nvmlDeviceGetCount_v2: on this symbol set it stops here
        error(py["count"], FUNCTION_NOT_FOUND, "nvmlDeviceGetCount (the _v2 symbol)")
        return
    eq(ok(py["count"], "count"), len(truth["gpus"]), "GPU count")
    for t, g, raw_list in zip(truth["gpus"], py["gpus"], raw_lists):
        i = t["index"]
        w = "GPU %d: " % i
        if t["lost_handle"]:
            error(g["handle"], GPU_IS_LOST, w + "handle")
            continue
        ok(g["handle"], w + "handle")
        if t["lost"]:
            for k in ("name", "uuid", "pci", "memory_v1", "persistence"):
                error(g[k], GPU_IS_LOST, w + k)
            # pynvml looks the symbol up before it calls it
            error(g["compute"], GPU_IS_LOST if v["v3"] else FUNCTION_NOT_FOUND, w + "compute")
            continue
        eq(ok(g["name"], "name"), t["name"], w + "name")
        eq(ok(g["uuid"], "uuid"), t["uuid"], w + "UUID")
        pci = ok(g["pci"], "pci")
        eq(pci["busId"], t["pci"], w + "PCI busId")
        dom, bus, dev = t["pci"].split(":")[0], t["pci"].split(":")[1], t["pci"].split(":")[2].split(".")[0]
        eq(pci["busIdLegacy"], "%04X:%s:%s.0" % (int(dom, 16) & 0xFFFF, bus, dev), w + "PCI busIdLegacy")
        total, reserved, alloc = t["total"], t["reserved"], t["allocated"]
        m1 = ok(g["memory_v1"], "memory v1")
        eq([m1["total"], m1["used"], m1["free"]], [total, reserved + alloc, total - reserved - alloc],
           w + "memory v1 [total, used = reserved + allocated, free]")
        if v["mem_v2"]:
            m2 = ok(g["memory_v2"], "memory v2")
            eq([m2["total"], m2["reserved"], m2["used"], m2["free"]], [total, reserved, alloc, total - reserved - alloc],
               w + "memory v2 [total, reserved, used, free]")
        else:
            error(g["memory_v2"], FUNCTION_NOT_FOUND, w + "memory v2")
        eq(ok(g["persistence"], "persistence"), 1, w + "persistence mode")
        if v["mig"]:
            eq(ok(g["mig"], "mig"), [int(t["mig"])] * 2, w + "MIG mode [current, pending]")
            mig_checks(v, t, g["mig_devices"], w)
        listed = sorted(map(list, t["listed"]))
        if v["v3"] is None:
            # pynvml 11.525 only calls _v3: "Function Not Found", as users report on 535.98
            error(g["compute"], FUNCTION_NOT_FOUND, w + "compute processes (_v3 absent)")
            error(g["graphics"], FUNCTION_NOT_FOUND, w + "graphics processes (_v3 absent)")
            continue
        got = [[p["pid"], p["usedGpuMemory"], p["gpuInstanceId"], p["computeInstanceId"]] for p in ok(g["compute"], "procs")]
        inst = instances(t)
        if v["v3"] == py["v3_record_size"]:
            eq(sorted(got), sorted([pid, b, *inst.get(pid, (NA, NA))] for pid, b in listed),
               w + "compute processes (pynvml = truth)")
        else:
            want = misread_32(raw_list, len(raw_list), inst)
            eq(got, want, w + "compute processes as pynvml misreads 32-byte records")
            if len(raw_list) > 1:
                eq(got[1][0], 0, w + "second record's PID (reads usedGpuCcProtectedMemory)")
                eq(got[1][1] >> 32, PAD, w + "second record's memory (PID | padding << 32): huge")
        eq(ok(g["graphics"], "graphics"), [], w + "graphics processes")
        eq(ok(g["mps"], "mps"), [], w + "MPS processes")
    ok(py["shutdown"], "nvmlShutdown")


if __name__ == "__main__":
    main()
