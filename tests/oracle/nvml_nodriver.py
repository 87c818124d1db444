"""nvml_nodriver: what an NVML library answers on a host whose NVIDIA kernel module is not
loaded - before init, init itself, after the failed init - and its error strings, as JSON.

  nvml_nodriver.py LIBRARY

Run on NVIDIA's real libnvidia-ml and on each stand-in variant (without $GHOSTVRAM_SIM, which
is the stand-in's "no kernel module") by tests/integration/t_oracle_real_lib.sh, which demands
the same answers. Only return codes and strings: no handle exists without a driver."""
import ctypes
import json
import sys

lib = ctypes.CDLL(sys.argv[1])


def sym(*names):
    """The first of names the library exports (the stand-in's legacy variant lacks _v2)."""
    for n in names:
        try:
            return getattr(lib, n)
        except AttributeError:
            pass
    return None


init = sym("nvmlInit_v2", "nvmlInit")
init_flags = sym("nvmlInitWithFlags")
count = sym("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount")
handle = sym("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex")
lib.nvmlErrorString.restype = ctypes.c_char_p

buf = ctypes.create_string_buffer(96)
n = ctypes.c_uint(0)
dev = ctypes.c_void_p()
evset = ctypes.c_void_p()


def nvml_version(length=80, out=buf):
    rc = lib.nvmlSystemGetNVMLVersion(out, length)
    return [rc, buf.value.decode() if rc == 0 else None]


out = {}
for phase in ("before_init", "after_failed_init"):
    if phase == "after_failed_init":
        out["init"] = init()
        out["init_with_flags"] = init_flags(0) if init_flags else "absent"
    out[phase] = {
        "nvml_version": nvml_version(),
        "nvml_version_short_buffer": lib.nvmlSystemGetNVMLVersion(buf, 4),
        "nvml_version_null": lib.nvmlSystemGetNVMLVersion(None, 80),
        "driver_version": lib.nvmlSystemGetDriverVersion(buf, 80),
        "driver_version_null": lib.nvmlSystemGetDriverVersion(None, 80),
        "count": count(ctypes.byref(n)),
        "count_null": count(None),  # init is checked before arguments
        "handle": handle(0, ctypes.byref(dev)),
        "event_set_create": lib.nvmlEventSetCreate(ctypes.byref(evset)),
        "shutdown": lib.nvmlShutdown(),
    }
codes = list(range(0, 32)) + [999, 1000]
out["error_strings"] = {str(c): lib.nvmlErrorString(c).decode() for c in codes}
json.dump(out, sys.stdout, indent=1, sort_keys=True)
print()
