"""Issues 3 and 4 (supervisor part): sticky GPU errors, advice, policy,
diagnostic restarts and checkpoint restore, with kguard's labelled emulation
(python/kguard/emulate.py): no GPU is used."""
import os
import signal
import subprocess
import time

from conftest import (KGUARD, INNER, Collector, kernel_pid, notices, outputs, stdout_of,
                      wait_until)

SETUP = "import os, kguard.emulate as em\n"


def _text(msg):
    return msg["content"]["data"]["text/plain"]


def _wait_notice(col, msg_id, event, timeout=90):
    return col.wait_iopub(
        msg_id, lambda m: m["msg_type"] == "display_data"
        and m["content"].get("metadata", {}).get("kguard", {}).get("event") == event,
        timeout=timeout, what="a %s notice" % event)


def test_run_all_cuda_assert(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2"})
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    markers = [env.work / ("cell%d-ran" % i) for i in (3, 4, 5)]
    cells = [SETUP + "em.step(1)\nprint('cell1')",
             "em.step(2)\nprint('not reached')"] + \
            ["open(%r, 'w').write('ran')" % str(m) for m in markers]
    ids = [kc.execute(c) for c in cells]          # "Run All": all five at once
    replies = [col.wait_reply(i, timeout=60) for i in ids]
    assert replies[0]["content"]["status"] == "ok"
    failing = replies[1]["content"]
    assert failing["status"] == "error"
    assert failing["ename"] != "KernelRestarted"  # the real error, relayed
    assert "device-side assert triggered" in failing["evalue"]
    assert replies[1]["metadata"]["kguard"]["event"] == "sticky-restart"
    assert replies[1]["metadata"]["kguard"]["family"] == "device-assert"
    for i, r in zip(ids[2:], replies[2:]):
        assert r["content"]["status"] == "error"
        assert r["content"]["ename"] == "KernelRestarted"
        _, msgs = col.wait_idle(i)
        assert outputs(msgs, "error")[0]["content"]["ename"] == "KernelRestarted"
        assert [m["content"]["execution_state"] for m in outputs(msgs, "status")] == \
            ["busy", "idle"]
    notice = _wait_notice(col, ids[1], "sticky-restart")
    text = _text(notice)
    assert "CUDA_LAUNCH_BLOCKING" in text and "AMD_SERIALIZE_KERNEL" not in text
    md = notice["content"]["metadata"]["kguard"]
    assert md["family"] == "device-assert" and md["incident"]
    # a fresh kernel with a new pid serves the next request
    pid2 = kernel_pid(col)
    assert pid2 != pid1
    assert not any(m.exists() for m in markers), "a queued cell ran"
    (inc,) = env.incidents()
    assert inc["id"] == md["incident"]
    assert inc["family"] == "device-assert" and inc["sticky"] is True
    assert "device-side assert triggered" in inc["first_error"]["evalue"]
    assert "Assertion `t >= 0 && t < n_classes` failed" in inc["assertion_line"]
    assert inc["cell"]["code"] == cells[1]
    assert inc["cell"]["msg_id"] == ids[1]
    # the record and the notice name the failing cell by its own execution count
    assert inc["cell"]["execution_count"] == failing["execution_count"]
    assert "Cell [%d]" % failing["execution_count"] in text
    pend = {p["msg_id"] for p in inc["pending_requests"]}
    assert set(ids[2:]) <= pend
    assert any("Assertion" in line for line in inc["raw_stderr_tail"])
    assert "diagnostic_env" in inc and "restart_count" in inc
    # versions come from a separate probe process; poll the record for them
    wait_until(lambda: "versions" in env.incidents()[0], 60, "the probe's versions")
    v = env.incidents()[0]["versions"]
    assert v.get("python") and v.get("torch")


def test_assertion_only_on_raw_stderr(env):
    # ipykernel must not forward fd 2 to iopub: the line reaches only kguard's pipe
    inner = INNER + ["--IPKernelApp.capture_fd_output=False"]
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:stderr-only:step=1"}, inner=inner)
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    msg_id = kc.execute(SETUP + "em.step(1)\nprint('step returned')")
    reply = col.wait_reply(msg_id, timeout=60)
    _wait_notice(col, msg_id, "sticky-restart")
    for msgs in col.iopub.values():
        for m in msgs:
            if m["msg_type"] == "stream":
                assert "Assertion" not in m["content"]["text"]
    assert kernel_pid(col) != pid1
    (inc,) = env.incidents()
    assert "Assertion `t >= 0 && t < n_classes` failed" in inc["assertion_line"]
    assert inc["family"] == "device-assert"


def test_rocm_wording(env):
    env.spec(env={"KGUARD_EMULATE": "rocm-assert:step=1"})
    km, kc = env.start()
    col = Collector(kc)
    msg_id = kc.execute(SETUP + "em.step(1)")
    reply = col.wait_reply(msg_id, timeout=60)
    assert "HIP error" in reply["content"]["evalue"]
    text = _text(_wait_notice(col, msg_id, "sticky-restart"))
    assert "AMD_SERIALIZE_KERNEL" in text
    assert "CUDA_LAUNCH_BLOCKING" not in text
    (inc,) = env.incidents()
    assert inc["backend"] == "rocm"


def test_oom_and_device_mismatch_advice(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-oom:step=1"})
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    msg_id = kc.execute(SETUP + "em.step(1)")
    reply, msgs = col.wait_idle(msg_id, timeout=30)
    assert reply["content"]["status"] == "error"
    assert "out of memory" in reply["content"]["evalue"]
    (n,) = notices(msgs, "advice")
    assert n["content"]["metadata"]["kguard"]["family"] == "out-of-memory"
    assert kernel_pid(col) == pid1                        # no restart
    code = ("os.environ['KGUARD_EMULATE'] = 'device-mismatch:step=1'\nem.reset()\n"
            "em.step(1)")
    reply, msgs = col.run(code)
    assert reply["content"]["status"] == "error"
    (n,) = notices(msgs, "advice")
    assert n["content"]["metadata"]["kguard"]["family"] == "device-mismatch"
    assert kernel_pid(col) == pid1
    assert all(not i["sticky"] for i in env.incidents())


def test_repeated_signature_stops_and_down(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=1"})
    km, kc = env.start()
    col = Collector(kc)
    cell = SETUP + "em.step(1)"
    first = kc.execute(cell)
    col.wait_reply(first, timeout=60)
    _wait_notice(col, first, "sticky-restart")
    second = kc.execute(cell)                      # the same failure again
    col.wait_reply(second, timeout=60)
    down = _wait_notice(col, second, "down")
    assert "restart" in _text(down)
    reply, msgs = col.run("print(1)")
    assert reply["content"]["ename"] == "KernelDown"
    assert "%kguard restart" in reply["content"]["evalue"]
    info = col.wait_reply(kc.kernel_info())        # still answered while DOWN
    assert info["content"]["status"] == "ok"
    assert km.is_alive()
    reply, msgs = col.run("%kguard restart")       # leaves DOWN
    assert reply["content"]["status"] == "ok"
    reply, msgs = col.run("print('back')", timeout=60)
    assert stdout_of(msgs) == "back\n"


def test_restart_budget(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=1"})
    km, kc = env.start()
    col = Collector(kc)
    events = []
    for i in range(4):                  # different cells: different signatures
        msg_id = kc.execute(SETUP + "x = %d\nem.step(1)" % i)
        col.wait_reply(msg_id, timeout=60)
        m = col.wait_iopub(msg_id, lambda m: m["msg_type"] == "display_data"
                           and m["content"]["metadata"].get("kguard", {}).get("event")
                           in ("sticky-restart", "down"), timeout=90, what="a notice")
        events.append(m["content"]["metadata"]["kguard"]["event"])
    assert events == ["sticky-restart"] * 3 + ["down"]
    reply, _ = col.run("1")
    assert reply["content"]["ename"] == "KernelDown"


def test_diagnostic_restart_and_removal(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    show = "import os; print(os.environ.get('CUDA_LAUNCH_BLOCKING'), " \
           "os.environ.get('AMD_SERIALIZE_KERNEL'), os.environ.get('KGUARD_DIAGNOSTIC'))"
    reply, msgs = col.run("%kguard restart --diagnostic")
    assert reply["content"]["status"] == "ok"
    n = _wait_notice(col, reply["parent_header"]["msg_id"], "diagnostic")
    assert "diagnostic, not for timing" in _text(n)
    # nothing failed: the notice says what happened, not what a fault does
    assert "at your request" in _text(n) and "nothing was restored" in _text(n)
    assert "failing cell" not in _text(n) and "before the fault" not in _text(n)
    reply, msgs = col.run(show, timeout=60)
    # backend unknown (no GPU, no incident): both variables, and it says so
    assert stdout_of(msgs).split() == ["1", "3", "1"]
    reply, msgs = col.run("%kguard status")
    assert "diagnostic, not for timing" in stdout_of(msgs)
    col.run("%kguard restart")
    reply, msgs = col.run(show, timeout=60)
    assert stdout_of(msgs).split() == ["None", "None", "None"]


def test_sigabrt_mid_cell(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    msg_id = kc.execute("import os; os.abort()")
    reply, msgs = col.wait_idle(msg_id, timeout=30)
    assert reply["content"]["status"] == "error"
    assert "SIGABRT" in reply["content"]["evalue"]
    assert "SIGABRT" in _text(_wait_notice(col, msg_id, "kernel-died"))
    assert kernel_pid(col) != pid1


def test_rocm_abort_is_sticky(env):
    env.spec(env={"KGUARD_EMULATE": "rocm-abort:step=1"})
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    msg_id = kc.execute(SETUP + "em.step(1)")
    reply = col.wait_reply(msg_id, timeout=60)
    assert reply["content"]["status"] == "error"
    _wait_notice(col, msg_id, "sticky-restart")
    assert kernel_pid(col) != pid1
    (inc,) = env.incidents()
    assert inc["sticky"] and inc["exit"]["signal"] == signal.SIGABRT


def test_checkpoint_before_fault_restored(env, monkeypatch):
    monkeypatch.setenv("KGUARD_KEY_DIR", str(env.root / "keys"))
    r = subprocess.run([KGUARD, "keygen"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:stderr-only:step=20"},
             inner=INNER + ["--IPKernelApp.capture_fd_output=False"])
    km, kc = env.start()
    col = Collector(kc)
    reply, msgs = col.run(SETUP + "import kguard\nprint(kguard.save({'w': 1}, step=10))",
                          timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    # the fault (raw stderr only), then a checkpoint sealed after it
    msg_id = kc.execute("em.step(20)\nkguard.save({'w': 2}, step=30)")
    col.wait_reply(msg_id, timeout=60)
    n = _wait_notice(col, msg_id, "sticky-restart")
    md = n["content"]["metadata"]["kguard"]
    assert md["restored_step"] == 10
    reply, msgs = col.run("import os\nprint(os.environ.get('KGUARD_RESUME_STEP'))\n"
                          "import kguard\nprint(kguard.resume().step)", timeout=60)
    assert stdout_of(msgs).split() == ["10", "10"]
    (inc,) = env.incidents()
    assert inc["checkpoint"]["step"] == 10
    quarantined = list((env.work / "kguard-checkpoints" / "quarantine").rglob("*"))
    assert any(p.is_file() for p in quarantined), "the later checkpoint was not quarantined"
