"""Helpers for the fault-injection tests: run a kguard command with the
kg_fault shim preloaded, and read back which faults fired."""
import os
import subprocess

import pytest

BIN = os.environ.get("KGUARD_BIN", "kguard")
SHIM = os.environ.get("KG_FAULT_SO", "")


class Faulty:
    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.n = 0

    def run(self, args, fault, exe="kguard-ckpt", env=None, timeout=60):
        """Run kguard ARGS with KG_FAULT=fault in the process named exe.
        Returns (CompletedProcess, fired_lines, count_dict)."""
        self.n += 1
        log = self.tmp / ("fault-%d.log" % self.n)
        e = dict(os.environ if env is None else env)
        e.update(LD_PRELOAD=SHIM, KG_FAULT=fault, KG_FAULT_EXE=exe, KG_FAULT_LOG=str(log))
        p = subprocess.run([BIN, *args], env=e, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=timeout)
        lines = log.read_text().splitlines() if log.exists() else []
        fired = [ln for ln in lines if ln.startswith("fired ")]
        counts = {}
        for ln in lines:
            if ln.startswith("count "):
                _, fn, n, _pid, _sym, _obj = ln.split()
                counts[fn] = counts.get(fn, 0) + int(n)
        return p, fired, counts


@pytest.fixture
def faulty(tmp_path):
    assert SHIM and os.path.exists(SHIM), "KG_FAULT_SO must name the built shim"
    return Faulty(tmp_path)


def spread(total, first=12, points=12):
    """Call numbers to fault: every one of the first `first`, then `points`
    spread evenly over the rest (allocation counts run to thousands)."""
    ns = list(range(1, min(total, first) + 1))
    if total > first:
        step = max(1, (total - first) // points)
        ns += list(range(first + step, total + 1, step))
    return ns
