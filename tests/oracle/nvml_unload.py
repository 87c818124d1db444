"""nvml_unload: a thread stuck in an NVML call, then the library unloaded under it.

  nvml_unload.py LIBRARY

$GHOSTVRAM_SIM names a simulated host whose hang knob wedges nvmlDeviceGetCount_v2. The
thread calls it; the main thread dlclose()s the library and sleeps. On a library that can
be unloaded (NVIDIA's has no NODELETE flag) the stuck thread returns into unmapped code
and the process dies of SIGSEGV; on the stand-in built with -z nodelete it lives on and
this prints "alive". Shows which of the two a test runs against."""
import _ctypes
import ctypes
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
if lib.nvmlInit_v2() != 0:
    print("init failed")
    sys.exit(2)
n = ctypes.c_uint(0)
threading.Thread(target=lambda: lib.nvmlDeviceGetCount_v2(ctypes.byref(n)), daemon=True).start()
time.sleep(0.3)  # the call is stuck now
handle = lib._handle
del lib
_ctypes.dlclose(handle)
time.sleep(0.5)
print("alive")
