"""Issue 13: the warm standby (`kguard kernel --standby`). A second kernel
process, started while the first runs, takes over at the next restart with
the restore handed to it; a new one starts behind it; a standby that dies,
and a diagnostic restart, fall back to a cold start; nothing outlives a
shutdown. The faults are kguard's labelled CPU emulation."""
import os
import signal
import subprocess

import psutil

from conftest import (KGUARD, INNER, Collector, gone, kernel_pid, kguard_pid, stdout_of,
                      wait_until)

SETUP = "import os, kguard.emulate as em\n"


def _standbys(km, not_pid=None):
    """Pids of kguard's children that are warm standbys (KGUARD_STANDBY=1)."""
    out = []
    for p in psutil.Process(kguard_pid(km)).children():
        try:
            if p.status() != psutil.STATUS_ZOMBIE and p.environ().get("KGUARD_STANDBY") == "1":
                out.append(p.pid)
        except psutil.NoSuchProcess:
            pass
    return [p for p in out if p != not_pid]


def _one_standby(km, not_pid=None, timeout=60):
    found = []
    wait_until(lambda: found.extend(_standbys(km, not_pid)) or found, timeout,
               "a warm standby kernel")
    return found[0]


def _log(env):
    return "".join(p.read_text(errors="replace")
                   for p in sorted((env.state / "logs").glob("kguard-*.log")))


def _wait_notice(col, msg_id, event, timeout=90):
    return col.wait_iopub(
        msg_id, lambda m: m["msg_type"] == "display_data"
        and m["content"].get("metadata", {}).get("kguard", {}).get("event") == event,
        timeout=timeout, what="a %s notice" % event)


def test_standby_takes_over_with_the_restore(env, monkeypatch):
    monkeypatch.setenv("KGUARD_KEY_DIR", str(env.root / "keys"))
    r = subprocess.run([KGUARD, "keygen"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:stderr-only:step=20",
                  "KGUARD_STANDBY_IMPORTS": "wave"},   # not imported by ipykernel
             inner=INNER + ["--IPKernelApp.capture_fd_output=False"], kg_args=("--standby",))
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    standby = _one_standby(km)
    assert standby != pid1
    # kguard sees it answer kernel_info (never relayed) before any fault
    wait_until(lambda: "warm standby ready: pid %d" % standby in _log(env), 60,
               "the standby's readiness in kguard's log")
    reply, _ = col.run(SETUP + "import kguard\nprint(kguard.save({'w': 1}, step=10))",
                       timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    msg_id = kc.execute("em.step(20)\nkguard.save({'w': 2}, step=30)")
    col.wait_reply(msg_id, timeout=60)
    md = _wait_notice(col, msg_id, "sticky-restart")["content"]["metadata"]["kguard"]
    assert md["restored_step"] == 10
    reply, msgs = col.run(
        "import os, sys, kguard\n"
        "print(os.getpid(), os.environ.get('KGUARD_STANDBY'), 'wave' in sys.modules)\n"
        "print(kguard.resume().step, os.environ.get('KGUARD_RESUME_STEP'))", timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    lines = stdout_of(msgs).split("\n")
    assert lines[0].split() == [str(standby), "1", "True"], lines   # the standby took over
    assert lines[1].split() == ["10", "10"], lines                  # with the restore
    assert "pid %d (the warm standby, started" % standby in _log(env)
    wait_until(lambda: gone(pid1), 30, "the poisoned kernel's end")
    # a new standby behind it, not the kernel now running
    assert _one_standby(km, not_pid=standby) not in (pid1, standby)


def test_standby_takes_over_with_the_snapshot_in_memory(env, monkeypatch):
    # The next cell after a fault runs in the warm standby with the state
    # kguard.snapshot left in kguard's memory (step 19), newer than the disk
    # checkpoint (step 10), read from memory.
    monkeypatch.setenv("KGUARD_KEY_DIR", str(env.root / "keys"))
    r = subprocess.run([KGUARD, "keygen"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    shm = env.root / "shm"
    shm.mkdir()
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:stderr-only:step=20",
                  "KGUARD_SNAPSHOT_BASE": str(shm)},
             inner=INNER + ["--IPKernelApp.capture_fd_output=False"], kg_args=("--standby",))
    km, kc = env.start()
    col = Collector(kc)
    standby = _one_standby(km)
    wait_until(lambda: "warm standby ready: pid %d" % standby in _log(env), 60,
               "the standby's readiness in kguard's log")
    reply, _ = col.run(SETUP + "import kguard\nkguard.save({'w': 10}, step=10)\n"
                       "print(kguard.snapshot({'w': 19}, step=19).wait())", timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    msg_id = kc.execute("em.step(20)")
    col.wait_reply(msg_id, timeout=60)
    md = _wait_notice(col, msg_id, "sticky-restart")["content"]["metadata"]["kguard"]
    assert md["restored_step"] == 19, md
    reply, msgs = col.run("import os, kguard\nr = kguard.resume()\n"
                          "print(os.getpid(), r.step, r.tier, r.load()['w'])", timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(msgs).split() == [str(standby), "19", "memory", "19"], stdout_of(msgs)


def test_dead_standby_and_diagnostic_restart_start_cold(env):
    env.spec(kg_args=("--standby",))
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    standby = _one_standby(km)
    # a diagnostic restart needs its variables at start: never the standby
    reply, _ = col.run("%kguard restart --diagnostic", timeout=90)
    assert reply["content"]["status"] == "ok", reply["content"]
    reply, msgs = col.run("import os; print(os.getpid(), os.environ.get('KGUARD_DIAGNOSTIC'))",
                          timeout=60)
    pid2, diag = stdout_of(msgs).split()
    assert int(pid2) not in (pid1, standby) and diag == "1"
    # the standby died before it was needed: the next restart starts cold
    os.kill(standby, signal.SIGKILL)
    wait_until(lambda: gone(standby), 30, "the standby's end")
    reply, _ = col.run("%kguard restart", timeout=90)
    assert reply["content"]["status"] == "ok", reply["content"]
    pid3 = kernel_pid(col)
    assert pid3 not in (pid1, int(pid2), standby)
    # and a new standby starts behind the fresh kernel
    later = _one_standby(km, not_pid=standby)
    assert later != pid3


def test_shutdown_leaves_no_standby(env):
    env.spec(kg_args=("--standby",))
    km, kc = env.start()
    col = Collector(kc)
    kernel = kernel_pid(col)
    standby = _one_standby(km)
    kc.stop_channels()
    km.shutdown_kernel()
    wait_until(lambda: gone(kernel) and gone(standby), 30, "kernel and standby gone")
