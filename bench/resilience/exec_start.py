"""How long `kguard exec` takes to choose a run's checkpoint before the
first start (the start-time resume), against a start with nothing to choose.

    python3 bench/resilience/exec_start.py [--archives 100] [--mib 1] [--trials 5] [--bin BIN]

Seals --archives checkpoints of run "job" (--mib MiB of state each, one
member) into a fresh directory with `kguard ckpt seal`, then times, from
kguard exec's start to the start of its command (which prints its wall
clock), `kguard exec --name job -- sh -c 'date +%s.%N'` on that directory
and on an empty one. The choice authenticates every manifest (signature)
and verifies one archive, the newest, completely. Prints median, min and
max per case, and the machine's load.
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

p = argparse.ArgumentParser()
p.add_argument("--archives", type=int, default=100)
p.add_argument("--mib", type=int, default=1)
p.add_argument("--trials", type=int, default=5)
p.add_argument("--bin", default=os.environ.get("KGUARD_BIN", "build/ci/kguard"))
a = p.parse_args()
kguard = str(Path(a.bin).resolve())

with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    env = dict(os.environ, KGUARD_KEY_DIR=str(tmp / "keys"), KGUARD_STATE_DIR=str(tmp / "state"))
    state = tmp / "state-dir"
    state.mkdir()
    (state / "state.pt").write_bytes(os.urandom(a.mib << 20))
    full, empty = tmp / "full", tmp / "empty"
    empty.mkdir()
    for step in range(1, a.archives + 1):
        subprocess.run([kguard, "ckpt", "seal", str(state), "--step", str(step), "--run", "job",
                        "--into", str(full)], env=env, check=True, stdout=subprocess.DEVNULL)

    def once(d):
        t0 = time.time()
        r = subprocess.run([kguard, "exec", "--checkpoints", str(d), "--name", "job", "--", "sh",
                            "-c", "date +%s.%N"], env=env, capture_output=True, text=True,
                           check=True)
        return float(r.stdout.strip().splitlines()[-1]) - t0

    for name, d in (("empty directory", empty), (f"{a.archives} archives", full)):
        once(d)   # warm the page cache, as a requeue on the same node finds it
        ts = [once(d) for _ in range(a.trials)]
        print(f"{name}: start to command {statistics.median(ts) * 1000:.0f} ms "
              f"(min {min(ts) * 1000:.0f}, max {max(ts) * 1000:.0f}, {a.trials} trials)")
    print(f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
