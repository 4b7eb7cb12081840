"""Fault injection over `kguard kernel` start: the Nth fork, pipe2,
socket, execvpe or allocation in kguard fails. kguard must either exit with
a clear message (no signal death) or stay up (answering with KernelDown
when it could not start the kernel, as documented); then SIGTERM ends it
cleanly, and no inner kernel is ever left behind (no orphan)."""
import os
import signal
import subprocess
import time

import psutil
import pytest
from jupyter_client.connect import write_connection_file

from conftest import BIN, SHIM

PYTHON = os.environ.get("KGUARD_PYTHON", "/usr/bin/python3")

CASES = ["fork:1", "pipe2:1", "pipe2:2", "pipe2:4", "socket:1", "socket:3", "socket:6",
         "execvpe:1", "malloc:200", "malloc:2000", "calloc:20", "fork:1:kill"]


def kernels_of(state_dir):
    """ipykernel processes started for this state dir (by their environment)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if "ipykernel_launcher" in " ".join(p.info["cmdline"] or []) and \
                    p.environ().get("KGUARD_STATE_DIR") == state_dir:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


@pytest.mark.parametrize("fault", CASES)
def test_kernel_start_fault(tmp_path, fault):
    state = str(tmp_path / "state")
    conn = tmp_path / "conn.json"
    write_connection_file(str(conn), key=b"k" * 32)
    log = tmp_path / "fault.log"
    errf = open(tmp_path / "stderr.txt", "w+")
    env = dict(os.environ, KGUARD_STATE_DIR=state, LD_PRELOAD=SHIM, KG_FAULT=fault,
               KG_FAULT_EXE="kguard", KG_FAULT_LOG=str(log), PYTHONPATH="")
    p = subprocess.Popen([BIN, "kernel", "-f", str(conn), "--", PYTHON, "-m",
                          "ipykernel_launcher", "-f", "{connection_file}"],
                         env=env, stdout=subprocess.DEVNULL, stderr=errf, text=True)

    def settled():
        text = (tmp_path / "stderr.txt").read_text()
        return ("ready (pid" in text or "kguard is DOWN" in text or "unable to start" in text
                or "stays up" in text)

    # Wait until kguard exited, or its kernel is ready, or it said it is down.
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and p.poll() is None and not settled():
        time.sleep(0.1)
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        pytest.fail("kguard did not exit on SIGTERM with %s" % fault)
    errf.seek(0)
    err = errf.read()
    errf.close()
    fired = log.read_text() if log.exists() else ""
    if fault.endswith(":kill"):
        # fork #1 is kguard's own spawn of kguard-ckpt or the kernel: the
        # process that forks is killed right there.
        assert p.returncode == -9 and fired, (p.returncode, fired, err[-2000:])
    else:
        # libzmq aborts on a failed allocation by design: its alloc_assert
        # ("FATAL ERROR: OUT OF MEMORY (src/....cpp:N)"), its errno_assert
        # when a libc call inside it fails with ENOMEM ("Cannot allocate
        # memory (src/ip_resolver.cpp:542)"), or
        # an uncaught std::bad_alloc from its C++ `new` (libzmq is the only C++ code in
        # kguard). Which allocation is the Nth depends on libzmq's I/O
        # thread, so either can be hit: a library behaviour, reported in
        # docs/SECURITY.md. Anything else is a bug. Either way the orphan
        # check below still holds (the keeper).
        # (A third wording: socket_base.cpp checks its `new (std::nothrow)
        # mailbox_t` with zmq_assert, "Assertion failed: m (src/socket_base.cpp:270)".)
        libzmq_oom = (p.returncode == -signal.SIGABRT and fault.split(":")[0] in ("malloc", "calloc")
                      and ("FATAL ERROR: OUT OF MEMORY (src/" in err or "std::bad_alloc" in err
                           or "Assertion failed: m (src/socket_base.cpp:" in err
                           or "Cannot allocate memory (src/" in err))
        assert p.returncode >= 0 or libzmq_oom, "kguard died of signal %d with %s\n%s" % (
            -p.returncode, fault, err[-3000:])
        if p.returncode != 0 and fired and not libzmq_oom:
            assert " E: " in err or "error" in err.lower(), err[-2000:]
    # No orphan: whatever happened, no inner kernel of this kguard survives.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and kernels_of(state):
        time.sleep(0.1)
    left = kernels_of(state)
    for k in left:
        k.kill()
    assert not left, "inner kernel left behind with %s: %s" % (fault, left)
