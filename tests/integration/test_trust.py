"""The wire under attack (docs/SECURITY.md, "Who can reach what"): a keyed
client cannot wedge kguard's loop; what ipykernel prints for strangers is
neither evidence nor an unbounded log; replayed and reflected messages never
reach the kernel; a frontend's skewed clock cannot turn a stale request into
a fresh one."""
import datetime
import os
import re
import signal
import time
import uuid

import psutil
import zmq
from jupyter_client import KernelManager
from jupyter_client.session import Session

from conftest import Collector, gone, kguard_pid, stdout_of, wait_until


def _connect(km, channel, kind=zmq.DEALER):
    info = km.get_connection_info()
    sock = zmq.Context.instance().socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect("%s://%s:%d" % (info["transport"], info["ip"], info[channel + "_port"]))
    return sock


class _KeyedSession(Session):
    """A second client with kc's key and session (kguard knows that
    session's clock) and message ids of its own, as a browser's are (UUIDs).
    jupyter_client numbers ids by session, pid and count, so a second Session
    object counting from 0 would reuse ids kc has sent; kguard routes a reply
    by its parent's msg_id, and a kernel_info_reply still owed to kc would
    come to this socket as the answer to its request."""

    @property
    def msg_id(self):
        return str(uuid.uuid4())


def _keyed(km, kc):
    return _KeyedSession(key=km.session.key, session=kc.session.session)


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
    keyed = _keyed(km, kc)
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
    keyed = _keyed(km, kc)
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


def _dropped(env, kind):
    """How many messages of kind the drop log's summaries account for."""
    return sum(int(n) for n in re.findall(r"(\d+) %s\b" % kind, "\n".join(
        l for l in _logs(env).splitlines() if "dropped in the last" in l)))


def _recv_reply(sock, msg_id, session, timeout=30):
    """The reply to msg_id on a raw DEALER, skipping anything else."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not sock.poll(200):
            continue
        idents, msg = session.feed_identities(sock.recv_multipart())
        m = session.deserialize(msg)
        if m["parent_header"].get("msg_id") == msg_id:
            return m
    raise AssertionError("no reply to %s within %s s" % (msg_id, timeout))


def _execute(session, code):
    return session.msg("execute_request", {"code": code, "silent": False,
                                           "store_history": False, "user_expressions": {},
                                           "allow_stdin": False})


def test_replay_after_65540_messages_never_reaches_the_kernel(env):
    """A captured execute_request sent again after 65,540 other signed
    messages: jupyter_client's history (the last 65,536) has forgotten it,
    kguard's (bounded by the messages' dates) has not. The fillers arrive
    while the kernel is down (no restart allowed), where kguard drops comm
    messages itself, so that the flood costs seconds; the replay goes to
    the fresh kernel `%kguard restart` starts."""
    env.spec(kg_args=["--max-restarts", "0"])
    km, kc = env.start()
    marker = env.work / "ran"
    sock = _connect(km, "shell")
    sock.setsockopt(zmq.SNDHWM, 0)
    keyed = _keyed(km, kc)

    def request(code, timeout=60):
        m = _execute(keyed, code)
        keyed.send(sock, m)
        return _recv_reply(sock, m["header"]["msg_id"], keyed, timeout)

    captured = _execute(keyed, "open(%r, 'a').write('x')" % str(marker))
    frames = keyed.serialize(captured)
    sock.send_multipart(frames)
    r = _recv_reply(sock, captured["header"]["msg_id"], keyed)
    assert r["content"]["status"] == "ok" and marker.read_text() == "x"
    r = request("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert r["content"]["ename"] == "KernelDied", r["content"]
    for _ in range(65540):   # signed messages kguard accepts
        keyed.send(sock, "comm_msg", {"comm_id": "none", "data": {}})
    r = request("pass", timeout=180)   # answered once every filler was read
    assert r["content"]["ename"] == "KernelDown", r["content"]
    r = request("%kguard restart")
    assert r["content"]["status"] == "ok", r["content"]
    sock.send_multipart(frames)                    # the replay
    r = request("print('after')")                  # same connection: read after it
    assert r["content"]["status"] == "ok", r["content"]
    assert marker.read_text() == "x", "the replayed request ran"
    assert "signature was already seen (replay)" in _logs(env)
    sock.close()


def test_old_message_of_a_known_session_is_refused(env):
    """A signed request dated 11 minutes ago on its session's own clock (a
    capture replayed once its signature could have been forgotten) is
    refused for its date."""
    env.spec()
    km, kc = env.start()
    marker = env.work / "ran"
    sock = _connect(km, "shell")
    keyed = _keyed(km, kc)
    old = _execute(keyed, "open(%r, 'w').write('x')" % str(marker))
    old["header"]["date"] -= datetime.timedelta(minutes=11)
    keyed.send(sock, old)
    after = _execute(keyed, "print('after')")
    keyed.send(sock, after)
    r = _recv_reply(sock, after["header"]["msg_id"], keyed)
    assert r["content"]["status"] == "ok"
    assert not marker.exists(), "the old request ran"
    assert "dated before the replay window" in _logs(env)
    sock.close()


_ECHO_COMM = r'''
def _target(comm, msg):
    @comm.on_msg
    def _(m):
        open(MARK, "a").write(m["content"]["data"]["who"] + "\n")
    comm.send({"who": "kernel"})   # the kernel's own comm_msg, on iopub
get_ipython().kernel.comm_manager.register_target("kg_echo", _target)
'''


def test_kernel_message_reflected_back_is_refused(env):
    """The kernel's own comm_msg, read from iopub (anyone can subscribe)
    and sent back on shell with its valid signature, never reaches the
    kernel; the client's own comm_msg after it does."""
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    mark = env.work / "comm-log"
    reply, _ = col.run(_ECHO_COMM.replace("MARK", repr(str(mark))))
    assert reply["content"]["status"] == "ok"
    sub = _connect(km, "iopub", zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    wait_until(lambda: col.run("print('sub')") and sub.poll(200), 30, "the raw subscriber")
    sock = _connect(km, "shell")
    keyed = _keyed(km, kc)
    keyed.send(sock, "comm_open", {"comm_id": "c1", "target_name": "kg_echo", "data": {}})
    kernel_frames = None
    deadline = time.monotonic() + 30
    while kernel_frames is None and time.monotonic() < deadline:
        if not sub.poll(200):
            continue
        frames = sub.recv_multipart()
        if b'"comm_msg"' in frames[3] and b'"kernel"' in frames[6]:
            kernel_frames = frames[1:]   # without the topic
    assert kernel_frames, "the kernel's comm_msg never came"
    sock.send_multipart(kernel_frames)          # reflected, signature intact
    keyed.send(sock, "comm_msg", {"comm_id": "c1", "data": {"who": "client"}})
    wait_until(lambda: mark.exists() and "client" in mark.read_text(), 30,
               "the client's comm_msg")
    assert mark.read_text() == "client\n", mark.read_text()
    assert "reflected" in _logs(env)
    sub.close()
    sock.close()


def _skewed_start(env, name, seconds):
    """A client whose clock is `seconds` off kguard's: every header date it
    writes, from its first message on, is shifted."""
    def skew(session):
        plain = session.msg_header

        def msg_header(msg_type):
            h = plain(msg_type)
            h["date"] = h["date"] + datetime.timedelta(seconds=seconds)
            return h

        session.msg_header = msg_header

    km = KernelManager(kernel_name=name)
    skew(km.session)
    km.start_kernel(cwd=str(env.work))
    env.managers.append(km)
    kc = km.client()   # a Session of its own
    skew(kc.session)
    assert kc.session.msg("x")["header"]["date"] > datetime.datetime.now(
        datetime.timezone.utc) + datetime.timedelta(seconds=seconds - 1)
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def _made_now(kc, code):
    """An execute_request made now (its header date set now), sent later."""
    return kc.session.msg("execute_request", dict(
        code=code, silent=False, store_history=True, user_expressions={},
        allow_stdin=False, stop_on_error=True))


def _touch(path):
    return "open(%r, 'w').write('ran')" % str(path)


def _stale_round(env, kc, col):
    """Run All on a skewed frontend: a request made before the failing cell
    ran is held up and sent after the notice; a request made after the
    notice follows. Returns (stale reply, fresh reply)."""
    col.run("import kguard.emulate as em")
    m_queued, m_fresh = env.work / "queued", env.work / "fresh"
    queued = _made_now(kc, _touch(m_queued))
    bad = kc.execute("em.step(2)")
    col.wait_iopub(bad, lambda m: m["msg_type"] == "display_data"
                   and m["content"].get("metadata", {}).get("kguard", {}).get("event")
                   == "sticky-restart", timeout=90, what="the sticky notice")
    kc.shell_channel.send(queued)
    stale = col.wait_reply(queued["header"]["msg_id"], timeout=60)
    fresh_id = kc.execute(_touch(m_fresh))
    fresh = col.wait_reply(fresh_id, timeout=60)
    return stale, fresh, m_queued, m_fresh


def test_skewed_frontend_clock_ahead_cannot_run_a_stale_request(env):
    """A browser whose clock runs 10 s ahead of kguard's: the request Run
    All queued behind the failing cell is dated 10 s 'later' than it was
    made, after kguard's notice by kguard's clock. It is still stale."""
    name = env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2"},
                    kg_args=["--stale-window", "600"])
    km, kc = _skewed_start(env, name, +10)
    col = Collector(kc)
    stale, fresh, m_queued, m_fresh = _stale_round(env, kc, col)
    assert stale["content"].get("ename") == "KernelRestarted", stale["content"]
    assert not m_queued.exists(), "a stale request ran in the fresh kernel"
    assert fresh["content"]["status"] == "ok", fresh["content"]
    assert m_fresh.exists()


def test_skewed_frontend_clock_behind_can_run_a_fresh_request(env):
    """A browser whose clock runs 10 s behind: a request made after the
    notice is dated 'before' it by kguard's clock. It runs."""
    name = env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2"},
                    kg_args=["--stale-window", "600"])
    km, kc = _skewed_start(env, name, -10)
    col = Collector(kc)
    stale, fresh, m_queued, m_fresh = _stale_round(env, kc, col)
    assert stale["content"].get("ename") == "KernelRestarted", stale["content"]
    assert not m_queued.exists()
    assert fresh["content"]["status"] == "ok", fresh["content"]
    assert m_fresh.exists()


def _pipe_port(km):
    """ipykernel's subprocess-output port: the inner kernel's one TCP
    listener (127.0.0.1, a random port), whatever the transport."""
    (kernel,) = psutil.Process(kguard_pid(km)).children()
    ports = [c.laddr.port for c in kernel.connections(kind="tcp") if c.status == "LISTEN"]
    assert len(ports) == 1, ports
    return ports[0]


def _status(col):
    reply, msgs = col.run("%kguard status")
    return stdout_of(msgs)


def test_what_a_stranger_makes_ipykernel_print_is_neither_evidence_nor_log(env):
    """Any local user can connect to ipykernel's subprocess-output port
    (no key) and make it print what it sends to its stderr: CUDA error text
    that way started a device probe, and 440 MB went into the kernel log in
    14 s. Those lines leave the stream before kguard keeps or judges it."""
    env.spec(env={"KGUARD_KERNEL_LOG_BYTES": "1M"})
    km, kc = env.start()
    col = Collector(kc)
    push = zmq.Context.instance().socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.connect("tcp://127.0.0.1:%d" % _pipe_port(km))
    blob = b"RuntimeError: CUDA error: an illegal memory access was encountered " * 1500
    for _ in range(200):   # 20 MB
        push.send_multipart([b"not-the-token", blob])
    push.send_multipart([b"not-the-token", b"kg-last-stranger-message"])
    kernel_log = lambda: _logs(env, "kernel")
    # kguard has read all of it: it says so (or, before the fix, the log has it)
    wait_until(lambda: "foreign lines: 201 " in _status(col)
               or "kg-last-stranger-message" in kernel_log(), 120,
               "the stranger's lines to be read")
    logs = kernel_log()
    injected = "CUDA error" in logs or "Bad pipe message" in logs
    assert not injected, "a stranger's text is in the kernel log"
    total = sum(p.stat().st_size for p in (env.state / "logs").glob("kernel-*.log*"))
    assert total < 64 * 1024, total
    probed = "device probe" in _logs(env)
    assert not probed, "a stranger's text started a device probe"
    # the kernel's own output still is evidence and still is logged
    reply, _ = col.run("import os; os.write(2, b'the kernel itself\\n')")
    wait_until(lambda: "the kernel itself" in kernel_log(), 30, "the kernel's own line")
    assert "kept out of the kernel log" in _logs(env)
    push.close()


def test_the_kernel_log_is_bounded(env):
    """A kernel writing 5 MiB to its raw stderr, with the log bounded at
    1 MiB: the newest bytes under the log's name, the ones before in .1,
    never more than the bound in either."""
    env.spec(env={"KGUARD_KERNEL_LOG_BYTES": "1M"})
    km, kc = env.start()
    col = Collector(kc)
    reply, _ = col.run("import os\nfor i in range(1280):\n"
                       "    os.write(2, (b'%06d ' % i) + b'k' * 4088 + b'\\n')\n"
                       "os.write(2, b'kg-end-of-output\\n')", timeout=60)
    assert reply["content"]["status"] == "ok"
    (log,) = (env.state / "logs").glob("kernel-*.log")
    wait_until(lambda: "kg-end-of-output" in log.read_text(errors="replace"), 60,
               "the last line in the log")
    old = log.with_name(log.name + ".1")
    assert log.stat().st_size <= 1024 * 1024
    assert old.exists() and old.stat().st_size <= 1024 * 1024
    assert "001279 " in log.read_text()      # the newest lines are kept
    assert log.stat().st_mode & 0o777 == 0o600 and old.stat().st_mode & 0o777 == 0o600
