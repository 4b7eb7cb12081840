"""A fixture of 2-3 "hosts" on one machine: network namespaces on a bridge.

Host i (1-based) is namespace kg<tag>h<i> with eth0 = 10.<net>.0.<i>/24 on
bridge kg<tag>br (10.<net>.0.254). Commands run in a host with `ip netns
exec` and `unshare --uts` so each has its own hostname (torchrun advertises
it). All hosts share one plain directory (the "shared filesystem").
Needs root and `ip netns add`; NetnsUnavailable says why when they fail.
"""
import os
import subprocess


class NetnsUnavailable(Exception):
    pass


def _ip(*args, check=True):
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise NetnsUnavailable(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r


class Hosts:
    def __init__(self, n, tag=None):
        self.n = n
        self.tag = tag or f"{os.getpid() % 10000}"
        self.net = 100 + os.getpid() % 100
        self.bridge = f"kg{self.tag}br"
        self.names = [f"kg{self.tag}h{i}" for i in range(1, n + 1)]
        self.addrs = [f"10.{self.net}.0.{i}" for i in range(1, n + 1)]
        self.hostnames = [f"node{i}" for i in range(n)]
        self._made = []

    def __enter__(self):
        if os.geteuid() != 0:
            raise NetnsUnavailable("not root: network namespaces need root")
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            self._made.append(("link", self.bridge))
            _ip("addr", "add", f"10.{self.net}.0.254/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for i, ns in enumerate(self.names):
                _ip("netns", "add", ns)
                self._made.append(("netns", ns))
                veth = f"kg{self.tag}v{i + 1}"
                _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
                self._made.append(("link", veth))
                _ip("link", "set", veth, "master", self.bridge)
                _ip("link", "set", veth, "up")
                _ip("-n", ns, "addr", "add", f"{self.addrs[i]}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except NetnsUnavailable:
            self.__exit__(None, None, None)
            raise
        return self

    def veth(self, i):
        return f"kg{self.tag}v{i + 1}"

    def argv(self, i, argv):
        """argv to run argv[...] inside host i (0-based) with its hostname."""
        script = 'hostname "$0" && exec "$@"'
        return ["ip", "netns", "exec", self.names[i], "unshare", "--uts", "sh", "-c", script,
                self.hostnames[i], *argv]

    def __exit__(self, *exc):
        for kind, name in reversed(self._made):
            if kind == "netns":
                _ip("netns", "del", name, check=False)
            else:
                _ip("link", "del", name, check=False)
        self._made = []
