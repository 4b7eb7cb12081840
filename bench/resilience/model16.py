"""A paper model of the time to resume on 16 (or 128) nodes, from the parts
measured on 1, 2 and 3 hosts by bench/resilience/resume.py.

    /usr/bin/python3 bench/resilience/resume.py --nodes 1 --json parts.jsonl
    sudo /usr/bin/python3 bench/resilience/resume.py --nodes 2 --json parts.jsonl
    sudo /usr/bin/python3 bench/resilience/resume.py --nodes 3 --json parts.jsonl
    /usr/bin/python3 bench/resilience/model16.py parts.jsonl [--nodes 16|128]
        [--shard-gb 8.75] [--ranks-per-node 8] [--read-gbs 1.0] [--archives-kept 3]
        [--launcher kguard --standby yes --on-fault hang]   (which trials)

Assumptions (each part is one of three kinds):
  fixed      does not depend on the node count: detect (the --stall-timeout
             deadline runs on the faulting node alone), backoff (the policy's
             delay), first-step. Modelled as the median measured over all
             host counts.
  slowest    done by every node in parallel, the job waits for the slowest:
             kill, mem-free, tree-gone, import, load. Modelled as the worst
             value measured over all trials and host counts (the slowest of
             16 nodes is at least as slow as the slowest of our few; a real
             cluster has no 2 loaded vCPUs shared by every host, so this is
             pessimistic for the CPU-bound parts).
  linear     grows with the node count: decide (the coordinator waits for a
             report from every node and merges their listings; each node's
             own listing and verification is "verify", below),
             launch (torchrun's agents' rendezvous on the master's store),
             rendezvous (gloo connects every pair of ranks). Modelled by a
             least-squares line through the medians at 2 and 3 hosts (one
             host has no coordinator and a local rendezvous: another regime;
             it is used only when it is all there is), extrapolated: two
             points give a rough slope, and a quadratic term of gloo's full
             mesh would show only at larger counts.
  verify     each node lists and verifies its ranks' archives after its tree
             stopped, in parallel: the worst measured plus --ranks-per-node x
             --archives-kept x --shard-gb / --read-gbs (every kept archive is
             read: `kguard ckpt list` verifies them all).
  restore    checkpoint read and verification, per node in parallel: the
             measured restore time (small archives: the fixed cost) plus
             --ranks-per-node x --shard-gb / --read-gbs (kguard verifies at
             about b2sum speed, bench/ckpt: ~1 GB/s a core is the default;
             the default shard is a 70 B-parameter model with Adam state,
             16 bytes a parameter, over 128 GPUs).
The total is the sum of the parts after detect (the issue's "time to
resume": kill to the first step), and the same plus detect.
"""
import argparse
import json
import statistics
import sys

FIXED = ("detect", "backoff", "first-step")
SLOWEST = ("kill", "mem-free", "tree-gone", "import", "load")
LINEAR = ("decide", "launch", "rendezvous")
ORDER = ("detect", "kill", "mem-free", "tree-gone", "verify", "decide", "restore", "backoff",
         "launch", "import", "rendezvous", "load", "first-step")
READS = ("verify", "restore", "load")   # parts that read the checkpoint's bytes


def _fit(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("parts", help="JSON lines written by resume.py --json")
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--shard-gb", type=float, default=70e9 * 16 / 128 / 1e9)
    ap.add_argument("--ranks-per-node", type=int, default=8)
    ap.add_argument("--read-gbs", type=float, default=1.0)
    ap.add_argument("--archives-kept", type=int, default=3,
                    help="archives per rank each node lists and verifies after a fault "
                         "(kguard ckpt list reads them all)")
    ap.add_argument("--launcher", choices=["torchrun", "kguard"], default=None,
                    help="only the trials of this launcher (resume.py --launcher)")
    ap.add_argument("--standby", choices=["yes", "no"], default=None,
                    help="only the trials with (or without) warm standbys")
    ap.add_argument("--on-fault", choices=["hang", "raise"], default=None)
    a = ap.parse_args()
    rows = [json.loads(x) for x in open(a.parts) if x.strip()]
    rows = [r for r in rows
            if (not a.launcher or r.get("launcher", "torchrun") == a.launcher)
            and (not a.standby or r.get("standby", False) == (a.standby == "yes"))
            and (not a.on_fault or r.get("on_fault", "hang") == a.on_fault)]
    slowest, linear = SLOWEST, LINEAR
    if rows and all(r.get("launcher") == "kguard" for r in rows):
        # kguard starts each node's ranks itself (no agents' rendezvous):
        # the launch is per node, in parallel.
        slowest, linear = SLOWEST + ("launch",), tuple(k for k in LINEAR if k != "launch")
    for r in rows:
        # Several hosts: each node lists and verifies its own ranks' archives
        # inside "decide"; apart here, as the part that reads bytes.
        r["verify"] = min(r.get("verify", 0.0), r["decide"])
        r["decide"] = r["decide"] - r["verify"]
    counts = sorted({r["nodes"] for r in rows})
    if not rows:
        print("no measurements")
        return 1
    med = {n: {k: statistics.median(r[k] for r in rows if r["nodes"] == n) for k in ORDER}
           for n in counts}
    model, how = {}, {}
    for k in ORDER:
        allv = [r[k] for r in rows]
        if k in FIXED:
            model[k], how[k] = statistics.median(allv), "fixed: median of all"
        elif k in slowest:
            model[k], how[k] = max(allv), "slowest: worst of all"
        elif k in linear:
            # several hosts only when there are two such counts: one host has
            # no coordinator and a local rendezvous, a different regime
            xs = [n for n in counts if n > 1] if sum(n > 1 for n in counts) >= 2 else counts
            if len(xs) >= 2:
                c0, c1 = _fit(xs, [med[n][k] for n in xs])
                model[k] = max(0.0, c0 + c1 * a.nodes)
                how[k] = f"linear in nodes {xs}: {c0:.3f} + {c1:.3f} x nodes"
            else:
                model[k], how[k] = max(allv), "one host count only: worst"
        elif k == "verify":
            read = a.ranks_per_node * a.archives_kept * a.shard_gb / a.read_gbs
            model[k] = max(allv) + read
            how[k] = (f"worst measured + {a.ranks_per_node} ranks x {a.archives_kept} archives "
                      f"x {a.shard_gb:.2f} GB / {a.read_gbs:g} GB/s = +{read:.1f} s (per node, "
                      f"in parallel)")
        else:  # restore
            read = a.ranks_per_node * a.shard_gb / a.read_gbs
            model[k] = max(allv) + read
            how[k] = (f"worst measured + {a.ranks_per_node} x {a.shard_gb:.2f} GB / "
                      f"{a.read_gbs:g} GB/s = +{read:.1f} s")
    print(f"time to resume, measured medians (s) on {', '.join(map(str, counts))} host(s) "
          f"({len(rows)} trials) and a paper model of {a.nodes} nodes")
    print("| part | " + " | ".join(f"{n} host{'s' if n > 1 else ''}" for n in counts)
          + f" | {a.nodes} nodes (model) | rule |")
    print("|---|" + "---|" * len(counts) + "---|---|")
    for k in ORDER:
        print(f"| {k} | " + " | ".join(f"{med[n][k]:.2f}" for n in counts)
              + f" | {model[k]:.2f} | {how[k]} |")
    after = sum(model[k] for k in ORDER if k != "detect")
    print("| **kill to first step** | " + " | ".join(
        f"{statistics.median(r['resume'] for r in rows if r['nodes'] == n):.2f}"
        for n in counts) + f" | **{after:.1f}** | sum of the parts after detect |")
    read = sum(model[k] for k in READS)
    def no_read(r):
        return r["resume"] - sum(r.get(k, 0) for k in READS)
    print("| kill to first step, checkpoint read excluded | " + " | ".join(
        f"{statistics.median(no_read(r) for r in rows if r['nodes'] == n):.2f}"
        for n in counts) + f" | {after - read:.1f} | without verify, restore, load |")
    print("| fault to first step | " + " | ".join(
        f"{statistics.median(r['resume'] + r['detect'] for r in rows if r['nodes'] == n):.2f}"
        for n in counts) + f" | {after + model['detect']:.1f} | with detect |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
