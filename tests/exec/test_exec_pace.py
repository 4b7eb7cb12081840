"""`kguard exec` knows the job's pace without printed lines: kguard.save and
kguard.step report each step on a private channel (KGUARD_STEP_SOCKET), so
a poisoned process that stays alive is proven in seconds, not after the 60 s
of a job whose pace is unknown; the proof quotes the error, not the source
line that raised it; several ranks' lines carry their rank; kguard's own
lines say times and durations in words and each incident path once.

pace_job.py prints no progress line of its own: 0.1 s steps, at the fault
it prints a CUDA error's traceback and blocks, as a rank stuck in its next
collective does."""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exec_harness import BIN, GAVE_UP, PYTHON, RETRYABLE, SOURCE, Run, base_env, incidents

pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")

JOB = Path(__file__).resolve().parent / "pace_job.py"
ERROR = "RuntimeError: CUDA error: device-side assert triggered"


def _run(tmp, *job_args, opts=()):
    args = [BIN, "exec", "--checkpoints", str(tmp / "ckpt"), "--state-dir", str(tmp / "state"),
            *opts, "--", PYTHON, str(JOB), *job_args]
    return Run(args, base_env(tmp))


def _stall_words(run):
    return [line.split("stalls for ")[1] for line in run.lines
            if "sticky error text seen" in line]


def _proof_after_suspicion(run):
    """Seconds from the suspicion's notice to the proof's, by arrival."""
    t0 = run.first_time("sticky error text seen")
    t1 = run.first_time(" proven: ")
    return t1 - t0


def test_kguard_save_alone_tells_the_pace_and_the_proof_quotes_the_error(tmp_path):
    # kguard.save every 5 steps of 0.1 s, nothing printed: the stall is
    # proven after 4 x the gap between two saves (about 2-3 s), never the
    # 60 s of an unknown pace; the restored run completes.
    run = _run(tmp_path, "--steps", "20", "--fault-step", "12")
    assert run.wait(50) == 0, run.output()
    words = _stall_words(run)
    assert len(words) == 1 and "longest gap between the job's steps" in words[0], run.output()
    secs = float(re.match(r"([\d.]+) s ", words[0]).group(1))
    assert 1.5 <= secs < 60, words
    proven = [line for line in run.lines if " proven: " in line]
    assert len(proven) == 1 and f"({ERROR})" in proven[0], run.output()
    assert "raise RuntimeError" not in proven[0]
    assert "no progress for" in proven[0]
    inc = incidents(tmp_path / "state")
    assert len(inc) == 1 and inc[0]["checkpoint"]["step"] == 10, inc
    # Each incident's path once; the fault's time in words, no epoch ms.
    assert run.count("exec: incident ") == 1, run.output()
    assert not re.search(r"T=\d{10,}", run.output()), run.output()
    assert re.search(r"sealed before the fault's first sign \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d",
                     run.output()), run.output()


def test_kguard_step_alone_tells_the_pace(tmp_path):
    # No checkpoint at all, kguard.step(n) after each 0.1 s step: the floor
    # of 1.5 s proves the stall, in the first generation and, with the pace
    # kept, in the second; the same fault twice stops the job.
    run = _run(tmp_path, "--steps", "20", "--fault-step", "8", "--save-every", "0",
               "--step-calls", opts=("--max-restarts", "3"))
    assert run.wait(50) == GAVE_UP, run.output()
    assert [w.split(" (")[0] for w in _stall_words(run)] == ["1.5 s", "1.5 s"], run.output()
    assert run.count(f"({ERROR}) proven") == 2, run.output()


def test_no_pace_yet_says_so_and_what_to_call(tmp_path):
    # Nothing reports a step: the 60 s deadline stands, and the notice says
    # why and what to call. A scheduler's signal ends the wait.
    run = _run(tmp_path, "--steps", "20", "--fault-step", "3", "--save-every", "0")
    run.wait_line("sticky error text seen", timeout=60)
    words = _stall_words(run)[0]
    assert words.startswith("60 s: no step reported yet"), words
    assert "kguard.step(n)" in words and "kguard.save" in words, words
    run.signal(signal.SIGTERM)
    assert run.wait(60) == RETRYABLE, run.output()


def test_each_ranks_lines_carry_its_rank(tmp_path):
    code = ("import os, sys\n"
            "r = os.environ['RANK']\n"
            "print('hello from', r, flush=True)\n"
            "sys.stdout.write('in '); sys.stdout.flush(); print('pieces')\n"
            "print('warn from', r, file=sys.stderr)\n")
    args = [BIN, "exec", "--state-dir", str(tmp_path / "state"), "--name", "pfx",
            "--nproc-per-node", "2", "--", PYTHON, "-c", code]
    run = Run(args, base_env(tmp_path))
    assert run.wait(60) == 0, run.output()
    for r in (0, 1):
        assert f"[rank{r}]: hello from {r}" in run.lines, run.output()
        assert f"[rank{r}]: in pieces" in run.lines, run.output()
        assert f"[rank{r}]: warn from {r}" in run.lines, run.output()
    log = (tmp_path / "state" / "logs" / "exec-pfx.log").read_text()
    assert "[rank1]: hello from 1\n" in log and "[rank0]: warn from 0\n" in log, log
    # One process alone: its lines as they are.
    args = [BIN, "exec", "--state-dir", str(tmp_path / "state"), "--name", "one", "--",
            PYTHON, "-c", "print('alone')"]
    run = Run(args, base_env(tmp_path))
    assert run.wait(60) == 0 and "alone" in run.lines, run.output()


def test_step_is_a_cheap_no_op_outside_kguard_and_never_raises_for_the_channel(tmp_path):
    code = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
import kguard
os.environ.pop("KGUARD_STEP_SOCKET", None)
kguard.step(1)                                   # outside kguard exec: nothing
os.environ["KGUARD_STEP_SOCKET"] = "@kguard-step-nobody-listens"
os.environ["KGUARD_EXEC_GENERATION"] = "0"
kguard.step(2)                                   # nobody there: lost, no exception
for bad, exc in ((-1, ValueError), ("x", ValueError), (None, TypeError)):
    try:
        kguard.step(bad)
    except exc:
        pass
    else:
        raise SystemExit(f"step({bad!r}) did not raise {exc.__name__}")
n = 20000
t = time.perf_counter()
for i in range(n):
    kguard.step(i)
print("us per call %.2f" % ((time.perf_counter() - t) / n * 1e6))
"""
    p = subprocess.run([PYTHON, "-c", code, str(SOURCE / "python")], capture_output=True,
                       text=True, timeout=60, env=base_env(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    print(p.stdout)   # the cost, for the record (a benchmark, never asserted)
