"""Incident records as people and programs read them: `kguard incident list`,
`show` and `export`, driven through the real binary; the kernel's secrets never
reach a record nor an export. Incidents come from a real guarded ipykernel
under the CPU emulation of a device-side assert, and from records written
here in the three shapes kguard writes (kernel, `kguard exec`, multi-node job)."""
import json
import os
import subprocess
import time

import pytest

from conftest import KGUARD, Collector, kernel_pid, wait_until

# Fakes in the real shapes; none is a live credential.
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
WANDB = "8c1f2e3d4b5a69788796a5b4c3d2e1f0a9b8c7d6"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
OPENAI = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
PASSWORD = "plain words 42"
SECRETS = (HF, WANDB, AWS, OPENAI, PASSWORD)


def incident(*args, env=None):
    return subprocess.run([KGUARD, "incident", *args], capture_output=True, text=True,
                          timeout=60, env=env)


def test_kernel_secrets_reach_neither_record_nor_export(env):
    """The kernelspec gives the kernel HF, W&B, AWS and a password; the cell sets an
    OpenAI key itself (as dotenv would) and its error text and stderr quote them all.
    The shell that exports has none of them in its environment."""
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2", "HF_TOKEN": HF,
                  "WANDB_API_KEY": WANDB, "AWS_SECRET_ACCESS_KEY": AWS,
                  "MY_SERVICE_PASSWORD": PASSWORD, "TOKENIZERS_PARALLELISM": "false",
                  "JPY_SESSION_NAME": str(env.work / "train.ipynb")})
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    code = ("import os, kguard.emulate as em\n"
            "os.environ['OPENAI_API_KEY'] = %r\n"
            "os.write(2, ('uploading with ' + os.environ['HF_TOKEN'] + '\\n').encode())\n"
            "em.step(1)\n"
            "try:\n"
            "    em.step(2)\n"
            "except Exception as e:\n"
            "    raise RuntimeError('sync failed (aws_secret_access_key=%%s wandb=%%s '\n"
            "                       'openai=%%s password=%%s): %%s' %% (\n"
            "        os.environ['AWS_SECRET_ACCESS_KEY'], os.environ['WANDB_API_KEY'],\n"
            "        os.environ['OPENAI_API_KEY'], os.environ['MY_SERVICE_PASSWORD'], e)) from e\n"
            % OPENAI)
    msg_id = kc.execute(code)
    reply = col.wait_reply(msg_id, timeout=60)
    assert any(s in reply["content"]["evalue"] for s in SECRETS)   # the user sees them
    wait_until(lambda: kernel_pid(col) != pid1, 60, "the restarted kernel")
    wait_until(lambda: env.incidents() and "versions" in env.incidents()[0], 60,
               "the incident with the probe's versions")
    (path,) = (env.state / "incidents").glob("*.json")
    raw = path.read_text()
    for s in SECRETS:
        assert s not in raw, s
    rec = json.loads(raw)
    assert rec["secret_env"] == ["HF_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY",
                                 "MY_SERVICE_PASSWORD"] or \
        sorted(rec["secret_env"]) == sorted(["HF_TOKEN", "WANDB_API_KEY",
                                             "AWS_SECRET_ACCESS_KEY", "MY_SERVICE_PASSWORD"])
    assert "<env:AWS_SECRET_ACCESS_KEY>" in raw and "<env:HF_TOKEN>" in raw
    assert "<api-key>" in raw                        # set inside the kernel: by its shape
    assert rec["notebook"].endswith("train.ipynb")
    assert rec["family"] == "device-assert"          # masking kept the diagnosis
    # the shell that exports knows none of the kernel's variables
    shell = {k: v for k, v in os.environ.items() if v not in SECRETS}
    for args in ((), ("--json", "--include-code", "--include-env")):
        r = incident("export", rec["id"], *args, env=shell)
        assert r.returncode == 0, r.stderr
        for s in SECRETS:
            assert s not in r.stdout, (args, s)
    assert "HF_TOKEN" in r.stdout                    # what was masked is said
    r = incident("show", rec["id"], env=shell)
    assert r.returncode == 0 and not any(s in r.stdout for s in SECRETS)
    assert "train.ipynb, cell [" in r.stdout


def _record(state, rid, t_ms, **fields):
    d = state / "incidents"
    d.mkdir(parents=True, exist_ok=True)
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t_ms / 1000)) + ".000Z"
    rec = {"kguard_incident": 1, "id": rid, "created": iso, "T": {"iso": iso, "ms": t_ms},
           "checkpoint": None}
    rec.update(fields)
    (d / (rid + ".json")).write_text(json.dumps(rec))
    return rec


def test_list_and_show_for_people_and_programs(tmp_path, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setenv("KGUARD_STATE_DIR", str(state))
    # nothing yet: the same answer however the state dir is named, and nothing created
    a = incident("list")
    b = incident("list", "--state-dir", str(state))
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout == "no incidents in %s/incidents\n" % state
    assert not state.exists()
    assert json.loads(incident("list", "--json").stdout) == []

    t0 = 1796230984000
    _record(state, "20261202T170304Z-aaaaaa", t0, family="device-assert", backend="cuda",
            sticky=True, title="CUDA device-side assert", notebook="/home/u/work/train.ipynb",
            cell={"code": "loss = crit(out, y)", "msg_id": "m1", "execution_count": 7},
            policy={"decision": "restart", "reason": "restart 1 of 3", "delay_ms": 0},
            restart_count=1, first_error={"ename": "AcceleratorError",
                                          "evalue": "CUDA error: device-side assert triggered",
                                          "traceback": ["\x1b[31mAcceleratorError\x1b[0m: boom"]},
            assertion_line="Loss.cu:250: k: block: [0,0,0] Assertion `t >= 0` failed.",
            exit={"code": None, "signal": 6, "signal_name": "SIGABRT"}, last_step=29,
            versions={"python": "3.11.2", "torch": "2.8.0", "cuda": "12.8"},
            secret_env=["HF_TOKEN"])
    _record(state, "20261202T180000Z-bbbbbb", t0 + 3_400_000, family="out-of-memory",
            backend="cuda", sticky=False,
            exec={"command": ["torchrun", "--nproc_per_node", "2", "train.py"], "name": "job"},
            policy={"decision": "give-up", "reason": "same error twice", "delay_ms": 0})
    _record(state, "20261202T160000Z-cccccc", t0 - 3_784_000,
            job={"generation": 1, "root_cause": {"node": 1, "host": "gpu7",
                                                  "family": "device-assert"}},
            policy={"decision": "restart", "reason": "r", "delay_ms": 0})
    (state / "incidents" / "20261202T190000Z-broken.json").write_text("{not json")

    r = incident("list")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["ID", "TIME", "KIND", "DECISION", "WHERE"]
    ids = [l.split()[0] for l in lines[1:]]
    assert ids == ["20261202T180000Z-bbbbbb", "20261202T170304Z-aaaaaa",
                   "20261202T160000Z-cccccc"]          # newest first, like git log
    assert "not a readable incident record" in r.stderr and "broken" in r.stderr
    local = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t0 / 1000))
    assert local in lines[2]                          # local time, to the second
    assert "device-assert (cuda)" in lines[2] and "restart" in lines[2]
    assert lines[2].rstrip().endswith("train.ipynb, cell [7]")
    assert "give-up" in lines[1] and "command: torchrun --nproc_per_node 2 train.py" in lines[1]
    assert "job: node 1 on gpu7, generation 1" in lines[3]
    # columns line up under their headers
    for head, texts in (("WHERE", ("command:", "train.ipynb", "job:")),
                        ("DECISION", ("give-up", "restart", "restart"))):
        col = lines[0].index(head)
        assert [l.find(t, col - 1) for l, t in zip(lines[1:], texts)] == [col] * 3, r.stdout

    rows = json.loads(incident("list", "--json").stdout)
    assert [x["id"] for x in rows] == ids and rows[1]["where"] == "train.ipynb, cell [7]"
    assert rows[1]["time_ms"] == t0 and rows[1]["path"].endswith("-aaaaaa.json")

    r = incident("show", "20261202T170304Z-aaaaaa")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("incident 20261202T170304Z-aaaaaa\n")
    for want in ("device-assert (cuda), sticky", "restart: restart 1 of 3", "killed by SIGABRT",
                 "last step   29", "none restored", "Python 3.11.2, PyTorch 2.8.0, CUDA 12.8",
                 "HF_TOKEN (values masked", "AcceleratorError: CUDA error: device-side assert",
                 "Assertion `t >= 0` failed.", "loss = crit(out, y)",
                 "kguard incident export 20261202T170304Z-aaaaaa", local):
        assert want in out, (want, out)
    assert "\x1b[" not in out                        # no terminal escapes from the traceback
    same = json.loads(incident("show", "20261202T170304Z-aaaaaa", "--json").stdout)
    assert same["cell"]["execution_count"] == 7
    by_path = incident("show", str(state / "incidents" / "20261202T180000Z-bbbbbb.json"))
    assert by_path.returncode == 0 and "command: torchrun" in by_path.stdout

    # mistakes: one line each, exit 100
    for args, why in ((("show",), "expects one incident id"),
                      (("show", "20990101T000000Z-000000"), "no incident 20990101T000000Z"),
                      (("show", "../../etc/passwd"), "No such file"),
                      (("show", str(state / "incidents" / "20261202T190000Z-broken.json")),
                       "not a kguard incident record"),
                      (("list", "extra"), "takes no argument"),
                      (("show", "x", "-o", "f"), "export's options"),
                      (("bogus", "--help"), "unknown subcommand 'bogus'")):
        r = incident(*args)
        assert r.returncode == 100 and why in r.stderr, (args, r.returncode, r.stderr)


def test_list_refuses_an_unreadable_state_dir(tmp_path, monkeypatch):
    if os.geteuid() == 0:
        pytest.skip("root reads any directory")
    d = tmp_path / "state" / "incidents"
    d.mkdir(parents=True)
    d.chmod(0)
    try:
        r = incident("list", "--state-dir", str(tmp_path / "state"))
        assert r.returncode == 111 and "cannot read" in r.stderr
    finally:
        d.chmod(0o700)
