#!/usr/bin/python3
"""Checkpoint speed and memory benchmark (a documented command, not a test).

    /usr/bin/python3 bench/ckpt/bench_ckpt.py [--bin build/kguard] [--size-mib 1024]
                                              [--files 4] [--rounds 5]

Makes a checkpoint directory of random data in a temporary directory
($TMPDIR or /tmp) and measures, in the same run:
    verify   vs  b2sum FILE
    seal     vs  tar -cf - DIR | b2sum
    restore  vs  tar -xf FILE
plus the peak RSS of each kguard command (GNU time %M) and, for reference,
the cost of durability: `sync FILE...` (fsync) of the 1 GiB tar -xf just
wrote, which no baseline pays but seal must.

The six commands run in --rounds interleaved rounds (each kguard command
next to its baseline, the order of each pair alternating between rounds) so
load from other processes hits both sides alike; each figure is the median
over the rounds and each ratio is the median of the per-round ratios.
`sync` runs before every timing so earlier writeback does not bill the next
command. Targets: verify <= 1.1x, seal <= 1.2x, restore <= 1.2x, peak RSS
< 16 MiB. Exit 0 when all are met.
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def timed(cmd, shell=False, env=None, before=None):
    """Run cmd; return (seconds, peak RSS KiB of the command itself).

    Linux's ru_maxrss counts the forked image before exec, so a child forked
    from this Python process would report Python's size; GNU time (a small
    C program) is used as the exec'ing parent when available."""
    if before:
        before()
    subprocess.run(["sync"], check=True)
    rss_file = None
    if TIME and not shell:
        fd, rss_file = tempfile.mkstemp()
        os.close(fd)
        cmd = [TIME, "-f", "%M", "-o", rss_file, *cmd]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, shell=shell, env=env, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed: {cmd}")
    rss = ru.ru_maxrss
    if rss_file:
        with open(rss_file) as f:
            rss = int(f.read().split()[-1])
        os.unlink(rss_file)
    return dt, rss


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.environ.get("KGUARD_BIN", "kguard"))
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="verify,seal,restore",
                    help="comma-separated subset of verify,seal,restore")
    a = ap.parse_args()
    only = set(a.only.split(","))
    kg = shutil.which(a.bin) or a.bin
    work = tempfile.mkdtemp(prefix="kguard-bench-")
    env = dict(os.environ, KGUARD_KEY_DIR=os.path.join(work, "keys"), KGUARD_LOG_LEVEL="error")
    try:
        src = os.path.join(work, "ckpt")
        os.mkdir(src)
        per = a.size_mib // a.files
        block = os.urandom(1 << 20)
        for i in range(a.files):
            with open(os.path.join(src, f"part{i}.bin"), "wb") as f:
                for k in range(per):
                    f.write(block[k % 7:] + block[:k % 7])
        subprocess.run([kg, "keygen"], env=env, check=True, stdout=subprocess.DEVNULL)
        arch = os.path.join(work, "c.kgckpt.tar")
        dest, tdest = os.path.join(work, "restored"), os.path.join(work, "tarx")

        def rm(*paths):
            def go():
                for p in paths:
                    if os.path.isdir(p):
                        shutil.rmtree(p)
                    elif os.path.exists(p):
                        os.unlink(p)
            return go

        def mk():
            rm(tdest)()
            os.mkdir(tdest)

        pairs = {
            "seal": (lambda: timed([kg, "ckpt", "seal", src, "--step", "1", "-o", arch],
                                   env=env, before=rm(arch)),
                     lambda: timed(f"tar -cf - -C {work} ckpt | b2sum", shell=True)),
            "verify": (lambda: timed([kg, "ckpt", "verify", arch], env=env),
                       lambda: timed(["b2sum", arch])),
            "restore": (lambda: timed([kg, "ckpt", "restore", arch, dest], env=env,
                                      before=rm(dest)),
                        lambda: timed(["tar", "-xf", arch, "-C", tdest], before=mk)),
        }
        res = {k: ([], [], []) for k in pairs}  # kguard s, baseline s, rss KiB
        fsyncs, loads = [], []
        subprocess.run([kg, "ckpt", "seal", src, "--step", "1", "-o", arch], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        for r in range(a.rounds):
            loads.append(loadavg())
            for name in ("seal", "verify", "restore"):
                if name not in only:
                    continue
                kfn, bfn = pairs[name]
                if r % 2 == 0:
                    k, b = kfn(), bfn()
                else:
                    b, k = bfn(), kfn()
                res[name][0].append(k[0])
                res[name][1].append(b[0])
                res[name][2].append(k[1])
            # Durability: fsync of the 1 GiB that tar -xf wrote (no sync between).
            mk()
            subprocess.run(["sync"], check=True)
            subprocess.run(["tar", "-xf", arch, "-C", tdest], check=True)
            t0 = time.perf_counter()
            subprocess.run(["sync", *glob.glob(os.path.join(tdest, "*"))], check=True)
            fsyncs.append(time.perf_counter() - t0)

        size = os.path.getsize(arch)
        med = statistics.median
        print(f"checkpoint: {a.files} files, {size / 2**20:.0f} MiB archive, "
              f"median of {a.rounds} interleaved rounds, {os.cpu_count()} CPUs, "
              f"load at round starts: {' '.join(loads)}")
        print(f"{'command':<10} {'kguard s':>9} {'baseline s':>11} {'ratio':>6} {'target':>7} "
              f"{'peak RSS':>9}  baseline  (per-round ratios)")
        targets = {"verify": (1.1, "b2sum FILE"), "seal": (1.2, "tar -cf - DIR | b2sum"),
                   "restore": (1.2, "tar -xf FILE")}
        ok = True
        for name in ("verify", "seal", "restore"):
            if name not in only:
                continue
            ks, bs, rss = res[name]
            target, what = targets[name]
            ratios = [k / b for k, b in zip(ks, bs)]
            ratio = med(ratios)
            mib = max(rss) / 1024
            good = ratio <= target and mib < 16
            ok &= good
            print(f"{name:<10} {med(ks):>9.2f} {med(bs):>11.2f} {ratio:>6.2f} {target:>6.1f}x "
                  f"{mib:>6.1f} MiB  {what}{'' if good else '  (missed)'}  "
                  f"({' '.join(f'{x:.2f}' for x in ratios)})")
        print(f"fsync of {a.size_mib} MiB just written (sync FILE...): {med(fsyncs):.2f} s "
              f"median ({' '.join(f'{x:.2f}' for x in fsyncs)})")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
