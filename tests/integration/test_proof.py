"""No false kills (issue 16): a restart needs proof. Printed GPU error text
(print, logging, a log file shown with !cat, a subprocess, a caught and
printed error) is a suspicion: kguard probes the device silently and, on a
healthy device (a CPU machine), the kernel and its state survive, with no
notice. Proof still restarts: the cell's uncaught sticky error, and a
caught-and-printed error when the (labelled) emulation has poisoned the
device, where the probe fails."""
from conftest import Collector, kernel_pid, notices, outputs, stdout_of

SETUP = "import os, kguard.emulate as em\n"
ASSERT_LINE = ("../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d:"
               " block: [0,0,0], thread: [3,0,0] Assertion `t >= 0 && t < n_classes` failed.")

FALSE_ALARMS = [
    "print('RuntimeError: CUDA error: device-side assert triggered')",
    "import sys\nprint(%r, file=sys.stderr)" % ASSERT_LINE,
    "import logging\nlogging.getLogger().error('previous run failed with CUDA error: "
    "an illegal memory access was encountered')",
    "open('train.log', 'w').write('step 10\\nRuntimeError: CUDA error: unspecified launch "
    "failure\\n')\n_ = get_ipython().system('cat train.log')",
    "try:\n    raise RuntimeError('CUDA error: device-side assert triggered')\n"
    "except RuntimeError as e:\n    print('handled:', e)",
    "import subprocess, sys\nsubprocess.run([sys.executable, '-c', %r])"
    % ("import sys; sys.stderr.write(%r)" % (ASSERT_LINE + "\n")),
]


def test_printed_gpu_errors_do_not_restart(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    pid = kernel_pid(col)
    col.run("state = 41")
    for code in FALSE_ALARMS:
        reply, msgs = col.run(code, timeout=60)
        assert reply["content"]["status"] == "ok", (code, reply["content"])
        assert not notices(msgs), (code, "a kguard notice for printed text")
        # the state and the process survive every one of them
        r, m = col.run("state += 1; print(state)", timeout=60)
        assert r["content"]["status"] == "ok", (code, r["content"])
    assert stdout_of(m).strip() == str(41 + len(FALSE_ALARMS))
    assert kernel_pid(col) == pid
    assert env.incidents() == []
    logs = "".join(p.read_text() for p in (env.state / "logs").glob("kguard-*.log"))
    assert "suspicion cleared" in logs


def test_caught_error_on_a_poisoned_device_restarts(env):
    # the emulation poisons the process; the cell catches the error and
    # prints it: only the probe can tell, and it fails
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2"})
    km, kc = env.start()
    col = Collector(kc)
    pid = kernel_pid(col)
    col.run(SETUP)
    cell = ("try:\n    em.step(2)\nexcept Exception as e:\n    print('handled:', e)\n")
    msg_id = kc.execute(cell)
    reply = col.wait_reply(msg_id, timeout=90)
    assert reply["metadata"]["kguard"]["event"] == "sticky-restart"
    col.wait_iopub(msg_id, lambda m: m["msg_type"] == "display_data"
                   and m["content"].get("metadata", {}).get("kguard", {}).get("event")
                   == "sticky-restart", timeout=90, what="the notice")
    assert kernel_pid(col) != pid
    (inc,) = env.incidents()
    assert inc["cell"]["msg_id"] == msg_id


def test_uncaught_cuda_text_still_restarts(env):
    # the cell's own uncaught error is proof, whatever produced it
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    pid = kernel_pid(col)
    msg_id = kc.execute("raise RuntimeError('CUDA error: device-side assert triggered')")
    reply = col.wait_reply(msg_id, timeout=90)
    assert reply["content"]["status"] == "error"
    col.wait_iopub(msg_id, lambda m: m["msg_type"] == "display_data", timeout=90,
                   what="the notice")
    assert kernel_pid(col) != pid
    assert outputs(col.iopub[msg_id], "error")
