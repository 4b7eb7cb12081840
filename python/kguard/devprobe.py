"""kguard's device probe: is the device this kernel uses still healthy?

kguard runs `check()` inside the guarded kernel as a silent execute request
(silent, not stored in the history, its output never shown) when text that
looks like a sticky GPU error was printed but not raised: a print, a log
line, a subprocess's output. A poisoned CUDA/HIP context fails every later
synchronisation and allocation with the sticky error, so:

- kguard's labelled emulation (KGUARD_EMULATE) active in this process:
  it answers as a poisoned device would;
- torch imported and its CUDA/HIP context initialised: synchronise, allocate
  and touch one element on the current device, synchronise again;
- else the CUDA or HIP runtime already loaded in the process (never loaded
  here: that would create a context): cudaDeviceSynchronize / hipMalloc
  through ctypes, a non-zero status raised with the runtime's own text;
- else there is no device to probe: the check passes.

check() raises the device's error (kguard classifies its text) or returns a
short word saying what it checked.
"""

import os
import sys


def _mapped(stem):
    """Path of an already loaded shared library whose name starts with stem."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rsplit(None, 1)[-1] if "/" in line else ""
                if os.path.basename(path).startswith(stem + ".so"):
                    return path
    except OSError:
        pass
    return None


def _runtime(stem, prefix, label):
    import ctypes
    path = _mapped(stem)
    if not path:
        return False
    rt = ctypes.CDLL(path)
    errstr = getattr(rt, prefix + "GetErrorString")
    errstr.restype = ctypes.c_char_p

    def ok(rc):
        if rc:
            text = errstr(rc).decode("utf-8", "replace")
            raise RuntimeError("%s error: %s" % (label, text))

    ok(getattr(rt, prefix + "DeviceSynchronize")())
    ptr = ctypes.c_void_p()
    ok(getattr(rt, prefix + "Malloc")(ctypes.byref(ptr), ctypes.c_size_t(256)))
    ok(getattr(rt, prefix + "Free")(ptr))
    ok(getattr(rt, prefix + "DeviceSynchronize")())
    return True


def check():
    emu = sys.modules.get("kguard.emulate")
    if emu is not None and emu.active():
        emu.probe()
        return "emulation"
    torch = sys.modules.get("torch")
    if torch is not None:
        cuda = getattr(torch, "cuda", None)
        if cuda is not None and cuda.is_initialized():
            dev = cuda.current_device()
            cuda.synchronize(dev)
            torch.ones(1, device="cuda:%d" % dev).add_(1)
            cuda.synchronize(dev)
            return "torch"
        return "no device"
    if _runtime("libcudart", "cuda", "CUDA") or _runtime("libamdhip64", "hip", "HIP"):
        return "runtime"
    return "no device"
