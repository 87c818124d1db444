"""nvml_unload: a thread stuck in an NVML call, then the library unloaded under it.

  nvml_unload.py LIBRARY

$GHOSTVRAM_SIM names a simulated host whose hang knob wedges nvmlDeviceGetCount_v2. The
thread calls it; once that thread sleeps in the stand-in's hang (a nanosleep system call, seen
in /proc/self/task/TID/syscall), the main thread dlclose()s the library and sleeps. On a library that can
be unloaded (NVIDIA's has no NODELETE flag) the stuck thread returns into unmapped code
and the process dies of SIGSEGV; on the stand-in built with -z nodelete it lives on and
this prints "alive". Shows which of the two a test runs against."""
import _ctypes
import ctypes
import platform
import sys
import threading
import time

# nanosleep, clock_nanosleep (the hang sleeps in one of them, sleep() included)
SLEEPS = {"x86_64": {"35", "230"}, "aarch64": {"101", "115"}}.get(platform.machine(), set())


def sleeping(tid):
    """Is thread tid in a sleep system call? None when this cannot be seen."""
    if not SLEEPS:
        return None
    try:
        with open(f"/proc/self/task/{tid}/syscall") as f:
            return f.read().split()[0] in SLEEPS
    except (OSError, IndexError):
        return None


lib = ctypes.CDLL(sys.argv[1])
if lib.nvmlInit_v2() != 0:
    print("init failed")
    sys.exit(2)
n = ctypes.c_uint(0)
t = threading.Thread(target=lambda: lib.nvmlDeviceGetCount_v2(ctypes.byref(n)), daemon=True)
t.start()
# until the call is stuck (the thread sleeps in the hang: nothing else in it sleeps), 10 s at
# most; where the system call cannot be seen, a generous wait instead
end = time.monotonic() + 10
while True:
    st = sleeping(t.native_id)
    if st is None:
        time.sleep(2)
        break
    if st:
        break
    if time.monotonic() > end:
        print("the call did not get stuck", file=sys.stderr)
        sys.exit(3)
    time.sleep(0.01)
handle = lib._handle
del lib
_ctypes.dlclose(handle)
# the stuck thread returns into the library every 10 ms (the unloadable build): time for it
# to run on a loaded machine
time.sleep(2)
print("alive")
