#!/usr/bin/python3
"""Reading a checkpoint at the machine's bound: verify, resume-prepare and the
kernel's in-place read of one large member, against `cat` and `b2sum` in the
same run, cold and warm cache (a documented command, not a test).

    /usr/bin/python3 bench/ckpt/bench_inplace.py [--bin build/ci/kguard]
                                  [--sizes-gib 1,8 | --sizes-mib N,...] [--rounds 5]
                                  [--no-cold] [--skip CMD,...] [--only CMD,...] [--zstd]

For each size, one member of random bytes is sealed (uncompressed, format 2:
one digest per 64 MiB chunk) into a temporary directory ($TMPDIR or /tmp;
needs the largest size free, twice with --zstd). Then, in --rounds rounds,
cold (page cache dropped before each command: `sync; echo 3 >
/proc/sys/vm/drop_caches`, needs root) and warm, each of these runs once, in
an order that alternates between rounds (forward, then backward):

    cat ARCHIVE >/dev/null      the disk's read speed (reference)
    b2sum ARCHIVE               one core of BLAKE2b (reference)
    b2sum xN                    one b2sum per core at once on 1/cores of the
                                bytes each (reference: every core hashing)
    plain read                  python reading the archive unverified into the
                                kernel read's buffer, as torch.load of a plain
                                file would (reference for the kernel read: the
                                bytes must land in the reader's memory)
    ckpt verify                 kguard ckpt verify ARCHIVE
    resume-prepare              what the supervisor runs after a fault (verify
                                in place, nothing copied)
    kernel read                 the kernel's side after resume-prepare:
                                kguard.archive with the digest handed over,
                                each chunk read and hashed once before it is
                                served; read as torch.load reads tensors, one
                                readinto per 256 MiB tensor (--tensor-mib)
                                into a reused buffer: whole chunks go straight
                                into it
    kernel read 8M              the same read 8 MiB at a time (small tensors):
                                every chunk through the reader's window
    kernel read 2-pass          the 256 MiB reads when nobody verified the
                                archive before (every chunk checked, then
                                checked again as served); left out unless
                                named in --only
    zstd verify                 (--zstd) kguard ckpt verify of the same data
                                sealed with --zstd: streamed, cannot be read by
                                chunk

The bound of a round is the slower of the disk and the cores, in two ways:
  x bound    the issue's: max(`cat` in this cache state, `b2sum` warm / cores);
  x bound'   measured: max(`cat`, `b2sum xN` warm), where `b2sum xN` runs one
             b2sum per core at once, each on 1/cores of the archive's bytes
             (copies made beforehand): every core hashing, in the same
             conditions as the command, so the other sessions' load takes the
             same share from both.
For the kernel reads the reference work also includes `plain read` (the
bytes must reach the reader's memory, verified or not): its warm time / cores
is added to the hashing side of both bounds. 1.0 = at the bound; target >=
0.9. The wall-clock figures depend on what else the machine runs (the load
average of each round is printed): with the kernel's autogroup scheduling,
another session's busy process takes a core from a multi-threaded command as
much as from a single-threaded one, which the issue's bound does not count.
The CPU columns (user + system seconds, load-independent) say how much work
each command does: against b2sum's (and, for the kernel reads, b2sum's plus
the plain read's). Peak RSS (GNU time) against the target 32 MiB + one 64
MiB chunk per core (for the reads, less the reading program's own buffer).
Medians over rounds with min-max. Exits 0.
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCES = ["cat", "b2sum", "b2sum xN", "plain read"]
XB2 = "x bound'"
TIME = "/usr/bin/time"
CHUNK = 64 << 20

PLAIN_READ = """\
import mmap, sys
f = open(sys.argv[1], "rb")
b = mmap.mmap(-1, int(sys.argv[2]), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
while f.readinto(b):
    pass
"""

KERNEL_READ = """\
import mmap, sys
import kguard.archive as A
f = A.Archive(sys.argv[1], expect_digest=sys.argv[2] or None,
              prechecked=bool(sys.argv[2])).open("blob.bin")
b = mmap.mmap(-1, int(sys.argv[3]), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
while f.readinto(b):
    pass
"""


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def warm(path):
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)


def run(cmd, env):
    """(wall s, cpu s, peak RSS KiB) of cmd, measured by GNU time."""
    fd, out = tempfile.mkstemp()
    os.close(fd)
    try:
        p = subprocess.run([TIME, "-f", "%e %U %S %M", "-o", out, *cmd], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {shlex.join(cmd)}\n"
                     f"{p.stderr.decode()[-2000:]}")
        with open(out) as f:
            e, u, s, m = f.read().split()[-4:]
        return float(e), float(u) + float(s), int(m)
    finally:
        os.unlink(out)


def make_member(path, size):
    block = bytearray(os.urandom(16 << 20))
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
            block[:64] = os.urandom(64)  # no two blocks alike


def med(xs):
    return f"{statistics.median(xs):6.2f} ({min(xs):.2f}-{max(xs):.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "..", "build", "ci", "kguard"))
    ap.add_argument("--sizes-gib", default="1,8")
    ap.add_argument("--sizes-mib", default="", help="sizes in MiB instead (a quick trial)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-cold", action="store_true")
    ap.add_argument("--skip", default="", help="commands to leave out, comma-separated")
    ap.add_argument("--only", default="", help="run only these commands (and the references)")
    ap.add_argument("--zstd", action="store_true", help="add zstd verify")
    ap.add_argument("--json", help="also write every measurement to this file")
    ap.add_argument("--tensor-mib", type=int, default=256,
                    help="the kernel read's readinto size (a tensor)")
    a = ap.parse_args()
    if not os.access(TIME, os.X_OK):
        sys.exit(f"needs GNU time at {TIME} (apt install time)")
    cold = not a.no_cold
    if cold and os.geteuid() != 0:
        sys.exit("cold rounds drop the page cache: run as root, or pass --no-cold")
    kg = os.path.abspath(a.bin)
    cores = len(os.sched_getaffinity(0))
    modes = (["cold"] if cold else []) + ["warm"]
    root = tempfile.mkdtemp(prefix="kg-bench-inplace-")
    env = dict(os.environ, KGUARD_KEY_DIR=os.path.join(root, "keys"), KGUARD_BIN=kg,
               PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
    env.pop("KGUARD_TEST_READ_BPS", None)
    subprocess.run([kg, "keygen"], env=env, stdout=subprocess.DEVNULL, check=True)
    tensor = a.tensor_mib << 20
    rss_target = 32 + cores * CHUNK / 2**20
    print(f"{cores} cores; {a.rounds} rounds; RSS target {rss_target:.0f} MiB")
    try:
        sizes = ([int(x) << 20 for x in a.sizes_mib.split(",")] if a.sizes_mib
                 else [int(x) << 30 for x in a.sizes_gib.split(",")])
        for size in sizes:
            src = os.path.join(root, "src")
            os.makedirs(src, exist_ok=True)
            make_member(os.path.join(src, "blob.bin"), size)
            ck = os.path.join(root, "ck")
            archive = subprocess.run([kg, "ckpt", "seal", src, "--step", "1", "--into", ck],
                                     env=env, stdout=subprocess.PIPE, text=True,
                                     check=True).stdout.strip()
            zarch = None
            if a.zstd:
                zarch = os.path.join(root, "z.kgckpt.tar.zst")
                subprocess.run([kg, "ckpt", "seal", src, "--step", "1", "--zstd", "-o", zarch],
                               env=env, stdout=subprocess.DEVNULL, check=True)
            shutil.rmtree(src)
            parts = []
            with open(archive, "rb") as f:
                asize = os.path.getsize(archive)
                for k in range(cores):
                    parts.append(os.path.join(root, f"part{k}"))
                    with open(parts[-1], "wb") as g:
                        left = asize * (k + 1) // cores - asize * k // cores
                        while left:
                            piece = f.read(min(left, 16 << 20))
                            g.write(piece)
                            left -= len(piece)
            digest = json.loads(subprocess.run([kg, "ckpt", "manifest", archive], env=env,
                                               stdout=subprocess.PIPE, check=True).stdout)[
                "manifest_digest"]
            cmds = {
                "cat": ["sh", "-c", f"cat '{archive}' >/dev/null"],
                "b2sum": ["b2sum", archive],
                "b2sum xN": ["sh", "-c", " ".join(f"b2sum '{p}' &" for p in parts) + " wait"],
                "plain read": [sys.executable, "-c", PLAIN_READ, archive, str(tensor)],
                "ckpt verify": [kg, "ckpt", "verify", archive],
                "resume-prepare": [kg, "ckpt", "resume-prepare", "--dir", ck, "--before",
                                   "99999999999999", "--incident", "b", "--into",
                                   os.path.join(root, "never"), "--json"],
                "kernel read": [sys.executable, "-c", KERNEL_READ, archive, digest, str(tensor)],
                "kernel read 8M": [sys.executable, "-c", KERNEL_READ, archive, digest,
                                   str(8 << 20)],
            }
            if "kernel read 2-pass" in a.only.split(","):
                cmds["kernel read 2-pass"] = [sys.executable, "-c", KERNEL_READ, archive, "",
                                              str(tensor)]
            if zarch:
                cmds["zstd verify"] = [kg, "ckpt", "verify", zarch]
            only = [x for x in a.only.split(",") if x]
            for c in list(cmds):
                if c in a.skip.split(",") or (only and c not in only + REFERENCES):
                    del cmds[c]
            res = {(m, c): [] for m in modes for c in cmds}
            loads = []
            for r in range(a.rounds):
                loads.append(os.getloadavg()[0])
                order = list(cmds) if r % 2 == 0 else list(reversed(cmds))
                for m in modes:
                    for c in order:
                        if m == "cold":
                            drop_caches()
                        elif c == "b2sum xN":
                            for p in parts:
                                warm(p)
                        else:
                            warm(zarch if c == "zstd verify" else archive)
                        res[(m, c)].append(run(cmds[c], env))
                        shutil.rmtree(os.path.join(ck, ".restored-b"), ignore_errors=True)
            print(f"\n{size / 2**30:g} GiB member (archive {os.path.getsize(archive) / 2**30:.2f} GiB); "
                  f"load average at each round's start: {', '.join(f'{x:.1f}' for x in loads)}")
            print(f"{'cache':5} {'command':16} {'wall s':>20} {'MB/s':>6} {'x bound':>19} "
                  f"{XB2:>19} {'CPU s':>20} {'CPU x ref':>9} {'peak RSS':>10}")
            def walls(key):
                return [t for t, _, _ in res[key]]

            def cpus(key):
                return [u for _, u, _ in res[key]]
            b2, b2n = walls(("warm", "b2sum")), walls(("warm", "b2sum xN"))
            plain = walls(("warm", "plain read")) if ("warm", "plain read") in res else None
            b2cpu = statistics.median(cpus(("warm", "b2sum")))
            pcpu = statistics.median(cpus(("warm", "plain read"))) if plain else 0
            for m in modes:
                cat = walls((m, "cat"))
                for c in cmds:
                    reader = c.startswith("kernel read")
                    extra = [p / cores for p in plain] if reader and plain else [0] * len(b2)
                    b1 = [max(ct, b / cores + e) for ct, b, e in zip(cat, b2, extra)]
                    bb = [max(ct, b + e) for ct, b, e in zip(cat, b2n, extra)]
                    wall, cpu = walls((m, c)), cpus((m, c))
                    rss = max(k for _, _, k in res[(m, c)]) / 1024
                    if reader or c == "plain read":   # less the reader's own buffer
                        rss -= (tensor if c != "kernel read 8M" else 8 << 20) / 2**20
                    mbs = size / statistics.median(wall) / 1e6
                    ref = b2cpu + (pcpu if reader else 0)
                    mark = ("" if c in REFERENCES or rss <= rss_target else " (over)")
                    print(f"{m:5} {c:16} {med(wall):>20} {mbs:6.0f} "
                          f"{med([x / t for x, t in zip(b1, wall)]):>19} "
                          f"{med([x / t for x, t in zip(bb, wall)]):>19} {med(cpu):>20} "
                          f"{statistics.median(cpu) / ref:9.2f} {rss:6.1f} MiB{mark}")
            print("x bound: the issue's, max(cat, b2sum/cores); x bound': max(cat, b2sum xN)")
            if a.json:
                raw = {"size": size, "cores": cores, "loads": loads,
                       "runs": {f"{m}/{c}": v for (m, c), v in res.items()}}
                with open(a.json, "a") as f:
                    f.write(json.dumps(raw) + "\n")
            os.unlink(archive)
            if zarch:
                os.unlink(zarch)
            for p in parts:
                os.unlink(p)
            shutil.rmtree(ck, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
