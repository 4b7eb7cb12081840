"""`kguard eg-launch` under a fake Enterprise Gateway (cluster kernels).

The fake gateway does what Enterprise Gateway / gateway_provisioners' response
manager does, with python3-cryptography: an RSA key pair whose public half is
passed as --public-key (the PEM body), a response socket on loopback, and the
version-1 payload decoded (base64 JSON; AES key unwrapped with PKCS#1 v1.5; the
connection info decrypted with AES-128-ECB and PKCS#7-unpadded). It then drives
jupyter_client on the reported ports and talks to the communication port as
the gateway does (remote_provisioner.py's _send_listener_request): one plain
JSON request per connection, no credential, no reply read, then close; a
shutdown only after the kernel's shutdown_request on the control channel.
Enterprise Gateway makes 1024-bit keys; the fake one makes 2048-bit keys unless
a test asks for the gateway's own size."""
import base64
import json
import os
import random
import socket
import subprocess
import sys
import uuid

import psutil
import pytest
from cryptography.hazmat.primitives import padding, serialization
from cryptography.hazmat.primitives.asymmetric import padding as rsa_padding
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from jupyter_client import BlockingKernelClient

from kg_integration_helpers import (INNER, KGUARD, Collector, gone, kernel_pid, notices,
                                    stdout_of, wait_until)

KGUARD_EG = os.path.join(os.path.dirname(KGUARD), "kguard-eg")


class FakeGateway:
    def __init__(self, bits=2048, host="127.0.0.1"):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
        pem = self.key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        # What the gateway passes: the PEM body, armour and newlines stripped.
        self.public_key = "".join(l for l in pem.splitlines() if not l.startswith("-----"))
        self.sock = socket.socket()
        self.sock.bind((host, 0))
        self.sock.listen(4)
        self.address = "%s:%d" % (host, self.sock.getsockname()[1])

    def receive(self, timeout=60):
        self.sock.settimeout(timeout)
        conn, _ = self.sock.accept()
        data = b""
        with conn:
            conn.settimeout(timeout)
            while True:
                b = conn.recv(4096)
                if not b:
                    break
                data += b
        return self.decode(data)

    def decode(self, data):
        payload = json.loads(base64.b64decode(data))
        assert payload["version"] == 1
        aes_key = self.key.decrypt(base64.b64decode(payload["key"]), rsa_padding.PKCS1v15())
        assert len(aes_key) == 16
        dec = Cipher(algorithms.AES(aes_key), modes.ECB()).decryptor()
        padded = dec.update(base64.b64decode(payload["conn_info"])) + dec.finalize()
        unpad = padding.PKCS7(128).unpadder()
        return json.loads(unpad.update(padded) + unpad.finalize())

    def close(self):
        self.sock.close()


def send_request(comm_port, request, host="127.0.0.1"):
    with socket.create_connection((host, comm_port), timeout=10) as s:
        s.sendall(json.dumps(request).encode())


def free_range(size=200):
    """A port range of `size` ports on loopback with nothing listening now."""
    lo = random.randrange(20000, 60000 - size)
    return lo, lo + size - 1


def gateway_shutdown(kc, comm_port, host="127.0.0.1"):
    """What the gateway does to shut a kernel down: shutdown_request on the control
    channel, then {"shutdown": 1}, which may find the launcher gone already
    (the gateway ignores ECONNREFUSED there)."""
    kc.shutdown()
    try:
        send_request(comm_port, {"shutdown": 1}, host=host)
    except ConnectionRefusedError:
        pass
    kc.stop_channels()


def send_as(uid, comm_port, request):
    """Send request to the communication port from a process of another user."""
    code = ("import json, socket; s = socket.socket(); s.connect(('127.0.0.1', %d)); "
            "s.sendall(json.dumps(%r).encode()); s.close()" % (comm_port, request))
    subprocess.run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups",
                    sys.executable, "-c", code], check=True, timeout=30)


@pytest.fixture
def gateway(env, tmp_path):
    gw = FakeGateway()
    tmpdir = tmp_path / "launcher-tmp"      # where the launcher keeps its connection file
    tmpdir.mkdir()
    procs = []

    def launch(extra_env=None, inner=None, args=(), gw=gw, wrap=(), ip="127.0.0.1"):
        lo, hi = free_range()
        kid = str(uuid.uuid4())
        argv = [*wrap, KGUARD, "eg-launch", "--RemoteProcessProxy.kernel-id", kid,
                "--RemoteProcessProxy.response-address", gw.address,
                "--RemoteProcessProxy.public-key", gw.public_key,
                "--RemoteProcessProxy.port-range", "%d..%d" % (lo, hi),
                "--RemoteProcessProxy.spark-context-initialization-mode", "none",
                "--ip", ip, *args, "--", *(inner or INNER)]
        e = dict(os.environ, TMPDIR=str(tmpdir), **(extra_env or {}))
        p = subprocess.Popen(argv, env=e, cwd=str(env.work), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        procs.append(p)
        info = gw.receive()
        p.tmpdir = tmpdir
        return p, info, kid, (lo, hi)

    yield launch
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=30)
    gw.close()


def client_for(info, ip="127.0.0.1"):
    kc = BlockingKernelClient()
    kc.load_connection_info(dict(info, ip=ip))
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return kc


def test_kguard_itself_does_not_link_libcrypto():
    out = subprocess.run(["readelf", "-d", KGUARD], capture_output=True, text=True,
                         check=True).stdout
    assert "libcrypto" not in out
    out = subprocess.run(["readelf", "-d", KGUARD_EG], capture_output=True, text=True,
                         check=True).stdout
    assert "libcrypto" in out


def test_report_execute_signals_shutdown(gateway):
    p, info, kid, (lo, hi) = gateway()
    assert info["kernel_id"] == kid
    assert info["pid"] == p.pid and info["pgid"] == os.getpgid(p.pid)
    ports = [info[k] for k in ("shell_port", "iopub_port", "stdin_port", "control_port",
                               "hb_port", "comm_port")]
    assert len(set(ports)) == 6 and all(lo <= x <= hi for x in ports), (ports, lo, hi)
    assert info["transport"] == "tcp" and info["signature_scheme"] == "hmac-sha256"
    assert len(info["key"]) >= 32

    kc = client_for(info)
    col = Collector(kc)
    reply, msgs = col.run("print(6 * 7)")
    assert stdout_of(msgs) == "42\n"
    # the kernel runs under kguard: kguard answers %kguard itself
    reply, msgs = col.run("%kguard status")
    assert "state READY" in stdout_of(msgs)

    send_request(info["comm_port"], {"signum": 0})        # the gateway's liveness poll
    msg_id = kc.execute("import time; print('sleeping', flush=True); time.sleep(60)")
    col.wait_iopub(msg_id, lambda m: m["msg_type"] == "stream", what="the cell's output")
    send_request(info["comm_port"], {"signum": 2})        # the gateway's interrupt
    reply = col.wait_reply(msg_id, timeout=20)
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    reply, msgs = col.run("print('after')")
    assert stdout_of(msgs) == "after\n"
    assert p.poll() is None

    # Hostile or broken requests are dropped; the launcher keeps serving.
    for junk in (b"not json", b"[1]", b'{"signum": 99}', b"x" * (70 * 1024), b""):
        with socket.create_connection(("127.0.0.1", info["comm_port"]), timeout=10) as s:
            try:
                s.sendall(junk)
            except OSError:
                pass            # the launcher may close an oversized request early
    reply, msgs = col.run("print('still here')")
    assert stdout_of(msgs) == "still here\n" and p.poll() is None

    tree = [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
    assert tree, "no guarded kernel under the launcher"
    # The gateway's shutdown: shutdown_request on control, then {"shutdown": 1}.
    gateway_shutdown(kc, info["comm_port"])
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    wait_until(lambda: all(gone(x) for x in tree), 30, "the kernel processes to exit")
    assert os.listdir(p.tmpdir) == []       # its connection file and directory are gone


def test_sticky_error_restarts_in_place(gateway, tmp_path):
    ckpt = tmp_path / "volume" / "ckpt"
    p, info, _, _ = gateway(extra_env={"KGUARD_EMULATE": "cuda-assert:step=2"},
                            args=("--checkpoints", str(ckpt)))
    kc = client_for(info)
    col = Collector(kc)
    pid1 = kernel_pid(col)
    reply, msgs = col.run("import os; print(os.environ['KGUARD_CKPT_DIR'])")
    assert stdout_of(msgs) == "%s\n" % ckpt       # --checkpoints reaches kguard kernel
    # Cell 0 holds the kernel until both later cells were sent, so the queued one is in kguard's
    # queue when cell 1 fails (what arrives after the failure is another matter: kg_gate_stale).
    go = tmp_path / "go"
    hold = kc.execute("import os, time, kguard.emulate as em\n"
                      "while not os.path.exists(%r): time.sleep(0.01)" % str(go))
    ids = [kc.execute("em.step(2)"), kc.execute("print('queued')")]
    go.write_text("go")
    assert col.wait_reply(hold, timeout=60)["content"]["status"] == "ok"
    r1 = col.wait_reply(ids[0], timeout=90)
    assert r1["content"]["status"] == "error"
    assert "device-side assert triggered" in r1["content"]["evalue"]
    r2 = col.wait_reply(ids[1], timeout=90)
    assert r2["content"]["ename"] == "KernelRestarted"
    col.wait_iopub(ids[0], lambda m: bool(notices([m], "sticky-restart")), timeout=90,
                   what="kguard's restart notice")
    assert kernel_pid(col) != pid1          # same ports, fresh kernel behind them
    assert p.poll() is None                 # the launcher (the pod) lives on
    gateway_shutdown(kc, info["comm_port"])
    p.communicate(timeout=60)
    assert p.returncode == 0


def test_signum_9_kills_everything_and_the_launcher_reports_it(gateway):
    # Enterprise Gateway's own key size, accepted because the operator said so
    gw = FakeGateway(bits=1024)
    try:
        p, info, _, _ = gateway(gw=gw, args=("--allow-rsa-1024",))
    finally:
        gw.close()
    kc = client_for(info)
    col = Collector(kc)
    inner = kernel_pid(col)
    tree = [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
    assert inner in tree
    kc.stop_channels()
    send_request(info["comm_port"], {"signum": 9})   # what the gateway sends to kill a kernel
    p.communicate(timeout=60)
    assert p.returncode == 128 + 9                   # the guarded kernel's fate, not success
    wait_until(lambda: all(gone(x) for x in tree), 30, "the kernel processes to exit")


def test_bad_arguments_are_rejected_clearly(tmp_path):
    gw = FakeGateway()
    try:
        base = [KGUARD, "eg-launch", "--kernel-id", "k1", "--response-address", gw.address]
        cases = [
            (base + ["--public-key", "bm90IGEga2V5"], "--public-key"),
            (base + ["--public-key", gw.public_key, "--port-range", "9000..9003"], "6 ports"),
            (base + ["--public-key", gw.public_key, "--port-range", "abc"], "--port-range"),
            ([KGUARD, "eg-launch", "--kernel-id", "k1", "--public-key", gw.public_key],
             "--response-address is required"),
            (base + ["--public-key", gw.public_key, "--frobnicate", "1"], "unknown option"),
            (base + ["--public-key", gw.public_key, "--transport-encryption", "required"],
             "CurveZMQ"),
            ([KGUARD, "eg-launch", "--kernel-id", "../x", "--response-address", gw.address,
              "--public-key", gw.public_key], "--kernel-id"),
            (base + ["--public-key", gw.public_key, "--comm-interface", "nosuchif0"],
             "no such network interface"),
        ]
        for argv, why in cases:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, TMPDIR=str(tmp_path)))
            assert r.returncode == 100, (argv, r.returncode, r.stderr)
            assert why in r.stderr, (why, r.stderr)
            assert os.listdir(tmp_path) == [], "a rejected launch left files (or a kernel)"
    finally:
        gw.close()


def test_1024_bit_key_refused_unless_accepted(tmp_path):
    """Enterprise Gateway's 1024-bit key: refused by default, before anything starts
    or is sent, with the option that accepts it named."""
    gw = FakeGateway(bits=1024)
    try:
        argv = [KGUARD, "eg-launch", "--kernel-id", "k1", "--response-address", gw.address,
                "--public-key", gw.public_key]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, TMPDIR=str(tmp_path)))
        assert r.returncode == 100, r.stderr
        assert "1024 bits" in r.stderr and "--allow-rsa-1024" in r.stderr, r.stderr
        assert os.listdir(tmp_path) == []
        gw.sock.settimeout(0.5)
        with pytest.raises(socket.timeout):
            gw.sock.accept()                 # nothing was reported
    finally:
        gw.close()


def test_forbidden_signal_is_refused(gateway):
    """SIGSTOP (or any signal the gateway never sends) does not reach the kernel."""
    p, info, _, _ = gateway()
    kc = client_for(info)
    col = Collector(kc)
    for signum in (19, 18, 10, 1):          # SIGSTOP, SIGCONT, SIGUSR1, SIGHUP
        send_request(info["comm_port"], {"signum": signum})
    reply, msgs = col.run("print('not stopped')", timeout=30)
    assert stdout_of(msgs) == "not stopped\n" and p.poll() is None
    kc.shutdown()
    kc.stop_channels()
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0
    assert "signum 19 refused" in out, out


def test_unsigned_shutdown_stops_nothing(gateway):
    """{"shutdown": 1} alone (no shutdown_request on the HMAC-signed control channel)
    leaves the kernel running; the real shutdown ends it with or without it."""
    p, info, _, _ = gateway()
    kc = client_for(info)
    col = Collector(kc)
    send_request(info["comm_port"], {"shutdown": 1})
    reply, msgs = col.run("print('still running')", timeout=30)
    assert stdout_of(msgs) == "still running\n" and p.poll() is None
    kc.shutdown()                            # the gateway's signed request
    kc.stop_channels()
    p.communicate(timeout=60)
    assert p.returncode == 0


def test_idle_connections_do_not_block_the_gateway(gateway):
    """Connections held open and silent (more than the launcher serves at once)
    delay neither the gateway's interrupt nor its poll nor its shutdown."""
    p, info, _, _ = gateway()
    kc = client_for(info)
    col = Collector(kc)
    idle = []
    try:
        for _ in range(40):
            idle.append(socket.create_connection(("127.0.0.1", info["comm_port"]), timeout=10))
        msg_id = kc.execute("import time; print('sleeping', flush=True); time.sleep(60)")
        col.wait_iopub(msg_id, lambda m: m["msg_type"] == "stream", what="the cell's output")
        send_request(info["comm_port"], {"signum": 0})
        send_request(info["comm_port"], {"signum": 2})
        # the idle connections are still open (each is only 2 s from its deadline at most,
        # and 40 of them served one at a time took minutes before)
        reply = col.wait_reply(msg_id, timeout=20)
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        gateway_shutdown(kc, info["comm_port"])
        p.communicate(timeout=60)
        assert p.returncode == 0
    finally:
        for s in idle:
            s.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another local user")
def test_other_local_users_are_refused(gateway):
    """A local user who is neither the kernel's user, root nor the gateway's cannot
    signal the kernel through the communication port (it could before: SIGSTOP,
    then SIGKILL)."""
    p, info, _, _ = gateway()
    kc = client_for(info)
    col = Collector(kc)
    pid = kernel_pid(col)
    send_as(65534, info["comm_port"], {"signum": 9})
    send_as(65534, info["comm_port"], {"signum": 15})
    reply, msgs = col.run("print('alive')", timeout=30)
    assert stdout_of(msgs) == "alive\n" and kernel_pid(col) == pid and p.poll() is None
    send_request(info["comm_port"], {"signum": 9})   # the kernel's own user still may
    out, _ = p.communicate(timeout=60)
    kc.stop_channels()
    assert p.returncode == 128 + 9
    assert "refused a local connection of uid 65534" in out, out


def test_remote_gateway_gets_the_interface_that_reaches_it(gateway):
    """The launcher on a "host" (a network namespace) and the gateway across a
    bridge, as in a Kubernetes pod: the port listens on eth0 only, the gateway's
    interrupt gets through, this host's loopback cannot connect, and another
    user on the host who reaches eth0's address is refused."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "multinode"))
    from netns import Hosts, NetnsUnavailable
    try:
        hosts = Hosts(1, tag="eg%d" % (os.getpid() % 1000)).__enter__()
    except NetnsUnavailable as e:
        pytest.skip(str(e))
    try:
        gw = FakeGateway(host="10.%d.0.254" % hosts.net)
        try:
            wrap = ["ip", "netns", "exec", hosts.names[0]]
            p, info, _, _ = gateway(gw=gw, wrap=wrap, ip="0.0.0.0")
        finally:
            gw.close()
        host = hosts.addrs[0]
        kc = client_for(info, ip=host)
        col = Collector(kc)
        msg_id = kc.execute("import time; print('sleeping', flush=True); time.sleep(60)")
        col.wait_iopub(msg_id, lambda m: m["msg_type"] == "stream", what="the cell's output")
        send_request(info["comm_port"], {"signum": 2}, host=host)       # the gateway
        assert col.wait_reply(msg_id, timeout=20)["content"]["ename"] == "KeyboardInterrupt"

        def on_host(*argv):
            return subprocess.run(wrap + list(argv), capture_output=True, text=True, timeout=30)
        probe = ("import socket, sys; s = socket.socket(); s.settimeout(5)\n"
                 "try: s.connect((sys.argv[1], %d)); print('connected')\n"
                 "except ConnectionRefusedError: print('refused')" % info["comm_port"])
        assert on_host(sys.executable, "-c", probe, "127.0.0.1").stdout.strip() == "refused"
        assert on_host(sys.executable, "-c", probe, host).stdout.strip() == "connected"
        nobody = ("import json, socket; s = socket.create_connection((%r, %d)); "
                  "s.sendall(json.dumps({'signum': 9}).encode()); s.close()"
                  % (host, info["comm_port"]))
        r = on_host("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                    sys.executable, "-c", nobody)
        assert r.returncode == 0, r.stderr
        reply, msgs = col.run("print('alive')", timeout=30)
        assert stdout_of(msgs) == "alive\n" and p.poll() is None
        gateway_shutdown(kc, info["comm_port"], host=host)
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0, out
        assert "communication port on eth0" in out, out
        assert "refused a local connection of uid 65534" in out, out
    finally:
        hosts.__exit__(None, None, None)
