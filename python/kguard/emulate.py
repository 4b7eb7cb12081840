"""kguard emulation: make a CPU training loop fail like a GPU would.

This module is a *kguard emulation* for tests and demos on machines without a
GPU. Nothing here touches a GPU. When enabled by the environment variable
KGUARD_EMULATE in the guarded kernel, `step(n)` raises PyTorch's exact CUDA (or
ROCm) error text at the configured step, writes the kernel-side assertion line
to the process's RAW file descriptor 2 (as the device's printf would, bypassing
sys.stderr), and poisons the process: every later `step()` or `synchronize()`
raises the same error, as a real poisoned CUDA context does.

Grammar:  KGUARD_EMULATE=KIND[:step=N][:once][:stderr-only][:mark]

KIND (backend-prefixed, texts as printed by PyTorch >= 2.8):
  cuda-assert            710 device-side assert (AcceleratorError), nll_loss
                         assertion line on fd 2, sticky (poisons)
  rocm-assert            719 "HIP error: unspecified launch failure" - the ROCm
                         form of an out-of-range index (asserts are compiled
                         out of ROCm builds, so no assertion line), sticky
  rocm-abort             HIP with asserts built in: "Device-side assertion"
                         line and the HSA queue abort line on fd 2, then the
                         process dies by SIGABRT (as the HIP runtime does)
  nccl-abort             a rank under NCCL: PyTorch's process-group watchdog
                         hits the device-side assert (710) in the background,
                         writes its abort lines on fd 2 and aborts the process
                         (SIGABRT), as TORCH_NCCL_ASYNC_ERROR_HANDLING does
  cuda-illegal-address   700 illegal memory access, sticky
  rocm-illegal-address   700, HIP wording, sticky
  cuda-launch-failure    719, CUDA wording, sticky
  cuda-ecc               214 uncorrectable ECC error (the hardware family),
                         sticky; with the labelled fake NVML
                         (tests/gpu/fake_nvml.c) kguard's health reading
                         sees the GPU needing a reset
  cuda-oom, rocm-oom     OutOfMemoryError (not sticky, no poison)
  device-mismatch        "Expected all tensors to be on the same device..."
  no-kernel-image        209 "no kernel image is available..." (not sticky)
  operator-unavailable   NotImplementedError "Could not run 'aten::...'"
  cublas                 CUBLAS_STATUS_EXECUTION_FAILED (not sticky by itself)
  preflight-fail, preflight-hang
                         not for the kernel: kguard's pre-flight probe reports
                         a failing / hung device (may stand alone or as a
                         modifier: cuda-assert:once:preflight-fail)
Modifiers:
  step=N       fail when step(n) is called with n >= N (default: the first call)
  once         fail only the first time across processes: a marker file is
               created at KGUARD_EMULATE_MARKER, else in the run's own
               directory under `kguard run` and `kguard exec` (once per run),
               else $KGUARD_STATE_DIR/emulate-once-KIND (a kernel started by
               Jupyter: delete the file to fire again), else in the temp dir
  stderr-only  only write the kernel-side line(s) to raw fd 2; step() then
               returns normally, raises nothing and does not poison, so the
               only evidence of the fault is the raw stderr line (for the
               sticky kinds with a line: cuda-assert, rocm-abort's lines
               without the abort; others write a labelled line in PyTorch's
               wording)
  mark         after every step that did not fail, print
               "kguard: completed step N" to stdout (the marker kguard's
               diagnosis reads as the last completed step)

Independently of KGUARD_EMULATE, `step(n, targets=t, classes=c)` checks the
class targets like the real nll_loss CUDA kernel does: a target outside
[0, c) (other than ignore_index, -100) triggers the device assert (CUDA form,
or the ROCm 719 form when KGUARD_EMULATE names a rocm- kind), so the classic
"class 4 in a 4-class problem" bug reproduces on a CPU.

Every line this module writes itself starts with or contains
"kguard emulation"; the exception messages are PyTorch's exact text (kguard
classifies them) and carry a note "kguard emulation: no GPU was used".
"""

import os
import signal
import sys
import tempfile

__all__ = ["AcceleratorError", "OutOfMemoryError", "active", "config", "step",
           "synchronize", "poisoned", "reset", "message"]

EMULATION_NOTE = "kguard emulation: no GPU was used; this error was emulated"

_ASYNC_CUDA = ("CUDA kernel errors might be asynchronously reported at some other API "
               "call, so the stacktrace below might be incorrect.\n"
               "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n")
_ASYNC_HIP = ("HIP kernel errors might be asynchronously reported at some other API "
              "call, so the stacktrace below might be incorrect.\n"
              "For debugging consider passing AMD_SERIALIZE_KERNEL=3\n")
_DSA_CUDA = "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
_DSA_HIP = "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.\n"

NLL_ASSERT_LINE = ("../aten/src/ATen/native/cuda/Loss.cu:250: "
                   "nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], "
                   "thread: [{thread},0,0] Assertion `t >= 0 && t < n_classes` failed.\n")
HIP_ASSERT_LINE = ("{file}:{line}: nll_loss_forward_reduce_cuda_kernel_2d: "
                   "Device-side assertion `t >= 0 && t < n_classes' failed.\n")
# PyTorch's c10d watchdog when the CUDA error surfaces in its cudaEventQuery
# (ProcessGroupNCCL, TORCH_NCCL_ASYNC_ERROR_HANDLING=3, the default).
NCCL_WATCHDOG_LINES = (
    "[rank{rank}]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank {rank}] Process group watchdog "
    "thread terminated with exception: CUDA error: device-side assert triggered\n"
    "[rank{rank}]:[E ProcessGroupNCCL.cpp:630] [Rank {rank}] Some NCCL operations have failed "
    "or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations "
    "might run on corrupted/incomplete data.\n"
    "[rank{rank}]:[E ProcessGroupNCCL.cpp:636] [Rank {rank}] To avoid data inconsistency, we "
    "are taking the entire process down.\n"
    "terminate called after throwing an instance of 'c10::DistBackendError'\n")
HSA_ABORT_LINE = (":0:rocdevice.cpp            :2614: 2817263451 us: 4242 : "
                  "[tid:0x7f1c2a7fc640] Device::callbackQueue aborting with error : "
                  "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware "
                  "exception. code: 0x1016\n")


class AcceleratorError(RuntimeError):
    """kguard emulation of torch.AcceleratorError (PyTorch >= 2.8)."""

    def __init__(self, message, error_code):
        super().__init__(message)
        self.error_code = error_code


class OutOfMemoryError(RuntimeError):
    """kguard emulation of torch.OutOfMemoryError."""


def _cuda_sticky(text, code):
    # PyTorch drops the async hint when CUDA_LAUNCH_BLOCKING is already set.
    hint = "" if os.environ.get("CUDA_LAUNCH_BLOCKING") == "1" else _ASYNC_CUDA
    return "CUDA error: %s\n%s%s" % (text, hint, _DSA_CUDA), code


def _hip_sticky(text, code):
    return "HIP error: %s\n%s%s" % (text, _ASYNC_HIP, _DSA_HIP), code


_OOM_CUDA = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
             "of 79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this "
             "process has 78.12 GiB memory in use. Of the allocated memory 75.40 GiB is "
             "allocated by PyTorch, and 2.10 GiB is reserved by PyTorch but unallocated. "
             "If reserved but unallocated memory is large try setting "
             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
             "See documentation for Memory Management  "
             "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
_OOM_HIP = ("HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
            "of 63.98 GiB of which 1.02 GiB is free. Of the allocated memory 60.40 GiB is "
            "allocated by PyTorch, and 2.10 GiB is reserved by PyTorch but unallocated. "
            "If reserved but unallocated memory is large try setting "
            "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
            "See documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")

# kind -> (backend, sticky)
KINDS = {
    "cuda-assert": ("cuda", True),
    "rocm-assert": ("rocm", True),
    "rocm-abort": ("rocm", True),
    "nccl-abort": ("cuda", True),
    "cuda-illegal-address": ("cuda", True),
    "rocm-illegal-address": ("rocm", True),
    "cuda-launch-failure": ("cuda", True),
    "cuda-ecc": ("cuda", True),
    "cuda-oom": ("cuda", False),
    "rocm-oom": ("rocm", False),
    "device-mismatch": ("any", False),
    "no-kernel-image": ("cuda", False),
    "operator-unavailable": ("any", False),
    "cublas": ("cuda", False),
}


def message(kind):
    """The exact PyTorch message for kind (kguard emulation), and its error code
    (None for errors PyTorch raises without one)."""
    if kind in ("cuda-assert", "nccl-abort"):
        return _cuda_sticky("device-side assert triggered", 710)
    if kind in ("rocm-assert", "rocm-abort"):
        return _hip_sticky("unspecified launch failure", 719)
    if kind == "cuda-illegal-address":
        return _cuda_sticky("an illegal memory access was encountered", 700)
    if kind == "rocm-illegal-address":
        return _hip_sticky("an illegal memory access was encountered", 700)
    if kind == "cuda-launch-failure":
        return _cuda_sticky("unspecified launch failure", 719)
    if kind == "cuda-ecc":
        return _cuda_sticky("uncorrectable ECC error encountered", 214)
    if kind == "cuda-oom":
        return _OOM_CUDA, None
    if kind == "rocm-oom":
        return _OOM_HIP, None
    if kind == "device-mismatch":
        return ("Expected all tensors to be on the same device, but found at least two "
                "devices, cuda:0 and cpu!"), None
    if kind == "no-kernel-image":
        return ("CUDA error: no kernel image is available for execution on the device\n"
                + _DSA_CUDA), 209
    if kind == "operator-unavailable":
        return ("Could not run 'aten::_emulated_op' with arguments from the 'CUDA' backend. "
                "This could be because the operator doesn't exist for this backend, or was "
                "omitted during the selective/custom build process (if using custom build)."
                ), None
    if kind == "cublas":
        return ("CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( "
                "handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`"), None
    raise ValueError("kguard emulation: unknown kind %r" % (kind,))


class _Config:
    def __init__(self, kind=None, step=None, once=False, stderr_only=False, mark=False):
        self.kind = kind
        self.step = step
        self.once = once
        self.stderr_only = stderr_only
        self.mark = mark

    @property
    def backend(self):
        return KINDS[self.kind][0] if self.kind else "cuda"

    @property
    def sticky(self):
        return KINDS[self.kind][1] if self.kind else False


def _parse(spec):
    # preflight-fail / preflight-hang are for kguard's pre-flight probe
    # (`kguard doctor --preflight`), not for the kernel: skip them here.
    parts = [p.strip() for p in spec.split(":")
             if p.strip() and not p.strip().startswith("preflight-")]
    if not parts:
        return _Config()
    kind = parts[0]
    if kind not in KINDS:
        raise ValueError("kguard emulation: KGUARD_EMULATE=%r: unknown kind %r (known: %s)"
                         % (spec, kind, ", ".join(sorted(KINDS))))
    cfg = _Config(kind)
    for p in parts[1:]:
        if p.startswith("step="):
            try:
                cfg.step = int(p[5:])
            except ValueError:
                raise ValueError("kguard emulation: KGUARD_EMULATE=%r: step must be an "
                                 "integer, got %r" % (spec, p[5:])) from None
        elif p == "once":
            cfg.once = True
        elif p == "stderr-only":
            cfg.stderr_only = True
        elif p == "mark":
            cfg.mark = True
        else:
            raise ValueError("kguard emulation: KGUARD_EMULATE=%r: unknown modifier %r "
                             "(known: step=N, once, stderr-only, mark)" % (spec, p))
    return cfg


_state = {"spec": None, "config": None, "poison": None, "fired": False, "device": None}


def config():
    """The parsed KGUARD_EMULATE (re-read when the variable changes)."""
    spec = os.environ.get("KGUARD_EMULATE", "")
    if _state["config"] is None or spec != _state["spec"]:
        _state["config"] = _parse(spec)
        _state["spec"] = spec
    return _state["config"]


def active():
    """True when KGUARD_EMULATE names a failure to emulate."""
    try:
        return config().kind is not None
    except ValueError:
        return False


def poisoned():
    """True once an emulated sticky fault happened in this process."""
    return _state["poison"] is not None


def reset():
    """Forget this process's emulation state (tests only: a real poisoned
    context cannot be reset)."""
    _state.update(spec=None, config=None, poison=None, fired=False, device=None)


def _raw_stderr(text):
    """Write to file descriptor 2 directly, as the device-side printf does."""
    data = text.encode("utf-8", "replace")
    while data:
        try:
            n = os.write(2, data)
        except InterruptedError:
            continue
        except OSError:
            return
        data = data[n:]


def _record(name, text):
    """Tell the kguard run that watches this one (KGUARD_EMULATE_RUN_DIR,
    set by `kguard run` and `kguard exec`) what the emulation did, so that it
    can say at the end of a run that the emulation never fired."""
    run_dir = os.environ.get("KGUARD_EMULATE_RUN_DIR")
    if not run_dir:
        return
    try:
        with open(os.path.join(run_dir, name), "w") as f:
            f.write(text + "\n")
    except OSError:
        pass


def _marker_path(kind):
    path = os.environ.get("KGUARD_EMULATE_MARKER")
    if path:
        return path
    run_dir = os.environ.get("KGUARD_EMULATE_RUN_DIR")
    if run_dir:
        return os.path.join(run_dir, "emulate-once-%s" % kind)
    state = os.environ.get("KGUARD_STATE_DIR")
    if state:
        return os.path.join(state, "emulate-once-%s" % kind)
    return os.path.join(tempfile.gettempdir(), "kguard-emulate-once-%d-%s" % (os.getuid(), kind))


def _claim_once(kind):
    """True the first time across processes (creates the marker)."""
    path = _marker_path(kind)
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    os.write(fd, b"kguard emulation: fired once\n")
    os.close(fd)
    return True


def _make(kind):
    text, code = message(kind)
    if kind in ("cuda-oom", "rocm-oom"):
        exc = OutOfMemoryError(text)
    elif kind == "operator-unavailable":
        exc = NotImplementedError(text)
    elif kind in ("device-mismatch", "cublas"):
        exc = RuntimeError(text)
    else:
        exc = AcceleratorError(text, code)
    if hasattr(exc, "add_note"):
        exc.add_note(EMULATION_NOTE)
    exc.kguard_emulation = True
    return exc


def _raise_poison():
    kind = _state["poison"]
    raise _make(kind)


def _device_assert_lines(kind, bad_threads):
    label = "[kguard emulation] emulated %s device fault (no GPU involved)\n" % (
        "ROCm" if kind.startswith("rocm") else "CUDA")
    if kind == "cuda-assert":
        return label + "".join(NLL_ASSERT_LINE.format(thread=t) for t in bad_threads[:32])
    if kind == "nccl-abort":
        return label + NCCL_WATCHDOG_LINES.format(rank=os.environ.get("RANK", "0"))
    if kind == "rocm-abort":
        return (label + "".join(HIP_ASSERT_LINE.format(
            file="/pytorch/aten/src/ATen/native/hip/Loss.hip", line=250)
            for _ in bad_threads[:1]) + HSA_ABORT_LINE)
    return ""


def _fire(kind, n, bad_threads=(3,), stderr_only=False):
    """Emulate the fault of kind at step n."""
    sticky = KINDS[kind][1]
    lines = _device_assert_lines(kind, list(bad_threads))
    if stderr_only:
        if not lines:
            text, _ = message(kind)
            lines = ("[kguard emulation] step %d: %s\n" % (n, text.splitlines()[0]))
        if kind == "rocm-abort":
            lines = lines.replace(HSA_ABORT_LINE, "")
        _raw_stderr(lines)
        if sticky:
            # The device faulted even though step() carries on: kguard's
            # device probe (probe()) finds it, as it would on a real GPU.
            _state["device"] = kind
        return
    if lines:
        _raw_stderr(lines)
    if kind in ("rocm-abort", "nccl-abort"):
        # The HIP runtime aborts the process on a device assert (by design);
        # so does PyTorch's NCCL watchdog once the CUDA error reaches it.
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(signal.SIGABRT, signal.SIG_DFL)
        os.abort()
    if sticky:
        _state["poison"] = kind
    raise _make(kind)


def _bad_targets(targets, classes, ignore_index):
    if hasattr(targets, "tolist"):
        targets = targets.tolist()
    flat = []
    stack = [targets]
    while stack:
        t = stack.pop()
        if isinstance(t, (list, tuple)):
            stack.extend(reversed(t))
        else:
            flat.append(int(t))
    return [i for i, t in enumerate(flat) if t != ignore_index and not (0 <= t < classes)]


def step(n, targets=None, classes=None, ignore_index=-100):
    """Call once per training step (kguard emulation).

    Raises the configured error when n reaches the configured step; raises the
    device assert if targets/classes are given and a target is out of range;
    raises the sticky error again if this process is already poisoned."""
    if _state["poison"] is not None:
        _raise_poison()
    cfg = config()
    if targets is not None and classes is not None:
        bad = _bad_targets(targets, classes, ignore_index)
        if bad:
            kind = "rocm-assert" if cfg.backend == "rocm" else "cuda-assert"
            if cfg.kind == "rocm-abort":
                kind = "rocm-abort"
            _record("fired", "%s at step %d (targets out of range)" % (kind, n))
            _fire(kind, n, bad, stderr_only=cfg.stderr_only)
    if cfg.kind is not None and not _state["fired"] and (cfg.step is None or n >= cfg.step):
        if not cfg.once or _claim_once(cfg.kind):
            _state["fired"] = True
            _record("fired", "%s at step %d" % (cfg.kind, n))
            _fire(cfg.kind, n, stderr_only=cfg.stderr_only)
        else:
            _state["fired"] = True  # the once-marker exists: never fire here
            _record("blocked", _marker_path(cfg.kind))
    if cfg.mark:
        sys.stdout.write("kguard: completed step %d\n" % n)
        sys.stdout.flush()


def probe():
    """What kguard's device probe sees (kguard emulation): raises the sticky
    error when an emulated device fault happened in this process (also in
    stderr-only mode, where step() itself went on), else returns."""
    kind = _state["poison"] or _state["device"]
    if kind is not None:
        raise _make(kind)


def synchronize():
    """Emulated torch.cuda.synchronize(): raises the sticky error if poisoned."""
    if _state["poison"] is not None:
        _raise_poison()
