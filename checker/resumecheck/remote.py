"""What a worker of `--executor` does with one shard: the worker's side of the executor.

A shard travels as data (`ShardJob`): the validated, encoded traces and the text of every
contract file the client would give TLC, so that a worker needs resume-check, Java and TLC but
none of the client's files. The worker writes the contract files into a fresh folder, one
sub-folder per folder of the client's spec path (so TLC's library path finds each module where
the client's would), judges the shard with `judge.judge_part` -- the same code, and so the same
TLC runs, as a local run -- and sends the verdicts back as data (`ShardResult`), with every path
of its folder named back as the client's.

The client side (connecting, submitting, waiting) is `resumecheck.executor`'s.
"""

from __future__ import annotations

import dataclasses
import resource
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from resumecheck import __version__, errors, tempdirs
from resumecheck.contract import Contract
from resumecheck.errors import ResumeCheckError
from resumecheck.judge import Prepared, judge_part
from resumecheck.verdict import Verdict

# What TLC and SANY read from a folder of the library path: nothing else is sent.
_SUFFIXES = (".tla", ".cfg")
_PARSING = "Parsing file "


@dataclass(frozen=True)
class ContractFiles:
    """A contract as data: the client's spec folders (in search order) and their files."""

    name: str
    folders: tuple[str, ...]
    files: tuple[tuple[int, str, bytes], ...]
    """(index of the folder, file name, content) for every module and configuration."""
    picked: tuple[tuple[int, str], ...]
    """The folder index and name of the base module, trace module and trace configuration."""

    @classmethod
    def of(cls, contract: Contract) -> ContractFiles:
        """Reads, on the client, every file of `contract`'s spec folders that TLC could use."""
        index = {folder: i for i, folder in enumerate(contract.search)}
        files = tuple(
            (i, path.name, path.read_bytes())
            for i, folder in enumerate(contract.search)
            for path in sorted(folder.iterdir())
            if path.suffix in _SUFFIXES and path.is_file()
        )
        picked = tuple(
            (index[path.parent], path.name)
            for path in (contract.base, contract.trace_module, contract.trace_config)
        )
        return cls(contract.name, tuple(map(str, contract.search)), files, picked)

    def write(self, root: Path) -> Contract:
        """The contract with its files written below `root` (folder i of the spec path as
        `root/i`)."""
        folders = tuple(root / str(i) for i in range(len(self.folders)))
        for folder in folders:
            folder.mkdir()
        for i, name, data in self.files:
            (folders[i] / name).write_bytes(data)
        base, trace_module, trace_config = (folders[i] / name for i, name in self.picked)
        return Contract(self.name, base, trace_module, trace_config, folders)


@dataclass(frozen=True)
class ShardJob:
    """One shard of a batch, as sent to a worker."""

    version: str
    contract: ContractFiles
    traces: list[Prepared]
    tolerated: frozenset[str]
    heap: int


@dataclass(frozen=True)
class Problem:
    """Why a worker gave no verdicts: a resume-check error's class name and message."""

    kind: str
    message: str

    def error(self, worker: str) -> ResumeCheckError:
        """The error as the client raises it (its class, so its exit code)."""
        cls = getattr(errors, self.kind, None)
        if not (isinstance(cls, type) and issubclass(cls, ResumeCheckError)):
            cls = errors.ExecutorError
        return cls(f"on worker {worker}: {self.message}")


@dataclass(frozen=True)
class ShardResult:
    """What a worker sends back: the verdicts in the shard's order, or the problem."""

    worker: str
    verdicts: list[Verdict]
    parsed: list[str]
    """TLC's "Parsing file" lines, with the client's paths: which contract files judged."""
    seconds: float
    cpu_seconds: float
    """This task's thread and the TLC processes it waited for."""
    problem: Problem | None = None


def judge_shard(job: ShardJob) -> ShardResult:
    """Runs on a worker: judges `job` with the contract files it carries."""
    started, cpu = time.monotonic(), _cpu()
    worker = _worker_name()
    if job.version != __version__:
        problem = Problem(
            "ExecutorError",
            f"this worker has resume-check {__version__}, the client {job.version}: "
            "install the same version on every worker",
        )
        return ShardResult(worker, [], [], 0.0, 0.0, problem)
    root = tempdirs.mkdtemp("shard-").resolve()
    back = _PathsBack(root, job.contract.folders)
    parsed: list[str] = []

    def on_line(line: str) -> None:
        if line.startswith(_PARSING):
            parsed.append(back(line))

    try:
        contract = job.contract.write(root)
        traces = [dataclasses.replace(t, contract=contract) for t in job.traces]
        verdicts = judge_part(contract, traces, on_line, job.tolerated, job.heap, 1)
    except ResumeCheckError as exc:
        problem = Problem(type(exc).__name__, back(str(exc)))
        return ShardResult(worker, [], [], time.monotonic() - started, _cpu() - cpu, problem)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for verdict in verdicts:
        verdict.reason = back(verdict.reason)
    return ShardResult(worker, verdicts, parsed, time.monotonic() - started, _cpu() - cpu)


class _PathsBack:
    """Names the worker's copies of the contract folders as the client's folders."""

    def __init__(self, root: Path, folders: tuple[str, ...]) -> None:
        # With the separator, so that folder 1 never takes the place of folder 10.
        self.pairs = [(f"{root}/{i}/", f"{folder}/") for i, folder in enumerate(folders)]

    def __call__(self, text: str) -> str:
        for mine, theirs in self.pairs:
            text = text.replace(mine, theirs)
        return text


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.thread_time() + children.ru_utime + children.ru_stime


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return "(not a Dask worker)"
