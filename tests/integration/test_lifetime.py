"""kguard's lifetime is tied to its launcher's, and its kernel's whole
process group to kguard's, even when something is SIGKILLed.

- The launcher (here a Python process starting kguard through
  jupyter_client's KernelManager, as Jupyter does; it sets JPY_PARENT_PID)
  is SIGKILLed: kguard and its inner kernel exit within seconds, as plain
  ipykernel does.
- kguard is SIGKILLed while the kernel runs a subprocess (a Popen'd sleep,
  standing in for DataLoader workers): the sleep is gone too (the keeper).
"""
import os
import signal
import subprocess
import sys
import textwrap

import psutil

from conftest import PYTHON, Collector, gone, kguard_pid, stdout_of, wait_until

LAUNCHER = textwrap.dedent("""
    import sys, time, psutil
    from jupyter_client import KernelManager
    km = KernelManager(kernel_name="kg")
    km.start_kernel()
    kc = km.client(); kc.start_channels(); kc.wait_for_ready(timeout=60)
    kg = km.provisioner.process.pid
    kids = [c.pid for c in psutil.Process(kg).children() if "ipykernel" in " ".join(c.cmdline())]
    print(kg, kids[0], flush=True)
    sys.stdin.read()        # until the test kills us
""")


def test_launcher_sigkill_takes_kguard_and_kernel(env):
    env.spec()
    launcher = subprocess.Popen([PYTHON, "-c", LAUNCHER], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
    try:
        line = launcher.stdout.readline()
        kg, kernel = (int(x) for x in line.split())
        assert psutil.Process(kg).ppid() == launcher.pid
        launcher.kill()
        launcher.wait(timeout=10)
        wait_until(lambda: gone(kg), 10, "kguard to exit after its launcher was SIGKILLed")
        wait_until(lambda: gone(kernel), 10, "the inner kernel to exit with kguard")
    finally:
        launcher.kill()
        launcher.wait()
        for pid in (locals().get("kg"), locals().get("kernel")):
            if pid and not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_kguard_sigkill_takes_the_kernels_subprocesses(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    reply, msgs = col.run("import subprocess, os\n"
                          "p = subprocess.Popen(['sleep', '300'])\n"
                          "print(os.getpid(), p.pid)")
    assert reply["content"]["status"] == "ok", reply["content"]
    kernel, sleeper = (int(x) for x in stdout_of(msgs).split())
    assert not gone(sleeper)
    os.kill(kguard_pid(km), signal.SIGKILL)
    wait_until(lambda: gone(kernel), 10, "the kernel to die with kguard (PDEATHSIG)")
    wait_until(lambda: gone(sleeper), 10, "the kernel's Popen'd sleep to die with kguard")
