"""PID 1 of a sandbox: mounts the overlay, brings up loopback, then reaps orphans until killed.

Started by `namespace.Sandbox` as `unshare --mount --pid --net --fork --mount-proc python -m
rctools.sandbox.init LOWER UPPER WORK MOUNTPOINT FIRST_PID`. It has to be PID 1 of the new PID
namespace: a background server that a tool command starts is re-parented to it when the
command's shell exits, and killing it with SIGKILL kills every process of the sandbox at once --
the crash. FIRST_PID (0: leave as is) is where the sandbox's own PIDs start.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
import subprocess
import sys
import time

_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


def loopback_up() -> None:
    """`ip link set lo up` without needing iproute2: servers in the sandbox listen on it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | _IFF_UP, b""))


def main(argv: list[str]) -> int:
    lower, upper, work, mountpoint, first_pid = argv
    options = f"lowerdir={lower},upperdir={upper},workdir={work}"
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, mountpoint], check=True)
    loopback_up()
    if int(first_pid):
        # The sandbox's own processes start above the helpers a restoring sandbox runs first.
        with open("/proc/sys/kernel/ns_last_pid", "w", encoding="ascii") as fh:
            fh.write(str(int(first_pid) - 1))
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    os.close(1)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            time.sleep(0.1)  # no child right now; a command may leave an orphan any moment


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
