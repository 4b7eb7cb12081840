"""The wire between the frontend and the inner kernel (issues 9 and 10):
the inner kernel signs with the frontend's key, so kguard forwards its
messages as they are; dropped messages cannot flood the log. (Heartbeats
answered while the loop is blocked: tests/unit/ipc/test_heartbeat.c; their
latency during a burst: bench/relay/bench_heartbeat.py.)"""
import json
import os
import re

import psutil
import zmq
from jupyter_client.session import Session

from conftest import Collector, gone, kguard_pid, stdout_of, wait_until


def _inner_connection_file(km):
    """The inner kernel's connection file, from its command line."""
    kids = psutil.Process(kguard_pid(km)).children()
    assert len(kids) == 1
    argv = kids[0].cmdline()
    return argv[argv.index("-f") + 1]


def test_inner_kernel_has_the_frontend_key(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    path = _inner_connection_file(km)
    inner = json.loads(open(path).read())
    assert inner["key"].encode() == km.session.key
    assert inner["signature_scheme"] == "hmac-sha256"
    assert inner["transport"] == "ipc"
    # the file is not the frontend's and sits in kguard's private directory
    assert path != km.connection_file
    assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700   # only kguard's user
    # and the relay works both ways with it (signatures checked by
    # jupyter_client, duplicates included)
    reply, msgs = col.run("print('shared key')")
    assert reply["content"]["status"] == "ok"
    assert stdout_of(msgs) == "shared key\n"


def test_dropped_messages_logged_at_a_bounded_rate(env):
    """300 forged and 100 unsigned requests: the log shows the first 5 of
    each kind in full, then summary lines that account for every one of
    them; nothing forged runs and the kernel keeps working."""
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    marker = env.work / "forged-ran"
    info = km.get_connection_info()
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect("%s://%s:%d" % (info["transport"], info["ip"], info["shell_port"]))
    content = {"code": "open(%r, 'w').write('x')" % str(marker), "silent": False,
               "store_history": True, "user_expressions": {}, "allow_stdin": False}
    forged = Session(key=b"not-the-key", session=kc.session.session)
    unsigned = Session(key=b"", session=kc.session.session)
    for _ in range(300):
        forged.send(sock, "execute_request", content)
    for _ in range(100):
        unsigned.send(sock, "execute_request", content)
    # a good request after them: they have all been read by then
    reply, msgs = col.run("print('good')")
    assert stdout_of(msgs) == "good\n"
    sock.close()
    pid = kguard_pid(km)
    km.shutdown_kernel(now=False)
    wait_until(lambda: gone(pid), 30, "kguard to exit")
    assert not marker.exists()
    logs = "".join(p.read_text() for p in (env.state / "logs").glob("kguard-*.log"))
    full = [l for l in logs.splitlines() if "dropped a message" in l]
    assert sum("signature does not match" in l for l in full) == 5, full
    assert sum("not signed" in l for l in full) == 5, full
    summaries = [l for l in logs.splitlines() if "dropped in the last" in l]
    assert summaries, logs[-2000:]
    counted = {"forged": 0, "unsigned": 0}
    for line in summaries:
        for n, kind in re.findall(r"(\d+) (forged|unsigned)", line):
            counted[kind] += int(n)
    assert counted == {"forged": 300, "unsigned": 100}, summaries
    assert re.search(r"400 in all since start", summaries[-1])
    # bounded: a handful of lines, not one per message
    assert len(full) + len(summaries) <= 14



_CRAFTED = r'''
import json
_k = get_ipython().kernel
_s = _k.session
_p = _k.get_parent("shell")["header"]
_frames = [
    b"kernel.bytes.stream", b"<IDS|MSG>", None,
    ('{"version": "5.3", "msg_type":"stream" ,  "session": "%s", "msg_id": "kg-bytes-1",'
     ' "username":"u", "date": "2026-12-03T08:00:00.000001+00:00"}' % _s.session).encode(),
    ('{ "msg_id" : "%s" , "session":"%s", "msg_type": "execute_request" }'
     % (_p["msg_id"], _p["session"])).encode(),
    b"{ }",
    '{"text": "caf\\u00e9 \\ud83d\\ude00 t\\tab \u00e9\\n", "name" :"stdout"}'.encode(),
    b"\x00\x01binary",
]
_frames[2] = _s.sign(_frames[3:7])
_k.iopub_socket.send_multipart(_frames)
open(DUMP_PATH, "w").write(json.dumps([f.hex() for f in _frames]))
'''


def test_kernel_messages_reach_the_frontend_byte_for_byte(env):
    """What the kernel publishes reaches the frontend exactly as sent: its
    topic, its signature and every dict frame with the kernel's own spacing,
    key order and escapes (kguard neither re-signs nor re-serialises), and
    jupyter_client accepts it. kguard still reads it: the text is stdout."""
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    info = km.get_connection_info()
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect("%s://%s:%d" % (info["transport"], info["ip"], info["iopub_port"]))
    # the subscription is in place once this socket sees a cell's output
    wait_until(lambda: col.run("print('sub')") and sub.poll(200), 30, "the raw subscriber")
    dump = env.work / "crafted.json"
    reply, msgs = col.run(_CRAFTED.replace("DUMP_PATH", repr(str(dump))))
    assert reply["content"]["status"] == "ok"
    sent = [bytes.fromhex(h) for h in json.loads(dump.read_text())]
    got = None
    while got is None:
        assert sub.poll(10000), "the crafted message never reached the frontend"
        frames = sub.recv_multipart()
        if len(frames) == len(sent) and b"kg-bytes-1" in frames[3]:
            got = frames
    assert got == sent
    crafted = [m for m in msgs if m["header"]["msg_id"] == "kg-bytes-1"]
    assert len(crafted) == 1 and crafted[0]["content"]["text"] == "caf\u00e9 \U0001F600 t\tab \u00e9\n"
    sub.close()
