"""`run langgraph --langgraph VERSION[,VERSION...]`: the same matrix at other LangGraph versions.

A saver author supports a range of LangGraph releases and an app pins one; the recorder reads
LangGraph's private modules, which move between minor releases (`compat` keeps what moved).
Each version asked for gets an environment of its own -- a virtual environment with that
LangGraph, the SQLite saver the reference runs on, and this resume-check -- built once from the
package registry and kept in the user's cache (`platformdirs`), under a file lock so that two
runs never build one twice. The matrix then runs there as a child `resume-check run langgraph`
with the same options; its report is the version's, and the reports are put side by side.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import venv
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import click
from filelock import FileLock
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from platformdirs import user_cache_dir
from resumecheck import junit
from resumecheck.errors import EnvironmentProblem, UsageError

# The LangGraph releases the recorder records: 0.6.11, 1.0.10, 1.1.10 and 1.2.24 are recorded
# in the project's tests. 0.6 has the loop's modules under the names 1.x has (`langgraph.
# _internal`, `pregel._algo`, `pregel._loop`); below it, `BELOW` says what is missing.
OLDEST = Version("0.6")
SUPPORTED = SpecifierSet(f">={OLDEST},<1.3")
BELOW = (
    "below 0.6 the Pregel loop's modules have other names (`langgraph.pregel.loop` and "
    "`pregel.algo`, no `langgraph._internal`), an interrupt has no id, and a run takes "
    "`checkpoint_during` instead of the durability modes (sync, async, exit) the matrix records"
)
CACHE_ENV = "RESUME_CHECK_CACHE"  # where the environments are kept (default: the user cache)
STALE_AFTER = 24 * 3600  # seconds a copy of this program's code is kept unused


def installed() -> Version:
    return Version(metadata.version("langgraph"))


def parse(text: str) -> list[Version]:
    """The versions of `--langgraph`, each an exact release the recorder records."""
    out: list[Version] = []
    for word in (w.strip() for w in text.split(",")):
        if not word:
            continue
        try:
            version = Version(word)
        except InvalidVersion:
            raise UsageError(
                f"--langgraph takes exact releases such as 1.1.10, not {word!r}"
            ) from None
        if version not in SUPPORTED:
            why = (
                BELOW
                if version < OLDEST
                else "its recorder reads LangGraph's private modules, which change between "
                "minor releases"
            )
            raise UsageError(
                f"--langgraph {version}: resume-check records LangGraph{SUPPORTED}; {why}"
            )
        if version not in out:
            out.append(version)
    if not out:
        raise UsageError("--langgraph takes one or more versions, comma-separated")
    return out


def _requirements(version: Version) -> list[str]:
    """What the environment installs: LangGraph at `version`, the reference's SQLite saver
    (pip picks the release that goes with it), and resume-check's own dependencies."""
    own = [
        str(r)
        for r in map(Requirement, metadata.requires("resume-check") or [])
        if r.marker is None
    ]
    return [f"langgraph=={version}", "langgraph-checkpoint-sqlite", *own]


def _cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or user_cache_dir("resume-check")) / "langgraph"


def _sources() -> dict[str, Path]:
    """This program's packages, by import name, and the folders they are imported from (a
    source checkout's or a wheel's)."""
    import resumecheck
    import resumecheck_spec

    import rctools

    return {
        m.__name__: Path(m.__file__ or "").resolve().parent
        for m in (resumecheck, rctools, resumecheck_spec)
    }


@dataclass(frozen=True)
class Environment:
    version: Version
    python: Path
    code: Path  # this resume-check's packages, put first on the child's PYTHONPATH


def environment(version: Version) -> Environment:
    """The environment with LangGraph `version`, built on first use (one registry install)."""
    requirements = _requirements(version)
    key = hashlib.sha256(json.dumps([sys.version_info[:2], requirements]).encode()).hexdigest()[:12]
    home = _cache_root() / f"{version}-{key}"
    python = home / "bin" / "python"
    home.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(home) + ".lock"):
        if not (home / "ready").exists():
            _build(home, requirements, version)
        code = _code_copy(home)
    return Environment(version, python, code)


def _build(home: Path, requirements: list[str], version: Version) -> None:
    shutil.rmtree(home, ignore_errors=True)
    click.echo(f"resume-check: building an environment with LangGraph {version} in {home}",
               err=True)  # fmt: skip
    venv.EnvBuilder(with_pip=True, clear=True).create(home)
    done = subprocess.run(
        [str(home / "bin" / "python"), "-m", "pip", "install", "--quiet", *requirements],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-4:])
        raise EnvironmentProblem(
            f"could not install LangGraph {version} from the package registry "
            f"(pip exited {done.returncode}):\n{tail}"
        )
    (home / "ready").write_text(" ".join(requirements), encoding="utf-8")


def _code_copy(home: Path) -> Path:
    """This program's code as the child imports it: a copy of its packages under their import
    names (a checkout keeps the contracts in spec/, a wheel in resumecheck_spec/), one per
    state of the code, so two checkouts sharing the cache never run each other's code. A copy
    unused for a day is removed."""
    sources = _sources()
    stamp = hashlib.sha256()
    for name, folder in sorted(sources.items()):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                stat = path.stat()
                stamp.update(
                    f"{name}/{path.relative_to(folder)}:{stat.st_size}:{stat.st_mtime_ns}".encode()
                )
    code = home / f"resume-check-{stamp.hexdigest()[:12]}"
    if not code.exists():
        building = code.with_suffix(".partial")
        shutil.rmtree(building, ignore_errors=True)
        for name, folder in sources.items():
            shutil.copytree(folder, building / name, ignore=shutil.ignore_patterns("__pycache__"))
        building.rename(code)
    os.utime(code)
    for stale in home.glob("resume-check-*"):
        if time.time() - stale.stat().st_mtime > STALE_AFTER:
            shutil.rmtree(stale, ignore_errors=True)
    return code


@dataclass
class VersionRun:
    version: Version
    code: int
    output: str


def run_each(versions: list[Version], args: list[str], out: Path, fmt: str) -> list[VersionRun]:
    """Runs `resume-check run langgraph ARGS` at each version, its report in
    OUT/langgraph-VERSION; the installed LangGraph runs in this environment."""
    runs = []
    for version in versions:
        folder = out / f"langgraph-{version}"
        env = dict(os.environ)
        python = Path(sys.executable)
        if version != installed():
            built = environment(version)
            python = built.python
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(built.code), env.get("PYTHONPATH", "")) if p
            )
        child = [
            str(python), "-c", "from resumecheck.cli import main; main()",
            "run", "langgraph", *args, "--out", str(folder), "--format", fmt,
        ]  # fmt: skip
        done = subprocess.run(child, stdout=subprocess.PIPE, text=True, env=env)
        runs.append(VersionRun(version, done.returncode, done.stdout))
    return runs


def args_again(ctx: click.Context, leave: tuple[str, ...]) -> list[str]:
    """The options the user gave this command, as arguments again (for the child runs),
    without those named in `leave`."""
    args: list[str] = []
    for param in ctx.command.params:
        name = param.name or ""
        if not isinstance(param, click.Option) or name in leave:
            continue
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.COMMANDLINE:
            continue
        value = ctx.params[name]
        if param.is_flag and param.secondary_opts:
            args.append(param.opts[0] if value else param.secondary_opts[0])
        elif param.is_flag:
            if value:
                args.append(param.opts[0])
        else:
            for one in value if param.multiple else (value,):
                args += [param.opts[0], str(one)]
    return args


def combined(runs: list[VersionRun], fmt: str) -> tuple[str, int]:
    """The reports side by side, and the exit code: 1 when any version has a finding, else
    the highest (3 when a version could not be recorded)."""
    codes = [r.code for r in runs]
    code = 1 if 1 in codes else max(codes)
    if fmt == "json":
        documents = [
            {"langgraph": str(r.version), "exit": r.code, "report": _json(r.output)} for r in runs
        ]
        return json.dumps({"format": "resume-check/langgraph-versions", "versions": documents},
                          indent=2) + "\n", code  # fmt: skip
    if fmt == "junit":
        suites = ET.Element("testsuites", name="resume-check run langgraph --langgraph")
        for r in runs:
            for suite in ET.fromstring(r.output).iter("testsuite"):
                suite.set("name", f"langgraph {r.version}: {suite.get('name', '')}")
                suites.append(suite)
        return junit.to_xml(suites), code
    parts = [f"== LangGraph {r.version} (exit {r.code})\n{r.output}" for r in runs]
    return "\n".join(parts), code


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"unreadable": text[-2000:]}
