"""A private network namespace whose only interface is loopback, for a recording run.

Why: some servers call out on their own. restate-server 1.7 asks GitHub for its latest
release at every start and no setting turns that off; a conformance run must talk to nothing
but 127.0.0.1. The recording process moves itself into a new network namespace before it
starts any thread or child: every thread it starts afterwards and every process those start
(the server, the service processes, the driver's HTTP calls, TLC) are in it too. They still
meet on 127.0.0.1, and a call to any other address fails at once (no route) without leaving
the machine. The namespace dies with its last process.

It needs CAP_SYS_ADMIN (root, as on CI). Without it the run stays in the host's namespace;
`enter_private_loopback` says why, and the suite reports that in its figures.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFREQ = struct.Struct("16sH22x")  # struct ifreq: the name, then ifr_flags in the union


def enter_private_loopback() -> str | None:
    """Moves the calling thread (call it from the main thread, before any other is started)
    into a new network namespace and brings its `lo` up. Returns None when done, else why
    not (the process is then unchanged)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        return f"no private network namespace: unshare: {os.strerror(ctypes.get_errno())}"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = IFREQ.pack(b"lo", 0)
        _, flags = IFREQ.unpack(fcntl.ioctl(sock, SIOCGIFFLAGS, request))
        fcntl.ioctl(sock, SIOCSIFFLAGS, IFREQ.pack(b"lo", flags | IFF_UP))
    return None


def outside_reachable(host: str = "192.0.2.1", port: int = 9) -> bool:
    """Whether a TCP connection to an address beyond loopback is even routed from here: in
    the private namespace connect() fails at once with ENETUNREACH. 192.0.2.1 is TEST-NET-1
    (RFC 5737), reserved for documentation, so nothing is ever sent to a real host; the
    check only asks the kernel for a route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect((host, port))  # UDP connect: a route lookup, no packet sent
        except OSError:
            return False
    return True
