#!/usr/bin/python3
"""Checkpoint speed and memory benchmark (a documented command, not a test).

    /usr/bin/python3 bench/ckpt/bench_ckpt.py [--bin build/kguard] [--size-mib 1024]
                                              [--files 4] [--repeat 2]

Makes a checkpoint directory of random data in a temporary directory
($TMPDIR or /tmp) and measures, in the same run:
    verify   vs  b2sum FILE
    seal     vs  tar -cf - DIR | b2sum
    restore  vs  tar -xf FILE
plus the peak RSS of each kguard command (from wait4). Each timing is the
best of --repeat runs, each preceded by `sync` so earlier writeback does not
bill the next command. Targets: verify <= 1.1x, seal <= 1.2x,
restore <= 1.2x, peak RSS < 16 MiB.
"""
import argparse
import os
import shutil
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


def best(n, *a, **k):
    runs = [timed(*a, **k) for _ in range(n)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.environ.get("KGUARD_BIN", "kguard"))
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
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

        def rm(*paths):
            def go():
                for p in paths:
                    if os.path.isdir(p):
                        shutil.rmtree(p)
                    elif os.path.exists(p):
                        os.unlink(p)
            return go

        seal = best(a.repeat, [kg, "ckpt", "seal", src, "--step", "1", "-o", arch], env=env,
                    before=rm(arch))
        seal_base = best(a.repeat, f"tar -cf - -C {work} ckpt | b2sum", shell=True)
        verify = best(a.repeat, [kg, "ckpt", "verify", arch], env=env)
        verify_base = best(a.repeat, ["b2sum", arch])
        dest, tdest = os.path.join(work, "restored"), os.path.join(work, "tarx")
        restore = best(a.repeat, [kg, "ckpt", "restore", arch, dest], env=env, before=rm(dest))

        def mk():
            rm(tdest)()
            os.mkdir(tdest)
        restore_base = best(a.repeat, ["tar", "-xf", arch, "-C", tdest], before=mk)

        size = os.path.getsize(arch)
        print(f"checkpoint: {a.files} files, {size / 2**20:.0f} MiB archive, "
              f"best of {a.repeat}, {os.cpu_count()} CPUs")
        print(f"{'command':<10} {'kguard s':>9} {'baseline s':>11} {'ratio':>6} {'target':>7} "
              f"{'peak RSS':>9}  baseline")
        rows = [("verify", verify, verify_base, 1.1, "b2sum FILE"),
                ("seal", seal, seal_base, 1.2, "tar -cf - DIR | b2sum"),
                ("restore", restore, restore_base, 1.2, "tar -xf FILE")]
        ok = True
        for name, k, b, target, what in rows:
            ratio = k[0] / b[0]
            rss = k[1] / 1024
            good = ratio <= target and rss < 16
            ok &= good
            print(f"{name:<10} {k[0]:>9.2f} {b[0]:>11.2f} {ratio:>6.2f} {target:>6.1f}x "
                  f"{rss:>6.1f} MiB  {what}{'' if good else '  (missed)'}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
