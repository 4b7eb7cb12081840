"""Protocol strings of any length (issue 9): msg_id, session and username of
4 KiB go through every path where kguard answers or routes by id (sticky
restart, kernel death, interrupt, stdin, in-band commands, shutdown), and
kguard's own CPU time stays flat once the replies are in. (Before: ids were
copied into 64/128-byte buffers; the removal of a pending entry by the
truncated id missed, and kguard spun at 100 % of a core for ever.)"""
import os
import time

from conftest import Collector, kernel_pid, kguard_pid, wait_until

LONG = 4096
SETUP = "import os, kguard.emulate as em\n"


def _make(kc, msg_type, content, tag):
    """msg_type with a 4 KiB msg_id, session and username, made now."""
    msg = kc.session.msg(msg_type, content)
    msg_id = tag + "-" + "i" * LONG
    msg["header"]["msg_id"] = msg_id
    msg["msg_id"] = msg_id
    msg["header"]["session"] = "s" * LONG
    msg["header"]["username"] = "u" * LONG
    return msg


def _send(kc, channel, msg_type, content, tag):
    """Send msg_type with a 4 KiB msg_id, session and username; return the id."""
    msg = _make(kc, msg_type, content, tag)
    channel.send(msg)
    return msg["header"]["msg_id"]


def _exec_content(code):
    return dict(code=code, silent=False, store_history=True, user_expressions={},
                allow_stdin=False, stop_on_error=True)


def _execute(kc, code, tag, **kw):
    content = dict(code=code, silent=False, store_history=True, user_expressions={},
                   allow_stdin=False, stop_on_error=True)
    content.update(kw)
    return _send(kc, kc.shell_channel, "execute_request", content, tag)


def _cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _assert_cpu_flat(col, pid):
    """kguard's CPU time over a quiet second (marked by the kernel itself: a
    cell that sleeps, its reply is the end of the period) stays well below
    what a spinning loop burns (about 1 s of CPU per second)."""
    before = _cpu_s(pid)
    t0 = time.monotonic()
    reply, _ = col.run("import time; time.sleep(1.0)", timeout=30)
    assert reply["content"]["status"] == "ok"
    wall = time.monotonic() - t0
    used = _cpu_s(pid) - before
    assert used < 0.5 * wall, "kguard used %.2f s of CPU in %.2f s: spinning" % (used, wall)


def test_long_ids_sticky_restart(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2"})
    km, kc = env.start()
    col = Collector(kc)
    kernel_pid(col)
    col.run(SETUP)
    msgs = [_make(kc, "execute_request", _exec_content("em.step(2)"), "fail"),
            _make(kc, "execute_request", _exec_content("print('queued')"), "queued")]
    for m in msgs:   # Run All: both made before either is sent
        kc.shell_channel.send(m)
    bad, queued = (m["header"]["msg_id"] for m in msgs)
    r1 = col.wait_reply(bad, timeout=60)
    r2 = col.wait_reply(queued, timeout=60)
    assert r1["content"]["status"] == "error"
    assert r2["content"]["ename"] == "KernelRestarted"
    # the notice says the fresh kernel is ready (earlier requests are stale)
    col.wait_iopub(bad, lambda m: m["msg_type"] == "display_data"
                   and m["content"].get("metadata", {}).get("kguard", {}).get("event")
                   == "sticky-restart", timeout=90, what="the notice")
    kernel_pid(col)
    _assert_cpu_flat(col, kguard_pid(km))


def test_long_ids_kernel_death(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    kernel_pid(col)
    # Run All: both made before either is sent (the second is queued behind
    # the first; made after the death's notice it would legitimately run)
    msgs = [_make(kc, "execute_request",
                  _exec_content("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"),
                  "die"),
            _make(kc, "execute_request", _exec_content("print('queued')"), "queued")]
    for m in msgs:
        kc.shell_channel.send(m)
    dying, queued = (m["header"]["msg_id"] for m in msgs)
    r1 = col.wait_reply(dying, timeout=60)
    r2 = col.wait_reply(queued, timeout=60)
    assert r1["content"]["ename"] == "KernelDied"
    assert r2["content"]["status"] == "error"
    kernel_pid(col)
    _assert_cpu_flat(col, kguard_pid(km))


def test_long_ids_interrupt_stdin_inband(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    kernel_pid(col)
    # stdin: the kernel's input_request names the long id as its parent.
    asking = _execute(kc, "x = input('? ')\nprint('got', len(x))", "ask", allow_stdin=True)
    req = kc.get_stdin_msg(timeout=30)
    assert req["parent_header"]["msg_id"] == asking
    _send(kc, kc.stdin_channel, "input_reply", {"value": "v" * LONG}, "answer")
    reply, msgs = col.wait_idle(asking, timeout=30)
    assert reply["content"]["status"] == "ok"
    # interrupt, answered by kguard itself (signal mode)
    sleeper = _execute(kc, "import time; time.sleep(30)", "sleep")
    col.wait_iopub(sleeper, lambda m: m["msg_type"] == "execute_input", what="execute_input")
    intr = _send(kc, kc.control_channel, "interrupt_request", {}, "intr")
    ireply = kc.get_control_msg(timeout=30)
    assert ireply["parent_header"]["msg_id"] == intr
    r = col.wait_reply(sleeper, timeout=30)
    assert r["content"]["status"] == "error"
    # in-band command, answered by kguard
    st = _execute(kc, "%kguard status", "status")
    reply, _ = col.wait_idle(st, timeout=30)
    assert reply["content"]["status"] == "ok"
    _assert_cpu_flat(col, kguard_pid(km))


def test_long_ids_shutdown(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    kernel_pid(col)
    sd = _send(kc, kc.control_channel, "shutdown_request", {"restart": False}, "shutdown")
    reply = kc.get_control_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == sd
    wait_until(lambda: km.provisioner.process.poll() is not None, 10, "kguard to exit")
    assert km.provisioner.process.returncode == 0
