"""kg_ipc against the real jupyter_client: its Session signs messages (with
binary buffers) that kg_msg parses and verifies, and messages kg_msg makes or
relays are accepted by Session.feed_identities / Session.deserialize.

The C side is tests/unit/ipc/kg_ipc_peer.c (path in KG_IPC_PEER)."""
import os
import shutil
import stat
import subprocess
import tempfile
import uuid
import json
import datetime

import pytest
import zmq
from jupyter_client.connect import write_connection_file
from jupyter_client.session import Session
from jupyter_client.blocking import BlockingKernelClient

PEER = os.environ.get("KG_IPC_PEER")
pytestmark = pytest.mark.skipif(not PEER, reason="KG_IPC_PEER not set (run through ctest)")


@pytest.fixture
def short_dir():
    # ipc socket paths are limited to 107 bytes: keep it short.
    d = tempfile.mkdtemp(prefix="kg-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def recv(sock, timeout_ms=10000):
    assert sock.poll(timeout_ms, zmq.POLLIN), "nothing received from the peer"
    return sock.recv_multipart(copy=True)


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "empty-key"])
def test_relay_roundtrip(short_dir, signed):
    key_a = str(uuid.uuid4()) if signed else ""
    key_b = str(uuid.uuid4()) if signed else ""
    conn = os.path.join(short_dir, "conn.json")
    prefix = os.path.join(short_dir, "k")
    write_connection_file(conn, ip=prefix, transport="ipc", shell_port=1, iopub_port=2,
                          stdin_port=3, control_port=4, hb_port=5, key=key_a.encode(),
                          kernel_name="python3")
    sa = Session(key=key_a.encode())   # what the client signs with
    sb = Session(key=key_b.encode())   # what the peer re-signs with
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.linger = 0
    router.bind(f"ipc://{prefix}-1")
    proc = subprocess.Popen([PEER, "echo", conn, key_b])
    try:
        # 1. kg_msg_new + kg_msg_send, accepted by jupyter_client.
        idents, rest = sb.feed_identities(recv(router))
        assert idents == [b"kguard-peer"]
        hello = sb.deserialize(rest)
        h = hello["header"]
        assert h["msg_type"] == "peer_hello"
        assert h["username"] == "kguard"
        assert h["version"] == "5.3"
        assert h["session"] == "peer-session"
        assert uuid.UUID(h["msg_id"]).version == 4
        assert isinstance(h["date"], datetime.datetime) and h["date"].tzinfo is not None
        assert abs((datetime.datetime.now(datetime.timezone.utc) - h["date"]).total_seconds()) < 60
        assert hello["parent_header"] == {}
        assert hello["content"] == {"hello": "world"}
        if signed:
            assert len(rest[0]) == 64

        # 2. A Session-signed message with binary buffers, verified by kg_msg
        #    and relayed back re-signed: dict frames and buffers byte-for-byte.
        bufs = [bytes(range(256)) * 4096, b"", b"\x00\xff" * 10]
        msg = sa.msg("comm_msg", content={"comm_id": "c1", "data": {"x": [1, 2.5, "\u00e9"]}},
                     parent=hello["header"], metadata={"m": 1})
        to_send = sa.serialize(msg, ident=[b"kguard-peer"])
        router.send_multipart(to_send + bufs)
        idents, rest = sb.feed_identities(recv(router))
        back = sb.deserialize(rest)
        assert back["header"]["msg_type"] == "comm_msg"
        assert back["header"]["msg_id"] == msg["header"]["msg_id"]
        assert back["parent_header"]["msg_id"] == h["msg_id"]
        assert back["metadata"] == {"m": 1}
        assert back["content"] == {"comm_id": "c1", "data": {"x": [1, 2.5, "\u00e9"]}}
        assert [bytes(b) for b in back["buffers"]] == bufs
        assert rest[1:5] == to_send[3:7]          # dicts untouched
        if signed:
            assert rest[0] != to_send[2]          # re-signed with the other key

        if signed:
            # 3. Tampered content. (Replays are kg_replay's, tested by
            #    test_replay and integration.trust.)
            msg2 = sa.msg("comm_msg", content={"comm_id": "c1"})
            frames = sa.serialize(msg2, ident=[b"kguard-peer"])
            frames[6] = frames[6].replace(b"c1", b"c2")
            router.send_multipart(frames)
            err = sb.deserialize(sb.feed_identities(recv(router))[1])
            assert err["content"] == {"error": "KG_EBADSIG"}
            # 4. No signature.
            frames = sa.serialize(sa.msg("comm_msg", content={}), ident=[b"kguard-peer"])
            frames[2] = b""
            router.send_multipart(frames)
            err = sb.deserialize(sb.feed_identities(recv(router))[1])
            assert err["content"] == {"error": "KG_ENOSIG"}

        # 5. Quit.
        quit_msg = sa.send(router, "peer_quit", content={}, ident=[b"kguard-peer"])
        bye = sb.deserialize(sb.feed_identities(recv(router))[1])
        assert bye["header"]["msg_type"] == "peer_bye"
        assert bye["parent_header"]["msg_id"] == quit_msg["header"]["msg_id"]
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        router.close()
        ctx.term()


def test_saved_file_loads_in_jupyter_client(short_dir):
    path = os.path.join(short_dir, "kernel.json")
    subprocess.run([PEER, "save", path, os.path.join(short_dir, "k")], check=True, timeout=10)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as f:
        info = json.load(f)
    for name in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"):
        assert type(info[name]) is int
    assert info["signature_scheme"] == "hmac-sha256"
    assert len(info["key"]) == 64 and int(info["key"], 16) >= 0
    kc = BlockingKernelClient()
    kc.load_connection_file(path)
    assert kc.transport == "ipc"
    assert kc.ip == os.path.join(short_dir, "k")
    assert (kc.shell_port, kc.iopub_port, kc.stdin_port, kc.control_port, kc.hb_port) == (1, 2, 3, 4, 5)
    assert kc.session.key == info["key"].encode()
    assert kc.session.signature_scheme == "hmac-sha256"
    assert info["kernel_name"] == "kguard-test"
