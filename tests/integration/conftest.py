"""Shared helpers for kguard's integration tests.

Each test gets its own state dir (KGUARD_STATE_DIR), Jupyter path and working
directory; kernelspecs are written there and started through jupyter_client's
KernelManager, exactly as Jupyter would start them. Waiting is always on
messages with timeouts or on conditions polled against a deadline.
"""
import json
import os
import queue
import signal
import subprocess
import sys
import time
import uuid

import psutil
import pytest
from jupyter_client import KernelManager

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("KGUARD_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
KGUARD = os.environ.get("KGUARD_BIN") or os.path.join(SOURCE_DIR, "build-sup", "kguard")
PYTHON = os.environ.get("KGUARD_PYTHON", "/usr/bin/python3")
INNER = [PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def wait_until(cond, timeout, what, interval=0.05):
    """Poll cond() until it is truthy or the deadline passes (then fail)."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def gone(pid):
    try:
        p = psutil.Process(pid)
        return p.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


class Env:
    """A private Jupyter + kguard environment rooted at tmp_path."""

    def __init__(self, tmp_path, monkeypatch):
        self.root = tmp_path
        self.state = tmp_path / "state"
        self.jpath = tmp_path / "jpath"
        self.work = tmp_path / "work"
        self.work.mkdir()
        monkeypatch.setenv("KGUARD_STATE_DIR", str(self.state))
        monkeypatch.setenv("JUPYTER_PATH", str(self.jpath))
        monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jdata"))
        monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jrt"))
        monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jcfg"))
        monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
        monkeypatch.setenv("PYTHONPATH", "")
        monkeypatch.chdir(self.work)
        self.managers = []

    def spec(self, name="kg", env=None, interrupt_mode=None, inner=None, kg_args=()):
        d = self.jpath / "kernels" / name
        d.mkdir(parents=True, exist_ok=True)
        spec = {
            "argv": [KGUARD, "kernel", "-f", "{connection_file}", "--name", name,
                     *kg_args, "--", *(inner or INNER)],
            "display_name": "kguard test " + name,
            "language": "python",
        }
        if env:
            spec["env"] = env
        if interrupt_mode:
            spec["interrupt_mode"] = interrupt_mode
        (d / "kernel.json").write_text(json.dumps(spec))
        return name

    def start(self, name="kg", ready=True, timeout=60):
        km = KernelManager(kernel_name=name)
        km.start_kernel(cwd=str(self.work))
        self.managers.append(km)
        kc = km.client()
        kc.start_channels()
        if ready:
            kc.wait_for_ready(timeout=timeout)
        return km, kc

    def close(self):
        for km in self.managers:
            try:
                if km.has_kernel:
                    km.shutdown_kernel(now=True)
            except Exception:
                pass

    def incidents(self):
        d = self.state / "incidents"
        if not d.exists():
            return []
        return [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))]


@pytest.fixture
def env(tmp_path, monkeypatch):
    e = Env(tmp_path, monkeypatch)
    yield e
    e.close()


def kguard_pid(km):
    return km.provisioner.process.pid


class Collector:
    """Drains iopub and shell replies into per-parent lists."""

    def __init__(self, kc):
        self.kc = kc
        self.iopub = {}
        self.replies = {}

    def _drain(self, timeout):
        got = False
        for getter, store in ((self.kc.get_iopub_msg, self.iopub),
                              (self.kc.get_shell_msg, None)):
            try:
                while True:
                    m = getter(timeout=timeout)
                    got = True
                    pid = m["parent_header"].get("msg_id")
                    if store is None:
                        self.replies[pid] = m
                    else:
                        store.setdefault(pid, []).append(m)
                    timeout = 0.001
            except queue.Empty:
                pass
        return got

    def wait_reply(self, msg_id, timeout=30):
        deadline = time.monotonic() + timeout
        while msg_id not in self.replies:
            if time.monotonic() > deadline:
                raise AssertionError("no reply to %s within %s s" % (msg_id, timeout))
            self._drain(0.05)
        return self.replies[msg_id]

    def wait_idle(self, msg_id, timeout=30):
        """Wait for the reply AND the idle status of msg_id; return (reply, iopub)."""
        deadline = time.monotonic() + timeout
        reply = self.wait_reply(msg_id, timeout)
        while not any(m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
                      for m in self.iopub.get(msg_id, [])):
            if time.monotonic() > deadline:
                raise AssertionError("no idle for %s" % msg_id)
            self._drain(0.05)
        return reply, self.iopub.get(msg_id, [])

    def wait_iopub(self, msg_id, pred, timeout=30, what="iopub message"):
        deadline = time.monotonic() + timeout
        while True:
            for m in self.iopub.get(msg_id, []):
                if pred(m):
                    return m
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for %s" % what)
            self._drain(0.05)

    def run(self, code, timeout=30, **kw):
        msg_id = self.kc.execute(code, **kw)
        return self.wait_idle(msg_id, timeout)


def outputs(msgs, kind):
    return [m for m in msgs if m["msg_type"] == kind]


def stdout_of(msgs):
    return "".join(m["content"]["text"] for m in msgs
                   if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")


def kernel_pid(col):
    reply, msgs = col.run("import os; print(os.getpid())")
    assert reply["content"]["status"] == "ok", reply["content"]
    return int(stdout_of(msgs).strip())


def notices(msgs, event=None):
    out = []
    for m in msgs:
        if m["msg_type"] != "display_data":
            continue
        k = m["content"].get("metadata", {}).get("kguard")
        if k and (event is None or k.get("event") == event):
            out.append(m)
    return out
