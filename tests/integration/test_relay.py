"""Issue 2: every channel relayed transparently through kguard."""
import os
import time
import uuid

import zmq
from jupyter_client.session import Session

from conftest import Collector, kernel_pid, kguard_pid, outputs, stdout_of, wait_until


def test_kernel_info_shell_and_control(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    reply = col.wait_reply(kc.kernel_info())
    c = reply["content"]
    assert c["status"] == "ok"
    assert c["language_info"]["name"] == "python"
    assert c["implementation"] == "ipython"       # the inner kernel's own reply
    # control channel too (protocol 5.5 allows it; ipykernel answers there)
    msg = kc.session.msg("kernel_info_request", {})
    kc.control_channel.send(msg)
    r = kc.get_control_msg(timeout=10)
    assert r["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    assert r["msg_type"] == "kernel_info_reply"


def test_execute_outputs(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    reply, msgs = col.run("print('hello'); import sys; print('oops', file=sys.stderr)")
    assert reply["content"]["status"] == "ok"
    assert stdout_of(msgs) == "hello\n"
    assert any(m["content"]["name"] == "stderr" for m in outputs(msgs, "stream"))
    reply, msgs = col.run("from IPython.display import display, HTML\n"
                          "display(HTML('<b>x</b>'))\n6*7")
    assert outputs(msgs, "display_data")[0]["content"]["data"]["text/html"] == "<b>x</b>"
    assert outputs(msgs, "execute_result")[0]["content"]["data"]["text/plain"] == "42"
    states = [m["content"]["execution_state"] for m in outputs(msgs, "status")]
    assert states == ["busy", "idle"]              # exactly one pair (M2)
    reply, msgs = col.run("1/0")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "ZeroDivisionError"
    assert outputs(msgs, "error")[0]["content"]["ename"] == "ZeroDivisionError"
    # sessions pass through: every message carries the inner kernel's session
    sessions = {m["header"]["session"] for m in msgs}
    assert len(sessions) == 1


def test_large_output_relayed_intact(env):
    """Multi-MB output messages (ipykernel batches a burst into a few) reach the
    client whole, each correctly signed and none signed twice alike:
    jupyter_client rejects a bad or duplicate signature. Their signature for
    the frontend is made while kguard checks the kernel's."""
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    for cell in range(3):
        line = f"{cell}" * 99 + "\n"
        reply, msgs = col.run(f"import sys\nfor _ in range(40000): sys.stdout.write({line!r})\n"
                              "sys.stdout.flush()")
        assert reply["content"]["status"] == "ok"
        text = stdout_of(msgs)
        assert len(text) == 40000 * 100 and text == line * 40000
    big = max(len(m["content"]["text"]) for m in outputs(msgs, "stream"))
    assert big >= 1 << 20, "the burst should arrive in messages of 1 MiB or more"


def test_input_through_stdin(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    msg_id = kc.execute("name = input('who? ')", allow_stdin=True)
    req = kc.get_stdin_msg(timeout=20)
    assert req["msg_type"] == "input_request"
    assert req["content"]["prompt"] == "who? "
    assert req["parent_header"]["msg_id"] == msg_id
    kc.input("kguard")
    reply, _ = col.wait_idle(msg_id)
    assert reply["content"]["status"] == "ok"
    reply, msgs = col.run("print(name)")
    assert stdout_of(msgs) == "kguard\n"


def test_comm_binary_buffers(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    setup = (
        "def _target(comm, open_msg):\n"
        "    @comm.on_msg\n"
        "    def _echo(msg):\n"
        "        bufs = [bytes(b)[::-1] for b in msg['buffers']]\n"
        "        comm.send(data={'n': len(bufs)}, buffers=bufs)\n"
        "get_ipython().kernel.comm_manager.register_target('kg_echo', _target)\n")
    reply, _ = col.run(setup)
    assert reply["content"]["status"] == "ok", reply["content"]
    comm_id = uuid.uuid4().hex
    kc.session.send(kc.shell_channel.socket, "comm_open",
                    {"comm_id": comm_id, "target_name": "kg_echo", "data": {}})
    payload = [bytes(range(256)) * 40, b"\x00\xff\x00" * 5000]
    kc.session.send(kc.shell_channel.socket, "comm_msg",
                    {"comm_id": comm_id, "data": {}}, buffers=payload)
    deadline = time.monotonic() + 20
    got = None
    while got is None and time.monotonic() < deadline:
        m = kc.get_iopub_msg(timeout=5)
        if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id:
            got = m
    assert got is not None, "no comm_msg echoed"
    assert got["content"]["data"] == {"n": 2}
    assert [bytes(b) for b in got["buffers"]] == [p[::-1] for p in payload]


def _interrupt_cell(env, km, kc):
    col = Collector(kc)
    msg_id = kc.execute("import time; print('sleeping', flush=True); time.sleep(60)")
    # interrupt once the cell is really in its sleep (not while ipykernel sets it up)
    col.wait_iopub(msg_id, lambda m: m["msg_type"] == "stream", what="the cell's output")
    t0 = time.monotonic()
    km.interrupt_kernel()
    reply = col.wait_reply(msg_id, timeout=15)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert time.monotonic() - t0 < 10
    # the kernel is still the same and usable
    reply, msgs = col.run("print('after')")
    assert stdout_of(msgs) == "after\n"


def test_interrupt_signal_mode(env):
    env.spec()   # interrupt_mode signal: jupyter_client SIGINTs kguard's group
    km, kc = env.start()
    _interrupt_cell(env, km, kc)


def test_interrupt_message_mode(env):
    env.spec(interrupt_mode="message")   # interrupt_request on control
    km, kc = env.start()
    _interrupt_cell(env, km, kc)


def test_forged_message_rejected(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    marker = env.work / "forged-ran"
    info = km.get_connection_info()
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect("%s://%s:%d" % (info["transport"], info["ip"], info["shell_port"]))
    forged = Session(key=b"not-the-key", session=kc.session.session)
    code = "open(%r, 'w').write('x')" % str(marker)
    forged.send(sock, "execute_request", {"code": code, "silent": False, "store_history": True,
                                          "user_expressions": {}, "allow_stdin": False})
    unsigned = Session(key=b"", session=kc.session.session)
    unsigned.send(sock, "execute_request", {"code": code, "silent": False,
                                            "store_history": True, "user_expressions": {},
                                            "allow_stdin": False})
    sock.send_multipart([b"garbage", b"frames"])            # malformed
    # a good request after them still works
    reply, msgs = col.run("print('good')")
    assert stdout_of(msgs) == "good\n"
    # replay of a good message (same signature) is rejected as well
    sock.close()
    assert not marker.exists()
    assert km.is_alive()
    logs = "".join(p.read_text() for p in (env.state / "logs").glob("kguard-*.log"))
    assert "signature does not match" in logs
    assert "not signed" in logs


def test_heartbeat_echo(env):
    env.spec()
    km, kc = env.start()
    info = km.get_connection_info()
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.connect("%s://%s:%d" % (info["transport"], info["ip"], info["hb_port"]))
    s.send(b"ping-kguard")
    assert s.poll(5000), "no heartbeat echo"
    assert s.recv() == b"ping-kguard"
    s.close()
