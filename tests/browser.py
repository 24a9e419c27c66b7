"""A real headless Chromium for tests of the HTML report: Debian's `chromium` package.

`chromium` (session fixture) finds the browser, installs the Debian package with apt-get when it
is missing and this is a root shell with apt-get (as `tests/services.py` does for the servers:
`make test` promises to run everything on a fresh machine), and otherwise skips with the command
that would install it. The helpers drive the browser from its command line: `--screenshot` and
`--dump-dom`, each run with a profile folder of its own so parallel runs never share one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

PACKAGE = "chromium"
NAMES = ("chromium", "chromium-browser", "chromium-headless-shell")
TIMEOUT = 180.0
APT = f"apt-get update && apt-get install -y {PACKAGE}"


def find() -> str | None:
    return next((found for name in NAMES if (found := shutil.which(name))), None)


def _install() -> str | None:
    """Installs Debian's chromium when this shell may; the reason it could not otherwise."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"chromium is missing; install it with `{APT}` (as root)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", PACKAGE]):
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"`{' '.join(argv)}` failed: {(done.stdout + done.stderr)[-500:]}"
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    """The chromium program, installed if missing and allowed; else the test is skipped."""
    found = find()
    if found is None:
        reason = _install()
        found = find()
        if found is None:
            pytest.skip(reason or f"apt-get installed {PACKAGE} but no chromium is on PATH")
    return found


def _run(program: str, *args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="rc-chromium-") as profile:
        argv = [
            program,
            "--headless",
            "--no-sandbox",  # tests run as root, where chromium's sandbox refuses to start
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *args,
        ]
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=TIMEOUT, check=False, cwd=profile
        )
    assert done.returncode == 0, f"{argv} -> {done.returncode}\n{done.stderr[-2000:]}"
    return done


def screenshot(program: str, url: str, out: Path, width: int = 1400, height: int = 900) -> Path:
    """A PNG of what the page shows in a `width` x `height` window."""
    _run(program, f"--window-size={width},{height}", f"--screenshot={out}", url)
    assert out.is_file(), f"chromium wrote no screenshot of {url}"
    return out


def dump_dom(program: str, url: str) -> str:
    """The page's DOM after the browser parsed and laid it out, serialized."""
    return _run(program, "--dump-dom", url).stdout
