#!/usr/bin/python3
"""Restore without a second copy: speed of checking a big checkpoint in
place, against the plain tools, cold and warm cache (a documented command,
not a test).

    /usr/bin/python3 bench/ckpt/bench_inplace.py [--bin build/dev/kguard]
                                  [--sizes-gib 1,8] [--rounds 3] [--no-cold]

For each size, one member of random bytes is sealed (uncompressed) into a
temporary directory ($TMPDIR or /tmp; needs about 2 x the largest size of
free disk: the source is deleted after sealing, `tar -xf`'s output after each
run). Then, in --rounds interleaved rounds, cold (page cache dropped with
`echo 3 > /proc/sys/vm/drop_caches`; needs root) and warm:
    cat ARCHIVE >/dev/null         the disk's read speed (baseline)
    b2sum ARCHIVE                  one core of BLAKE2b-512
    tar -xf ARCHIVE                the second copy kguard no longer makes
    kguard ckpt verify ARCHIVE
    kguard ckpt resume-prepare     what the supervisor runs after a fault:
                                   verify in place, nothing copied
    kguard.resume().open() + read  the kernel's side: every byte read back
                                   through kguard.archive, digest-checked
Each figure is the median over rounds with min-max; each ratio is
speed / cat's speed in the same round (higher is better; 1.0 = disk speed).
Peak RSS of resume-prepare comes from GNU time when present.
Prints a table; exits 0.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def warm(path):
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)


def run(cmd, env=None, shell=False):
    """Seconds and peak RSS (KiB, or None) of cmd."""
    rss_file = None
    if TIME and not shell:
        fd, rss_file = tempfile.mkstemp()
        os.close(fd)
        cmd = [TIME, "-f", "%M", "-o", rss_file, *cmd]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, shell=shell, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {cmd}\n{p.stderr.decode()[-2000:]}")
    rss = None
    if rss_file:
        with open(rss_file) as f:
            txt = f.read().strip().splitlines()
        rss = int(txt[-1]) if txt else None
        os.unlink(rss_file)
    return dt, rss


def make_member(path, size):
    block = os.urandom(16 << 20)
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, len(block))
            f.write(block[:n] if n < len(block) else block)
            left -= n
            block = bytes(reversed(block[:64])) + block[64:]  # no two blocks alike


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "..", "build", "dev", "kguard"))
    ap.add_argument("--sizes-gib", default="1,8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-cold", action="store_true")
    a = ap.parse_args()
    kg = os.path.abspath(a.bin)
    py = os.path.join(HERE, "..", "..", "python")
    modes = ["warm"] if a.no_cold else ["cold", "warm"]
    root = tempfile.mkdtemp(prefix="kg-bench-inplace-")
    env = dict(os.environ, KGUARD_KEY_DIR=os.path.join(root, "keys"), KGUARD_BIN=kg,
               PYTHONPATH=py)
    reader = ("import sys,kguard.archive as A\n"
              "f=A.Archive(sys.argv[1]).open('blob.bin')\n"
              "while f.read(8<<20): pass\n")
    print(f"{os.cpu_count()} cores; rounds {a.rounds}; ratio = speed / cat's, same round")
    try:
        for gib in [int(x) for x in a.sizes_gib.split(",")]:
            size = gib << 30
            src = os.path.join(root, "src")
            os.makedirs(src, exist_ok=True)
            make_member(os.path.join(src, "blob.bin"), size)
            ck = os.path.join(root, "ck")
            p = subprocess.run([kg, "ckpt", "seal", src, "--step", "1", "--into", ck],
                               env=env, stdout=subprocess.PIPE, text=True, check=True)
            archive = p.stdout.strip()
            shutil.rmtree(src)
            out = os.path.join(root, "x")
            cmds = {
                "cat": ["sh", "-c", f"cat '{archive}' >/dev/null"],
                "b2sum": ["b2sum", archive],
                "tar -xf": ["sh", "-c", f"mkdir -p '{out}' && tar -xf '{archive}' -C '{out}'"],
                "ckpt verify": [kg, "ckpt", "verify", archive],
                "resume-prepare": [kg, "ckpt", "resume-prepare", "--dir", ck, "--before",
                                   "99999999999999", "--incident", "b", "--into",
                                   os.path.join(root, "never"), "--json"],
                "python read": [sys.executable, "-c", reader, archive],
            }
            res = {(m, c): [] for m in modes for c in cmds}
            rss = []
            for r in range(a.rounds):
                order = list(cmds) if r % 2 == 0 else list(reversed(cmds))
                for m in modes:
                    for c in order:
                        drop_caches() if m == "cold" else warm(archive)
                        dt, kib = run(cmds[c], env=env)
                        shutil.rmtree(out, ignore_errors=True)
                        res[(m, c)].append(dt)
                        if c == "resume-prepare" and kib:
                            rss.append(kib)
            print(f"\n{gib} GiB member (archive {os.path.getsize(archive) / 2**30:.2f} GiB)")
            print(f"{'cache':5} {'command':15} {'MB/s median (min-max)':>28} {'x cat (min-max)':>20}")
            for m in modes:
                base = res[(m, "cat")]
                for c in cmds:
                    t = res[(m, c)]
                    mbs = [size / x / 1e6 for x in t]
                    ratio = [b / x for b, x in zip(base, t)]
                    print(f"{m:5} {c:15} {statistics.median(mbs):10.0f} ({min(mbs):6.0f}-"
                          f"{max(mbs):6.0f}) {statistics.median(ratio):10.2f} "
                          f"({min(ratio):.2f}-{max(ratio):.2f})")
            if rss:
                print(f"resume-prepare peak RSS: {max(rss) / 1024:.1f} MiB")
            os.unlink(archive)
            shutil.rmtree(ck, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
