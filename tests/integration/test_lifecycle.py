"""Issue 2: process life cycle: shutdown, restart, deaths, bad input."""
import json
import os
import signal
import subprocess
import time

import psutil

from conftest import (KGUARD, INNER, PYTHON, Collector, gone, kernel_pid, kguard_pid, notices,
                      outputs, stdout_of, wait_until)


def _inner_of(km):
    kids = psutil.Process(kguard_pid(km)).children()
    assert len(kids) == 1, kids
    return kids[0].pid


def test_shutdown_leaves_nothing(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    inner = kernel_pid(col)
    outer = kguard_pid(km)
    assert psutil.Process(inner).ppid() == outer
    assert os.getpgid(inner) != os.getpgid(outer)   # its own process group
    t0 = time.monotonic()
    km.shutdown_kernel()                              # graceful: shutdown_request
    elapsed = time.monotonic() - t0
    assert elapsed < 2.5, "shutdown took %.2f s" % elapsed
    assert km.provisioner is None or km.provisioner.process is None or gone(outer)
    wait_until(lambda: gone(outer) and gone(inner), 5, "kguard and the kernel to exit")


def test_restart_through_kernel_manager(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    inner1 = kernel_pid(col)
    outer1 = kguard_pid(km)
    t0 = time.monotonic()
    km.restart_kernel()                               # same ports: they must be free
    assert time.monotonic() - t0 < 10
    outer2 = kguard_pid(km)
    assert outer2 != outer1
    wait_until(lambda: gone(outer1) and gone(inner1), 5, "the old processes to exit")
    kc.wait_for_ready(timeout=60)
    col = Collector(kc)
    inner2 = kernel_pid(col)
    assert inner2 != inner1
    reply, msgs = col.run("print(1+1)")
    assert stdout_of(msgs) == "2\n"


def test_sigterm_to_kguard(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    inner = kernel_pid(col)
    outer = kguard_pid(km)
    t0 = time.monotonic()
    os.kill(outer, signal.SIGTERM)
    code = km.provisioner.process.wait(timeout=5)
    assert code == 0
    assert time.monotonic() - t0 < 2.5
    wait_until(lambda: gone(inner), 5, "the kernel to exit")


def test_inner_kernel_sigkill(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    inner1 = kernel_pid(col)
    msg_id = kc.execute("import time; time.sleep(30)")
    col.wait_iopub(msg_id, lambda m: m["msg_type"] == "execute_input", what="execute_input")
    os.kill(inner1, signal.SIGKILL)
    reply, msgs = col.wait_idle(msg_id, timeout=20)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KernelDied"
    assert "SIGKILL" in reply["content"]["evalue"]
    assert outputs(msgs, "error")[0]["content"]["ename"] == "KernelDied"
    n = notices(msgs, "kernel-died")
    assert n, "no kernel-died notice"
    assert "SIGKILL" in n[0]["content"]["data"]["text/plain"]
    # a fresh kernel serves the next request
    inner2 = kernel_pid(col)
    assert inner2 != inner1
    assert km.is_alive()
    logs = "".join(p.read_text() for p in (env.state / "logs").glob("kguard-*.log"))
    assert "died on its own" in logs


def test_kguard_sigkill_takes_the_kernel(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    inner = kernel_pid(col)
    os.kill(kguard_pid(km), signal.SIGKILL)
    wait_until(lambda: gone(inner), 10, "the inner kernel to die with kguard")


def _run_kguard(args, timeout=20):
    return subprocess.run([KGUARD, "kernel", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_missing_connection_file(env):
    r = _run_kguard(["-f", str(env.root / "nope.json"), "--", *INNER])
    assert r.returncode == 100
    assert "nope.json" in r.stderr
    assert "No such file" in r.stderr


def test_malformed_connection_file(env):
    bad = env.root / "bad.json"
    bad.write_text(json.dumps({"transport": "tcp", "ip": "127.0.0.1", "iopub_port": 5,
                               "stdin_port": 6, "control_port": 7, "hb_port": 8,
                               "key": "k", "signature_scheme": "hmac-sha256"}))
    r = _run_kguard(["-f", str(bad), "--", *INNER])
    assert r.returncode == 100
    assert "shell_port" in r.stderr
    bad.write_text("{not json")
    r = _run_kguard(["-f", str(bad), "--", *INNER])
    assert r.returncode == 100


def test_usage_errors(env):
    r = subprocess.run([KGUARD, "kernel", "--", *INNER], capture_output=True, text=True)
    assert r.returncode == 100 and "-f" in r.stderr
    r = subprocess.run([KGUARD, "kernel", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--interrupt-mode" in r.stdout


def test_nonexistent_inner_command(env):
    env.spec(inner=["/nonexistent/bin/python-kernel", "-f", "{connection_file}"])
    km, kc = env.start()                      # kernel_info is answered anyway
    col = Collector(kc)
    info = col.wait_reply(kc.kernel_info())
    assert "nonexistent" in info["content"]["banner"]
    reply, msgs = col.run("print(1)")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KernelDown"
    assert "/nonexistent/bin/python-kernel" in reply["content"]["evalue"]
    assert "No such file" in reply["content"]["evalue"]
    assert km.is_alive()
    logs = "".join(p.read_text() for p in (env.state / "logs").glob("kguard-*.log"))
    # one clear line, no restart loop
    assert logs.count("E: unable to start the kernel") == 1
    assert "started: pid" not in logs
    # the state dir and its files are private
    assert (env.state.stat().st_mode & 0o777) == 0o700
    for p in (env.state / "logs").iterdir():
        assert (p.stat().st_mode & 0o777) == 0o600, p


def test_kernel_info_from_cache_while_restarting(env):
    # an inner kernel that takes 3 s to start: long enough to observe STARTING
    slow = ["/bin/sh", "-c", "sleep 3; exec \"$0\" -m ipykernel_launcher -f \"$1\"", PYTHON,
            "{connection_file}"]
    env.spec(inner=slow)
    km, kc = env.start(timeout=90)
    col = Collector(kc)
    pid1 = kernel_pid(col)
    reply, _ = col.run("%kguard restart")
    assert reply["content"]["status"] == "ok"
    t0 = time.monotonic()
    for ch in ("shell", "control"):
        msg = kc.session.msg("kernel_info_request", {})
        getattr(kc, ch + "_channel").send(msg)
        r = (kc.get_shell_msg if ch == "shell" else kc.get_control_msg)(timeout=2)
        assert r["parent_header"]["msg_id"] == msg["header"]["msg_id"]
        assert r["content"]["implementation"] == "ipython"      # the cached reply
        col.wait_iopub(msg["header"]["msg_id"],
                       lambda m: m["msg_type"] == "status"
                       and m["content"]["execution_state"] == "idle",
                       timeout=2, what="busy/idle around the cached reply")
    assert time.monotonic() - t0 < 2.5, "kernel_info waited for the new kernel"
    # requests sent meanwhile are held and run in the fresh kernel
    assert kernel_pid(col) != pid1


def test_inband_cell_errors_name_the_problem(env):
    """A `%kguard` cell kguard cannot run is answered by kguard (never sent to
    the kernel, which would raise a NameError), naming the problem and the
    usage; the kernel is not restarted."""
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    pid = kernel_pid(col)
    for cell, problem in (("%kguard restart --diag", "restart: unknown option '--diag'"),
                          ("%kguard restart --diagnostic now",
                           "restart: unexpected argument 'now'"),
                          ("%kguard " + "x" * 5000, "unknown command '" + "x" * 10)):
        reply, msgs = col.run(cell)
        text = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
        assert reply["content"]["status"] == "error", reply["content"]
        assert problem in text and "usage: %kguard restart" in text, text
        assert len(text) < 1000, "the offending word is quoted cut, not whole"
    assert kernel_pid(col) == pid
