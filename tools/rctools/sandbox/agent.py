"""The agent process: replays a workload's turns in a sandbox under a checkpoint policy.

Run by the recorder as `python -m rctools.sandbox.agent RUN_DIR --workload W --policy P ...`,
once fresh and, after each SIGKILL, once more with `--resume`. It is the runtime under test:
it runs the tool commands, inspects each turn's effects, takes and publishes checkpoints, gates
the model's response on its turn's checkpoint, and on resume restores the sandbox from the
restore head, cuts the conversation there, fast-forwards over a cached response and re-issues
the turn that was in flight. Every move is an event of the trace (`trace.jsonl` in RUN_DIR).

Two more ways back to an earlier turn, both without a crash: `--rollback M:K` makes the agent,
once it has the model's response to turn M, throw the sandbox away and go back to the restore
point of turn K (an agent undoing a failed attempt); `--fork K` starts a rollout in a run folder
that the recorder filled with a copy of a parent run's store and trace, from the parent's
restore point of turn K. Both ask the model anew for its response to turn K (a rollout samples
again) and are `rollback` / `fork` events of the trace.

A crash point is a kill point of the suite framework's (`suite.crash.KillPoints`), one of three
instants of a turn T, named `tT-POINT` (`crash_label`):
  command     the turn's first command ran, its result was not yet recorded (in flight);
  checkpoint  the checkpoint job copied its data but did not finish (or, for a skipped
              checkpoint, before the restore point was published);
  response    the restore point is published and the model's response cached, not released.
The recorder chooses one (`$RC_KILL_AT`, e.g. `t3-checkpoint#1`) and runs this process under
the framework's harness (`suite.child.run_command`): at the point the agent stops and names
its sandbox's PID 1, and the recorder SIGKILLs that PID 1 (the sandbox's PID namespace, every
process in it) and then the agent -- the sandbox dies with its agent, as one. Run by hand with
`$RC_KILL_AT` and no harness, the agent kills both itself.
"""

from __future__ import annotations

import functools
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from resumecheck.waiting import poll

from rctools.sandbox.fanotify import FanotifyUnavailable, UpperWatch
from rctools.sandbox.inspector import MODES as INSPECTORS
from rctools.sandbox.inspector import Inspector
from rctools.sandbox.namespace import Process, Sandbox, table_digest
from rctools.sandbox.policies import POLICIES, Policy
from rctools.sandbox.processes import MODES, imager
from rctools.sandbox.scheduler import Scheduler
from rctools.sandbox.store import Store
from rctools.sandbox.tree import Manifest, manifest, tree_digest
from rctools.sandbox.workloads import WORKLOADS, Workload
from rctools.suite.crash import KillPoints
from rctools.suite.trace import TraceWriter

CRASH_POINTS = ("command", "checkpoint", "response")
F = TypeVar("F", bound=Callable[..., Any])


def crash_label(turn: int, point: str) -> str:
    """The kill point of crash point `point` (one of `CRASH_POINTS`) of turn `turn`."""
    return f"t{turn}-{point}"


@dataclass(frozen=True)
class Run:
    """One sandbox run as both its runtimes take it, the scripted agent and the host
    (`host.py`): its folder, the workload and checkpoint policy, how process images are taken
    and effects inspected, and the host's checkpoint scheduler (None: no limit)."""

    run_dir: Path
    workload: Workload
    policy: Policy
    processes: str
    inspector: str
    scheduler: Scheduler | None

    @classmethod
    def named(
        cls,
        run_dir: Path,
        workload: str,
        policy: str,
        processes: str,
        inspector: str,
        slots: Path | None,
    ) -> Run:
        """The run the command line names (`run_options`, `resume_options`, `slots_option`)."""
        scheduler = Scheduler.at(slots) if slots else None
        return cls(run_dir, WORKLOADS[workload], POLICIES[policy], processes, inspector, scheduler)


class Agent:
    def __init__(
        self,
        run: Run,
        latency: float,
        *,
        rollback: tuple[int, int] | None = None,
        stop_after: int | None = None,
    ) -> None:
        run_dir = run.run_dir
        self.workload, self.policy, self.latency = run.workload, run.policy, latency
        self.imager = imager(run.processes)
        self.rollback, self.stop_after = rollback, stop_after
        self.scheduler = run.scheduler or Scheduler.unlimited()
        self.base = run_dir / "base"
        self.upper, self.work = run_dir / "upper", run_dir / "work"
        self.store = Store(run_dir / "store")
        # one more process of the run: numbered on from what the earlier ones wrote
        self.trace = TraceWriter.continuing(run_dir / "trace.jsonl", timestamps=True)
        self.sandbox = Sandbox(self.base, self.upper, self.work)
        self.kill = KillPoints(first=self._dies_first)  # the crash points
        self.pid_file = run_dir / "sandbox.pid"
        self.base_manifest: Manifest = manifest(self.base)
        self.latest = {"files": 0, "procs": 0}
        self.inspector_mode = run.inspector
        self.watch: UpperWatch | None = None
        self.inspector = Inspector({}, table_digest([]))
        self.sent = 0

    def _watch(self) -> UpperWatch | None:
        """The kernel's file events on the upper layer, from now on (None in tree mode)."""
        if self.inspector_mode != "fanotify":
            return None
        if self.watch is None:
            try:
                self.watch = UpperWatch(self.upper)
            except FanotifyUnavailable as exc:
                raise SystemExit(f"the fanotify inspector is unavailable here: {exc}") from exc
        self.watch.drain()  # what the runtime itself wrote (a restored layer) is no turn's
        return self.watch

    # --- faults -------------------------------------------------------------------------------

    def _dies_first(self) -> list[int]:
        """At a crash point, what is killed before the agent: the sandbox's PID 1, and every
        process of the sandbox with it (the PID namespace ends with its init)."""
        return [self.sandbox.init_pid] if self.sandbox.init_pid else []

    def crash_point(self, turn: int, point: str) -> None:
        """Crash point `point` of turn `turn`: where the cell's SIGKILL may land."""
        self.kill.hit(crash_label(turn, point))

    # --- start and restore --------------------------------------------------------------------

    def _start_sandbox(self, *, restoring: bool = False) -> None:
        self.sandbox.start(restoring=restoring)
        self.pid_file.write_text(str(self.sandbox.init_pid))

    def fresh(self) -> None:
        self._start_sandbox()
        self.inspector = Inspector({}, table_digest([]), self._watch())
        self.store.publish(0, 0, 0)
        self.store.cache_response(0, self.workload.response(0))
        files, procs = self._observe()
        self.trace.event("start", files=files, procs=procs)

    def resume(self) -> None:
        """After a crash: back to the restore head; a cached response to it is kept."""
        head = self.store.head()
        if head is None:
            raise SystemExit("nothing to resume: no restore head")
        self._restore_to(head, "restore", keep_response=True)

    def rewind(self, turn: int, event: str) -> None:
        """A rollback or a fork: back to the published restore point of `turn`, which becomes
        the restore head; the model is asked again for its response to that turn."""
        self.sandbox.kill()  # the live sandbox is thrown away, not checkpointed
        self._restore_to(self.store.rewind(turn), event, keep_response=False)

    def _restore_to(self, point: dict[str, int], event: str, *, keep_response: bool) -> None:
        turn = point["turn"]
        self.store.drop_after(turn)
        self.store.restore_upper(point["files_at"], self.upper)
        shutil.rmtree(self.work, ignore_errors=True)
        history = self.store.cut_conversation(turn)
        self.store.drop_responses_after(turn if keep_response or turn == 0 else turn - 1)
        self._start_sandbox(restoring=True)
        table = self.store.restore_procs(point["procs_at"], self.sandbox, self.imager)
        self._await_processes(table_digest(table))
        files, procs = self._observe()
        self.trace.event(event, turn=turn, files=files, procs=procs, history=history)
        self.inspector = Inspector(
            self.store.upper_at(point["files_at"]), table_digest(table), self._watch()
        )
        stopped = self.sandbox.freeze()  # as at a boundary: the counters of stopped processes
        self.inspector.settled(self.sandbox.wakeups(), self.sandbox.running)
        Sandbox.thaw(stopped)
        self.latest = {"files": point["files_at"], "procs": point["procs_at"]}
        self.sent = history

    def _await_processes(self, want: str, timeout: float = 5.0) -> None:
        poll(lambda: table_digest(self.sandbox.processes()) == want, timeout=timeout, every=0.01)

    def _observe(self) -> tuple[str, str]:
        """The sandbox as it is: digests of the merged workspace and of the process table."""
        return tree_digest(manifest(self.sandbox.view)), table_digest(self.sandbox.processes())

    # --- the turn loop ------------------------------------------------------------------------

    def run(self) -> None:
        turn = self.sent
        response = self._response(turn)
        self.trace.event("release", turn=turn)
        while turn < len(self.workload.turns) and turn != self.stop_after:
            turn += 1
            self._commands(turn, response["commands"])
            response = self._boundary(turn)
            if self.rollback and self.rollback[0] == turn:
                turn, self.rollback = self.rollback[1], None
                self.rewind(turn, "rollback")
                response = self._response(turn)
                self.trace.event("release", turn=turn)
        self.sandbox.kill()

    def _response(self, turn: int) -> dict[str, Any]:
        """The model's response to `turn`: from the cache (fast-forward), or a model call."""
        cached = self.store.cached_response(turn)
        if cached is not None:
            return cached
        return self._call_model(turn)

    def _call_model(self, turn: int) -> dict[str, Any]:
        time.sleep(self.latency)  # the model stand-in: a recorded response after a delay
        response = self.workload.response(turn)
        self.store.cache_response(turn, response)
        self.trace.event("response", turn=turn)
        return response

    def _commands(self, turn: int, commands: list[str]) -> None:
        results = []
        for index, command in enumerate(commands, start=1):
            self.trace.event("cmd_start", turn=turn, cmd=index, command=command)
            result = self.sandbox.run(command)
            if index == 1:
                self.crash_point(turn, "command")
            self.trace.event("cmd_end", turn=turn, cmd=index, out=result.digest, exit=result.exit)
            results.append({"command": command, "exit": result.exit, "output": result.output})
        self.store.record_results(turn, results)

    def _boundary(self, turn: int) -> dict[str, Any]:
        frozen = self.sandbox.freeze()  # one instant: nothing in the sandbox moves meanwhile
        upper = manifest(self.upper, upper=True)
        table = self.sandbox.processes()
        files, procs = self._observe()
        changed = self.inspector.classify(
            upper, table, self.sandbox.wakeups(), self.sandbox.running
        )
        self.trace.event(
            "boundary",
            turn=turn,
            files=files,
            procs=procs,
            changed=sorted(changed),
            file_events=self.inspector.events,
            touched=len(self.inspector.since),
        )
        capture = self.policy.capture(changed)
        self.trace.event("checkpoint", turn=turn, capture=sorted(capture))
        previous = (self.latest["files"], self.inspector.last_upper)
        self.inspector.took(capture, upper, table)
        for kind in capture:
            self.latest[kind] = turn
        model: dict[str, Any] = {}
        call = threading.Thread(target=lambda: model.update(self._call_model(turn)))
        call.start()
        failed: list[BaseException] = []

        def job() -> None:
            try:
                self._job(turn, capture, upper, table, previous, frozen)
            except BaseException as exc:  # the agent must fail, not release without a point
                failed.append(exc)

        worker = threading.Thread(target=job)
        worker.start()
        worker.join()
        call.join()
        if failed:
            raise failed[0]
        self.crash_point(turn, "response")
        self.trace.event("release", turn=turn)
        return model

    def _job(
        self,
        turn: int,
        capture: set[str],
        upper: Manifest,
        table: list[Process],
        previous: tuple[int, Manifest],
        frozen: list[int],
    ) -> None:
        """The checkpoint job: writes the images, then publishes the turn's restore point.

        The sandbox stays frozen until the files are copied and the processes dumped, so both
        images are the boundary's instant; the crash point "checkpoint" falls before the job
        is done. The job waits for a slot of the host's checkpoint scheduler, which all the
        sandboxes of this machine share."""
        crash = functools.partial(self.crash_point, turn, "checkpoint")
        written: dict[str, str] = {}
        sizes = {"files": 0, "procs": 0}
        try:
            with self.scheduler.slot(turn, bool(capture)) as held:
                if "files" in capture:
                    delta = previous if self.policy.file_images == "delta" else None
                    image = self.store.write_files_image(
                        turn, self.upper, upper, delta, self.base_manifest, before_done=crash
                    )
                    written["files"], sizes["files"] = image.digest, image.bytes
                if "procs" in capture:
                    image = self.store.write_procs_image(turn, table, self.sandbox, self.imager)
                    self.inspector.settled(self.sandbox.wakeups(), self.sandbox.running)
                    written["procs"], sizes["procs"] = image.digest, image.bytes
        finally:
            Sandbox.thaw(frozen)
        if "files" not in capture:
            crash()
        if capture:
            self.trace.event(
                "job_done",
                turn=turn,
                files=written.get("files"),
                procs=written.get("procs"),
                bytes=sizes["files"] + sizes["procs"],
                files_bytes=sizes["files"],
                procs_bytes=sizes["procs"],
                queued=round(held.queued, 6),
                seconds=round(held.seconds, 6),
            )
        self.store.publish(turn, self.latest["files"], self.latest["procs"])
        self.trace.event(
            "publish", turn=turn, files_at=self.latest["files"], procs_at=self.latest["procs"]
        )


def run_options(func: F) -> F:
    """RUN_DIR, --workload, --policy: the same on the agent and on the host (`host.py`)."""
    for option in reversed(
        [
            click.argument("run_dir", type=click.Path(path_type=Path)),
            click.option("--workload", type=click.Choice(sorted(WORKLOADS)), required=True),
            click.option("--policy", type=click.Choice(sorted(POLICIES)), required=True),
        ]
    ):
        func = option(func)
    return func


def resume_options(func: F) -> F:
    """--resume, --processes, --inspector: the same on the agent and on the host."""
    for option in reversed(
        [
            click.option("--resume", is_flag=True, help="restore from the restore head"),
            click.option("--processes", type=click.Choice(MODES), default="criu"),
            click.option("--inspector", type=click.Choice(INSPECTORS), default="fanotify"),
        ]
    ):
        func = option(func)
    return func


slots_option = click.option(
    "--slots", type=click.Path(path_type=Path), help="the host's checkpoint scheduler folder"
)


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__.splitlines()[0]
)
@run_options
@click.option("--latency", type=float, default=0.05, help="model call, seconds")
@resume_options
@click.option("--rollback", help="M:K, once turn M is done go back to turn K")
@click.option("--fork", type=int, help="start as a rollout from the point of turn K")
@click.option("--stop-after", type=int, help="end after turn N (a fork's parent)")
@slots_option
def main(
    run_dir: Path,
    workload: str,
    policy: str,
    latency: float,
    resume: bool,
    processes: str,
    inspector: str,
    rollback: str | None,
    fork: int | None,
    stop_after: int | None,
    slots: Path | None,
) -> None:
    """The flags as `recorder._argv` passes them, each in full (click takes no abbreviation of a
    flag, as argparse did). Exit code 0 when the run ends; a crash point (`$RC_KILL_AT`) ends
    it by SIGKILL."""
    rollback_to = None
    if rollback:
        later, earlier = rollback.split(":")
        rollback_to = (int(later), int(earlier))
    agent = Agent(
        Run.named(run_dir, workload, policy, processes, inspector, slots),
        latency,
        rollback=rollback_to,
        stop_after=stop_after,
    )
    if resume:
        agent.resume()
    elif fork is not None:
        agent.rewind(fork, "fork")
    else:
        agent.fresh()
    agent.run()


if __name__ == "__main__":
    main()
