"""Class data sharing for the warm driver's JVM: TLC's classes loaded from an archive.

Most of what a driver's start costs before TLC runs is loading about 2,500 classes of the JDK,
SANY and TLC: read from the jar, parsed and verified, on every start. The JVM can keep them,
parsed and verified, in an archive of its own (CDS; the dynamic archive of JDK 13 and later,
JEP 350), which also serves the classes each run loads anew in a class loader of its own. The
first driver writes one when it exits; every later driver maps it (about 0.14 CPU-s less per
start, bench/results.md). A JVM refuses a class folder on an archived class path, so the
driver's classes go on the class path as a jar built from their folder.

The archive is a cache beside the compiled override (`resumecheck.tlc.override`), named by
everything it depends on -- the JDK, both jars, the JVM options -- and written under a name of
its own, then renamed into place: a driver killed while writing, or two drivers writing at
once, never leave a half-written archive in use. A JVM that finds an archive it cannot use (a
JDK rebuilt in place) warns on stderr and starts as without one. The driver's stdout is its
answer channel, so the JVM's own messages go to stderr. `$RESUME_CHECK_TLC_CDS=off` starts
drivers without an archive (to measure the difference side by side).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from resumecheck.tlc.locate import find_jar, java_major

ENV = "RESUME_CHECK_TLC_CDS"
"""`off`: drivers start without a class archive."""

FIRST_JAVA = 13
"""The first JDK that writes a dynamic archive (`-XX:ArchiveClassesAtExit`)."""

# The JVM's own messages (an archive it cannot map) on stderr, never on the answer channel.
_LOG = ["-Xlog:disable", "-Xlog:all=warning:stderr"]
_names = itertools.count(1)


@dataclass(frozen=True)
class Sharing:
    """How one driver JVM uses the archive: its class path and options, and, for the JVM that
    writes the archive at its exit, where it writes it."""

    classpath: Path
    options: tuple[str, ...]
    archive: Path
    written: Path | None = None

    def settle(self) -> None:
        """After the JVM has exited: the archive it wrote, renamed into place (a JVM killed
        before its exit wrote none, and the next driver writes one)."""
        if self.written is None:
            return
        try:
            if self.written.stat().st_size > 0:
                os.replace(self.written, self.archive)
        except OSError:
            pass
        finally:
            self.written.unlink(missing_ok=True)


def sharing(java: str, classes: Path, options: list[str]) -> Sharing | None:
    """The archive for a driver started by `java` with its classes in the folder `classes` and
    these JVM options; None when it is turned off, the JDK cannot write one, or the cache
    cannot be written."""
    if os.environ.get(ENV, "").strip().lower() == "off":
        return None
    major = java_major(java)
    if major is None or major < FIRST_JAVA:
        return None
    try:
        jar = _jar_of(classes)
        tla2tools = find_jar()
        key = hashlib.sha256()
        for path in (Path(java).resolve(), jar, tla2tools.resolve()):
            stat = path.stat()
            key.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
        # The heap cap does not change what is archived; a driver per heap needs no archive each.
        key.update("\0".join(o for o in options if not o.startswith("-Xmx")).encode())
    except OSError:
        return None
    archive = classes.parent / f"warm-{key.hexdigest()[:16]}.jsa"
    if archive.is_file():
        return Sharing(jar, (f"-XX:SharedArchiveFile={archive}", *_LOG), archive)
    written = archive.with_name(f".{archive.name}.{os.getpid()}-{next(_names)}")
    return Sharing(jar, (f"-XX:ArchiveClassesAtExit={written}", *_LOG), archive, written)


def _jar_of(classes: Path) -> Path:
    """`classes` (a folder of compiled classes) as a jar beside it, built once."""
    jar = classes.with_suffix(".jar")
    if jar.is_file():
        return jar
    handle, name = tempfile.mkstemp(prefix=".jar-", dir=classes.parent)
    os.close(handle)
    try:
        with zipfile.ZipFile(name, "w") as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        os.replace(name, jar)
    finally:
        Path(name).unlink(missing_ok=True)
    return jar
