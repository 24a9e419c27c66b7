"""`--executor ADDRESS`: judge a batch's shards on the workers of a Dask cluster.

The batch is sharded as for `--jobs` (`batch.shards`, at least one shard per worker thread of
the cluster); each shard goes to a worker as data (`remote.ShardJob`) and comes back as
verdicts (`remote.ShardResult`) judged there by TLC with the same code as a local run, so a
cluster run and a local run give the same report. Dask (`distributed`, the `cluster` extra) is
imported only here and only when asked for.

ADDRESS is `tcp://HOST:PORT` (a running `dask scheduler`) or `local:N` (a `LocalCluster` of N
worker processes of one thread each on 127.0.0.1, started and stopped with the run). Whatever
goes wrong on the cluster's side ends in an `ExecutorError` (exit code 3) with what to fix,
never in a hang: waiting for a worker is bounded by `$RESUME_CHECK_EXECUTOR_WAIT`
(`WAIT_SECONDS` by default), connecting by that or `CONNECT_SECONDS`, whichever is less, and a
shard whose worker died is retried by Dask on another worker (the scheduler's
`allowed-failures`) and then reported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from resumecheck import __version__, tempdirs
from resumecheck.contract import Contract
from resumecheck.errors import ExecutorError, ResumeCheckError
from resumecheck.judge import Prepared
from resumecheck.remote import ContractFiles, ShardJob, ShardResult, judge_shard
from resumecheck.verdict import Verdict

CONNECT_SECONDS = 10.0
WAIT_SECONDS = 60.0
WAIT_ENV = "RESUME_CHECK_EXECUTOR_WAIT"
_POLL_SECONDS = 0.5
_EXTRA = "pip install 'resume-check[cluster]'"


@dataclass(frozen=True)
class Address:
    """Where shards are judged: a scheduler's `tcp://host:port`, or `local:N` workers."""

    text: str
    local_workers: int | None = None


def parse_address(text: str) -> Address:
    """`tcp://HOST:PORT` or `local:N`; anything else is a ValueError saying what is wanted."""
    wanted = "want tcp://HOST:PORT (a Dask scheduler) or local:N (N local worker processes)"
    if text.startswith("local:"):
        count = text.removeprefix("local:")
        if not count.isdigit() or not 1 <= int(count) <= 256:
            raise ValueError(f"{text!r}: N of local:N is a number of workers, 1 to 256")
        return Address(text, int(count))
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "tcp" or not parts.hostname or port is None or parts.path not in ("", "/"):
        raise ValueError(f"{text!r}: {wanted}")
    return Address(f"tcp://{parts.netloc}")


def wait_seconds() -> float:
    """How long a run waits for a worker ($RESUME_CHECK_EXECUTOR_WAIT, default WAIT_SECONDS)."""
    text = os.environ.get(WAIT_ENV, "").strip()
    try:
        seconds = float(text) if text else WAIT_SECONDS
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise ExecutorError(f"${WAIT_ENV}={text!r} is not a positive number of seconds")
    return seconds


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ExecutorError(
            f"--executor needs Dask's distributed, which is not installed: {_EXTRA}"
        ) from None
    return distributed


@contextlib.contextmanager
def connect(address: Address, note: Callable[[str], None]) -> Iterator[DaskExecutor]:
    """A client of the cluster at `address` (a local one started here for `local:N`), with at
    least one worker; closed (and a local cluster stopped) on the way out. `note` gets a line
    per shard done."""
    distributed = _distributed()
    import dask

    wait = wait_seconds()
    # Dask's own log lines (a worker lost, a connection retried) would bury the one message
    # that says what happened; it is ours to give.
    loggers = [logging.getLogger(name) for name in _dask_loggers()]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    cluster = None
    client = None
    # A shard's traces travel in its task; Dask warns about tasks above 10 MB.
    settings = {"distributed.admin.large-graph-warning-threshold": "64GB"}
    try:
        with dask.config.set(settings):
            try:
                if address.local_workers is not None:
                    cluster = distributed.LocalCluster(
                        n_workers=address.local_workers,
                        threads_per_worker=1,
                        processes=True,
                        host="127.0.0.1",
                        dashboard_address=None,
                        local_directory=str(tempdirs.mkdtemp("dask-")),
                        silence_logs=logging.CRITICAL,
                    )
                    client = distributed.Client(cluster, set_as_default=False)
                else:
                    client = distributed.Client(
                        address.text, timeout=min(wait, CONNECT_SECONDS), set_as_default=False
                    )
            except (OSError, TimeoutError) as exc:
                raise ExecutorError(
                    f"--executor {address.text}: cannot reach the Dask scheduler ({exc})"
                ) from None
            try:
                client.wait_for_workers(1, timeout=wait)
            except TimeoutError:
                raise ExecutorError(
                    f"--executor {address.text}: the scheduler has no worker after {wait:g} s; "
                    f"start one with `dask worker {address.text} --nthreads 1`"
                ) from None
            yield DaskExecutor(client, address, note, wait)
    finally:
        with contextlib.suppress(Exception):
            if client is not None:
                client.close(timeout=CONNECT_SECONDS)
        with contextlib.suppress(Exception):
            if cluster is not None:
                cluster.close(timeout=CONNECT_SECONDS)
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _dask_loggers() -> list[str]:
    """Dask's loggers: each of its modules' has a level of its own, set by Dask's config."""
    known = [
        name for name in logging.root.manager.loggerDict if name.split(".")[0] == "distributed"
    ]
    return ["distributed", *known]


class DaskExecutor:
    """`judge.Executor` on a Dask client: one task per shard, waited for with a watchdog."""

    def __init__(
        self, client: Any, address: Address, note: Callable[[str], None], wait: float
    ) -> None:
        self.client = client
        self.address = address
        self.note = note
        self.wait = wait
        self._files: dict[Contract, ContractFiles] = {}
        self._lock = threading.Lock()
        self._failed: ResumeCheckError | None = None

    def slots(self) -> int:
        return max(1, sum(self._ask(self.client.nthreads, "counting the workers").values()))

    def _ask(self, call: Callable[[], Any], doing: str) -> Any:
        """A call to the scheduler; an ExecutorError if the connection to it is gone."""
        from resumecheck.waiting import poll  # tenacity: only a run with --executor needs it

        try:
            # A client that lost the scheduler tries to reconnect for a while: waited for.
            poll(
                lambda: self.client.status != "connecting",
                timeout=CONNECT_SECONDS,
                every=_POLL_SECONDS,
            )
            if self.client.status == "running":
                return call()
            problem = f"the client is {self.client.status}"
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        raise ExecutorError(
            f"--executor {self.address.text}: lost the scheduler while {doing} ({problem})"
        )

    def judge_part(
        self,
        contract: Contract,
        traces: list[Prepared],
        on_line: Callable[[str], None],
        tolerated: frozenset[str],
        heap: int,
        shard: tuple[int, int],
    ) -> list[Verdict]:
        with self._lock:
            if contract not in self._files:
                self._files[contract] = ContractFiles.of(contract)
            files = self._files[contract]
        job = ShardJob(__version__, files, traces, tolerated, heap)
        label = f"shard {shard[0]}/{shard[1]} of {contract.name}"
        key = f"resume-check-{contract.name}-{shard[0]}of{shard[1]}-{uuid.uuid4().hex[:8]}"
        future = self._ask(
            lambda: self.client.submit(judge_shard, job, key=key, pure=False), f"sending {label}"
        )
        try:
            result = self._result(future, label)
            if result.problem is not None:
                raise result.problem.error(result.worker)
        except ResumeCheckError as exc:
            # The other shards' waits stop too: the run's answer is this error.
            with self._lock:
                self._failed = self._failed or exc
            raise
        for line in result.parsed:
            on_line(line)
        events = sum(len(t.raw.events) for t in traces)
        with self._lock:
            self.note(
                f"executor: {label} done on {result.worker}: {len(traces)} trace(s), "
                f"{events} event(s), {result.seconds:.1f} s, {result.cpu_seconds:.1f} CPU-s"
            )
        return result.verdicts

    def _result(self, future: Any, label: str) -> ShardResult:
        """The shard's result; an ExecutorError when the cluster cannot give it (a worker died
        past Dask's retries, the scheduler went away, no worker for `wait` seconds, another
        shard failed), so that a run never hangs on a cluster that lost its workers."""
        distributed = _distributed()
        alone_since: float | None = None
        where = f"--executor {self.address.text}"
        while True:
            try:
                result = future.result(timeout=_POLL_SECONDS)
            except TimeoutError:
                pass
            except distributed.KilledWorker as exc:
                raise ExecutorError(
                    f"{where}: the worker judging {label} died, and Dask gave up on it ({exc})"
                ) from None
            except CancelledError:
                raise ExecutorError(
                    f"{where}: {label} was lost: the connection to the scheduler broke"
                ) from None
            except ResumeCheckError:
                raise
            except Exception as exc:
                self._ask(lambda: None, f"judging {label}")  # raises if the scheduler is gone
                raise ExecutorError(
                    f"{where}: a worker could not judge {label} ({type(exc).__name__}: {exc}); "
                    f"each worker needs Java and resume-check {__version__} installed"
                ) from None
            else:
                if not isinstance(result, ShardResult):
                    raise ExecutorError(f"{where}: a worker sent {type(result).__name__}")
                return result
            if self._failed is not None:
                future.cancel()
                raise self._failed
            if self._ask(self.client.nthreads, f"judging {label}"):
                alone_since = None
                continue
            alone_since = alone_since or time.monotonic()
            if time.monotonic() - alone_since > self.wait:
                future.cancel()
                raise ExecutorError(
                    f"{where}: no worker left for {self.wait:g} s while judging {label}"
                )
