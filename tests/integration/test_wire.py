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

