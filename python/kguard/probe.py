"""kguard probe: report the kernel's Python/PyTorch/GPU stack as one JSON object.

Run by the kguard supervisor as `python3 -m kguard.probe` in a FRESH process
(never inside the poisoned kernel: a poisoned CUDA context would fail or hang).
Prints exactly one JSON object on stdout and exits 0, whatever happens: every
query is guarded, and the GPU queries run in a daemon thread with a time limit
(KGUARD_PROBE_TIMEOUT seconds, default 20) so a wedged driver cannot hang it.

Keys: python, python_executable, platform, torch (version or null),
cuda (torch.version.cuda), hip (torch.version.hip), cudnn, backend
("cuda" | "rocm" | "cpu" | "unknown"; torch.version.hip set means ROCm),
arch_list (the architectures torch was compiled for: "sm_90", "compute_90",
"gfx90a"; read from the build even where no driver is loaded), driver
({"nvidia": "550.54.14"} / {"amdgpu": "..."} from /proc and /sys, no GPU call;
null when neither is there), cuda_available, device_count,
devices [{index, name, capability, total_memory, gcn_arch (ROCm)}],
errors [strings], timed_out (bool), env {diagnostic variables in force}.
"""

import json
import os
import platform
import sys
import threading

_DIAG_VARS = ("CUDA_LAUNCH_BLOCKING", "AMD_SERIALIZE_KERNEL", "HIP_LAUNCH_BLOCKING",
              "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
              "KGUARD_DIAGNOSTIC", "TORCH_USE_CUDA_DSA")


def _driver():
    """Kernel driver versions, read from files: never a GPU call."""
    found = {}
    try:
        with open("/proc/driver/nvidia/version") as f:
            words = f.readline().split()
        # "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu ..."
        for i, w in enumerate(words):
            if w == "Module" and i + 1 < len(words):
                found["nvidia"] = words[i + 1]
    except OSError:
        pass
    try:
        with open("/sys/module/amdgpu/version") as f:
            found["amdgpu"] = f.read().strip()
    except OSError:
        pass
    return found or None


def _arch_list(torch):
    """The compiled architectures, from the build itself (get_arch_list()
    returns [] when no device is available, which hides a mismatch)."""
    try:
        flags = torch._C._cuda_getArchFlags()
        if flags:
            return sorted(set(flags.split()), key=flags.split().index)
    except Exception:
        pass
    try:
        return list(torch.cuda.get_arch_list())
    except Exception:
        return []


def _collect(out):
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        out["errors"].append("import torch: %s: %s" % (type(e).__name__, e))
        out["backend"] = "unknown"
        return
    out["torch"] = getattr(torch, "__version__", None)
    version = getattr(torch, "version", None)
    out["cuda"] = getattr(version, "cuda", None)
    out["hip"] = getattr(version, "hip", None)
    if out["hip"]:
        out["backend"] = "rocm"
    elif out["cuda"]:
        out["backend"] = "cuda"
    else:
        out["backend"] = "cpu"
    out["arch_list"] = _arch_list(torch)
    try:
        out["cudnn"] = torch.backends.cudnn.version()
    except Exception as e:
        out["errors"].append("cudnn: %s" % e)
    try:
        out["cuda_available"] = bool(torch.cuda.is_available())
        out["device_count"] = int(torch.cuda.device_count())
    except Exception as e:
        out["errors"].append("device_count: %s: %s" % (type(e).__name__, e))
        return
    for i in range(out["device_count"] or 0):
        dev = {"index": i}
        try:
            dev["name"] = torch.cuda.get_device_name(i)
            props = torch.cuda.get_device_properties(i)
            dev["capability"] = "%d.%d" % (props.major, props.minor)
            dev["total_memory"] = int(props.total_memory)
            arch = getattr(props, "gcnArchName", None)
            if arch:
                dev["gcn_arch"] = arch
        except Exception as e:
            dev["error"] = "%s: %s" % (type(e).__name__, e)
        out["devices"].append(dev)


def probe(timeout=None):
    """Return the probe dict (never raises)."""
    if timeout is None:
        try:
            timeout = float(os.environ.get("KGUARD_PROBE_TIMEOUT", "20"))
        except ValueError:
            timeout = 20.0
    out = {
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "torch": None, "cuda": None, "hip": None, "cudnn": None,
        "backend": "unknown", "arch_list": [], "driver": _driver(), "cuda_available": None, "device_count": None,
        "devices": [], "errors": [], "timed_out": False,
        "env": {k: os.environ[k] for k in _DIAG_VARS if k in os.environ},
    }
    out["env"].update({k: v for k, v in os.environ.items() if k.startswith("PYTORCH_")})
    t = threading.Thread(target=_collect, args=(out,), daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        out["timed_out"] = True
        out["errors"].append("probe timed out after %.0f s" % timeout)
    return out


def main():
    try:
        out = probe()
        # A snapshot: the thread may still be writing if it timed out.
        text = json.dumps(dict(out, devices=list(out["devices"]), errors=list(out["errors"])),
                          default=str)
    except Exception as e:  # never crash: the supervisor wants one JSON object
        text = json.dumps({"errors": ["probe failed: %s: %s" % (type(e).__name__, e)]})
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    # A timed-out daemon thread inside a driver call must not keep us alive.
    os._exit(0)


if __name__ == "__main__":
    main()
