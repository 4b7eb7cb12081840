#!/usr/bin/python3
"""Restore without a second copy: speed of checking a big checkpoint in
place, against the plain tools, cold and warm cache (a documented command,
not a test).

    /usr/bin/python3 bench/ckpt/bench_inplace.py [--bin build/dev/kguard]
                                  [--sizes-gib 1,8] [--rounds 5] [--no-cold]

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
    python read                    the kernel's side when nobody verified the
                                   archive before: kguard.archive checks every
                                   chunk, then serves it checked again
    python read 1-pass             the kernel's side after resume-prepare (the
                                   digest handed over): each chunk read and
                                   hashed once, checked before it is served
    restore (rp + 1-pass)          resume-prepare then the 1-pass read: the
                                   whole restore of an uncompressed checkpoint
Each figure is the median over rounds with min-max; each ratio is
speed / cat's speed in the same round (higher is better; 1.0 = disk speed),
and "x bound" is speed / min(cat, cores x b2sum-warm) in the same round:
what the disk and the cores together allow (b2sum is one core of BLAKE2b).
The load average is printed for every round (other work on the machine
moves every figure). Peak RSS comes from GNU time when present.
Prints a table; exits 0.
"""
import argparse
import os
import shlex
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
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-cold", action="store_true")
    ap.add_argument("--skip", default="", help="commands to leave out, comma-separated")
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
    # After resume-prepare: the digest it verified, handed over (1 pass).
    reader1 = ("import sys,json,subprocess,kguard.archive as A\n"
               "f=A.Archive(sys.argv[1],expect_digest=sys.argv[2],prechecked=True)"
               ".open('blob.bin')\n"
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
            digest = __import__("json").loads(subprocess.run(
                [kg, "ckpt", "manifest", archive], env=env, stdout=subprocess.PIPE,
                check=True).stdout)["manifest_digest"]
            rp = [kg, "ckpt", "resume-prepare", "--dir", ck, "--before", "99999999999999",
                  "--incident", "b", "--into", os.path.join(root, "never"), "--json"]
            cmds = {
                "cat": ["sh", "-c", f"cat '{archive}' >/dev/null"],
                "b2sum": ["b2sum", archive],
                "tar -xf": ["sh", "-c", f"mkdir -p '{out}' && tar -xf '{archive}' -C '{out}'"],
                "ckpt verify": [kg, "ckpt", "verify", archive],
                "resume-prepare": [kg, "ckpt", "resume-prepare", "--dir", ck, "--before",
                                   "99999999999999", "--incident", "b", "--into",
                                   os.path.join(root, "never"), "--json"],
                "python read": [sys.executable, "-c", reader, archive],
                "python 1-pass": [sys.executable, "-c", reader1, archive, digest],
                "restore rp+1p": ["sh", "-c", shlex.join(rp) + " >/dev/null && "
                                  + shlex.join([sys.executable, "-c", reader1, archive, digest])],
            }
            for c in [x for x in a.skip.split(",") if x]:
                cmds.pop(c, None)
            res = {(m, c): [] for m in modes for c in cmds}
            rss = {}
            loads = []
            for r in range(a.rounds):
                loads.append(os.getloadavg()[0])
                order = list(cmds) if r % 2 == 0 else list(reversed(cmds))
                for m in modes:
                    for c in order:
                        drop_caches() if m == "cold" else warm(archive)
                        dt, kib = run(cmds[c], env=env)
                        shutil.rmtree(out, ignore_errors=True)
                        res[(m, c)].append(dt)
                        if kib:
                            rss.setdefault(c, []).append(kib)
            cores = os.cpu_count() or 1
            print(f"\n{gib} GiB member (archive {os.path.getsize(archive) / 2**30:.2f} GiB); "
                  f"load average at each round's start: "
                  f"{', '.join(f'{x:.1f}' for x in loads)}")
            print(f"{'cache':5} {'command':15} {'MB/s median (min-max)':>28} "
                  f"{'x cat (min-max)':>20} {'x bound (min-max)':>20}")
            # The bound of each round: the disk (cat, this mode) or every core
            # hashing at b2sum's warm speed, whichever is lower.
            b2w = res[("warm", "b2sum")]
            for m in modes:
                base = res[(m, "cat")]
                bound = [min(size / c, cores * size / b) for c, b in zip(base, b2w)]
                for c in cmds:
                    t = res[(m, c)]
                    mbs = [size / x / 1e6 for x in t]
                    ratio = [b / x for b, x in zip(base, t)]
                    rb = [(size / x) / bd for x, bd in zip(t, bound)]
                    print(f"{m:5} {c:15} {statistics.median(mbs):10.0f} ({min(mbs):6.0f}-"
                          f"{max(mbs):6.0f}) {statistics.median(ratio):10.2f} "
                          f"({min(ratio):.2f}-{max(ratio):.2f}) {statistics.median(rb):10.2f} "
                          f"({min(rb):.2f}-{max(rb):.2f})")
            print(f"bound = min(cat, {cores} cores x b2sum warm): median "
                  f"{statistics.median(size / x / 1e6 for x in b2w) * cores:.0f} MB/s from the cores")
            for c, kib in rss.items():
                if c in ("ckpt verify", "resume-prepare", "python read", "python 1-pass"):
                    print(f"peak RSS {c}: {max(kib) / 1024:.1f} MiB")
            os.unlink(archive)
            shutil.rmtree(ck, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
