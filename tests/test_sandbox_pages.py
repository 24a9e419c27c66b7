"""The memory diff of the page study (`pages.py`, `accuracy.pages_study`) ignores only the words
the kernel writes on its own: a thread's CPU number in its rseq area.

The images here are built by hand in criu's format (the fields `pages.py` reads), so that one
word can be changed at a time; `tests/test_sandbox_criu.py` shows the same on real criu dumps of
a server moved from one CPU to another.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from rctools.sandbox import pages
from rctools.sandbox.accuracy import pages_study

PID = 301
HEAP, STACK = 0x5555_0000_0000, 0x7FFB_5545_1000  # two mappings of two pages each
RSEQ = STACK + 0x960  # the thread's rseq area, as in the server the study found


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def _message(*fields: tuple[int, int | bytes]) -> bytes:
    out = b""
    for number, value in fields:
        if isinstance(value, bytes):
            out += _varint(number << 3 | 2) + _varint(len(value)) + value
        else:
            out += _varint(number << 3) + _varint(value)
    return out


def _image(path: Path, *messages: bytes) -> None:
    path.write_bytes(
        b"\x19\x43\x56\x54\x00\x00\x00\x00"  # criu's two magic words (not checked)
        + b"".join(struct.pack("<I", len(m)) + m for m in messages)
    )


def _dump(folder: Path, memory: bytes, rseq: int | None = RSEQ) -> Path:
    """A process image of one single-threaded process whose four pages hold `memory`."""
    tree = folder / str(PID)
    tree.mkdir(parents=True)
    _image(tree / "pstree.img", _message((1, PID), (2, 0), (3, 300), (4, 300), (5, PID)))
    _image(
        tree / f"pagemap-{PID}.img",
        _message((1, 1)),  # pages_id: pages-1.img
        _message((1, HEAP), (2, 2), (4, pages.PE_PRESENT)),
        _message((1, STACK - 0x1000), (2, 2), (4, pages.PE_PRESENT | 2)),
    )
    (tree / "pages-1.img").write_bytes(memory)
    thread = _message((15, _message((1, rseq), (2, 32), (3, 0x53053053)))) if rseq else b""
    _image(tree / f"core-{PID}.img", _message((1, 1), (5, thread)))
    return folder


def _at(address: int) -> int:
    """Where an address of the second mapping lies in pages-1.img."""
    return 2 * pages.PAGE + address - (STACK - 0x1000)


def _with(memory: bytes, address: int, word: int) -> bytes:
    at = _at(address)
    return memory[:at] + struct.pack("<I", word) + memory[at + 4 :]


BASE = _with(_with(bytes(range(256)) * 64, RSEQ, 1), RSEQ + 4, 1)  # on CPU 1


def test_the_kernels_cpu_words_are_masked_and_nothing_else(tmp_path: Path) -> None:
    moved = _with(_with(BASE, RSEQ, 0), RSEQ + 4, 0)  # the server now runs on CPU 0
    assert moved != BASE
    assert pages.memory(_dump(tmp_path / "a", BASE)) == pages.memory(_dump(tmp_path / "b", moved))
    for n, (address, what) in enumerate(
        [
            (RSEQ + 8, "rseq_cs: written by user space"),
            (RSEQ + 16, "flags: written by user space"),
            (RSEQ + 32, "the word after the area"),
            (RSEQ - 4, "the word before it"),
            (HEAP + 100, "the heap"),
        ]
    ):
        other = _with(BASE, address, 0xDEAD)
        a, b = _dump(tmp_path / f"a{n}", BASE), _dump(tmp_path / f"b{n}", other)
        assert pages.memory(a) != pages.memory(b), what


def test_without_an_rseq_area_every_byte_counts(tmp_path: Path) -> None:
    moved = _with(BASE, RSEQ, 0)
    a, b = _dump(tmp_path / "a", BASE, rseq=None), _dump(tmp_path / "b", moved, rseq=None)
    assert pages.memory(a) != pages.memory(b)


def test_the_study_calls_a_cpu_move_no_change_and_a_real_write_a_miss(tmp_path: Path) -> None:
    """Turn 2: the server only moved to another CPU (raw bytes differ, memory equal: quiet).
    Turn 3: it wrote its heap while the inspector said nothing: the miss the study must find."""
    images = tmp_path / "images"
    _dump(images / "procs-1", BASE)
    _dump(images / "procs-2", _with(_with(BASE, RSEQ, 0), RSEQ + 4, 0))
    _dump(images / "procs-3", _with(_with(_with(BASE, RSEQ, 0), RSEQ + 4, 0), HEAP, 7))
    trace = [
        {"ev": "boundary", "turn": turn, "changed": changed}
        for turn, changed in ((1, ["procs"]), (2, []), (3, []))
    ]
    found = pages_study(trace, images)
    assert [(t.turn, t.said, t.changed, t.raw) for t in found] == [
        (1, True, True, True),
        (2, False, False, True),
        (3, False, True, True),
    ]


def test_an_image_it_cannot_read_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    folder = _dump(tmp_path / "a", BASE)
    (folder / str(PID) / "pstree.img").write_bytes(b"\0" * 8 + b"\xff\xff\x00\x00" + b"\x08")
    with pytest.raises(pages.ImageFormatError, match=r"pstree\.img"):
        pages.memory(folder)


def test_a_zombie_holds_no_memory(tmp_path: Path) -> None:
    """criu records a zombie child in `pstree.img` with no pagemap: it adds nothing."""
    folder = _dump(tmp_path / "a", BASE)
    alone = pages.memory(folder)
    tree = folder / str(PID)
    _image(
        tree / "pstree.img",
        _message((1, PID), (2, 0), (3, 300), (4, 300), (5, PID)),
        _message((1, PID + 1), (2, PID), (3, 300), (4, 300), (5, PID + 1)),
    )
    assert pages.memory(folder) == alone
