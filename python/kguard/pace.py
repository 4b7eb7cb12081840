"""kguard.step(n): tell `kguard exec` the step this process completed.

kguard exec proves that a poisoned process which stays alive has stalled
the job when no step follows the error for four times the job's longest
gap between steps. kguard.save tells it each step it seals; a loop that
saves rarely calls kguard.step(n) after every step (a few microseconds:
one datagram, never waited for). Nothing is printed. Outside kguard exec
(no KGUARD_STEP_SOCKET in the environment) it does nothing.
"""
import os
import socket

__all__ = ["step"]

_ENV = "KGUARD_STEP_SOCKET"
_sock = None
_key = None     # (socket name, generation) the cached words were made for
_addr = None
_head = b""


def _prepare(name, generation):
    """Open the sending socket once and cache the address and the words'
    head for this socket name and generation (a warm standby learns both
    only when it becomes the rank)."""
    global _sock, _key, _addr, _head
    if _sock is None:
        _sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        _sock.setblocking(False)
    _addr = "\0" + name[1:] if name.startswith("@") else name
    try:
        g, r = int(generation or 0), int(os.environ.get("RANK") or 0)
    except ValueError:
        g, r = 0, 0
    _head = b"kguard-step %d %d " % (max(g, 0), max(r, 0))
    _key = (name, generation)


def step(n):
    """Tell kguard exec that this process completed step n (an int >= 0).

    Never raises for the channel: a kguard that is gone or a full queue
    loses the report, and training goes on. A step that is not a
    non-negative integer raises ValueError or TypeError.
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"step must be a non-negative integer, got {n}")
    name = os.environ.get(_ENV)
    if not name:
        return
    try:
        key = (name, os.environ.get("KGUARD_EXEC_GENERATION"))
        if key != _key:
            _prepare(*key)
        _sock.sendto(_head + b"%d" % n, _addr)
    except OSError:
        pass   # kguard gone, or its queue full: this report is lost, not training
