"""The airtight gate: kguard keeps at most one execute_request in the inner
kernel, implements ipykernel's stop_on_error itself, and keeps busy/idle
paired across restarts (issue 3, "On a sticky error", step 1; M2, M4).
No GPU: kguard's labelled emulation (python/kguard/emulate.py)."""
import json
import subprocess
import time

from conftest import (KGUARD, INNER, Collector, kernel_pid, outputs, stdout_of, wait_until)

SETUP = "import os, kguard.emulate as em\n"


def _notice_of(col, msg_id, event, timeout=90):
    return col.wait_iopub(
        msg_id, lambda m: m["msg_type"] == "display_data"
        and m["content"].get("metadata", {}).get("kguard", {}).get("event") == event,
        timeout=timeout, what="a %s notice" % event)


def _statuses(col, msg_id):
    return [m for m in col.iopub.get(msg_id, []) if m["msg_type"] == "status"]


def _wait_idle_status(col, msg_id, timeout=90):
    return col.wait_iopub(msg_id, lambda m: m["msg_type"] == "status"
                          and m["content"]["execution_state"] == "idle",
                          timeout=timeout, what="the idle of %s" % msg_id)


def _assert_one_busy_one_idle(col, ids):
    for i in ids:
        states = [m["content"]["execution_state"] for m in _statuses(col, i)]
        assert states == ["busy", "idle"], (i, states)


def _markers(env, tag, n):
    return [env.work / ("%s-%d-ran" % (tag, i)) for i in range(n)]


def _touch(path):
    return "open(%r, 'w').write('ran')" % str(path)


def test_stderr_only_sign_queued_cells_never_run(env):
    # The sign is only on raw fd 2 (ipykernel does not capture it) and the
    # cell returns normally: only kguard's pipe knows. The cells queued behind
    # it must never run in the poisoned kernel.
    inner = INNER + ["--IPKernelApp.capture_fd_output=False"]
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:stderr-only:step=2"}, inner=inner)
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    markers = _markers(env, "queued", 3)
    cells = [SETUP + "em.step(1)", "em.step(2)\nprint('step 2 returned')"] + \
        [_touch(m) for m in markers]
    ids = [kc.execute(c) for c in cells]            # "Run All"
    replies = [col.wait_reply(i, timeout=60) for i in ids]
    assert replies[0]["content"]["status"] == "ok"
    assert replies[1]["content"]["status"] == "ok"  # the cell itself did not raise
    assert replies[1]["metadata"]["kguard"]["event"] == "sticky-restart"
    for r in replies[2:]:
        assert r["content"]["status"] == "error"
        assert r["content"]["ename"] == "KernelRestarted"
        # Nothing ran: no execution count (a frontend shows "In [ ]", never
        # the failing cell's number again).
        assert r["content"]["execution_count"] is None, r["content"]
    _notice_of(col, ids[1], "sticky-restart")
    assert kernel_pid(col) != pid1                 # a fresh kernel serves again
    assert not any(m.exists() for m in markers), "a queued cell ran in the poisoned kernel"
    (inc,) = env.incidents()
    assert inc["cell"]["msg_id"] == ids[1]
    assert "Assertion `t >= 0 && t < n_classes` failed" in inc["assertion_line"]
    _assert_one_busy_one_idle(col, ids)


def test_one_busy_one_idle_across_sticky_restart(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2"})
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    cells = [SETUP + "em.step(1)", "em.step(2)", "1", "2"]
    ids = [kc.execute(c) for c in cells]
    ids.append(kc.kernel_info())                    # a non-execute request queued too
    for i in ids:
        col.wait_reply(i, timeout=60)
    notice = _notice_of(col, ids[1], "sticky-restart")
    _wait_idle_status(col, ids[1])                  # the poisoned kernel never sent it
    pid2 = kernel_pid(col)
    assert pid2 != pid1
    # everything kguard published for the old kernel came before this
    later = kc.execute("3")
    col.wait_idle(later)
    _assert_one_busy_one_idle(col, ids + [later])
    failing = col.iopub[ids[1]]
    busy, idle = _statuses(col, ids[1])
    # the idle is kguard's, under the session of the kernel that is gone,
    # and it comes after the notice (frontends still show the notice)
    assert idle["header"]["session"] == busy["header"]["session"]
    assert failing.index(notice) < failing.index(idle)
    assert idle["header"]["session"] != _statuses(col, later)[0]["header"]["session"]


def test_one_busy_one_idle_going_down(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=1"})
    km, kc = env.start()
    col = Collector(kc)
    cell = SETUP + "em.step(1)"
    first = kc.execute(cell)
    col.wait_reply(first, timeout=60)
    _notice_of(col, first, "sticky-restart")
    second = kc.execute(cell)                       # the same failure: DOWN
    queued = kc.execute("1")
    col.wait_reply(second, timeout=60)
    down = _notice_of(col, second, "down")
    idle = _wait_idle_status(col, second)
    assert col.iopub[second].index(down) < col.iopub[second].index(idle)
    assert col.wait_reply(queued)["content"]["ename"] == "KernelRestarted"
    reply, _ = col.run("1")
    assert reply["content"]["ename"] == "KernelDown"
    _assert_one_busy_one_idle(col, [first, second, queued, reply["parent_header"]["msg_id"]])


# ---------------------------------------------------------------------------
# stop_on_error, compared with ipykernel itself.

def _plain_spec(env):
    d = env.jpath / "kernels" / "plain"
    d.mkdir(parents=True, exist_ok=True)
    (d / "kernel.json").write_text(json.dumps(
        {"argv": INNER, "display_name": "plain ipykernel", "language": "python"}))
    return "plain"


def _scenario(env, kc, col, tag):
    """Run All sequences; returns what a frontend sees, normalised."""
    m = _markers(env, tag, 5)
    groups = [
        # A: a failing cell (default stop_on_error) with cells queued behind
        # it, among them a complete_request and a cell that asks
        # stop_on_error=False; the first cell sleeps so that all are queued
        # in time.
        [("exec", lambda: kc.execute("import time; time.sleep(0.5)")),
         ("exec", lambda: kc.execute("1/0")),
         ("exec", lambda: kc.execute(_touch(m[0]))),
         ("complete", lambda: kc.complete("pri", 3)),
         ("exec", lambda: kc.execute(_touch(m[1]), stop_on_error=False)),
         ("exec", lambda: kc.execute(_touch(m[2])))],
        # B: the failing cell itself says stop_on_error=False: nothing aborted
        [("exec", lambda: kc.execute("import time; time.sleep(0.5)")),
         ("exec", lambda: kc.execute("1/0", stop_on_error=False)),
         ("exec", lambda: kc.execute(_touch(m[3])))],
        # C: a silent failing cell aborts nothing either
        [("exec", lambda: kc.execute("import time; time.sleep(0.5)")),
         ("exec", lambda: kc.execute("1/0", silent=True)),
         ("exec", lambda: kc.execute(_touch(m[4])))],
    ]
    out = []
    engine = None
    for group in groups:
        sent = [(kind, send()) for kind, send in group]   # "Run All" of the group
        for kind, i in sent:
            reply, msgs = col.wait_idle(i, timeout=60)
            c, md = reply["content"], reply["metadata"]
            if c["status"] == "error" and "engine" in md:
                engine = md["engine"]
            rec = {"kind": kind, "status": c["status"],
                   "states": [s["content"]["execution_state"]
                              for s in outputs(msgs, "status")],
                   "execute_input": bool(outputs(msgs, "execute_input"))}
            if c["status"] == "aborted":
                rec["content"] = c
                rec["metadata_keys"] = sorted(md)
                rec["metadata_status"] = md["status"]
                rec["same_engine"] = md.get("engine") == engine
                rec["msg_type"] = reply["msg_type"]
            out.append(rec)
    ran = [p.exists() for p in m[:5]]
    return out, ran


def test_stop_on_error_like_ipykernel(env):
    _plain_spec(env)
    env.spec()
    results = {}
    for name in ("plain", "kg"):
        km, kc = env.start(name)
        col = Collector(kc)
        col.wait_reply(kc.kernel_info())
        results[name] = _scenario(env, kc, col, name)
        km.shutdown_kernel(now=True)
    plain, kg = results["plain"], results["kg"]
    assert kg == plain
    recs, ran = kg
    # and what that is, spelled out
    assert [r["status"] for r in recs[:6]] == ["ok", "error", "aborted", "ok", "aborted",
                                              "aborted"]
    assert recs[2]["content"] == {"status": "aborted"}
    assert recs[2]["metadata_keys"] == ["dependencies_met", "engine", "started", "status"]
    assert recs[2]["same_engine"] and recs[2]["metadata_status"] == "aborted"
    assert not recs[2]["execute_input"] and recs[2]["states"] == ["busy", "idle"]
    assert [r["status"] for r in recs[6:]] == ["ok", "error", "ok", "ok", "error", "ok"]
    assert ran == [False, False, False, True, True]


def test_inband_cell_keeps_its_place(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    col.wait_reply(kc.kernel_info())
    a = kc.execute("import time; time.sleep(0.5); print('a')")
    status = kc.execute("%kguard status")
    b = kc.execute("print('b')")
    for i in (a, status, b):
        col.wait_idle(i)
    order = [i for i in col.replies if i in (a, status, b)]   # arrival order
    assert order == [a, status, b]
    assert "state READY" in stdout_of(col.iopub[status])


def test_restart_cli_acts_at_once(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    marker = env.work / "after-sleep-ran"
    running = kc.execute("import time; time.sleep(60)")
    queued = kc.execute(_touch(marker))
    col.wait_iopub(running, lambda m: m["msg_type"] == "execute_input", what="execute_input")
    t0 = time.monotonic()
    r = subprocess.run([KGUARD, "restart", "-f", km.connection_file], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 20
    for i in (running, queued):
        assert col.wait_reply(i, timeout=30)["content"]["ename"] == "KernelRestarted"
    assert kernel_pid(col) != pid1
    assert not marker.exists()
    _assert_one_busy_one_idle(col, [running, queued])


def test_unanswered_request_type_does_not_block(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    col.wait_reply(kc.kernel_info())
    msg = kc.session.msg("kguard_test_unknown_request", {})
    kc.shell_channel.send(msg)                      # ipykernel never answers it
    reply, msgs = col.run("print('after')")
    assert stdout_of(msgs) == "after\n"
    _assert_one_busy_one_idle(col, [msg["header"]["msg_id"]])


def test_request_sent_after_error_reply_is_not_aborted(env):
    # ipykernel goes on aborting for a moment after its error reply; kguard
    # lets nothing in until that is over (its probe), so a cell sent right
    # after the reply of a failing one runs, every time.
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    col.wait_reply(kc.kernel_info())
    for _ in range(20):
        failing = kc.execute("1/0")
        assert col.wait_reply(failing)["content"]["status"] == "error"
        after = kc.execute("print('after')")
        reply, msgs = col.wait_idle(after)
        assert reply["content"]["status"] == "ok"
        assert stdout_of(msgs) == "after\n"
