"""The stale-request rule (issue 9): after a sticky error or the kernel's
death, an execute_request that reaches kguard during the restart or within
the stale window after kguard's notice was sent before the user could see
the failure (a browser's Run All); it is answered KernelRestarted and never
runs anywhere. One sent after the window runs in the fresh kernel.

A request held up on a slow link is modelled exactly: the message is made
(its header date set) at "Run All" time, before the failing cell runs, and
delivered later by a delayed sender (the 0.3 s of the issue), measured from
messages the client has received; every wait is on a reply or notice."""
import subprocess
import time

from conftest import KGUARD, Collector, kernel_pid, stdout_of

SETUP = "import os, kguard.emulate as em\n"


def _touch(path):
    return "open(%r, 'w').write('ran')" % str(path)


def _notice(col, msg_id, event, timeout=90):
    return col.wait_iopub(
        msg_id, lambda m: m["msg_type"] == "display_data"
        and m["content"].get("metadata", {}).get("kguard", {}).get("event") == event,
        timeout=timeout, what="a %s notice" % event)


def _make(kc, code):
    """An execute_request made now (its header date is now), sent later."""
    return kc.session.msg("execute_request", dict(
        code=code, silent=False, store_history=True, user_expressions={},
        allow_stdin=False, stop_on_error=True))


def _send_at(kc, t, msg_or_code):
    """Send at monotonic time t (a delayed sender): a message made earlier,
    or code made into a request now."""
    while time.monotonic() < t:
        time.sleep(0.01)
    if isinstance(msg_or_code, str):
        return kc.execute(msg_or_code)
    kc.shell_channel.send(msg_or_code)
    return msg_or_code["header"]["msg_id"]


def _assert_stale(col, msg_id, marker, incident=None):
    r = col.wait_reply(msg_id, timeout=60)
    assert r["content"]["status"] == "error", r["content"]
    assert r["content"]["ename"] == "KernelRestarted", r["content"]
    if incident:
        assert incident in r["content"]["evalue"]
    assert not marker.exists(), "a stale request ran"


def test_stale_after_sticky_error(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2"})
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    col.run(SETUP)
    m_restart, m_notice, m_late = (env.work / n for n in ("during", "after-notice", "late"))
    # Run All: the failing cell and two more, made together; the two are
    # held up on the way.
    queued = [_make(kc, _touch(m_restart)), _make(kc, _touch(m_notice))]
    bad = kc.execute("em.step(2)")
    col.wait_reply(bad, timeout=60)             # T has passed (kguard saw the error)
    during = _send_at(kc, time.monotonic() + 0.3, queued[0])
    _notice(col, bad, "sticky-restart")
    seen = time.monotonic()
    after_notice = _send_at(kc, seen + 0.3, queued[1])
    (inc,) = env.incidents()
    _assert_stale(col, during, m_restart, inc["id"])
    _assert_stale(col, after_notice, m_notice, inc["id"])
    late = _send_at(kc, seen + 2.0 + 0.5, _touch(m_late) + "\nimport os; print(os.getpid())")
    r, msgs = col.wait_idle(late, timeout=60)
    assert r["content"]["status"] == "ok", r["content"]
    assert m_late.exists()
    assert int(stdout_of(msgs).strip()) != pid1   # it ran in the fresh kernel
    assert not m_restart.exists() and not m_notice.exists()


def test_stale_after_kernel_death_custom_window(env):
    env.spec(kg_args=["--stale-window", "1"])
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    m_notice, m_late = env.work / "after-notice", env.work / "late"
    queued = _make(kc, _touch(m_notice))
    dying = kc.execute("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    r = col.wait_reply(dying, timeout=60)        # the death notice came before it
    assert r["content"]["ename"] == "KernelDied"
    _notice(col, dying, "kernel-died")
    seen = time.monotonic()
    after_notice = _send_at(kc, seen + 0.3, queued)
    _assert_stale(col, after_notice, m_notice)
    late = _send_at(kc, seen + 1.0 + 0.5, _touch(m_late) + "\nimport os; print(os.getpid())")
    r, msgs = col.wait_idle(late, timeout=60)
    assert r["content"]["status"] == "ok", r["content"]
    assert int(stdout_of(msgs).strip()) != pid1
    assert m_late.exists() and not m_notice.exists()


def test_request_made_after_the_notice_runs(env):
    # The frontend had the notice when it made this request: it runs, even
    # within a long window.
    env.spec(kg_args=["--stale-window", "600"])
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    dying = kc.execute("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    _notice(col, dying, "kernel-died")
    assert kernel_pid(col) != pid1


def test_user_restart_ends_the_rule(env):
    # After `%kguard restart` what the user sends is meant for the new kernel.
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2"}, kg_args=["--stale-window", "600"])
    km, kc = env.start()
    col = Collector(kc)
    col.run(SETUP)
    bad = kc.execute("em.step(2)")
    _notice(col, bad, "sticky-restart")
    r, _ = col.run("%kguard status")
    r, _ = col.run("%kguard restart")
    assert r["content"]["status"] == "ok"
    r, msgs = col.run("print('runs')", timeout=60)
    assert r["content"]["status"] == "ok", r["content"]
    assert "runs" in stdout_of(msgs)


def test_policy_flags_shown_and_checked(env, tmp_path):
    env.spec(kg_args=["--stale-window", "3.5", "--max-restarts", "5", "--restart-window",
                      "120", "--backoff", "2", "--backoff-max", "8"])
    km, kc = env.start()
    col = Collector(kc)
    r, msgs = col.run("%kguard status")
    text = stdout_of(msgs)
    assert "0 of 5 allowed in the last 120 s" in text, text
    assert "back-off: 2 s doubling up to 8 s" in text, text
    assert "stale window: 3.5 s" in text, text
    for bad in (["--stale-window", "soon"], ["--max-restarts", "-1"],
                ["--backoff", "5", "--backoff-max", "1"], ["--restart-window", "1e9"]):
        p = subprocess.run([KGUARD, "kernel", "-f", str(tmp_path / "none.json"), *bad, "--",
                            "true"], capture_output=True, text=True, timeout=30)
        assert p.returncode == 100, (bad, p.returncode, p.stderr)
        assert bad[0] in p.stderr or "backoff" in p.stderr, p.stderr
