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


def _node(tmp, rank, coordinator, secret, *opts, cmd=("true",), nnodes=2, **env):
    return Run([BIN, "exec", "--nnodes", str(nnodes), "--node-rank", str(rank),
                "--coordinator", coordinator, "--secret", str(secret),
                "--checkpoints", str(tmp / "ckpt"), "--state-dir", str(tmp / f"state{rank}"),
                *opts, "--", *cmd], base_env(tmp, **env))


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


def test_a_second_interrupt_does_not_wait_for_the_coordinator_to_end(tmp_path):
    # Node 0 of two, interrupted while it waits for node 1: the run ends
    # retryable and gives its coordinator a few seconds to deliver its last
    # decision; a second Ctrl-C ends that wait at once.
    import time
    port = _free_port()
    node0 = _node(tmp_path, 0, f"127.0.0.1:{port}", _secret(tmp_path))
    node0.wait_line("coordinator: listening", timeout=60)
    node0.signal(signal.SIGINT)
    node0.wait_line("once the coordinator has delivered its last decision", timeout=30)
    second = time.monotonic()
    node0.signal(signal.SIGINT)
    assert node0.wait(30) == 200, node0.output()
    assert time.monotonic() - second < 3, node0.output()
    assert "not waiting for the coordinator to end" in node0.output()


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


def test_two_nodes_that_verify_each_other_start_and_finish(tmp_path):
    port, secret = _free_port(), _secret(tmp_path)
    nodes = [_node(tmp_path, r, f"127.0.0.1:{port}", secret, cmd=("sh", "-c", "echo ran-$0"))
             for r in range(2)]
    assert [n.wait(120) for n in nodes] == [0, 0], "\n\n".join(n.output() for n in nodes)
    assert all("ran-" in n.output() for n in nodes)
    assert "every node joined and verifies every node's checkpoints" in nodes[0].output()
    # The key probes are gone with the job.
    assert not list((tmp_path / "ckpt" / ".kguard").glob("probe-*"))


def test_a_node_with_another_secret_is_told_at_once_and_the_job_ends(tmp_path):
    port = _free_port()
    node0 = _node(tmp_path, 0, f"127.0.0.1:{port}", _secret(tmp_path, "a"),
                  "--heartbeat-timeout", "3", cmd=("sh", "-c", "echo ran"))
    node0.wait_line("coordinator: listening", timeout=60)
    node1 = _node(tmp_path, 1, f"127.0.0.1:{port}", _secret(tmp_path, "b"),
                  "--heartbeat-timeout", "3", cmd=("sh", "-c", "echo ran"))
    # Refused within seconds (a CURVE handshake is a few milliseconds),
    # naming the secret file; the coordinator logs it and ends the job within
    # the heartbeat timeout, not the join timeout (600 s).
    assert node1.wait(30) == 100, node1.output()
    assert "CURVE handshake failed" in node1.output() and str(tmp_path / "b") in node1.output()
    assert node0.wait(30) == 100, node0.output()
    out = node0.output()
    assert "failed the CURVE handshake" in out and "another --secret" in out
    assert "ran" not in node0.output().split() and "ran" not in node1.output().split()


def test_a_node_that_never_joins_ends_the_job_and_a_restarted_job_goes_on_counting(tmp_path):
    port, secret = _free_port(), _secret(tmp_path)
    node0 = _node(tmp_path, 0, f"127.0.0.1:{port}", secret, "--join-timeout", "2")
    assert node0.wait(60) == 200, node0.output()
    assert "node(s) 1 did not join within 2 s" in node0.output()
    decisions = tmp_path / "ckpt" / ".kguard" / "decisions"
    assert [p.name for p in decisions.iterdir()] == ["end-0.json"]
    # A forged decision beside it is named and ignored; the job started
    # again goes on after the one its key verifies.
    (decisions / "gen-7.json").write_text(
        '{"decision": "{\\"action\\":\\"restart\\",\\"gen\\":7}", "mac": "' + "0" * 64 + '"}')
    node0 = _node(tmp_path, 0, f"127.0.0.1:{port}", secret, "--join-timeout", "2")
    assert node0.wait(60) == 200, node0.output()
    out = node0.output()
    assert "gen-7.json ignored: its MAC does not verify" in out, out
    assert "goes on with generation 1" in out, out
    assert (decisions / "end-1.json").exists()


def test_nodes_that_cannot_verify_each_others_checkpoints_refuse_to_start(tmp_path):
    # Two pods, home directories not shared: each node signs with its own
    # key. Training would seal archives the other node cannot verify, and a
    # fault would find nothing to resume: refused before anything runs.
    port, secret = _free_port(), _secret(tmp_path)
    nodes = [_node(tmp_path, r, f"127.0.0.1:{port}", secret, cmd=("sh", "-c", "echo ran"),
                   KGUARD_KEY_DIR=str(tmp_path / f"keys{r}")) for r in range(2)]
    codes = [n.wait(120) for n in nodes]
    assert codes == [100, 100], "\n\n".join(n.output() for n in nodes)
    for n in nodes:
        out = n.output()
        assert "cannot verify the checkpoints node" in out, out
        assert "signed by key b2:" in out and "which you do not trust" in out, out
        assert "ran" not in out.split()
