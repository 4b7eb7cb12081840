#!/usr/bin/python3
"""A second floor relay dressed as `kguard kernel`, for bench_relay.py --aa.

    floor_kernel.py kernel -f FRONT.json -- KERNEL ARGV... (with FRONT.json in it)

Takes the arguments bench_relay.py gives kguard, starts the kernel on a
private ipc connection file with FRONT.json's key (as kguard does) and relays
it to FRONT.json with floor_proxy (KG_FLOOR_BIN), then waits: the kernel's
exit ends the relay, SIGTERM ends both, SIGINT goes to the kernel. Not part of
kguard. With it in the kguard column, bench_relay.py compares the floor with
itself (an A/A run): how far from 1.00 its ratios land is the benchmark's own
resolution on the machine, to read the kguard/floor targets against.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from jupyter_client.connect import write_connection_file


def main():
    args = sys.argv[1:]
    if len(args) < 5 or args[0] != "kernel" or args[1] != "-f" or "--" not in args:
        sys.exit("usage: floor_kernel.py kernel -f FRONT.json -- KERNEL ARGV...")
    front = args[2]
    inner = args[args.index("--") + 1:]
    floor = os.environ.get("KG_FLOOR_BIN")
    if not floor or not os.access(floor, os.X_OK):
        sys.exit("floor_kernel.py: KG_FLOOR_BIN must name the built floor_proxy")
    with open(front) as f:
        info = json.load(f)
    root = tempfile.mkdtemp(prefix="floor-kernel-")
    try:
        back, _ = write_connection_file(os.path.join(root, "back.json"),
                                        ip=os.path.join(root, "k"), transport="ipc",
                                        key=info["key"].encode(),
                                        signature_scheme=info["signature_scheme"])
        kernel = subprocess.Popen([back if a == front else a for a in inner])
        proxy = subprocess.Popen([floor, front, back])

        def stop(signum, _frame):
            for p in (kernel, proxy):
                if p.poll() is None:
                    p.send_signal(signum)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, lambda s, f: kernel.send_signal(signal.SIGINT))
        code = kernel.wait()
        if proxy.poll() is None:
            proxy.terminate()
        proxy.wait()
        sys.exit(code)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
