"""File trees as manifests, overlay semantics, and content digests.

A manifest maps a path (relative to a tree's root) to what a person would call its content:
type, permission bits and a SHA-256 of the bytes (or a symlink's target). Timestamps are left
out on purpose: a restored file is the same file if its bytes and mode are. Two trees are equal
iff their manifests are, so a manifest's digest is what the trace records as "the files".

An overlay's upper layer has two more kinds of entry: a whiteout (a character device 0/0 that
hides a lower file: a deletion) and an opaque directory (it hides everything below it in the
lower layers). `merge` applies overlayfs's rules to a lower manifest and an upper one; that is
how the digest of a checkpoint image is computed from what the image holds, independently of
the live mount whose digest the turn boundary records.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

Entry = tuple[str, ...]
Manifest = dict[str, Entry]

WHITEOUT: Entry = ("whiteout",)
OPAQUE_XATTR = "trusted.overlay.opaque"


def file_sha(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def _entry(path: Path, st: os.stat_result, *, upper: bool) -> Entry:
    mode = f"{stat.S_IMODE(st.st_mode):o}"
    if stat.S_ISREG(st.st_mode):
        return ("file", mode, file_sha(path))
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        if upper and _is_opaque(path):
            return ("dir", mode, "opaque")
        return ("dir", mode)
    if upper and stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
        return WHITEOUT
    # Sockets, fifos and devices have no content to restore; their existence is the content.
    return ("special", mode, f"{stat.S_IFMT(st.st_mode):o}")


def _is_opaque(path: Path) -> bool:
    try:
        return os.getxattr(path, OPAQUE_XATTR, follow_symlinks=False) == b"y"
    except OSError:
        return False


def manifest(root: Path, *, upper: bool = False) -> Manifest:
    """Every entry below `root` (not `root` itself). With `upper`, overlay markers are kept."""
    found: Manifest = {}

    def walk(folder: Path, prefix: str) -> None:
        with os.scandir(folder) as entries:
            for item in entries:
                rel = f"{prefix}{item.name}"
                path = Path(item.path)
                entry = _entry(path, item.stat(follow_symlinks=False), upper=upper)
                found[rel] = entry
                if entry[0] == "dir":
                    walk(path, rel + "/")

    walk(root, "")
    return found


def _drop_below(tree: Manifest, path: str) -> None:
    prefix = path + "/"
    for key in [k for k in tree if k.startswith(prefix)]:
        del tree[key]


def merge(lower: Manifest, upper: Manifest) -> Manifest:
    """The merged view overlayfs shows for `upper` on top of `lower`."""
    merged = dict(lower)
    for path in sorted(upper):  # a directory sorts before what is below it
        entry = upper[path]
        if entry == WHITEOUT:
            merged.pop(path, None)
            _drop_below(merged, path)
            continue
        if entry[0] == "dir":
            if len(entry) == 3 or merged.get(path, ("dir",))[0] != "dir":
                _drop_below(merged, path)
            merged[path] = entry[:2]
        else:
            _drop_below(merged, path)
            merged[path] = entry
    return merged


def digest(items: object) -> str:
    """A short, stable content digest of a JSON-able value (a manifest, a process table)."""
    text = json.dumps(items, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def tree_digest(tree: Manifest) -> str:
    return digest(sorted([path, *entry] for path, entry in tree.items()))
