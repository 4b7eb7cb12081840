"""`kguard exec` on one machine, end to end: the real binary supervising a
small real PyTorch training (train_tiny.py) with kguard.save/resume and the
labelled CPU emulation of GPU faults (KGUARD_EMULATE).

The training is deterministic per step, so a run restored from a checkpoint
must end with exactly the parameters of a fault-free run."""
import json
import os
import signal
import subprocess

import pytest

from exec_harness import (BIN, GAVE_UP, PYTHON, RETRYABLE, Run, base_env, exec_args, incidents,
                          reference_params)

pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    return reference_params(tmp_path_factory.mktemp("ref"))


def _final(tmp):
    return json.loads((tmp / "out.json").read_text())["params"]


def test_uncaught_device_assert_resumes_from_last_checkpoint(tmp_path, ref):
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-assert:step=5:once")
    # The proof here is the failure; a loaded machine must not make the
    # exit come later than a stall deadline of the pace's 1.5 s floor.
    run = Run(exec_args(tmp_path, "--stall-timeout", "60"), env)
    assert run.wait() == 0, run.output()
    out = run.output()
    assert "resumed from step 3" in out
    # The restore's machine progress lines are for the kernel supervisor,
    # never for the person reading kguard exec's output.
    assert "kguard-progress" not in out
    assert _final(tmp_path) == ref
    inc = incidents(tmp_path / "state")
    assert len(inc) == 1
    assert inc[0]["family"] == "device-assert"
    assert inc[0]["checkpoint"]["step"] == 3
    assert inc[0]["policy"]["decision"] == "restart"
    assert "the command failed" in inc[0]["proof"]


def test_poisoned_process_that_stays_alive_is_stopped_after_the_stall(tmp_path, ref):
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-illegal-address:step=8:once")
    run = Run(exec_args(tmp_path, "--stall-timeout", "2", script_args=["--on-fault", "hang"]),
              env)
    assert run.wait() == 0, run.output()
    assert "resumed from step 6" in run.output()
    assert _final(tmp_path) == ref
    inc = incidents(tmp_path / "state")
    assert len(inc) == 1 and inc[0]["family"] == "illegal-address"
    assert "no progress" in inc[0]["proof"]


def test_same_fault_twice_gives_up_with_the_permanent_code(tmp_path):
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-assert:step=5")
    run = Run(exec_args(tmp_path, "--max-restarts", "5"), env)
    assert run.wait() == GAVE_UP, run.output()
    inc = incidents(tmp_path / "state")
    assert [i["policy"]["decision"] for i in inc] == ["restart", "give-up"]
    assert run.count("exec: started") == 2


def test_printed_error_text_in_a_healthy_run_kills_nothing(tmp_path, ref):
    # The text alone is a suspicion; the run keeps making progress.
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-assert:step=5:stderr-only")
    run = Run(exec_args(tmp_path, "--stall-timeout", "30"), env)
    assert run.wait() == 0, run.output()
    assert run.count("exec: started") == 1
    assert "was not a fault" in run.output()
    assert incidents(tmp_path / "state") == []
    assert _final(tmp_path) == ref


def test_sigabrt_with_hsa_abort_is_proof(tmp_path, ref):
    env = base_env(tmp_path, KGUARD_EMULATE="rocm-abort:step=7:once")
    run = Run(exec_args(tmp_path), env)
    assert run.wait() == 0, run.output()
    assert "resumed from step 6" in run.output()
    assert _final(tmp_path) == ref
    inc = incidents(tmp_path / "state")
    assert len(inc) == 1 and inc[0]["sticky"] is True


def test_checkpoints_that_do_not_verify_are_never_dropped_by_a_silent_start_over(tmp_path):
    # The training seals with a key kguard does not trust (another
    # KGUARD_KEY_DIR): after the fault nothing verifies, though step 3 exists.
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-assert:step=5:once")
    run = Run(exec_args(tmp_path, script_args=["--sign-with-keys", str(tmp_path / "other")]),
              env)
    assert run.wait() == GAVE_UP, run.output()
    out = run.output()
    assert "none verifies" in out and "which you do not trust" in out, out
    assert run.count("exec: started") == 1
    assert any(p.name.startswith("step-0000000003-") for p in (tmp_path / "ckpt").iterdir())


def test_the_commands_own_failure_passes_through(tmp_path):
    env = base_env(tmp_path)
    run = Run(exec_args(tmp_path, script_args=["--steps", "notanumber"]), env)
    assert run.wait() == 2, run.output()   # argparse's usage error
    assert incidents(tmp_path / "state") == []


def test_non_sticky_oom_is_not_restarted(tmp_path):
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-oom:step=4")
    run = Run(exec_args(tmp_path), env)
    assert run.wait() == 1, run.output()
    assert run.count("exec: started") == 1
    assert incidents(tmp_path / "state") == []


@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGUSR1])
def test_preemption_seals_and_exits_retryable(tmp_path, signo):
    env = base_env(tmp_path)
    run = Run(exec_args(tmp_path, "--preempt-grace", "20",
                        script_args=["--wait-signal-at", "4"]), env)
    run.wait_line("waiting for a pre-emption signal")
    run.signal(signo)
    assert run.wait() == RETRYABLE, run.output()
    assert "pre-empted, sealed step 4" in run.output()
    assert any(p.name.startswith("step-0000000004-") for p in (tmp_path / "ckpt").iterdir())


def test_a_second_interrupt_kills_a_job_that_ignores_the_first_at_once(tmp_path):
    # Ctrl-C twice: the first is passed on with the pre-emption grace (60 s
    # here); the job ignores it; the second kills the group without waiting.
    import time
    job = ("import signal, sys, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
           "print('ignoring SIGINT', flush=True); time.sleep(600)")
    run = Run([BIN, "exec", "--state-dir", str(tmp_path / "state"), "--preempt-grace", "60",
               "--", PYTHON, "-c", job], base_env(tmp_path))
    run.wait_line("ignoring SIGINT")
    run.signal(signal.SIGINT)
    run.wait_line("passing it to the command")
    second = time.monotonic()
    run.signal(signal.SIGINT)
    assert run.wait(30) == RETRYABLE, run.output()
    assert time.monotonic() - second < 10, run.output()
    assert "second signal 2 while stopping: killing the group now" in run.output()


def test_bad_usage_is_rejected(tmp_path):
    import subprocess
    for args in (["exec"], ["exec", "--max-restarts", "x", "--", "true"],
                 ["exec", "--nnodes", "2", "--", "true"], ["exec", "--name", "../x", "--", "true"]):
        r = subprocess.run([BIN, *args], capture_output=True, text=True)
        assert r.returncode == 100, (args, r.stderr)
        assert "kguard exec:" in r.stderr
    r = subprocess.run([BIN, "exec", "--state-dir", str(tmp_path), "--", "/nonexistent/cmd"],
                       capture_output=True, text=True)
    assert r.returncode == 127, r.stderr


def _plain(tmp, *cmd, name="job", opts=()):
    """kguard exec over a small shell command (no training), its Run."""
    return Run([BIN, "exec", "--state-dir", str(tmp / "state"), "--name", name, *opts, "--",
                *cmd], base_env(tmp))


def test_log_is_private_and_each_run_is_separated_with_its_time(tmp_path):
    import os
    import re
    import stat
    for word in ("first", "second"):
        assert _plain(tmp_path, "sh", "-c", f"echo {word}-run").wait() == 0
    log = tmp_path / "state" / "logs" / "exec-job.log"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text()
    starts = re.findall(r"^===== kguard exec job: run started (\S+) .*$", text, re.M)
    assert len(starts) == 2, text
    assert all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", t) for t in starts)
    assert text.index("first-run") < text.index(starts[1]) < text.index("second-run")
    assert len(re.findall(r"^===== kguard exec job: exit 0 .*$", text, re.M)) == 2, text
    # A log left with loose permissions by an older kguard is tightened.
    os.chmod(log, 0o644)
    assert _plain(tmp_path, "true").wait() == 0
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_log_never_follows_a_planted_symlink(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    logs = tmp_path / "state" / "logs"
    logs.mkdir(parents=True)
    (logs / "exec-job.log").symlink_to(victim)
    run = _plain(tmp_path, "sh", "-c", "echo should-not-run")
    assert run.wait() == 100, run.output()
    assert "exec-job.log" in run.output() and "symbolic link" in run.output()
    assert "should-not-run" not in run.output()
    assert victim.read_text() == "precious\n"


def test_a_command_code_that_kguard_reserves_is_kept_in_the_log_and_summary(tmp_path):
    run = _plain(tmp_path, "sh", "-c", "exit 86")
    assert run.wait() == 1, run.output()
    assert "exit code 86" in run.output() and "reported as 1" in run.output()
    text = (tmp_path / "state" / "logs" / "exec-job.log").read_text()
    assert "exit 1" in text and "exit code 86" in text and "reported as 1" in text, text


DETBUG = """
import sys, time
for n in range(1, 11):
    time.sleep(0.1)
    print(f"kguard: completed step {n}", flush=True)
print("RuntimeError: CUDA error: device-side assert triggered", file=sys.stderr, flush=True)
time.sleep(1000)
"""


def test_the_pace_measured_before_a_restart_judges_the_fault_after_it(tmp_path):
    # A deterministic bug in a job of 0.1 s steps: the stall that proves it
    # follows the pace (4 x the longest gap, floor 1.5 s) in every
    # generation, also when the fault comes back before the previous
    # generation's highest step, never the 60 s of a job whose pace is unknown.
    run = _plain(tmp_path, "/usr/bin/python3", "-c", DETBUG, opts=("--max-restarts", "5"))
    assert run.wait(240) == GAVE_UP, run.output()
    stalls = [line.split("stalls for ")[1].split(" (")[0] for line in run.output().splitlines()
              if "sticky error text seen" in line]
    assert stalls == ["1.5 s", "1.5 s"], run.output()
    assert run.count("exec: started") == 2


def test_a_reader_that_stops_reading_never_stops_the_supervision(tmp_path):
    """kguard exec's stdout is a pipe nobody reads while the job runs (a
    pager scrolled back, a terminal paused with Ctrl-S): the job's 3 MB
    fill it, and the sticky failure after them is still proven and ended
    at once; the log keeps every byte. A plain write would wait for the
    reader for ever."""
    r, w = os.pipe()
    err = open(tmp_path / "stderr", "w")
    script = ('head -c 3000000 /dev/zero | tr "\\0" x; echo; '
              'echo "RuntimeError: CUDA error: device-side assert triggered" >&2; exit 1')
    args = [BIN, "exec", "--checkpoints", str(tmp_path / "ckpt"), "--state-dir",
            str(tmp_path / "state"), "--max-restarts", "0", "--", "sh", "-c", script]
    p = subprocess.Popen(args, stdout=w, stderr=err, env=base_env(tmp_path))
    os.close(w)
    try:
        code = p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("kguard exec waited for the reader of its stdout")
    finally:
        os.close(r)
        err.close()
    words = (tmp_path / "stderr").read_text()
    assert code == GAVE_UP, words
    assert "sticky device-assert" in words and "proven" in words
    log = next((tmp_path / "state" / "logs").glob("exec-*.log")).read_text()
    assert log.count("x") >= 3000000


def test_a_reader_that_is_gone_ends_nothing(tmp_path):
    """`kguard exec ... | head -1`: the reader goes; kguard is not killed by
    SIGPIPE (nor the job with it), says once where the output goes on, and
    the job finishes."""
    args = [BIN, "exec", "--checkpoints", str(tmp_path / "ckpt"), "--state-dir",
            str(tmp_path / "state"), "--", "sh", "-c",
            f"seq 200000; sleep 0.5; touch {tmp_path / 'finished'}"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=base_env(tmp_path))
    assert p.stdout.readline() == b"1\n"
    p.stdout.close()
    words = p.stderr.read().decode()
    assert p.wait(60) == 0, words
    assert (tmp_path / "finished").exists()
    assert words.count("stdout is closed (its reader is gone)") == 1, words
    log = next((tmp_path / "state" / "logs").glob("exec-*.log")).read_text()
    assert "200000\n" in log


_CATCHES = ("import kguard.emulate as e\n"
            "try:\n    e.step(1)\nexcept Exception:\n    print('emulated error caught')\n")


def test_emulation_that_never_fires_is_named_at_the_end(tmp_path):
    # A command that never calls kguard.emulate.step(): a clean run, and kguard
    # says the emulation did nothing.
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-assert:step=3")
    args = [BIN, "exec", "--state-dir", str(tmp_path / "state"), "--", PYTHON, "-c", "pass"]
    run = Run(args, env)
    assert run.wait() == 0, run.output()
    assert "KGUARD_EMULATE=cuda-assert:step=3 was set but never fired" in run.output()
    # `:once` is once per run: a second run fires again, and neither warns.
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-oom:once")
    for _ in range(2):
        args = [BIN, "exec", "--state-dir", str(tmp_path / "state"), "--", PYTHON, "-c",
                _CATCHES]
        run = Run(args, env)
        assert run.wait() == 0, run.output()
        assert "emulated error caught" in run.output()
        assert "never fired" not in run.output() and "did not fire" not in run.output()


def _gone(pid):
    """pid ended (a zombie waiting for init to reap it has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_the_commands_children_die_with_a_killed_kguard(tmp_path):
    """kguard SIGKILLed (the OOM killer, kill -9): PDEATHSIG takes only its
    direct child; the keeper ends the rest of the child's group (here a
    grandchild, as torchrun's ranks under its agent)."""
    import time
    run = _plain(tmp_path, "sh", "-c", "sleep 1000 & echo grandchild $!; wait")
    line = run.lines[run.wait_line("grandchild ")]
    grandchild = int(line.split("grandchild ", 1)[1].split()[0])
    assert not _gone(grandchild)
    run.proc.kill()
    run.wait(30)
    deadline = time.monotonic() + 20
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)   # polling a condition with a deadline
    if not _gone(grandchild):
        os.kill(grandchild, signal.SIGKILL)
        raise AssertionError(f"the grandchild {grandchild} outlived kguard:\n" + run.output())
