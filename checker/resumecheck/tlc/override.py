"""The Java override that hands a batch to TLC without SANY: compiled once, found on demand.

A batch of traces is TLA+ text (`resumecheck.trace.encode`). Parsed by SANY as a generated
module it cost more than half of a large run's CPU and most of its memory; the class in
`java/resumecheck/TraceDataOverride.java` reads the same text straight into TLC values (TLC
2.15's `@TLAPlusOperator` overrides, see that file). It needs the JDK's `javac`, so it is
compiled when first wanted (or by `make setup`: `python -m resumecheck.tlc.override`) into a
cache folder keyed by the Java source, the jar and the JDK, and self-tested there once; when
there is no `javac` or anything fails, `classes()` says why and the batch goes to TLC as a
generated module instead (`resumecheck.batch`), which gives the same verdicts.

The same folder holds `java/resumecheck/WarmTLC.java`, the driver that runs several TLC runs
in one JVM for `resume-check spec` (:mod:`resumecheck.tlc.warm`); without it, each run gets a
JVM of its own.

`$RESUME_CHECK_TRACE_DATA=module` always uses the generated module (`java` insists on the
override and fails when it cannot be built); `$RESUME_CHECK_CACHE` moves the cache.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from platformdirs import user_cache_dir

from resumecheck.errors import ToolchainError
from resumecheck.tlc.locate import find_jar, find_java

__all__ = [
    "CACHE_ENV",
    "DATA_ENV",
    "MAGIC",
    "PROPERTY",
    "Classes",
    "classes",
    "wanted",
]

DATA_ENV = "RESUME_CHECK_TRACE_DATA"
CACHE_ENV = "RESUME_CHECK_CACHE"
PROPERTY = "resumecheck.tracedata"
"""The system property that names the data file (TraceDataOverride.PROPERTY)."""
MAGIC = "\\* resume-check trace data 1\n"
"""The first line of a data file (TraceDataOverride.MAGIC)."""

WARM = "warm"
# Part of the cache key: how a build is laid out.
_LAYOUT = b"3: the warm driver and its nested classes in warm/"

_SOURCES = (
    "resumecheck/TraceDataOverride.java",
    "resumecheck/WarmTLC.java",
    "tlc2/overrides/TLCOverrides.java",
)


@dataclass(frozen=True)
class Classes:
    """Where the compiled override is, or why there is none."""

    folder: Path | None
    problem: str = ""

    @property
    def warm(self) -> Path | None:
        """The class folder of the warm driver alone (`resumecheck.WarmTLC`)."""
        return None if self.folder is None else self.folder / WARM


def wanted() -> str:
    """`auto` (the override when it can be built), `java` (only it) or `module`."""
    choice = os.environ.get(DATA_ENV, "").strip().lower() or "auto"
    if choice not in ("auto", "java", "module"):
        raise ToolchainError(f"{DATA_ENV}={choice!r}: use auto, java or module")
    return choice


def classes() -> Classes:
    """The compiled override for the java and jar in use (compiling it on first use)."""
    java, jar = find_java(), find_jar()
    return _classes(java, str(jar))


@functools.cache
def _classes(java: str, jar: str) -> Classes:
    javac = _javac(java)
    if javac is None:
        return Classes(None, "no javac beside java or on PATH (install a JDK, e.g. openjdk-17-jdk)")
    sources = {name: _source(name) for name in _SOURCES}
    key = hashlib.sha256(_LAYOUT)
    for name, text in sorted(sources.items()):
        key.update(name.encode() + b"\0" + text.encode() + b"\0")
    stat = Path(jar).stat()
    key.update(f"{Path(jar).resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    key.update(f"{Path(java).resolve()}\0{Path(javac).resolve()}".encode())
    folder = _cache_root() / f"override-{key.hexdigest()[:16]}"
    if (folder / "ok").is_file():
        return Classes(folder)
    try:
        _build(folder, sources, java, javac, jar)
    except (OSError, subprocess.SubprocessError, ToolchainError) as exc:
        return Classes(None, f"the trace data override did not build: {exc}")
    return Classes(folder)


def _source(name: str) -> str:
    return (resources.files("resumecheck.tlc") / "java" / name).read_text(encoding="utf-8")


def _javac(java: str) -> str | None:
    """The javac of the same JDK as `java` (so the classes load there), else one on PATH."""
    beside = Path(java).resolve().parent / "javac"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("javac")


def _cache_root() -> Path:
    explicit = os.environ.get(CACHE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    return Path(user_cache_dir("resume-check", appauthor=False))


def _build(folder: Path, sources: dict[str, str], java: str, javac: str, jar: str) -> None:
    """Compiles into a fresh folder, self-tests there, then renames it into place: a
    concurrent build or a killed one never leaves a half-written cache entry in use."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=folder.parent))
    try:
        paths = []
        for name, text in sources.items():
            path = work / "src" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        out = work / "classes"
        done = subprocess.run(
            [javac, "-nowarn", "--release", "11", "-cp", jar, "-d", str(out), *paths],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise ToolchainError(_last_lines(done.stderr or done.stdout))
        # The warm driver in a folder of its own: TLC looks for tlc2.overrides.TLCOverrides
        # on the class path, which must not be found beside the driver (resumecheck.tlc.warm).
        driver = out / WARM / "resumecheck"
        driver.mkdir(parents=True)
        for compiled in (out / "resumecheck").glob("WarmTLC*.class"):  # with its nested classes
            compiled.rename(driver / compiled.name)
        _self_test(java, jar, out, work)
        (out / "ok").write_text("self-tested\n", encoding="utf-8")
        with contextlib.suppress(OSError):  # another process got there first: use its copy
            out.rename(folder)
        if not (folder / "ok").is_file():
            raise ToolchainError(f"could not place the compiled override in {folder}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


_SAMPLE = (
    MAGIC + 'E(a0, a1) == [ev |-> "put", proc |-> a0, tasks |-> a1]\n'
    "TraceLog == <<[header |-> [n |-> -3], events |-> <<E(2, {3, 1, 3}), E(1, {})>>]>>\n"
)
# What the self-test must find in TLC's printing of the sample (fields in TLC's own order).
_SAMPLE_PARTS = ('ev |-> "put"', "proc |-> 2", "tasks |-> {1, 3}", "tasks |-> {}", "n |-> -3")


def _self_test(java: str, jar: str, out: Path, work: Path) -> None:
    """The compiled class reads a sample with this java and jar as TLC would."""
    sample = work / "sample.rcdata"
    sample.write_text(_SAMPLE, encoding="utf-8")
    command = [java, "-cp", os.pathsep.join([str(out), jar]), "resumecheck.TraceDataOverride"]
    done = subprocess.run(
        [*command, str(sample)], capture_output=True, text=True, timeout=120, check=False
    )
    lines = done.stdout.splitlines()
    printed = " ".join(lines[1:])
    if done.returncode != 0 or lines[:1] != ["1"] or not all(p in printed for p in _SAMPLE_PARTS):
        raise ToolchainError("self-test failed: " + _last_lines(done.stderr or done.stdout))
    # The warm driver starts, and ends at the end of its input.
    driver = [java, "-cp", os.pathsep.join([str(out / WARM), jar]), "resumecheck.WarmTLC", jar]
    done = subprocess.run(driver, input="", capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or done.stdout:
        raise ToolchainError("warm driver self-test failed: " + _last_lines(done.stderr))


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines[-count:]) or "no output"


def main() -> int:
    """`python -m resumecheck.tlc.override`: build the override now (what `make setup` runs)."""
    try:
        built = classes()
    except ToolchainError as exc:
        print(f"resume-check: {exc}", file=sys.stderr)
        return 3
    if built.folder is None:
        print(f"resume-check: {built.problem}; batches reach TLC as a module", file=sys.stderr)
        return 0
    print(f"resume-check: trace data override ready in {built.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
