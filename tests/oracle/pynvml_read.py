"""pynvml_read: what NVIDIA's Python binding (nvidia-ml-py, unmodified) reads from the NVML
library it finds (libnvidia-ml.so.1 on LD_LIBRARY_PATH), as JSON on stdout.

Used by tests/integration/t_oracle_pynvml.sh. Every call is made the way pynvml's users make
it; an NVMLError becomes {"error": CODE, "text": ...} so the test can assert the exact failure.
Run with the system python3 and PYTHONPATH at the unpacked pynvml.py."""
import ctypes
import json
import sys

import pynvml as N


def call(fn, *args):
    try:
        v = fn(*args)
        # some calls (nvmlDeviceIsMigDeviceHandle in 11.525) hand back the ctypes value itself
        return {"ok": v.value if isinstance(v, ctypes._SimpleCData) else v}
    except N.NVMLError as e:
        return {"error": e.value, "text": str(e)}


def procs(fn, handle):
    r = call(fn, handle)
    if "ok" in r:
        r["ok"] = [
            {
                "pid": p.pid,
                "usedGpuMemory": p.usedGpuMemory,
                "gpuInstanceId": p.gpuInstanceId,
                "computeInstanceId": p.computeInstanceId,
            }
            for p in r["ok"]
        ]
    return r


def memory(handle, version=None):
    r = call(N.nvmlDeviceGetMemoryInfo, handle, version) if version else call(N.nvmlDeviceGetMemoryInfo, handle)
    if "ok" in r:
        m = r["ok"]
        r["ok"] = {"total": m.total, "free": m.free, "used": m.used}
        if version:
            r["ok"]["reserved"] = m.reserved
    return r


def gpu(index):
    g = {"index": index}
    h = call(N.nvmlDeviceGetHandleByIndex, index)
    if "error" in h:
        g["handle"] = h
        return g
    h = h["ok"]
    g["handle"] = {"ok": True}
    g["name"] = call(N.nvmlDeviceGetName, h)
    g["uuid"] = call(N.nvmlDeviceGetUUID, h)
    g["minor"] = call(N.nvmlDeviceGetMinorNumber, h)
    pci = call(N.nvmlDeviceGetPciInfo, h)
    if "ok" in pci:
        p = pci["ok"]
        pci["ok"] = {"busId": p.busId, "busIdLegacy": p.busIdLegacy, "domain": p.domain, "bus": p.bus,
                     "device": p.device}
    g["pci"] = pci
    g["memory_v1"] = memory(h)
    g["memory_v2"] = memory(h, N.nvmlMemory_v2)
    g["persistence"] = call(N.nvmlDeviceGetPersistenceMode, h)
    g["mig"] = call(N.nvmlDeviceGetMigMode, h)
    g["compute"] = procs(N.nvmlDeviceGetComputeRunningProcesses, h)
    g["graphics"] = procs(N.nvmlDeviceGetGraphicsRunningProcesses, h)
    g["mps"] = procs(N.nvmlDeviceGetMPSComputeRunningProcesses, h)
    g["mig_devices"] = mig_devices(h)
    return g


def mig_devices(h):
    """MIG devices the way pynvml's users walk them: the maximum count, then a handle per index
    until NOT_FOUND; for each its ids, parent, UUID, memory and compute processes."""
    r = {"max_count": call(N.nvmlDeviceGetMaxMigDeviceCount, h)}
    if "ok" not in r["max_count"]:
        return r
    parent_uuid = call(N.nvmlDeviceGetUUID, h).get("ok")
    devs = []
    for i in range(r["max_count"]["ok"]):
        m = call(N.nvmlDeviceGetMigDeviceHandleByIndex, h, i)
        if "error" in m:
            devs.append({"handle": m})
            break
        m = m["ok"]
        parent = call(N.nvmlDeviceGetDeviceHandleFromMigDeviceHandle, m)
        devs.append({
            "handle": {"ok": True},
            "is_mig": call(N.nvmlDeviceIsMigDeviceHandle, m),
            "gpu_instance": call(N.nvmlDeviceGetGpuInstanceId, m),
            "compute_instance": call(N.nvmlDeviceGetComputeInstanceId, m),
            "parent_is_gpu": {"ok": call(N.nvmlDeviceGetUUID, parent["ok"]).get("ok") == parent_uuid}
            if "ok" in parent else parent,
            "uuid": call(N.nvmlDeviceGetUUID, m),
            "memory_v1": memory(m),
            "memory_v2": memory(m, N.nvmlMemory_v2),
            "compute": procs(N.nvmlDeviceGetComputeRunningProcesses, m),
        })
    r["devices"] = devs
    return r


def main():
    out = {
        # the record pynvml reads _v3 lists with: its stride
        "v3_record_size": ctypes.sizeof(N.c_nvmlProcessInfo_t),
        "init": call(N.nvmlInit),
    }
    if "ok" in out["init"]:
        out["driver_version"] = call(N.nvmlSystemGetDriverVersion)
        out["nvml_version"] = call(N.nvmlSystemGetNVMLVersion)
        count = call(N.nvmlDeviceGetCount)
        out["count"] = count
        if "ok" in count:
            out["gpus"] = [gpu(i) for i in range(count["ok"])]
        out["shutdown"] = call(N.nvmlShutdown)
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
