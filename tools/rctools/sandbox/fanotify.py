"""A kernel-level file event source: fanotify with FAN_REPORT_DFID_NAME on the upper layer's disk.

Why: the inspector's question -- did this turn change files since the last file image? --
should be answered from what the kernel saw the sandbox do, not by walking and hashing the
whole tree at every boundary. overlayfs writes every change of the sandbox's workspace into its
upper layer through the real filesystem, so a fanotify *filesystem* mark on the filesystem
that holds the upper layer reports each create, delete, write, attribute change and rename
there, with the directory (a file handle) and the name it happened to.
The handle is turned back into a path with open_by_handle_at; events outside the upper layer
(the filesystem is shared with the host) are dropped.

Events say what was touched, not what the net effect is (a temp file created and deleted is
two events and no effect), so the inspector compares only the touched entries with the last
file image. At a boundary the sandbox is frozen first, then the queue is drained: every event
of the turn is in it (the kernel queues an event within the syscall). An event whose
directory cannot be resolved makes `drain` report that it cannot tell, and the inspector then
compares the whole upper layer -- a miss is not allowed (InspectorSound).

Only the C library is used, through ctypes: Python has no fanotify binding.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

FAN_CLASS_NOTIF = 0x0
FAN_CLOEXEC = 0x1
FAN_NONBLOCK = 0x2
FAN_UNLIMITED_QUEUE = 0x10
FAN_REPORT_FID = 0x200
FAN_REPORT_DIR_FID = 0x400
FAN_REPORT_NAME = 0x800
FAN_REPORT_DFID_NAME = FAN_REPORT_DIR_FID | FAN_REPORT_NAME
FAN_MARK_ADD = 0x1
FAN_MARK_FILESYSTEM = 0x100
FAN_ATTRIB = 0x4
FAN_MODIFY = 0x2
FAN_MOVED_FROM = 0x40
FAN_MOVED_TO = 0x80
FAN_CREATE = 0x100
FAN_DELETE = 0x200
FAN_Q_OVERFLOW = 0x4000
FAN_ONDIR = 0x40000000
FAN_EVENT_INFO_TYPE_DFID_NAME = 2
AT_FDCWD = -100
MASK = FAN_CREATE | FAN_DELETE | FAN_MODIFY | FAN_ATTRIB | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_ONDIR
METADATA = struct.Struct("=IBBHQii")  # event_len, vers, reserved, metadata_len, mask, fd, pid
INFO_HEADER = struct.Struct("=BBH")  # info_type, pad, len
HANDLE_HEADER = struct.Struct("=Ii")  # handle_bytes, handle_type

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
_libc.fanotify_mark.argtypes = [
    ctypes.c_int,
    ctypes.c_uint,
    ctypes.c_uint64,
    ctypes.c_int,
    ctypes.c_char_p,
]
_libc.open_by_handle_at.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]


class FanotifyUnavailable(OSError):
    """The kernel (or the filesystem) refuses a fanotify filesystem mark here."""


@dataclass
class Touched:
    """What the events since the last drain touched below the watched folder."""

    paths: set[str] = field(default_factory=set)  # relative to the folder
    events: int = 0
    lost: bool = False  # the queue overflowed or a handle could not be resolved


class UpperWatch:
    """A fanotify listener for one upper layer. The queue is unlimited (we are root), so
    nothing is lost between two drains; `drain` reads it to the end."""

    def __init__(self, upper: Path) -> None:
        self.upper = upper.resolve()
        flags = FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE
        self.fd = _libc.fanotify_init(flags | FAN_REPORT_DFID_NAME, os.O_RDONLY | os.O_LARGEFILE)
        if self.fd < 0:
            raise FanotifyUnavailable(ctypes.get_errno(), "fanotify_init refused")
        where = str(self.upper).encode()
        if _libc.fanotify_mark(self.fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, MASK, AT_FDCWD, where):
            code = ctypes.get_errno()
            os.close(self.fd)
            raise FanotifyUnavailable(code, f"fanotify filesystem mark on {self.upper} refused")
        # open_by_handle_at needs any descriptor on the same filesystem.
        self.mount_fd = os.open(self.upper, os.O_RDONLY | os.O_DIRECTORY)
        self._touched = Touched()

    def drain(self) -> Touched:
        """What was touched since the last drain. Called with the sandbox frozen, it holds
        every event of the turn: the kernel queues an event before the syscall returns."""
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            except InterruptedError:
                continue
            self._parse(data)
        touched, self._touched = self._touched, Touched()
        return touched

    def _parse(self, data: bytes) -> None:
        offset = 0
        while offset + METADATA.size <= len(data):
            length, _, _, meta_len, mask, fd, _ = METADATA.unpack_from(data, offset)
            if fd >= 0:
                os.close(fd)
            if mask & FAN_Q_OVERFLOW:
                self._touched.lost = True
            path = self._path(data[offset + meta_len : offset + length])
            if path is None:
                pass  # outside the upper layer: the host's, or another sandbox's
            elif path == "":
                self._touched.lost = True  # an unresolvable handle: cannot tell
            else:
                self._touched.paths.add(path)
                self._touched.events += 1
            offset += length

    def _path(self, info: bytes) -> str | None:
        """The event's path relative to the upper layer; None: elsewhere; "": unknown."""
        if len(info) < INFO_HEADER.size:
            return ""
        kind, _, size = INFO_HEADER.unpack_from(info)
        if kind != FAN_EVENT_INFO_TYPE_DFID_NAME:
            return ""
        start = INFO_HEADER.size + 8  # the fsid
        handle_bytes, _ = HANDLE_HEADER.unpack_from(info, start)
        handle = info[start : start + HANDLE_HEADER.size + handle_bytes]
        name = info[start + HANDLE_HEADER.size + handle_bytes : size].split(b"\0", 1)[0]
        fd = _libc.open_by_handle_at(self.mount_fd, handle, os.O_PATH)
        if fd < 0:
            # A directory deleted since: its own deletion is an event in its parent folder,
            # which does resolve; any other failure means we cannot tell.
            return None if ctypes.get_errno() == errno.ESTALE else ""
        try:
            folder = Path(os.readlink(f"/proc/self/fd/{fd}"))
        finally:
            os.close(fd)
        if folder != self.upper and not folder.is_relative_to(self.upper):
            return None
        relative = folder.relative_to(self.upper) / name.decode("utf-8", "surrogateescape")
        return str(relative) if str(relative) != "." else "."

    def close(self) -> None:
        os.close(self.fd)
        os.close(self.mount_fd)
