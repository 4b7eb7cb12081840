"""The multi-node coordinator of `kguard exec` on one machine, over
loopback addresses (no network namespaces needed): where it listens, and
what it does with its files in the shared checkpoint directory."""
import os
import signal
import socket

import pytest

from exec_harness import BIN, Run, base_env

pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")


def _free_port(addr="127.0.0.1"):
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def _secret(tmp, name="secret"):
    p = tmp / name
    p.write_bytes(os.urandom(32))
    p.chmod(0o600)
    return p


def _node(tmp, rank, coordinator, secret, *opts, cmd=("true",), nnodes=2):
    return Run([BIN, "exec", "--nnodes", str(nnodes), "--node-rank", str(rank),
                "--coordinator", coordinator, "--secret", str(secret),
                "--checkpoints", str(tmp / "ckpt"), "--state-dir", str(tmp / f"state{rank}"),
                *opts, "--", *cmd], base_env(tmp))


def _accepts(addr, port):
    with socket.socket() as s:
        s.settimeout(5)
        try:
            s.connect((addr, port))
            return True
        except ConnectionRefusedError:
            return False


def test_the_coordinator_listens_only_on_the_address_it_was_given(tmp_path):
    port = _free_port("127.0.0.2")
    node0 = _node(tmp_path, 0, f"127.0.0.2:{port}", _secret(tmp_path))
    try:
        node0.wait_line("coordinator: listening", timeout=60)
        assert _accepts("127.0.0.2", port)
        assert not _accepts("127.0.0.1", port), node0.output()
    finally:
        node0.signal(signal.SIGTERM)
        node0.wait(60)


def test_a_coordinator_address_of_another_host_is_refused_with_the_fix(tmp_path):
    # 192.0.2.1 (TEST-NET-1) is nobody's address here: the coordinator cannot
    # listen there, says so, and node 0 ends at once with the usage code.
    node0 = _node(tmp_path, 0, "192.0.2.1:29600", _secret(tmp_path))
    assert node0.wait(60) == 100, node0.output()
    out = node0.output()
    assert "not an address of this host" in out and "--coordinator-bind" in out


def test_a_link_planted_at_the_coordinators_directory_is_refused(tmp_path):
    # A neighbour who can write the shared checkpoint directory plants
    # .kguard -> a directory of theirs (or a file of the user's to clobber).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / ".kguard").symlink_to(elsewhere)
    port = _free_port()
    node0 = _node(tmp_path, 0, f"127.0.0.1:{port}", _secret(tmp_path))
    assert node0.wait(60) == 100, node0.output()
    assert "symbolic link" in node0.output() and ".kguard" in node0.output()
    assert list(elsewhere.iterdir()) == []
