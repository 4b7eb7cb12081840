#!/usr/bin/env python3
"""Seed corpora for kguard's fuzz harnesses, made from what the tests use.

usage: make_seeds.py KGUARD_BIN OUT_DIR

Writes OUT_DIR/<harness>/ seed files and OUT_DIR/keys (the key the seed
archives are signed with: run_fuzz.sh passes it as KG_FUZZ_KEY_DIR).
Wire messages are made by jupyter_client's own Session (the real peer),
signed with the harness's key; sealed archives by the real `kguard ckpt seal`.
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile

from jupyter_client.session import Session

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY = b"fuzz-key-0123456789abcdef"   # as in fuzz_msg.c
SEP = b"\xff\xfe"                    # frame separator of fuzz_msg.c


def put(out, harness, name, data):
    d = os.path.join(out, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def msg_seeds(out):
    s = Session(key=KEY, username="fuzz")
    kinds = [
        ("execute_request", {"code": "print(1)", "silent": False, "store_history": True,
                             "user_expressions": {}, "allow_stdin": False,
                             "stop_on_error": True}),
        ("kernel_info_request", {}),
        ("stream", {"name": "stdout", "text": "hello\n"}),
        ("status", {"execution_state": "idle"}),
        ("shutdown_request", {"restart": False}),
        ("comm_msg", {"comm_id": "c1", "data": {"x": [1, 2, {"y": None}]}}),
    ]
    for i, (kind, content) in enumerate(kinds):
        m = s.msg(kind, content=content)
        frames = s.serialize(m, ident=[b"client-%d" % i])
        if kind == "comm_msg":
            frames.append(b"\x00binary-buffer\x01")
        for signed in (1, 0):
            put(out, "msg", "%s-%d" % (kind, signed), bytes([signed]) + SEP.join(frames))
    # kernel-side streams (flag bit 1: split trusted, text read in pieces)
    texts = ["hello\n" * 20, "caf\u00e9 \U0001F600\ttab \"q\" \\ end\n" * 8,
             "RuntimeError: CUDA error: device-side assert triggered\n"]
    for i, text in enumerate(texts):
        m = s.msg("stream", content={"name": "stderr" if i else "stdout", "text": text})
        frames = s.serialize(m, ident=[b"kernel.x.stream"])
        for flags in (2, 2 + 4 * 7):
            put(out, "msg", "stream-trusted-%d-%d" % (i, flags), bytes([flags]) + SEP.join(frames))
    put(out, "msg", "heartbeat", b"\x00ping")
    put(out, "msg", "no-delimiter", b"\x01a" + SEP + b"b")


def conninfo_seeds(out):
    base = {"shell_port": 50001, "iopub_port": 50002, "stdin_port": 50003,
            "control_port": 50004, "hb_port": 50005, "ip": "127.0.0.1",
            "key": "a0b1c2", "transport": "tcp", "signature_scheme": "hmac-sha256",
            "kernel_name": "kg"}
    put(out, "conninfo", "tcp.json", json.dumps(base, indent=1).encode())
    ipc = dict(base, transport="ipc", ip="/tmp/kernel-x")
    put(out, "conninfo", "ipc.json", json.dumps(ipc).encode())
    put(out, "conninfo", "nokey.json", json.dumps(dict(base, key="")).encode())
    put(out, "conninfo", "badport.json", json.dumps(dict(base, hb_port=70000)).encode())


def copy_dir(out, harness, src, pattern_ext):
    for name in sorted(os.listdir(src)):
        if name.endswith(pattern_ext):
            with open(os.path.join(src, name), "rb") as f:
                put(out, harness, name, f.read())


def ckpt_seeds(kguard, out):
    keys = os.path.join(out, "keys")
    work = os.path.join(out, "work")
    shutil.rmtree(work, ignore_errors=True)
    payload = os.path.join(work, "payload")
    os.makedirs(os.path.join(payload, "sub"))
    with open(os.path.join(payload, "state.pt"), "wb") as f:
        f.write(bytes(range(256)) * 4)
    with open(os.path.join(payload, "sub", "notes.txt"), "wb") as f:
        f.write(b"hello\n" * 20)
    env = dict(os.environ, KGUARD_KEY_DIR=keys)
    for extra, name in (([], "plain.kgckpt.tar"), (["--zstd"], "zstd.kgckpt.tar.zst")):
        target = os.path.join(work, name)
        subprocess.run([kguard, "ckpt", "seal", payload, "--step", "7", "--run", "r1",
                        "-o", target, *extra], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        with open(target, "rb") as f:
            put(out, "archive", name, f.read())
        if not extra:
            with tarfile.open(target) as t:
                put(out, "manifest", "manifest.json",
                    t.extractfile("KGUARD-MANIFEST.json").read())
    shutil.rmtree(work)

# ---- the gate (fuzz_gate.c's op encoding) ------------------------------
# Scenarios of tests/unit/kernel/decide/test_gate.c's tables, as op sequences.
SHELL, CONTROL, STDIN = 0, 2, 3
EXECUTE, INBAND, REQUEST, OTHER = 0, 1, 2, 3
EV = {n: i for i, n in enumerate(
    "KERNEL_READY SPAWN_FAILED START_TIMEOUT STICKY EVIDENCE_DONE CHILD_EXIT "
    "STOPPED_RESTART STOPPED_RESTORE STOPPED_GIVE_UP RESTORED TIMER USER_RESTART "
    "SHUTDOWN SHUTDOWN_REQUEST SHUTDOWN_REPLIED".split())}


def g_clock(offset_ms=0, known=True):
    """The frontend's clock as kguard measured it (fuzz_gate.c: 2 s steps)."""
    return bytes([((offset_ms // 2000 + 64) << 1) | int(known)])


def g_arrive(ch, kind, restart=0, date=None, clock=(0, True)):
    b = bytes([0, ch | kind << 2 | restart << 4])
    if date is None:
        return b + b"\x00" + g_clock(*clock)
    how, v = date
    if how == "ago":
        return b + bytes([1 | (v // 50) << 2]) + g_clock(*clock)
    if how == "ahead":
        return b + bytes([2 | (v // 50) << 2]) + g_clock(*clock)
    iso = v.encode()
    return b + bytes([3 | len(iso) << 2]) + iso + g_clock(*clock)


def g_ev(name):
    return bytes([4, EV[name]])


def g_time(ms):
    return bytes([5, ms // 100])


NOTICE, TOLD = b"\x06", b"\x07"


def g_reply(error=0, idle=1):
    return bytes([3, error, idle])


def gate_seeds(out):
    default = b"\xff\xff"
    restart = g_ev("EVIDENCE_DONE") + g_ev("STOPPED_RESTART") + g_ev("TIMER") + \
        g_ev("KERNEL_READY")
    scenarios = {
        # Run All while kguard restarts: the queued cells are answered, the
        # ones arriving during the restart and in the window too; one made
        # after the notice runs, and so does anything after the window
        "run-all-during-restart": default + g_arrive(SHELL, EXECUTE) + g_arrive(SHELL, EXECUTE)
        + g_arrive(SHELL, EXECUTE) + g_ev("STICKY") + g_arrive(SHELL, EXECUTE)
        + g_ev("EVIDENCE_DONE") + g_arrive(SHELL, EXECUTE) + g_ev("STOPPED_RESTART")
        + g_ev("TIMER") + g_arrive(SHELL, REQUEST) + g_ev("KERNEL_READY") + NOTICE
        + g_time(300) + g_arrive(SHELL, EXECUTE, date=("ago", 1000))
        + g_arrive(SHELL, EXECUTE, date=("ahead", 100)) + g_reply() + g_time(2000)
        + g_arrive(SHELL, EXECUTE) + g_reply(),
        # the failing reply told the frontend before the notice
        "told-before-notice": default + g_arrive(SHELL, EXECUTE) + g_ev("STICKY") + TOLD
        + g_time(100) + g_arrive(SHELL, EXECUTE, date=("ahead", 50))
        + g_arrive(SHELL, EXECUTE, date=("ago", 200)) + restart + NOTICE + g_reply(),
        # the kernel died on its own, a checkpoint restored
        # a frontend clock 4 s ahead (offset -4 s): a request dated 3 s
        # after kguard's now was made before the notice; an unknown clock
        "skewed-ahead": default + g_arrive(SHELL, EXECUTE) + g_ev("STICKY")
        + g_ev("EVIDENCE_DONE") + g_ev("STOPPED_RESTART") + g_ev("TIMER")
        + g_ev("KERNEL_READY") + NOTICE + g_time(300)
        + g_arrive(SHELL, EXECUTE, date=("ahead", 3000), clock=(-4000, True))
        + g_arrive(SHELL, EXECUTE, date=("ahead", 3000), clock=(0, False)) + g_reply(),
        "died-restore": default + g_arrive(SHELL, EXECUTE) + g_ev("CHILD_EXIT")
        + g_arrive(SHELL, EXECUTE) + g_ev("STOPPED_RESTORE") + g_ev("RESTORED") + g_ev("TIMER")
        + g_ev("KERNEL_READY") + NOTICE + g_time(2500) + g_arrive(SHELL, EXECUTE),
        # policy gave up: DOWN answers, `%kguard status`, then `%kguard restart`
        "down-then-restart": default + g_arrive(SHELL, EXECUTE) + g_ev("STICKY")
        + g_ev("EVIDENCE_DONE") + g_ev("STOPPED_GIVE_UP") + NOTICE + g_arrive(SHELL, EXECUTE)
        + g_arrive(SHELL, REQUEST) + g_arrive(SHELL, INBAND) + g_arrive(SHELL, INBAND, 1)
        + g_arrive(SHELL, EXECUTE) + g_ev("KERNEL_READY"),
        # stop_on_error: the queue is aborted, the probe awaited
        "stop-on-error-probe": default + g_arrive(SHELL, EXECUTE) + g_arrive(SHELL, EXECUTE)
        + g_arrive(SHELL, REQUEST) + g_arrive(CONTROL, REQUEST) + g_reply(1, 0)
        + g_arrive(SHELL, EXECUTE) + b"\x08\x00" + b"\x08\x01" + g_reply(),
        # `kguard restart` on control while a cell runs and others wait
        "control-restart": default + g_arrive(SHELL, EXECUTE) + g_arrive(SHELL, EXECUTE)
        + g_arrive(SHELL, OTHER) + g_arrive(CONTROL, INBAND, 1) + g_arrive(SHELL, EXECUTE)
        + g_ev("STOPPED_RESTART") + g_ev("TIMER") + g_ev("KERNEL_READY"),
        # stdin input while stopping is dropped; shutdown while held
        "stdin-and-shutdown": default + g_arrive(SHELL, EXECUTE) + g_arrive(STDIN, OTHER)
        + g_ev("STICKY") + g_arrive(STDIN, OTHER) + g_arrive(SHELL, EXECUTE)
        + g_ev("SHUTDOWN_REQUEST") + g_arrive(SHELL, EXECUTE),
        # header dates as the frontend writes them (wall clock 0 = 2023-11-14T22:13:20Z)
        "iso-dates": b"\x02\x00" + g_arrive(SHELL, EXECUTE) + g_ev("STICKY") + restart + NOTICE
        + g_arrive(SHELL, EXECUTE, date=("iso", "2023-11-14T22:13:21.500Z"))
        + g_arrive(SHELL, EXECUTE, date=("iso", "2023-11-14T23:13:21+01:00"))
        + g_arrive(SHELL, EXECUTE, date=("iso", "2023-11-14 22:13:19.999999"))
        + g_arrive(SHELL, EXECUTE, date=("iso", "2026-02-31T00:00:00Z")),
        # a crash or death while still starting
        "death-while-starting": default + g_ev("STICKY") + g_ev("EVIDENCE_DONE")
        + g_ev("STOPPED_RESTART") + g_ev("TIMER") + g_time(3000) + g_arrive(SHELL, EXECUTE)
        + g_ev("CHILD_EXIT") + g_arrive(SHELL, EXECUTE) + g_ev("STOPPED_RESTART"),
    }
    for name, data in scenarios.items():
        put(out, "gate", name, data)


# ---- `%kguard` cells (tests/unit/kernel/decide/test_inband_cmd.c) ---------
def inband_seeds(out):
    cells = ["%kguard status", "%kguard restart", "%kguard restart --diagnostic",
             "  \n%kguard\tstatus\nprint(1)", "%kguard", "%kguard stats",
             "%kguard restart --diagnostic x", "%kguardx", "print('hi')",
             "%kguard r\u00e9start " + "\u00e9" * 80]
    for i, c in enumerate(cells):
        put(out, "inband", "cell-%d" % i, c.encode())


def main():
    kguard, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    msg_seeds(out)
    conninfo_seeds(out)
    copy_dir(out, "rules", os.path.join(SRC, "supervisor", "rules"), ".json")
    copy_dir(out, "notebook", os.path.join(SRC, "tests", "run", "notebooks"), ".ipynb")
    ckpt_seeds(kguard, out)
    gate_seeds(out)
    inband_seeds(out)


if __name__ == "__main__":
    main()
