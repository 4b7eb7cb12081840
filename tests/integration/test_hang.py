"""Issue 10: a kernel stopped with SIGSTOP mid-cell. kguard answers the
frontend's heartbeat itself, so only kguard can see the kernel stop: it pings
the kernel's heartbeat while a cell runs, and after the configured misses
(here 3 x 0.2 s) stops it, answers the cell KernelDied naming why, tells the
notebook, and starts a fresh kernel. An idle stopped kernel is left alone."""
import os
import signal
import time

from conftest import Collector, gone, kernel_pid, notices, stdout_of, wait_until

HB = {"KGUARD_KERNEL_HB_PERIOD": "0.2", "KGUARD_KERNEL_HB_MISSES": "3"}


def test_stopped_mid_cell_is_detected_and_restarted(env):
    env.spec(env=HB)
    km, kc = env.start()
    col = Collector(kc)
    pid = kernel_pid(col)
    msg_id = kc.execute("import time\nprint('started', flush=True)\ntime.sleep(600)")
    col.wait_iopub(msg_id, lambda m: m["msg_type"] == "stream", what="the cell's first output")
    os.kill(pid, signal.SIGSTOP)
    reply = col.wait_reply(msg_id, timeout=60)
    assert reply["content"]["status"] == "error", reply["content"]
    assert reply["content"]["ename"] == "KernelDied", reply["content"]
    assert "stopped answering its heartbeat" in reply["content"]["evalue"]
    assert "SIGSTOP" in reply["content"]["evalue"]
    _, msgs = col.wait_idle(msg_id, timeout=60)
    assert notices(msgs), "no kguard notice under the cell"
    wait_until(lambda: gone(pid), 30, "the stopped kernel's end")
    assert kernel_pid(col) != pid   # a fresh kernel answers


def test_stopped_while_idle_is_left_alone(env):
    env.spec(env=HB)
    km, kc = env.start()
    col = Collector(kc)
    pid = kernel_pid(col)
    os.kill(pid, signal.SIGSTOP)
    try:
        # A negative over time: `%kguard status` cells (answered by kguard,
        # not the stopped kernel) until more than the 3 x 0.2 s of misses
        # that would declare a running cell's kernel hung have passed.
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.5:
            reply, msgs = col.run("%kguard status")
            assert "state READY" in stdout_of(msgs), stdout_of(msgs)
    finally:
        os.kill(pid, signal.SIGCONT)
    reply, msgs = col.run("print('still', 1 + 1)")
    assert stdout_of(msgs).strip() == "still 2"
    assert kernel_pid(col) == pid
