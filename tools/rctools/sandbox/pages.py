"""The memory a criu image holds, without the words the kernel rewrites on its own.

Why: `accuracy.pages_study` compares the memory of each turn's process image with the turn
before's, as the truth the inspector is judged against. Raw page images are not that truth.
glibc (2.35 and later) registers an rseq area for every thread (rseq(2)). The kernel writes the
number of the CPU the thread runs on (`cpu_id_start`, `cpu_id`, and `node_id`, `mm_cid` beside
them) into that area whenever the thread returns to user space on another CPU than before. A
server that stays blocked still returns to user space briefly at every freeze and thaw (its
`accept` is interrupted by SIGSTOP and restarted after SIGCONT), so if the scheduler moves it
between two turns, those words change although the server ran none of its own code. Its
context switches correctly show nothing more than the freeze. A restore does not need these
words: criu registers the area again, and the kernel rewrites them on the first return to user
space. They are masked here. Everything else in the area (`rseq_cs`, `flags`: what user space
wrote) and every other byte is compared.

The page study found 4 such turns in 42 (two words going from 1 to 0: the server moved from
CPU 1 to CPU 0), and `tests/test_sandbox_criu.py` makes one happen on purpose.

Image files read (criu 4.1's protobuf messages, decoded by field number; only what is needed):
`pstree.img` (each process and its threads), `pagemap-<pid>.img` (the address of each page in
`pages-<id>.img`), `core-<tid>.img` (the thread's rseq area: `thread_core.rseq_entry`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

PAGE = 4096
PE_PRESENT = 1 << 2  # criu's pagemap flag: the pages are in pages-<id>.img
# (offset, length) of the fields the kernel writes in `struct rseq`: cpu_id_start and cpu_id,
# then node_id and mm_cid (rseq_cs at 8 and flags at 16 are written by user space).
KERNEL_WRITTEN = ((0, 8), (20, 8))
# Field numbers in criu's images/*.proto.
PSTREE_PID, PSTREE_THREADS = 1, 5
PAGEMAP_HEAD_PAGES_ID = 1
PAGEMAP_VADDR, PAGEMAP_NR_PAGES, PAGEMAP_FLAGS = 1, 2, 4
CORE_THREAD_CORE, THREAD_CORE_RSEQ, RSEQ_POINTER, RSEQ_SIZE = 5, 15, 1, 2

Fields = dict[int, list[int | bytes]]


class ImageFormatError(ValueError):
    """A criu image file this reader cannot decode; the message names it."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def fields(message: bytes) -> Fields:
    """A protobuf message's fields by number (every occurrence, in order; packed repeated
    integers stay bytes: see `ints`)."""
    found: Fields = {}
    at = 0
    while at < len(message):
        key, at = _varint(message, at)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, at = _varint(message, at)
        elif wire == 1:
            value, at = struct.unpack_from("<Q", message, at)[0], at + 8
        elif wire == 5:
            value, at = struct.unpack_from("<I", message, at)[0], at + 4
        elif wire == 2:
            size, at = _varint(message, at)
            value, at = message[at : at + size], at + size
        else:
            raise ImageFormatError(f"wire type {wire}")
        found.setdefault(number, []).append(value)
    return found


def ints(found: Fields, number: int) -> list[int]:
    """A repeated integer field, whether packed or not."""
    values = []
    for value in found.get(number, []):
        if isinstance(value, int):
            values.append(value)
        else:
            at = 0
            while at < len(value):
                item, at = _varint(value, at)
                values.append(item)
    return values


def entries(path: Path) -> Iterator[Fields]:
    """The messages of one image file: two magic words, then each message after its size."""
    data = path.read_bytes()
    at = 8
    try:
        while at < len(data):
            (size,) = struct.unpack_from("<I", data, at)
            yield fields(data[at + 4 : at + 4 + size])
            at += 4 + size
    except (IndexError, struct.error, ImageFormatError) as exc:
        raise ImageFormatError(f"{path}: not a criu image this reader knows ({exc})") from exc


def _one(found: Fields, number: int) -> bytes:
    value = found.get(number, [b""])[0]
    return value if isinstance(value, bytes) else b""


def rseq_areas(folder: Path, threads: list[int]) -> list[tuple[int, int]]:
    """The (address, size) of each thread's registered rseq area (none if not registered)."""
    areas = []
    for tid in threads:
        for core in entries(folder / f"core-{tid}.img"):
            rseq = fields(_one(fields(_one(core, CORE_THREAD_CORE)), THREAD_CORE_RSEQ))
            pointer, size = ints(rseq, RSEQ_POINTER), ints(rseq, RSEQ_SIZE)
            if pointer and pointer[0]:
                areas.append((pointer[0], size[0] if size else 32))
    return areas


def process_memory(folder: Path, pid: int, threads: list[int]) -> bytes:
    """One process's pages as dumped, the kernel-written rseq words of its threads zeroed."""
    maps = list(entries(folder / f"pagemap-{pid}.img"))
    pages_id = ints(maps[0], PAGEMAP_HEAD_PAGES_ID)[0]
    memory = bytearray((folder / f"pages-{pages_id}.img").read_bytes())
    offset = {}  # page address -> its offset in `memory`
    for entry in maps[1:]:
        flags = ints(entry, PAGEMAP_FLAGS)
        if flags and not flags[0] & PE_PRESENT:
            continue
        start = ints(entry, PAGEMAP_VADDR)[0]
        for page in range(ints(entry, PAGEMAP_NR_PAGES)[0]):
            offset[start + page * PAGE] = len(offset) * PAGE
    for address, size in rseq_areas(folder, threads):
        for at, length in KERNEL_WRITTEN:
            if at + length > size:
                continue
            page, within = divmod(address + at, PAGE)
            if page * PAGE in offset and within + length <= PAGE:
                start = offset[page * PAGE] + within
                memory[start : start + length] = bytes(length)
    return bytes(memory)


def memory(images: Path) -> bytes:
    """The memory of every process a process image holds (every tree under `images`, in order
    of PID), the words the kernel rewrites on its own masked: equal iff the processes hold the
    same memory."""
    parts = []
    for tree in sorted(p.parent for p in images.rglob("pstree.img")):
        for process in entries(tree / "pstree.img"):
            pid = ints(process, PSTREE_PID)[0]
            threads = ints(process, PSTREE_THREADS) or [pid]
            if not (tree / f"pagemap-{pid}.img").exists():
                continue  # a zombie: criu keeps its exit state, no memory
            parts.append(struct.pack("<I", pid) + process_memory(tree, pid, threads))
    return b"".join(parts)
