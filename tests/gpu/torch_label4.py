"""Real PyTorch fixture: the 4-class label bug on a GPU (not an emulation).

cross_entropy over 4 classes with a target 4 in the batch triggers the
nll_loss device-side assert on CUDA (710, "device-side assert triggered", plus
the kernel's `Assertion ... failed.` line), or on ROCm usually 719
"unspecified launch failure" or a runtime abort. The check runs in a child
process so an abort can be judged too. Exit: 0 pass, 77 skip (no GPU or no
torch), 1 fail.
"""
import os
import signal
import subprocess
import sys

SKIP = 77


def child():
    import torch
    import torch.nn.functional as F
    logits = torch.randn(4, 4, device="cuda")
    targets = torch.tensor([0, 1, 2, 4], device="cuda")
    try:
        loss = F.cross_entropy(logits, targets)
        loss.item()
        torch.cuda.synchronize()
    except RuntimeError as e:
        print("FIRST:", type(e).__name__, getattr(e, "error_code", None), str(e).splitlines()[0])
        sys.stdout.flush()
        try:
            torch.zeros(1, device="cuda").item()
            print("SECOND: ok")
        except RuntimeError as e2:
            print("SECOND:", type(e2).__name__, str(e2).splitlines()[0])
        return 0
    print("NO ERROR: loss", float(loss))
    return 1


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child())
    try:
        import torch
    except ImportError:
        print("no torch: skip")
        return SKIP
    if not torch.cuda.is_available():
        print("no GPU visible to torch %s: skip" % torch.__version__)
        return SKIP
    rocm = bool(getattr(torch.version, "hip", None))
    p = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True,
                       timeout=300)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    out = p.stdout + p.stderr
    if rocm:
        ok = (("HIP error: unspecified launch failure" in out or
               "HIP error: device-side assert triggered" in out) and "SECOND: ok" not in out) or \
             (p.returncode == -signal.SIGABRT and ("Device-side assertion" in out or
                                                   "HSA_STATUS_ERROR" in out))
    else:
        ok = ("CUDA error: device-side assert triggered" in out and "SECOND: ok" not in out and
              "Assertion `" in out)
    print("PASS" if ok else "FAIL", "(backend %s)" % ("rocm" if rocm else "cuda"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
