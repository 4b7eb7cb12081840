"""The wire under attack (docs/SECURITY.md, "Who can reach what"): a keyed
client cannot wedge kguard's loop; what ipykernel prints for strangers is
neither evidence nor an unbounded log; replayed and reflected messages never
reach the kernel; a frontend's skewed clock cannot turn a stale request into
a fresh one."""
import os
import signal
import time

import zmq
from jupyter_client.session import Session

from conftest import Collector, gone, kguard_pid, stdout_of, wait_until


def _connect(km, channel, kind=zmq.DEALER):
    info = km.get_connection_info()
    sock = zmq.Context.instance().socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect("%s://%s:%d" % (info["transport"], info["ip"], info[channel + "_port"]))
    return sock


def _logs(env, prefix="kguard"):
    return "".join(p.read_text(errors="replace")
                   for p in (env.state / "logs").glob(prefix + "-*.log*"))


def test_input_reply_flood_does_not_wedge_the_loop(env):
    """5,000 signed input_reply messages while no input() is pending: kguard
    neither forwards them nor blocks; it still answers kernel_info, runs a
    cell, and exits on SIGTERM within its bound (SIGTERM grace 1 s plus the
    inner kernel's own shutdown)."""
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    sock = _connect(km, "stdin")
    sock.setsockopt(zmq.SNDHWM, 0)        # never block the flooder itself
    keyed = Session(key=km.session.key, session=kc.session.session)
    parent = {"msg_id": "no-such-input-request", "session": kc.session.session,
              "msg_type": "input_request", "username": "u", "version": "5.3",
              "date": "2026-12-03T08:00:00.000000Z"}
    value = "x" * 2000
    for _ in range(5000):
        keyed.send(sock, "input_reply", {"value": value, "status": "ok"}, parent=parent)
    # kguard has read the whole flood once its drop log accounts for it
    wait_until(lambda: "5000 unexpected" in _logs(env), 30, "the flood to be read")
    msg_id = kc.kernel_info()
    reply = col.wait_reply(msg_id, timeout=30)
    assert reply["msg_type"] == "kernel_info_reply"
    reply, msgs = col.run("print('still here')", timeout=30)
    assert stdout_of(msgs) == "still here\n"
    sock.close()
    pid = kguard_pid(km)
    os.kill(pid, signal.SIGTERM)
    t0 = time.monotonic()
    wait_until(lambda: gone(pid), 10, "kguard to exit on SIGTERM")
    assert time.monotonic() - t0 < 10
    logs = _logs(env)
    assert "input_reply" in logs and "no input_request" in logs, logs[-3000:]


_SLOW_COMM = r'''
import os, time
def _target(comm, msg):
    @comm.on_msg
    def _(m):
        # the first message holds the kernel's shell until the test says so
        while not os.path.exists(RELEASE):
            time.sleep(0.05)
get_ipython().kernel.comm_manager.register_target("kg_slow", _target)
'''


def test_kernel_not_reading_its_shell_does_not_wedge_the_loop(env):
    """The kernel stops reading its shell channel (a comm handler that
    blocks) while a keyed client sends it 5,000 comm messages: kguard's
    sends never block; what the kernel cannot take waits in a bounded queue,
    the rest is dropped and logged at a bounded rate; control still works,
    and once the kernel reads again everything goes on."""
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    release = env.work / "release"
    reply, _ = col.run(_SLOW_COMM.replace("RELEASE", repr(str(release))))
    assert reply["content"]["status"] == "ok"
    sock = _connect(km, "shell")
    sock.setsockopt(zmq.SNDHWM, 0)
    keyed = Session(key=km.session.key, session=kc.session.session)
    keyed.send(sock, "comm_open", {"comm_id": "c1", "target_name": "kg_slow", "data": {}})
    data = {"blob": "y" * 2000}
    for _ in range(5000):
        keyed.send(sock, "comm_msg", {"comm_id": "c1", "data": data})
    wait_until(lambda: "unable to send comm_msg to the kernel" in _logs(env), 60,
               "kguard's queue to the kernel to fill")
    # the loop is free: control is answered while the shell is held
    msg = kc.session.msg("kernel_info_request")
    kc.control_channel.send(msg)
    got = kc.get_control_msg(timeout=10)
    assert got["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    release.write_text("go")
    reply, msgs = col.run("print('after')", timeout=60)
    assert stdout_of(msgs) == "after\n"
    sock.close()
    pid = kguard_pid(km)
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: gone(pid), 10, "kguard to exit on SIGTERM")
    logs = _logs(env)
    full = [l for l in logs.splitlines() if "unable to send comm_msg" in l]
    assert 1 <= len(full) <= 5, full
    assert "unsent" in logs
