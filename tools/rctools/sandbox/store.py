"""The durable side of a sandbox run: checkpoint images, the restore head, cached responses.

Everything here survives a SIGKILL of the sandbox and the agent. A file becomes visible only
complete (written beside its final name, fsynced, then renamed), so a crash in the middle of a
checkpoint job leaves a `.tmp` that no restore ever reads.

File images live in `images/files-<turn>/`: the entries of the overlay's upper layer that the
image stores (`data/` and `image.json`), and the whole upper layer's manifest at that turn, so
that a later checkpoint can store only what changed since. Process images are
`images/procs-<turn>/`: the process table (command line and working directory of each live
process) in `image.json` and, with criu, one dump folder per process tree (`processes.py`).
Turn 0 stands for the base image: no upper entries, no processes. Every published restore point
is kept in `points/<turn>.json` (its manifest) beside the restore head, so a rollback or a fork
can go to any earlier turn; the images stay until a restore goes before their turn.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rctools.sandbox.namespace import Process, Sandbox, table_digest
from rctools.sandbox.processes import Imager
from rctools.sandbox.tree import (
    OPAQUE_XATTR,
    WHITEOUT,
    Manifest,
    file_sha,
    merge,
    tree_digest,
)


def write_atomic(path: Path, data: Any) -> int:
    """Writes JSON durably and atomically; returns its size in bytes."""
    text = json.dumps(data, sort_keys=True).encode()
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.rename(path)
    _fsync_dir(path.parent)
    return len(text)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Image:
    """What a checkpoint job wrote: the digest of what the image holds, and its size."""

    digest: str
    bytes: int


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.images = root / "images"
        self.responses = root / "responses"
        self.conversation = root / "conversation"
        self.points = root / "points"
        for folder in (self.images, self.responses, self.conversation, self.points):
            folder.mkdir(parents=True, exist_ok=True)

    # --- restore head -------------------------------------------------------------------------

    @property
    def head_path(self) -> Path:
        return self.root / "head.json"

    def head(self) -> dict[str, int] | None:
        return read_json(self.head_path) if self.head_path.exists() else None

    def publish(self, turn: int, files_at: int, procs_at: int) -> None:
        point = {"turn": turn, "files_at": files_at, "procs_at": procs_at}
        write_atomic(self.points / f"{turn}.json", point)
        write_atomic(self.head_path, point)

    def point(self, turn: int) -> dict[str, int] | None:
        """The restore point published for `turn`, if any (it outlives later ones)."""
        path = self.points / f"{turn}.json"
        return read_json(path) if path.exists() else None

    def rewind(self, turn: int) -> dict[str, int]:
        """Makes the published point of `turn` the restore head again and forgets later ones."""
        point = self.point(turn)
        if point is None:
            raise KeyError(f"no restore point was published for turn {turn}")
        for path in self.points.glob("*.json"):
            if int(path.stem) > turn:
                path.unlink()
        write_atomic(self.head_path, point)
        return point

    # --- model responses and the agent's conversation -----------------------------------------

    def cached_response(self, turn: int) -> dict[str, Any] | None:
        path = self.responses / f"{turn}.json"
        return read_json(path) if path.exists() else None

    def cache_response(self, turn: int, response: dict[str, Any]) -> None:
        write_atomic(self.responses / f"{turn}.json", response)

    def drop_responses_after(self, turn: int) -> None:
        """Responses to turns after a restored one answered results the history no longer
        holds: a re-run turn asks the model again."""
        for path in self.responses.glob("*.json"):
            if int(path.stem) > turn:
                path.unlink()

    def record_results(self, turn: int, results: list[dict[str, Any]]) -> None:
        write_atomic(self.conversation / f"{turn}.json", results)

    def cut_conversation(self, turn: int) -> int:
        """Drops the results of turns after `turn`; returns the last turn the history holds."""
        kept = 0
        for path in self.conversation.glob("*.json"):
            number = int(path.stem)
            if number > turn:
                path.unlink()
            else:
                kept = max(kept, number)
        return kept

    # --- file images --------------------------------------------------------------------------

    def _files_dir(self, turn: int) -> Path:
        return self.images / f"files-{turn}"

    def upper_at(self, turn: int) -> Manifest:
        """The overlay's upper layer as file image `turn` holds it (turn 0: empty)."""
        if turn == 0:
            return {}
        meta = read_json(self._files_dir(turn) / "image.json")
        return {path: tuple(entry) for path, entry in meta["upper"].items()}

    def write_files_image(
        self,
        turn: int,
        upper: Path,
        now: Manifest,
        previous: tuple[int, Manifest] | None,
        base: Manifest,
        before_done: Callable[[], None] | None = None,
    ) -> Image:
        """Copies the upper layer's entries into image `turn`: all of them, or (with
        `previous`, the last file image's turn and manifest) only those changed since."""
        final = self._files_dir(turn)
        tmp = final.with_name(final.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        data = tmp / "data"
        data.mkdir(parents=True)
        before = previous[1] if previous else {}
        changed = {p: e for p, e in now.items() if previous is None or before.get(p) != e}
        deleted = sorted(p for p in before if p not in now) if previous else []
        stored: Manifest = {}
        size = 0
        for path in sorted(changed):
            entry = changed[path]
            source, target = upper / path, data / path
            if entry[0] == "dir":
                target.mkdir(parents=True, exist_ok=True)
                stored[path] = entry
            elif entry[0] == "file":
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
                size += target.stat().st_size
                stored[path] = ("file", entry[1], file_sha(target))  # what the copy holds
            else:
                stored[path] = entry  # links, whiteouts, specials: the entry is the content
        held = {p: e for p, e in before.items() if p not in deleted} if previous else {}
        held.update(stored)
        meta = {
            "turn": turn,
            "parent": previous[0] if previous else None,
            "stored": stored,
            "deleted": deleted,
            "upper": held,
            "digest": tree_digest(merge(base, held)),
        }
        size += write_atomic(tmp / "image.json", meta)
        if before_done is not None:
            before_done()  # the crash point "in the middle of a checkpoint job"
        _fsync_dir(tmp)
        tmp.rename(final)
        _fsync_dir(self.images)
        return Image(meta["digest"], size)

    def restore_upper(self, turn: int, upper: Path) -> None:
        """Rebuilds an upper layer from file image `turn` and the images it builds on."""
        shutil.rmtree(upper, ignore_errors=True)
        upper.mkdir(parents=True)
        chain = []
        while turn:
            meta = read_json(self._files_dir(turn) / "image.json")
            chain.append((turn, meta))
            turn = meta["parent"] or 0
        for number, meta in reversed(chain):
            for path in meta["deleted"]:
                _remove(upper / path)
            for path in sorted(meta["stored"]):
                _materialize(
                    self._files_dir(number) / "data" / path,
                    upper / path,
                    tuple(meta["stored"][path]),
                )

    # --- process images -----------------------------------------------------------------------

    def write_procs_image(
        self, turn: int, table: list[Process], sandbox: Sandbox, imager: Imager
    ) -> Image:
        """Dumps the (frozen) sandbox's processes into image `turn`, beside its final name."""
        final = self.images / f"procs-{turn}"
        tmp = final.with_name(final.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "criu").mkdir(parents=True)
        dumped = imager.dump(sandbox, tmp / "criu")
        digest = table_digest(table)
        meta = {"procs": [p.to_json() for p in table], "digest": digest, "roots": dumped.roots}
        size = dumped.bytes + write_atomic(tmp / "image.json", meta)
        _fsync_dir(tmp)
        tmp.rename(final)
        _fsync_dir(self.images)
        return Image(digest, size)

    def procs_at(self, turn: int) -> list[Process]:
        if turn == 0:
            return []
        meta = read_json(self.images / f"procs-{turn}" / "image.json")
        return [Process(tuple(r["argv"]), r["cwd"]) for r in meta["procs"]]

    def restore_procs(self, turn: int, sandbox: Sandbox, imager: Imager) -> list[Process]:
        """Brings process image `turn` back into a fresh sandbox; returns its table."""
        if turn == 0:
            return []
        folder = self.images / f"procs-{turn}"
        meta = read_json(folder / "image.json")
        table = self.procs_at(turn)
        imager.restore(sandbox, folder / "criu", table, meta["roots"])
        return table

    def drop_after(self, turn: int) -> None:
        """Forgets images of turns after `turn` and every unfinished one (a restore to `turn`)."""
        for path in self.images.iterdir():
            stem = path.name.removesuffix(".json").removesuffix(".tmp")
            number = int(stem.split("-", 1)[1])
            if path.name.endswith(".tmp") or number > turn:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _materialize(source: Path, target: Path, entry: tuple[str, ...]) -> None:
    """Writes one upper-layer entry as overlayfs expects to find it."""
    if entry[0] != "dir":
        _remove(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    kind = entry[0]
    if kind == "dir":
        if target.exists() and not target.is_dir():
            _remove(target)
        target.mkdir(exist_ok=True)
        os.chmod(target, int(entry[1], 8))
        if len(entry) == 3:
            os.setxattr(target, OPAQUE_XATTR, b"y")
    elif kind == "file":
        shutil.copy2(source, target)
    elif kind == "link":
        os.symlink(entry[1], target)
    elif entry == WHITEOUT:
        os.mknod(target, stat.S_IFCHR | 0o000, os.makedev(0, 0))
    else:
        pass  # a socket or fifo: it belongs to a process, which a restore starts again
