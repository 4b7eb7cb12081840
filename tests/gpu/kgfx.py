"""ctypes wrapper of the kgfx fixture libraries (tests/gpu/kgfx_cuda.c, and its
HIP twin kgfx_hip.hip: same C API; a library whose name says "hip" words
its errors "HIP error: ...", as the ROCm builds of PyTorch do).

Imported inside a live ipykernel (under `kguard kernel`) by
tests/gpu/real_device.py. A failed call raises RuntimeError worded as
PyTorch words CUDA errors ("CUDA error: <the driver's own string>"), so the
real driver's text reaches kguard the way a torch error would.
KGFX_LIB: the built library; KGFX_PTX: kgfx_cuda.ptx (default: beside this file).
"""
import ctypes
import os

HERE = os.path.dirname(os.path.abspath(__file__))
_lib = None


def lib():
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL(os.path.abspath(os.environ["KGFX_LIB"]))
        for name in ("kgfx_error_name", "kgfx_error_string", "kgfx_last_error"):
            getattr(_lib, name).restype = ctypes.c_char_p
        _lib.kgfx_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return _lib


def _check(what, rc):
    if rc == 0:
        return 0
    l = lib()
    if rc < 0:
        raise RuntimeError("kgfx %s: %s" % (what, l.kgfx_last_error().decode()))
    prefix = "HIP error" if "hip" in os.path.basename(os.environ["KGFX_LIB"]) else "CUDA error"
    raise RuntimeError("%s: %s (%s %d from %s)" % (prefix,
        l.kgfx_error_string(rc).decode(), l.kgfx_error_name(rc).decode(), rc, what))


def init(device=0):
    ptx = os.environ.get("KGFX_PTX", os.path.join(HERE, "kgfx_cuda.ptx"))
    return _check("init", lib().kgfx_init(ptx.encode(), device))


def fill():
    return _check("fill", lib().kgfx_fill())


def device_assert():
    return _check("assert", lib().kgfx_assert())


def trap():
    return _check("trap", lib().kgfx_trap())


def raw(name):
    """The raw return code of kgfx_<name>() (no exception)."""
    return getattr(lib(), "kgfx_" + name)()
