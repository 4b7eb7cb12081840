"""Time to resume, split into its parts, on 1, 2 and 3 hosts (issue 15, part 2).

    sudo /usr/bin/python3 bench/resilience/resume.py [--nodes 1|2|3] [--trials 5]
        [--ballast-mb 8] [--every 3] [--snapshot-every K] [--stall 2] [--json parts.json]
    (--kguard PATH, default build/dev/kguard; --short: one trial, what ctest
    runs; exit 77 = skipped: no torchrun, or --nodes > 1 without network
    namespaces)

The job is bench/resilience/job.py (real CPU work per step, gloo all-reduce,
kguard.save every 3 steps with --ballast-mb of extra state per rank, and
--timeline: each start reports when the interpreter entered, torch was
imported, the process group formed, the resume was loaded and the first step
completed). 1 host: `kguard exec -- torchrun --nproc_per_node 2` (its own rendezvous port);
2 or 3 hosts: network namespaces on a bridge (tests/multinode/netns.py), one
`kguard exec --nnodes N -- torchrun --nnodes N` per host, one rank each.
At step 10 the last rank prints the emulated illegal memory access and stays
alive, blocked (the case where only a supervisor gets the job going again).
kguard's log (KGUARD_LOG_LEVEL=info: millisecond stamps, one line per
process reaped) and the job's timeline give the parts, all on this machine's
wall clock:
  detect      first error line -> proof on its node (--stall: the deadline)
  kill        proof -> the first worker dead (TERM sent and delivered)
  mem-free    -> the last worker dead: on a GPU the driver frees a process's
              memory when it exits, and only workers hold the device
              (worker deaths: /proc polled every 5 ms by this script)
  tree-gone   -> every process of every node's tree reaped (torchrun's
              agent shuts down; kguard restores only once nothing is left)
  decide      -> every node has the coordinator's decision (several hosts)
  restore     -> every node restored and verified its ranks' checkpoint
              (1 host: `kguard ckpt resume-prepare`; several: per rank)
  backoff     -> the command started again (the restart policy's delay)
  launch      -> every worker's interpreter runs (torchrun's agent, its
              rendezvous of agents, worker spawn)
  import      -> torch and kguard imported in every worker
  rendezvous  -> the gloo process group formed (the slowest rank)
  load        -> every rank loaded its resume (kguard.resume().load())
  first-step  -> every rank completed its first step after the restart
  resume      kill .. first-step: from the proof to training again
  total       detect + resume: from the first error line to training again
  verify      several hosts: the slowest node's listing and verification of
              its ranks' checkpoints (part of decide)
  no-read     total without reading checkpoints (restore, load, verify)
(Parts are consecutive segments of that path: a part that overlaps the one
before it, as the restore running while the tree goes, counts only for
what it adds, so they sum to resume.)
Each part ends when the slowest node or rank ends it. --json writes the
per-trial parts for bench/resilience/model16.py.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).resolve().parent / "job.py"
sys.path.insert(0, str(ROOT / "tests" / "exec"))
sys.path.insert(0, str(ROOT / "tests" / "multinode"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from exec_harness import Run  # noqa: E402
from kglog import log_times  # noqa: E402
from netns import Hosts, NetnsUnavailable  # noqa: E402
from versus_torchrun import free_port  # noqa: E402

PARTS = ("detect", "kill", "mem-free", "tree-gone", "decide", "restore", "backoff", "launch",
         "import", "rendezvous", "load", "first-step", "resume", "total", "verify", "no-read")
FAULT_STEP = 10


def _first(rows, text, after=0.0):
    return next((t for t, m in rows if text in m and t >= after), None)


def _last_before(rows, text, before):
    v = [t for t, m in rows if text in m and t <= before]
    return max(v) if v else None


def _env(shared, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KGUARD_") and k not in ("RANK", "WORLD_SIZE")}
    env.update(PYTHONPATH=str(ROOT / "python"), KGUARD_KEY_DIR=str(shared / "keys"),
               KGUARD_BIN=ARGS.kguard, KGUARD_LOG_LEVEL="info", PYTHONDONTWRITEBYTECODE="1",
               OMP_NUM_THREADS="1", **extra)
    return env


def _job(shared, nodes, nproc):
    hold = (["--hold-at", str(FAULT_STEP - 1), "--hold-file", str(shared / "go")]
            if ARGS.standby else [])
    snap = ["--snapshot-every", str(ARGS.snapshot_every)] if ARGS.snapshot_every else []
    return [str(JOB), "--saver", "kguard", "--steps", "16", "--every", str(ARGS.every),
            *snap, "--ballast-mb", str(ARGS.ballast_mb), "--fault-steps", str(FAULT_STEP),
            "--fault-rank", str(nodes * nproc - 1), "--on-fault", ARGS.on_fault,
            "--marks", str(shared), "--timeline", "--report", str(shared / "report.jsonl"),
            *hold]


def _kg(shared, i, *multi):
    stall = ["--stall-timeout", str(ARGS.stall)] if ARGS.stall > 0 else []
    agent = ["--nproc-per-node", "2" if not multi else "1"] if ARGS.launcher == "kguard" else []
    standby = ["--standby"] if ARGS.standby else []
    return [ARGS.kguard, "exec", "--checkpoints", str(shared / "ckpt"), "--state-dir",
            str(shared / f"state{i}"), *stall, "--kill-grace", "3", *agent, *standby,
            *multi, "--"]


def _run_job(shared, nodes, hosts):
    if ARGS.launcher == "kguard":
        # kguard starts the ranks itself (torchrun's environment), no torchrun.
        py = ["/usr/bin/python3"]
        if nodes == 1:
            return [Run(_kg(shared, 0) + py + _job(shared, 1, 2), _env(shared))]
        secret = shared / "secret"
        secret.write_bytes(os.urandom(32))
        secret.chmod(0o600)
        return [Run(hosts.argv(i, _kg(shared, i, "--nnodes", str(nodes), "--node-rank", str(i),
                                      "--coordinator", f"{hosts.addrs[0]}:29600", "--secret",
                                      str(secret)) + py + _job(shared, nodes, 1)),
                    _env(shared, GLOO_SOCKET_IFNAME="eth0")) for i in range(nodes)]
    if nodes == 1:
        # a rendezvous on a free port, not --standalone's fixed localhost:29400
        # (shared by every --standalone job on the host: see versus_torchrun.py)
        argv = _kg(shared, 0) + ["torchrun", "--nnodes=1", "--rdzv_backend=c10d",
                                 f"--rdzv_endpoint=localhost:{free_port()}",
                                 "--nproc_per_node=2",
                                 "--max_restarts=0", "--redirects=2", "--tee=2",
                                 *_job(shared, 1, 2)]
        return [Run(argv, _env(shared))]
    secret = shared / "secret"
    secret.write_bytes(os.urandom(32))
    secret.chmod(0o600)
    runs = []
    for i in range(nodes):
        argv = _kg(shared, i, "--nnodes", str(nodes), "--node-rank", str(i), "--coordinator",
                   f"{hosts.addrs[0]}:29600", "--secret", str(secret)) + [
            "torchrun", f"--nnodes={nodes}", "--nproc_per_node=1", f"--node_rank={i}",
            f"--master_addr={hosts.addrs[0]}", "--master_port=29500", "--max_restarts=0",
            "--redirects=2", "--tee=2", *_job(shared, nodes, 1)]
        runs.append(Run(hosts.argv(i, argv), _env(shared, GLOO_SOCKET_IFNAME="eth0")))
    return runs


def r_index(runs, r):
    return runs.index(r)


def _dead(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True


def _watch_workers(report, stop, out):
    """The wall-clock time each worker that ran at the fault died. kguard
    sees only torchrun's agent end (it reaps its workers), so this polls
    /proc (a measurement, 5 ms resolution; the hosts share one pid space)."""
    pids = None
    while not stop.is_set():
        try:
            ev = [json.loads(x) for x in report.read_text().splitlines()]
        except (FileNotFoundError, ValueError):
            ev = []
        if pids is None and any(e["event"] == "fault" for e in ev):
            pids = {e["pid"] for e in ev if e["event"] == "start"}
        if pids:
            for pid in pids - set(out):
                if _dead(pid):
                    out[pid] = time.time()
            if len(out) == len(pids):
                return
        time.sleep(0.005)


def trial(nodes, hosts):
    shared = Path(tempfile.mkdtemp(prefix="kg-resume-"))
    deaths, stop = {}, threading.Event()
    watcher = threading.Thread(target=_watch_workers,
                               args=(shared / "report.jsonl", stop, deaths), daemon=True)
    watcher.start()
    try:
        runs = _run_job(shared, nodes, hosts)
        if ARGS.standby:
            # The fault comes once every rank's standby is warm (a standby
            # still importing would mean a cold start: measured separately).
            ranks = 2 if nodes == 1 else 1
            for r in runs:
                for k in range(ranks):
                    r.wait_line(f"warm standby for rank {r_index(runs, r) * ranks + k} ready",
                                timeout=300)
            (shared / "go").touch()
        codes = [r.wait(300) for r in runs]
        stop.set()
        watcher.join(5)
        if codes != [0] * len(runs):
            keep = Path(tempfile.mkdtemp(prefix="kg-resume-failed-"))
            for i, r in enumerate(runs):
                (keep / f"node{i}.txt").write_text(r.output())
            why = next((ln for r in runs for ln in r.output().splitlines()
                        if "Error:" in ln and "emulat" not in ln and "CUDA" not in ln), "?")
            print(f"a trial failed, exit codes {codes} (first error line: {why.strip()[:200]}); "
                  f"whole output kept in {keep}", flush=True)
            return None
        ev = [json.loads(x) for x in (shared / "report.jsonl").read_text().splitlines()]
        logs = [log_times(r.output()) for r in runs]
        t_err = next(e["t"] for e in ev if e["event"] == "fault")
        tl = [e for e in ev if e["event"] == "timeline" and e["t"] > t_err]
        ranks = nodes * (2 if nodes == 1 else 1)
        if len(tl) != ranks:
            raise RuntimeError(f"{len(tl)} timelines after the fault, expected {ranks}")
        fnode = nodes - 1
        t_proof = _first(logs[fnode], "proven", t_err - 0.01)
        if len(deaths) != ranks:
            raise RuntimeError(f"saw {len(deaths)} of {ranks} workers die")
        t_dead1, t_deadn = min(deaths.values()), max(deaths.values())
        if nodes == 1:
            t_restoring = _first(logs[0], "exec: restoring the last ", t_proof)
            t_gone = t_restoring
            t_decided = t_gone
            restored = [_first(logs[0], "exec: restored step", t_restoring)]
        else:
            t_decided = max(_first(lg, "coordinator decided", t_proof) for lg in logs)
            t_gone = max(_last_before(lg, "ended", t_decided) for lg in logs)
            restored = [_first(lg, "ranks restored at step", t_proof) for lg in logs]
        t_gone = max(t_gone, t_deadn)
        t_restored = max(restored)
        # each node starts once it restored (not once the slowest did)
        t_started = max(_first(lg, "exec: started", r) for lg, r in zip(logs, restored))
        m = {k: max(e[k] for e in tl) for k in ("entry", "imported", "rendezvous", "loaded",
                                                 "first_step")}
        size = sum(p.stat().st_size for p in (shared / "ckpt").rglob("*.kgckpt.tar"))
        n_arch = sum(1 for _ in (shared / "ckpt").rglob("*.kgckpt.tar"))
        # Consecutive segments of the path from the proof to the first step:
        # a part that overlaps the one before it (the restore runs while the
        # tree goes) counts only for what it adds, so the parts sum to resume.
        marks = [("kill", t_dead1), ("mem-free", t_deadn), ("tree-gone", t_gone),
                 ("decide", t_decided), ("restore", t_restored), ("backoff", t_started),
                 ("launch", m["entry"]), ("import", m["imported"]),
                 ("rendezvous", m["rendezvous"]), ("load", m["loaded"]),
                 ("first-step", m["first_step"])]
        parts, t = {}, t_proof
        for name, at in marks:
            parts[name] = max(0.0, at - t)
            t = max(t, at)
        resume = m["first_step"] - t_proof
        # Several hosts: each node lists and verifies its ranks' checkpoints
        # after its tree is gone (inside "decide"; reading checkpoints).
        verify = max([float(msg.split(" in ")[-1].split(" ms")[0]) / 1000
                      for lg in logs for t0, msg in lg
                      if "checkpoints listed and verified" in msg and t0 >= t_proof] or [0.0])
        return {"detect": t_proof - t_err, **parts,
                "resume": resume, "total": m["first_step"] - t_err,
                # the checkpoint read (restore, load) left out: the measure
                "verify": verify,
                "no-read": m["first_step"] - t_err - parts["restore"] - parts["load"] - verify,
                "cold": sum(1 for lg in logs for _, msg in lg if "cold start" in msg),
                "resumed_step": tl[0]["step"],
                "from_memory": sum(1 for lg in logs for _, msg in lg
                                   if "restored step" in msg and "from memory" in msg
                                   or "restores step" in msg and "from memory" in msg),
                "sigkill": sum(1 for lg in logs for _, msg in lg
                               if "did not stop within its grace" in msg),
                "archive_mb": size / max(n_arch, 1) / 2**20}
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kguard", default=str(ROOT / "build" / "dev" / "kguard"))
    ap.add_argument("--nodes", type=int, choices=[1, 2, 3], default=1)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--ballast-mb", type=float, default=8)
    ap.add_argument("--every", type=int, default=3, help="kguard.save every this many steps")
    ap.add_argument("--snapshot-every", type=int, default=0,
                    help="kguard.snapshot every this many steps (0: none): the restore "
                         "then comes from kguard's memory")
    ap.add_argument("--stall", type=float, default=2.0,
                    help="--stall-timeout for kguard exec; 0: its default (the job's pace)")
    ap.add_argument("--launcher", choices=["torchrun", "kguard"], default="torchrun",
                    help="torchrun: kguard exec -- torchrun ...; kguard: kguard exec "
                         "--nproc-per-node N -- python job.py (kguard starts the ranks)")
    ap.add_argument("--standby", action="store_true",
                    help="--launcher kguard with warm standby ranks (the fault waits until "
                         "every standby is warm)")
    ap.add_argument("--on-fault", choices=["hang", "raise"], default="hang",
                    help="the poisoned rank stays alive (proof: the stall) or dies")
    ap.add_argument("--json", default=None, help="append the per-trial parts here")
    ap.add_argument("--short", action="store_true", help="one trial (the ctest version)")
    ARGS = ap.parse_args()
    if ARGS.short:
        ARGS.trials = 1
    if ARGS.standby and ARGS.launcher != "kguard":
        ap.error("--standby needs --launcher kguard")
    if not shutil.which("torchrun"):
        print("skipped: torchrun not installed (python3-torch)")
        return 77
    if not os.access(ARGS.kguard, os.X_OK):
        print(f"skipped: no kguard binary at {ARGS.kguard} (--kguard)")
        return 77
    load0 = os.getloadavg()[0]
    rows = []
    try:
        if ARGS.nodes == 1:
            rows = [trial(1, None) for _ in range(ARGS.trials)]
        else:
            for _ in range(ARGS.trials):
                with Hosts(ARGS.nodes) as h:
                    rows.append(trial(ARGS.nodes, h))
        failed = sum(1 for r in rows if r is None)
        rows = [r for r in rows if r is not None]
        if not rows:
            print(f"all {failed} trial(s) failed")
            return 1
    except NetnsUnavailable as e:
        print(f"skipped: network namespaces unavailable: {e}")
        return 77
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; "
          f"load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    launcher = ("kguard starts the ranks" + (", warm standbys" if ARGS.standby else "")
                if ARGS.launcher == "kguard" else "torchrun under kguard exec")
    where = (f"1 host, 2 ranks ({launcher})" if ARGS.nodes == 1 else
             f"{ARGS.nodes} hosts (netns), 1 gloo rank each ({launcher})")
    stall = f"{ARGS.stall:g}" if ARGS.stall > 0 else "auto (the pace)"
    print(f"time to resume: {where}, kguard exec --stall-timeout {stall} --kill-grace 3, "
          f"poisoned rank "
          f"{'alive' if ARGS.on_fault == 'hang' else 'dies'}; archives "
          f"{rows[0]['archive_mb']:.1f} MiB per "
          f"rank; resumed from step {sorted({r['resumed_step'] for r in rows})}; "
          f"{len(rows)} trials complete")
    if failed:
        print(f"  {failed} trial(s) failed (above: not counted in the parts)")
    print(f"  trees that needed SIGKILL after the --kill-grace: "
          f"{sum(r['sigkill'] for r in rows)} (node-trials); cold starts with --standby: "
          f"{sum(r['cold'] for r in rows)}; ranks restored from memory: "
          f"{sum(r['from_memory'] for r in rows)}")
    for k in PARTS:
        v = [r[k] for r in rows]
        print(f"  {k:10s} median {statistics.median(v):7.3f} s   min {min(v):7.3f}   "
              f"max {max(v):7.3f}")
    if ARGS.json:
        with open(ARGS.json, "a") as f:
            for r in rows:
                f.write(json.dumps(dict(r, nodes=ARGS.nodes, loadavg=load0,
                                        launcher=ARGS.launcher, standby=ARGS.standby,
                                        on_fault=ARGS.on_fault)) + "\n")
    last = (FAULT_STEP - 1) // ARGS.every * ARGS.every
    if ARGS.snapshot_every:
        last = max(last, (FAULT_STEP - 1) // ARGS.snapshot_every * ARGS.snapshot_every)
    ok = all(r["resumed_step"] == last for r in rows) and not failed
    if not ok:
        print("a resume was not from the last step sealed before the fault")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
