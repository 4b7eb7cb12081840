"""Drive the real `kguard exec` binary for the tests: start it, watch its
output line by line with deadlines, send signals, collect the outcome."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = Path(os.environ.get("KGUARD_SOURCE_DIR", HERE.parents[1]))
PYTHON = os.environ.get("KGUARD_PYTHON", "/usr/bin/python3")
BIN = os.environ.get("KGUARD_BIN")
TRAIN = HERE / "train_tiny.py"
GAVE_UP = 86
RETRYABLE = 200


class Run:
    """One `kguard exec` process; its merged output kept as lines."""

    def __init__(self, args, env, cwd=None):
        self.proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self.times = []   # time.monotonic() at which each line arrived
        self._cv = threading.Condition()
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self):
        for line in self.proc.stdout:
            with self._cv:
                self.lines.append(line.rstrip("\n"))
                self.times.append(time.monotonic())
                self._cv.notify_all()
        with self._cv:
            self._cv.notify_all()

    def wait_line(self, text, timeout=60):
        """Block until a line containing text appears (its index), or fail."""
        end = time.monotonic() + timeout
        with self._cv:
            while True:
                for i, line in enumerate(self.lines):
                    if text in line:
                        return i
                left = end - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._t.is_alive()):
                    raise AssertionError(f"no line with {text!r}:\n" + self.output())
                self._cv.wait(left)

    def wait(self, timeout=120):
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("kguard exec did not finish:\n" + self.output())
        self._t.join(10)
        return code

    def signal(self, signo):
        self.proc.send_signal(signo)

    def output(self):
        with self._cv:
            return "\n".join(self.lines)

    def first_time(self, text, after=0.0):
        """Arrival time of the first line containing text after `after`, or None."""
        with self._cv:
            for t, line in zip(self.times, self.lines):
                if t >= after and text in line:
                    return t
        return None

    def count(self, text):
        return sum(1 for line in self.lines if text in line)


def base_env(tmp, **extra):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("KGUARD_") and k not in ("KGUARD_BIN", "KGUARD_SOURCE_DIR",
                                                   "KGUARD_PYTHON"):
            env.pop(k)
    env["KGUARD_KEY_DIR"] = str(tmp / "keys")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def exec_args(tmp, *opts, script_args=()):
    return [BIN, "exec", "--checkpoints", str(tmp / "ckpt"), "--state-dir", str(tmp / "state"),
            *opts, "--", PYTHON, str(TRAIN), "--out", str(tmp / "out.json"), *script_args]


def reference_params(tmp, steps=12):
    """The fault-free run's final parameters, trained without kguard exec."""
    d = tmp / "ref"
    d.mkdir(exist_ok=True)
    env = base_env(d, KGUARD_BIN=BIN, KGUARD_CKPT_DIR=str(d / "ckpt"),
                   KGUARD_STATE_DIR=str(d / "state"), PYTHONPATH=str(SOURCE / "python"))
    subprocess.run([PYTHON, str(TRAIN), "--out", str(d / "out.json"), "--steps", str(steps)],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads((d / "out.json").read_text())["params"]


def incidents(state_dir):
    """The incident records under state_dir, oldest first (by their creation
    time in milliseconds: two in the same second have names that sort by
    their random part)."""
    d = Path(state_dir) / "incidents"
    docs = [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))] if d.is_dir() else []
    return sorted(docs, key=lambda i: i.get("created") or "")
