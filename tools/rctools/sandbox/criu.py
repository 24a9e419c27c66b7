"""criu 4.1, installed privately from Debian 13's packages and run through their own loader.

Why this way: Debian 12's `criu` (3.17) fails `criu check` on this kernel, and the machine's apt
sources are Debian 12 only. criu 4.1 from Debian 13 (trixie) works when its package and the
libraries it needs are unpacked into a folder of their own and the binary is started through
that folder's dynamic loader with that folder's library path -- the system's sources, package
database and libc stay untouched. `apt-get` does the work: a private sources list (trixie, signed
by the Debian archive keyring the system already has), a private state and cache directory, an
empty package status (so the dependency closure is resolved in full), `apt-get download`, then
`dpkg-deb -x` of each package.

The folder is a cache outside the repository (`$RESUME_CHECK_CRIU_DIR`, default
`/var/cache/resume-check/criu-trixie`), shared by every checkout; it is built beside its final
name and renamed, under a lock, so concurrent callers never see half of it. `ensure()` installs
when needed and then runs `criu check`: where the kernel refuses, the error says so (exit code
3, an environment problem).

    python -m rctools.sandbox.criu install   # download and unpack (idempotent)
    python -m rctools.sandbox.criu check     # criu check through the private loader
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
from filelock import FileLock

DIR_VAR = "RESUME_CHECK_CRIU_DIR"
DEFAULT_DIR = Path("/var/cache/resume-check/criu-trixie")
SUITE = "trixie"
MIRROR_VAR = "RESUME_CHECK_DEBIAN_MIRROR"
SYSTEM_SOURCES = (Path("/etc/apt/sources.list.d"), Path("/etc/apt/sources.list"))
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
PACKAGE = "criu"
LIB = "usr/lib/x86_64-linux-gnu"
TIMEOUT = 300


class CriuUnavailable(RuntimeError):
    """criu could not be installed, or the kernel refuses what it needs; the message says why."""


@dataclass(frozen=True)
class Criu:
    """An unpacked criu: `argv()` is the command line that runs it through its own loader."""

    root: Path

    @property
    def binary(self) -> Path:
        return self.root / "usr/sbin/criu"

    @property
    def loader(self) -> Path:
        return self.root / LIB / "ld-linux-x86-64.so.2"

    def argv(self, *args: str) -> list[str]:
        library_path = f"{self.root / LIB}:{self.root / 'lib/x86_64-linux-gnu'}"
        return [str(self.loader), "--library-path", library_path, str(self.binary), *args]

    def version(self) -> str:
        proc = subprocess.run(self.argv("--version"), capture_output=True, text=True, check=False)
        return proc.stdout.split("\n", 1)[0].removeprefix("Version:").strip()

    def check(self) -> None:
        """`criu check`: the kernel offers what dump and restore need, or CriuUnavailable."""
        proc = subprocess.run(
            self.argv("check"), capture_output=True, text=True, timeout=60, check=False
        )
        if proc.returncode != 0:
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise CriuUnavailable(
                f"`criu check` fails on this kernel ({os.uname().release}): {tail}"
            )


def debian_mirror() -> str:
    """The Debian archive this machine's own apt uses (or `$RESUME_CHECK_DEBIAN_MIRROR`): trixie
    comes from the same place as the system's packages, so no other host is ever contacted."""
    if os.environ.get(MIRROR_VAR):
        return os.environ[MIRROR_VAR]
    folder, legacy = SYSTEM_SOURCES
    for path in sorted(folder.glob("*.sources")):
        for stanza in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            fields = dict(
                line.split(":", 1) for line in stanza.splitlines() if ":" in line and line[0] != "#"
            )
            uris, suites = fields.get("URIs", "").split(), fields.get("Suites", "").split()
            if (
                uris
                and any(not s.endswith("-security") for s in suites)
                and "main" in fields.get("Components", "")
            ):
                return uris[0]
    if legacy.exists():
        for line in legacy.read_text(encoding="utf-8", errors="replace").splitlines():
            words = [w for w in line.split() if not w.startswith("[")]
            if len(words) >= 4 and words[0] == "deb" and not words[2].endswith("-security"):
                return words[1]
    raise CriuUnavailable(
        f"no Debian archive in this machine's apt sources; set ${MIRROR_VAR} to one"
    )


def install_dir() -> Path:
    return Path(os.environ.get(DIR_VAR) or DEFAULT_DIR)


class PrivateApt:
    """apt-get and apt-cache with a sources list, state and cache of their own (Debian 13)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for sub in ("etc", "state/lists/partial", "cache/archives/partial", "debs"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        sources = root / "etc/sources.list"
        sources.write_text(
            f"deb [signed-by={KEYRING}] {debian_mirror()} {SUITE} main\n", encoding="utf-8"
        )
        (root / "state/status").write_text("", encoding="utf-8")
        self.options = [
            f"-oDir::Etc::SourceList={sources}",
            "-oDir::Etc::SourceParts=/dev/null",
            f"-oDir::State={root / 'state'}",
            f"-oDir::State::status={root / 'state/status'}",
            f"-oDir::Cache={root / 'cache'}",
            "-oAPT::Architecture=amd64",
            "-oDebug::NoLocking=1",
            "-oAPT::Sandbox::User=root",
        ]

    def _run(self, tool: str, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run(
            [tool, *self.options, *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=TIMEOUT,
            check=False,
        )
        if proc.returncode != 0:
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            raise CriuUnavailable(f"{tool} {' '.join(args[:2])} failed: {tail}")
        return proc.stdout

    def update(self) -> None:
        self._run("apt-get", "update")

    def closure(self, package: str) -> list[str]:
        """The package and everything it depends on (recursively; no recommends)."""
        flags = ("--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks")
        flags += ("--no-replaces", "--no-enhances", "--no-pre-depends")
        text = self._run("apt-cache", "depends", "--recurse", *flags, package)
        names = {line.strip() for line in text.splitlines() if line and not line[0].isspace()}
        return sorted(n for n in names if not n.startswith("<"))

    def download(self, packages: list[str]) -> list[Path]:
        self._run("apt-get", "download", *packages, cwd=self.root / "debs")
        return sorted((self.root / "debs").glob("*.deb"))


def install(target: Path | None = None) -> Criu:
    """Downloads and unpacks criu and its libraries into `target` unless already there."""
    target = target or install_dir()
    criu = Criu(target)
    if criu.binary.exists() and criu.loader.exists():
        return criu
    for tool in ("apt-get", "apt-cache", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise CriuUnavailable(f"installing criu needs {tool} (a Debian system)")
    if not KEYRING.exists():
        raise CriuUnavailable(f"installing criu needs the Debian archive keyring {KEYRING}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(target.with_name(target.name + ".lock")):
        if criu.binary.exists():
            return criu  # another process installed it while we waited
        building = target.with_name(target.name + ".building")
        shutil.rmtree(building, ignore_errors=True)
        apt = PrivateApt(building / "apt")
        apt.update()
        for deb in apt.download(apt.closure(PACKAGE)):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(building)], check=True, timeout=120)
        shutil.rmtree(building / "apt")
        building.rename(target)
    if not Criu(target).binary.exists():
        raise CriuUnavailable(f"the {PACKAGE} package unpacked no usr/sbin/criu into {target}")
    return Criu(target)


@functools.cache
def ensure() -> Criu:
    """criu, installed if needed and checked against this kernel (asked once per process)."""
    if os.geteuid() != 0:
        raise CriuUnavailable("criu needs root")
    criu = install()
    criu.check()
    return criu


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__.splitlines()[0]
)
@click.argument("action", type=click.Choice(("install", "check")))
def main(action: str) -> None:
    """Exit code 3 when criu cannot be installed or the kernel refuses it: an environment
    problem, as for the checker."""
    try:
        criu = install() if action == "install" else ensure()
    except CriuUnavailable as exc:
        print(f"criu: {exc}", file=sys.stderr)
        raise SystemExit(3) from None
    print(f"criu {criu.version()} in {criu.root}" + (": check ok" if action == "check" else ""))


if __name__ == "__main__":
    main()
