"""`kguard exec` over a genuine label-4 training on a GPU: the checks of
tests/gpu/run-on-device.sh that need torch. Each runs tests/gpu/train_label4.py
(a small deterministic MLP on cuda:0, kguard.save every 4 steps, the target 4
in a 4-class batch at step 10) under the `kguard exec` named by KGUARD_BIN,
prints one verdict line and exits 0 (PASS), 77 (SKIP: no CUDA device visible
to torch) or 1 (FAIL).

  exec-label4        the bad label once: kguard proves the device-side
                     assert, restores step 8 (sealed before it), the run
                     finishes, and the sha256 of its final state_dict equals
                     a fault-free run's under the same kguard
  exec-same-bug      the bad label at every start: exit 86 within 2 starts
  exec-fault-to-step the bad label once, cold and with --standby: the time
                     from the fault surfacing to the first step completed
                     after the restart, split into detect (fault -> kguard's
                     proof), restart (-> the new process runs the script),
                     import torch, CUDA context (both measured in the new
                     process) and the rest (resume load, first step)
  exec-nproc2        --nproc-per-node 2 on one GPU (both ranks on cuda:0,
                     DDP over gloo: NCCL refuses two ranks on one device):
                     the bad label on rank 1 restarts both ranks, both resume
                     from the same step, 8, and end with equal state

  python3 tests/gpu/exec_checks.py CHECK [--device cuda|cpu-emulated]
        [--limit S] [--work DIR] [--json FILE]

--device cpu-emulated runs the same flow on the CPU with kguard's labelled
emulation of the CUDA assert (kguard.emulate): a self-test of these scripts,
never evidence about a GPU; its verdict reads "PASS (cpu-emulated) CHECK".
--limit: the check's own time limit in seconds (FAIL when it runs out).
--json: the verdict and the measured numbers, for the run's summary.
Environment: KGUARD_BIN (kguard), KGUARD_PYTHON (the Python with torch;
default this one).
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

RANK_PREFIX = re.compile(r"^\[rank\d+\]: ")

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train_label4.py")
KGUARD = os.environ.get("KGUARD_BIN") or shutil.which("kguard") or "kguard"
PYTHON = os.environ.get("KGUARD_PYTHON") or sys.executable
STEPS, EVERY, BAD = 20, 4, 10
RESUME_STEP = (BAD - 1) // EVERY * EVERY    # the last step sealed before the fault
PASS, FAIL, SKIP = 0, 1, 77
GAVE_UP = 86


class Failed(Exception):
    pass


class Skipped(Exception):
    pass


class Job:
    """One `kguard exec`: its merged output as lines, read as they come."""

    def __init__(self, argv, env, deadline):
        self.deadline = deadline
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
        self.lines = []
        self._cv = threading.Condition()
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self):
        for line in self.proc.stdout:
            # With several ranks kguard exec prefixes each rank's lines with
            # "[rankN]: " (as torchrun's --tee); the events are the same.
            line = RANK_PREFIX.sub("", line, count=1)
            with self._cv:
                self.lines.append(line.rstrip("\n"))
                self._cv.notify_all()
        with self._cv:
            self._cv.notify_all()

    def tail(self, n=6):
        with self._cv:
            return " | ".join(self.lines[-n:])[-600:]

    def _stop(self):
        # kguard passes TERM to the job (--preempt-grace 2), then ends
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def wait_line(self, text):
        with self._cv:
            while not any(text in l for l in self.lines):
                left = self.deadline - time.monotonic()
                if left <= 0 or not self._t.is_alive():
                    break
                self._cv.wait(left)
            else:
                return
        if self.proc.poll() is None:
            self._stop()
        raise Failed("no line %r from kguard exec in time: %s" % (text, self.tail()))

    def wait(self):
        try:
            rc = self.proc.wait(max(1.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self._stop()
            raise Failed("kguard exec did not finish within the check's time limit: %s"
                         % self.tail())
        self._t.join(10)
        if any(l.startswith("label4: no CUDA device visible") for l in self.lines):
            raise Skipped(next(l for l in self.lines if l.startswith("label4: no CUDA"))[8:])
        return rc

    def events(self, name):
        out = []
        for l in self.lines:
            m = re.match(r"label4: (\S+) (\{.*\})$", l)
            if m and m.group(1) == name:
                out.append(json.loads(m.group(2)))
        return out

    def kguard_time(self, text):
        """Wall-clock time of kguard's first log line containing text."""
        for l in self.lines:
            m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z kguard\[\d+\] ", l)
            if m and text in l:
                return datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(
                    tzinfo=datetime.timezone.utc).timestamp()
        return None

    def has(self, text):
        return any(text in l for l in self.lines)


class Check:
    def __init__(self, device, work, limit):
        self.device = device
        self.work = work
        self.deadline = time.monotonic() + limit
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("KGUARD_") or k in ("KGUARD_BIN",)}
        # deterministic cuBLAS in every process, standbys included
        self.env.update(KGUARD_KEY_DIR=os.path.join(work, "keys"), PYTHONDONTWRITEBYTECODE="1",
                        CUBLAS_WORKSPACE_CONFIG=":4096:8")
        self.measured = {}

    def job(self, name, kg_opts=(), train_opts=()):
        d = os.path.join(self.work, name)
        os.makedirs(d)
        argv = [KGUARD, "exec", "--name", name, "--checkpoints", os.path.join(d, "ckpt"),
                "--state-dir", os.path.join(d, "state"), "--preempt-grace", "2", *kg_opts,
                "--", PYTHON, TRAIN, "--device", self.device, "--steps", str(STEPS),
                "--every", str(EVERY), "--bad-step", str(BAD),
                "--marker", os.path.join(d, "bad-label-used"),
                "--out", os.path.join(d, "final.json"), *train_opts]
        return Job(argv, self.env, self.deadline), d

    def expect(self, cond, why, job=None):
        if not cond:
            raise Failed(why + (": " + job.tail() if job else ""))

    def finished_after_one_restore(self, job, d, ranks=(0,), bad_rank=0):
        """The checks common to a run with the bad label once; its final digest."""
        rc = job.wait()
        self.expect(rc == 0, "kguard exec exited %d, not 0" % rc, job)
        faults = job.events("fault")
        self.expect(len(faults) == 1 and faults[0]["step"] == BAD and
                    faults[0]["rank"] == bad_rank,
                    "expected one fault, rank %d step %d; got %s" % (bad_rank, BAD, faults), job)
        self.expect("device-side assert triggered" in faults[0]["error"],
                    "the fault is not the device-side assert: %s" % faults[0]["error"])
        self.expect(job.has("proven"), "kguard never said the fault was proven", job)
        self.expect(job.has("restored step %d " % RESUME_STEP),
                    "kguard did not restore step %d" % RESUME_STEP, job)
        if self.device == "cpu-emulated":
            self.expect(job.has("kguard emulation"), "the emulated fault is not labelled", job)
        else:   # the device's own assertion line, and nothing emulated
            self.expect(any(re.search(r"Assertion `.+` failed", l) for l in job.lines) and
                        not job.has("kguard emulation"),
                        "no genuine nll_loss assertion line from the device", job)
        starts = job.events("start")
        self.expect(len(starts) == 2 * len(ranks),
                    "expected %d starts (one restart), got %d" % (2 * len(ranks), len(starts)),
                    job)
        resumed = job.events("resumed")
        self.expect(sorted((e["rank"], e["step"]) for e in resumed) ==
                    [(r, RESUME_STEP) for r in ranks],
                    "every rank should resume from step %d once; got %s" % (RESUME_STEP, resumed),
                    job)
        done = job.events("done")
        self.expect(sorted(e["rank"] for e in done) == list(ranks),
                    "not every rank finished: %s" % done, job)
        digests = {e["digest"] for e in done}
        self.expect(len(digests) == 1, "the ranks ended with different state: %s" % done)
        inc = os.listdir(os.path.join(d, "state", "incidents"))
        self.expect(len(inc) == 1, "expected one incident, found %s" % inc)
        return digests.pop()

    def timeline(self, job):
        """fault -> first step after the restart, in parts (seconds)."""
        fault = job.events("fault")[0]
        new = [e for e in job.events("start") if e["t"] > fault["t"]]
        first = [e for e in job.events("first-step") if e["t"] > fault["t"]]
        proven = job.kguard_time("proven")
        self.expect(new and first and proven, "no restart timeline in the output", job)
        s, f = new[0], first[0]
        ctx = s["cuda_context_s"] or 0.0
        parts = {"total_s": f["t"] - fault["t"],
                 "detect_s": proven - fault["t"],
                 "restart_s": s["script"] - proven,
                 "import_torch_s": s["import_torch_s"],
                 "cuda_context_s": s["cuda_context_s"],
                 "rest_s": f["t"] - s["script"] - s["import_torch_s"] - ctx,
                 "torch_preimported": s["torch_preimported"]}
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in parts.items()}


def _fmt(p):
    imp = ("%.2f" % p["import_torch_s"]) + (" (done in the standby)"
                                            if p["torch_preimported"] else "")
    ctx = "n/a (cpu)" if p["cuda_context_s"] is None else "%.2f" % p["cuda_context_s"]
    return ("%.2f s (detect %.2f, restart %.2f, import torch %s, CUDA context %s, "
            "load+first step %.2f)" % (p["total_s"], p["detect_s"], p["restart_s"], imp, ctx,
                                       p["rest_s"]))


def exec_label4(c):
    ref, rd = c.job("reference", train_opts=("--bad", "never"))
    rc = ref.wait()
    c.expect(rc == 0 and not ref.events("fault"), "the fault-free run failed (exit %d)" % rc, ref)
    want = json.load(open(os.path.join(rd, "final.json")))["digest"]
    job, d = c.job("faulted", train_opts=("--bad", "once"))
    got = c.finished_after_one_restore(job, d)
    c.expect(got == want, "final state_dict sha256 %s differs from the fault-free run's %s"
             % (got[:16], want[:16]))
    start = job.events("start")[0]
    c.measured.update(fault_step=BAD, restored_step=RESUME_STEP, digest=got,
                      torch=start["torch"], device=start["device"], restart=c.timeline(job))
    return ("kguard proved the assert at step %d, restored step %d, the run finished; final "
            "state_dict sha256 %s = the fault-free run's; fault -> first step %.2f s"
            % (BAD, RESUME_STEP, got[:16], c.measured["restart"]["total_s"]))


def exec_same_bug(c):
    t0 = time.monotonic()
    job, d = c.job("same-bug", train_opts=("--bad", "always"))
    rc = job.wait()
    took = time.monotonic() - t0
    starts, faults = job.events("start"), job.events("fault")
    c.expect(rc == GAVE_UP, "kguard exec exited %d, not %d" % (rc, GAVE_UP), job)
    c.expect(len(starts) <= 2, "%d starts, more than 2" % len(starts), job)
    c.expect(len(faults) == len(starts) and all(f["step"] == BAD for f in faults),
             "every start should fault at step %d: %s" % (BAD, faults), job)
    c.expect(job.has("restored step %d " % RESUME_STEP), "no restore before giving up", job)
    c.measured.update(exit=rc, starts=len(starts), seconds=round(took, 2))
    return "exit %d after %d starts (each faulted at step %d), %.1f s" % (rc, len(starts), BAD,
                                                                         took)


def exec_fault_to_step(c):
    cold, d = c.job("cold", train_opts=("--bad", "once"))
    c.finished_after_one_restore(cold, d)
    go = os.path.join(c.work, "standby-go")
    warm, d = c.job("standby", kg_opts=("--standby",),
                    train_opts=("--bad", "once", "--hold-file", go))
    warm.wait_line("warm standby for rank 0 ready")
    open(go, "w").close()
    c.finished_after_one_restore(warm, d)
    c.expect(not warm.has("cold start"), "the standby run restarted cold", warm)
    c.measured.update(cold=c.timeline(cold), standby=c.timeline(warm))
    c.expect(c.measured["standby"]["torch_preimported"],
             "the restarted process imported torch itself: not the standby", warm)
    return "cold: %s; --standby: %s" % (_fmt(c.measured["cold"]), _fmt(c.measured["standby"]))


def exec_nproc2(c):
    job, d = c.job("nproc2", kg_opts=("--nproc-per-node", "2"),
                   train_opts=("--bad", "once", "--bad-rank", "1"))
    digest = c.finished_after_one_restore(job, d, ranks=(0, 1), bad_rank=1)
    c.expect(job.has("generation 1"), "no second generation in kguard's log", job)
    pids = [{e["pid"] for e in job.events("start") if e["rank"] == r} for r in (0, 1)]
    c.expect(all(len(p) == 2 for p in pids), "a rank was not started again: %s" % pids)
    c.measured.update(ranks=2, fault_rank=1, fault_step=BAD, resumed_step=RESUME_STEP,
                      digest=digest, restart=c.timeline(job))
    where = "cuda:0" if c.device == "cuda" else "cpu"
    return ("rank 1's assert at step %d restarted both ranks (gloo, both on %s), both resumed "
            "from step %d and ended with equal state (sha256 %s); fault -> first step %.2f s"
            % (BAD, where, RESUME_STEP, digest[:16], c.measured["restart"]["total_s"]))


CHECKS = {"exec-label4": exec_label4, "exec-same-bug": exec_same_bug,
          "exec-fault-to-step": exec_fault_to_step, "exec-nproc2": exec_nproc2}


def _need_cuda_driver():
    """Without libcuda torch sees no CUDA device: skip before paying for the
    imports of a training that would find none."""
    import ctypes
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise Skipped("no CUDA driver here (%s)" % e)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("check", choices=sorted(CHECKS))
    p.add_argument("--device", choices=["cuda", "cpu-emulated"], default="cuda")
    p.add_argument("--limit", type=float, default=120)
    p.add_argument("--work", help="a directory for the runs (default: a temporary one)")
    p.add_argument("--json", help="write the verdict and the measured numbers here")
    a = p.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="kguard-%s-" % a.check)
    os.makedirs(work, exist_ok=True)
    c = Check(a.device, work, a.limit)
    t0 = time.monotonic()
    try:
        if a.device == "cuda":
            _need_cuda_driver()
        facts, code = CHECKS[a.check](c), PASS
    except Failed as e:
        facts, code = str(e), FAIL
    except Skipped as e:
        facts, code = str(e), SKIP
    word = {PASS: "PASS", FAIL: "FAIL", SKIP: "SKIP"}[code]
    if a.device == "cpu-emulated":
        word += " (cpu-emulated)"
    print("%s %s: %s" % (word, a.check, facts), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"check": a.check, "device": a.device, "verdict": word.split()[0],
                       "facts": facts, "seconds": round(time.monotonic() - t0, 2),
                       "measured": c.measured}, f, indent=1)
    return code


if __name__ == "__main__":
    sys.exit(main())
