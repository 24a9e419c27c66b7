"""Several TLC runs in one JVM, for the many small runs of `resume-check spec`.

A mutant row of `resume-check spec` costs about a CPU-second, nearly all of it fixed: JVM
start-up, loading TLC's classes, interpreting and compiling the code SANY and TLC run. The
driver `java/resumecheck/WarmTLC.java` (compiled with the trace data override, see
:mod:`resumecheck.tlc.override`) runs them one after another in one JVM. TLC 2.15 keeps its
state in static fields, so each run loads TLC's classes in a class loader of its own (TLC's
own test suite does the same); SANY, TLC's parser, which the TLA+ Toolbox runs again and again
in one JVM, is loaded once per driver and stays compiled, with what it keeps between runs put
back before each one. Each run's stdout and stderr go to files of its own and are read by the
same parser as a plain run's (:mod:`resumecheck.tlc.output`).

A run that kills the driver (System.exit, a JVM crash, SIGKILL), escapes it with an exception,
or makes the shared parser ask for a class that is not its own, is run again alone by
:func:`resumecheck.tlc.runner.run_tlc`, so its answer is a plain TLC's; the next run starts a
new driver. `$RESUME_CHECK_TLC_JVM` chooses: `shared` (the default), `loader-per-run` (the
driver, with SANY loaded anew for every run too), `per-run` (a JVM per run, as without javac).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from resumecheck import tempdirs
from resumecheck.errors import ToolchainError
from resumecheck.tlc import cds, override
from resumecheck.tlc.locate import find_jar, find_java
from resumecheck.tlc.output import Collector, TLCResult, result_of
from resumecheck.tlc.runner import (
    jvm_options,
    kill,
    run_tlc,
    spawn_kept,
    system_properties,
    tlc_arguments,
)

__all__ = ["MODE_ENV", "Pool", "Runner", "WarmTLC", "held", "plain", "run", "runner"]

MODE_ENV = "RESUME_CHECK_TLC_JVM"
"""`shared` (the default), `loader-per-run` or `per-run`: see the module's docstring."""

MODES = ("shared", "loader-per-run", "per-run")

MAIN_CLASS = "resumecheck.WarmTLC"

Runner = Callable[..., TLCResult]
"""Model-checks a module with a configuration beside it, one TLC worker, no deadlock check:
`run(module, config)`, or `run(module, config, extra_args=[...])` for another mode of TLC's
(`-simulate`: random walks deeper than a model checker's bounds)."""


def plain(module: Path, config: Path, **options: Any) -> TLCResult:
    """A JVM of its own for one run (`options` as :func:`run_tlc` takes them; one worker
    unless told)."""
    options.setdefault("workers", 1)
    return run_tlc(module, config, **options)


def _mode() -> str:
    choice = os.environ.get(MODE_ENV, "").strip().lower() or "shared"
    if choice not in MODES:
        raise ToolchainError(f"{MODE_ENV}={choice!r}: use {', '.join(MODES)}")
    return choice


def _discard(stream: IO[str]) -> None:
    with contextlib.suppress(OSError, ValueError):  # closed under it: the driver is gone
        stream.read()


class WarmTLC:
    """One driver JVM, used by one thread: started on first use, started again after it died
    (or when a run asks for another heap than the one it was started with)."""

    def __init__(self, classes: Path, *, shared_parser: bool = True, archive: bool = False) -> None:
        self._classes = classes
        self._shared_parser = shared_parser
        self._archive = archive
        self._process: subprocess.Popen[str] | None = None
        self._heap: int | None = None
        self._folder: Path | None = None
        self._drain: threading.Thread | None = None
        self._sharing: cds.Sharing | None = None
        self._ids = itertools.count(1)
        self.restarts = 0
        """How many drivers died: under a run (each such run was run again alone), or
        between runs (found dead by the next, which started another)."""
        self.fallbacks = 0
        """How many runs were run again alone (the driver crashed, or refused a class)."""
        self.retired = 0
        """How many drivers ended after an answer (a heap past 1 GiB, or a refused class)."""

    @property
    def heap(self) -> int | None:
        """The heap cap (bytes) its JVM was, or will be, started with."""
        return self._heap

    @property
    def pid(self) -> int | None:
        """The driver's process id while one runs."""
        return None if self._process is None else self._process.pid

    def run(
        self,
        module: Path,
        config: Path,
        *,
        library_paths: Sequence[Path] = (),
        workers: int = 1,
        check_deadlock: bool = False,
        extra_args: Sequence[str] = (),
        on_line: Callable[[str], None] | None = None,
        classpath: Sequence[Path] = (),
        properties: Mapping[str, str] | None = None,
        heap: int | None = None,
    ) -> TLCResult:
        """What :func:`run_tlc` gives for the same arguments (a plain run's answer), from a
        run in the driver. `on_line` sees TLC's lines as they come, in the calling thread: the
        driver writes them to a file, read while the run goes on. The JVM's options are the
        driver's, so a `heap` other than the one it was started with starts another; a run
        that asks for none (an explanation or a witness after a judge run: a few short
        prefixes) takes the driver as it is, instead of restarting it without a cap and again
        with one for the next judge run."""
        options: dict[str, Any] = {
            "library_paths": library_paths,
            "workers": workers,
            "check_deadlock": check_deadlock,
            "extra_args": extra_args,
            "on_line": on_line,
            "classpath": classpath,
            "properties": properties,
            "heap": heap,
        }
        module, config = module.resolve(), config.resolve()
        spec = str(module.with_suffix(""))
        run_options = _run_options(library_paths, classpath, properties or {})
        words = [spec, *run_options, *extra_args]
        if config.parent != module.parent or any(c in w for w in words for c in "\t\n"):
            return plain(module, config, **options)  # the protocol: one line, tab-separated
        if heap is not None and heap != self._heap:
            self.close()
            self._heap = heap
        metadir = tempdirs.mkdtemp("tlc-")
        try:
            out, err = metadir / "stdout", metadir / "stderr"
            # The config by its name: TLC resolves it in the main module's folder.
            arguments = tlc_arguments(
                spec, config.name, str(metadir), workers, check_deadlock, extra_args
            )
            started = time.monotonic()
            ident = str(next(self._ids))
            shown = 0
            if on_line is None:
                status = self._ask(ident, out, err, run_options, arguments)
            else:  # TLC's lines as they come, in this thread, as a plain run gives them
                asked = _Asking(self._ask, ident, out, err, run_options, arguments)
                with _Tail(out) as tail:
                    while not asked.done.wait(_TAIL_SECONDS):
                        for line in tail.lines():
                            on_line(line)
                            shown += 1
                status = asked.wait()
            seconds = time.monotonic() - started
            if status is None:
                self.fallbacks += 1
                return plain(module, config, **options)
            collector = Collector()
            lines = _whole_lines(out.read_text(encoding="utf-8", errors="replace"))
            for line in lines:
                collector.feed(line)
            if not collector.saw_marker and status != 0:
                # TLC did not start: let a plain run say why
                return plain(module, config, **options)
            for line in lines[shown:] if on_line is not None else ():
                on_line(line)
            stdout = "\n".join(lines) + ("\n" if lines else "")
            stderr = err.read_text(encoding="utf-8", errors="replace")
            return result_of(collector, stdout, exit_code=status, seconds=seconds, stderr=stderr)
        finally:
            shutil.rmtree(metadir, ignore_errors=True)

    def _ask(
        self, ident: str, out: Path, err: Path, options: list[str], arguments: list[str]
    ) -> int | None:
        """The exit status of one run in the driver; None when it crashed or the driver died."""
        process = self._driver()
        assert process.stdin is not None and process.stdout is not None
        fields = [ident, str(out), str(err), str(len(options)), *options, *arguments]
        try:
            process.stdin.write("\t".join(fields) + "\n")
            process.stdin.flush()
            reply = process.stdout.readline()
        except OSError:  # BrokenPipeError: the driver is gone
            reply = ""
        if not reply:
            self.restarts += 1
            self.close()
            return None
        answered, status, *rest = [*reply.rstrip("\n").split("\t"), ""]
        if rest[:1] == ["retire"]:  # its heap grew large: it ends, the next run starts another
            self.retired += 1
            self.close()
        if answered != ident:  # out of step with this driver: never trust it again
            self.close()
            return None
        if not status.lstrip("-").isdigit():
            return None  # "crashed": the run threw out of TLC
        return int(status)

    def _driver(self) -> subprocess.Popen[str]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        if self._process is not None:  # it died since its last answer
            self.restarts += 1
        self.close()
        self._folder = tempdirs.mkdtemp("warm-")
        private_tmp = self._folder / "java-tmp"  # as run_tlc does: TLC unpacks modules there
        private_tmp.mkdir()
        java, options = find_java(), jvm_options(self._heap)
        self._sharing = cds.sharing(java, self._classes, options) if self._archive else None
        classes = self._classes if self._sharing is None else self._sharing.classpath
        command = [
            java,
            *options,
            *(self._sharing.options if self._sharing is not None else ()),
            # So that a run's class loader, and all its classes' statics hold, can be collected
            # once the run is over (WarmTLC.Exports): RMI's table is read by reflection, and
            # soft references, which the JVM otherwise keeps until its heap is nearly full,
            # are cleared at every collection (some of them reach each run's classes).
            "--add-opens=java.rmi/sun.rmi.transport=ALL-UNNAMED",
            "-XX:SoftRefLRUPolicyMSPerMB=0",
            f"-Djava.io.tmpdir={private_tmp}",
            "-cp",  # the jar too, as for a plain run; the driver loads TLC from it anew
            os.pathsep.join([str(classes), str(find_jar())]),
            MAIN_CLASS,
            str(find_jar()),
            *([] if self._shared_parser else ["--no-shared-parser"]),
        ]
        self._process = spawn_kept(command, self._folder, stdin=subprocess.PIPE)
        stderr = self._process.stderr
        assert stderr is not None
        # Runs write to files of their own; this is the driver's, read so that it never
        # blocks on a full pipe (a driver that fails shows up as a run done again alone).
        self._drain = threading.Thread(target=_discard, args=(stderr,), daemon=True)
        self._drain.start()
        return self._process

    def close(self) -> None:
        """End the driver (end of input makes it exit) and remove its folder."""
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(OSError):
                assert process.stdin is not None
                process.stdin.close()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kill(process)
                process.wait()
            if self._drain is not None:
                self._drain.join(timeout=10)
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
        if self._sharing is not None:
            self._sharing.settle()  # the class archive it wrote at its exit, if it wrote one
            self._sharing = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


_TAIL_SECONDS = 0.2


class _Asking:
    """One run's request to the driver, answered in a thread of its own, so that the calling
    thread can show the run's progress meanwhile."""

    def __init__(self, ask: Callable[..., int | None], *args: Any) -> None:
        self.status: int | None = None
        self.done = threading.Event()
        self._failure: BaseException | None = None

        def answer() -> None:
            try:
                self.status = ask(*args)
            except BaseException as failure:  # raised again in the caller
                self._failure = failure
            finally:
                self.done.set()

        threading.Thread(target=answer, daemon=True).start()

    def wait(self) -> int | None:
        self.done.wait()
        if self._failure is not None:
            raise self._failure
        return self.status


class _Tail:
    """The whole lines a run has written to its output file so far, each once."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stream: IO[str] | None = None
        self._rest = ""

    def __enter__(self) -> _Tail:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stream is not None:
            self._stream.close()

    def lines(self) -> list[str]:
        if self._stream is None:
            try:
                self._stream = self._path.open(encoding="utf-8", errors="replace", newline="")
            except FileNotFoundError:  # the driver has not opened it yet
                return []
        text = self._rest + self._stream.read()
        *whole, self._rest = text.split("\n")
        return [line.rstrip("\r") for line in whole]


def _whole_lines(text: str) -> list[str]:
    """A finished run's output as lines, split as `_Tail` splits it (so the lines it showed
    are a prefix of these)."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    return lines[:-1] if lines and not lines[-1] else lines


def _run_options(
    library_paths: Sequence[Path], classpath: Sequence[Path], properties: Mapping[str, str]
) -> list[str]:
    """A run's options in the driver's protocol: what :func:`run_tlc` puts on java's command
    line (the library path and `properties` as system properties, `classpath` before the
    jar), for this run alone."""
    classes = [f"-cp:{Path(folder).resolve()}" for folder in classpath]
    return classes + system_properties(library_paths, properties)


def _driver_classes() -> Path | None:
    """The warm driver's class folder, or None (no javac, or a build without it)."""
    classes = override.classes().warm
    if classes is None or not (classes / "resumecheck" / "WarmTLC.class").is_file():
        return None
    return classes


@contextlib.contextmanager
def runner() -> Iterator[Runner]:
    """A :data:`Runner` for the threads of a pool: one warm driver per thread (so `--jobs N`
    keeps N JVMs busy), all ended on exit; a JVM per run when there is no driver. Java and the
    driver are looked for at the first run, so rows that need no TLC need no Java."""
    mode = _mode()
    if mode == "per-run":
        yield plain
        return
    local = threading.local()
    drivers: list[WarmTLC] = []
    guard = threading.Lock()
    found: list[Path | None] = []

    def run(module: Path, config: Path, *, extra_args: Sequence[str] = ()) -> TLCResult:
        driver = getattr(local, "driver", None)
        if driver is None:
            with guard:
                if not found:
                    found.append(_driver_classes())
                classes = found[0]
            if classes is None:
                return plain(module, config, extra_args=extra_args)
            driver = local.driver = WarmTLC(classes, shared_parser=mode == "shared")
            with guard:
                drivers.append(driver)
        return driver.run(module, config, extra_args=extra_args)

    try:
        yield run
    finally:
        for driver in drivers:
            driver.close()


class Pool:
    """Warm drivers for whichever threads of a process run TLC: a run takes an idle driver
    (one started with its heap when there is one), or starts another when all are busy, and
    gives it back after. So runs at once (`judge --jobs 2`) each have a JVM of their own and
    a system property set for one run (its trace data file) never reaches another; drivers
    stay up between calls, which is what makes a judge call warm."""

    def __init__(self, mode: str, *, archive: bool = False) -> None:
        self._mode = mode
        self._archive = archive
        self._lock = threading.Lock()
        self._idle: list[WarmTLC] = []
        self._closed = False
        self._classes: list[Path | None] = []

    def run(self, module: Path, config: Path, **options: Any) -> TLCResult:
        """:func:`run_tlc`'s answer for the same arguments, from a driver when there is one
        (`timeout` is a plain run's alone: a driver cannot stop one run)."""
        if options.get("timeout") is not None:
            return run_tlc(module, config, **options)
        driver = self._take(options.get("heap"))
        if driver is None:
            return run_tlc(module, config, **options)
        try:
            return driver.run(module, config, **options)
        finally:
            self._give(driver)

    @property
    def drivers(self) -> list[WarmTLC]:
        """The idle drivers (for tests and the bench: their pids, fallbacks)."""
        with self._lock:
            return list(self._idle)

    def _take(self, heap: int | None) -> WarmTLC | None:
        with self._lock:
            if not self._classes:
                self._classes.append(_driver_classes())
            classes = self._classes[0]
            if classes is None or self._closed:
                return None
            same = [d for d in self._idle if heap is None or d.heap == heap]
            if same:
                self._idle.remove(same[-1])
                return same[-1]
            if self._idle:
                return self._idle.pop()
        return WarmTLC(classes, shared_parser=self._mode == "shared", archive=self._archive)

    def _give(self, driver: WarmTLC) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(driver)
                return
        driver.close()

    def close(self) -> None:
        """Ends the idle drivers now; a busy one ends when its run is over."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for driver in idle:
            driver.close()


_held: Pool | None = None
_holders = 0
_held_lock = threading.Lock()


@contextlib.contextmanager
def held(*, few_runs: bool = False) -> Iterator[Pool | None]:
    """While the block runs, every TLC run of :func:`run` in this process (any thread) goes
    through warm drivers kept between runs (:class:`Pool`); they end when the outermost
    block ends. Blocks nest (the pytest plugin holds one for its session, a suite's loop
    inside it another). Yields the pool, or None when `$RESUME_CHECK_TLC_JVM=per-run`.

    `few_runs` (the outermost block's): each driver will give a run or two (a `check`
    command), so drivers map the archive of TLC's classes (`resumecheck.tlc.cds`): a start
    costs less. A driver that gives many runs does better without it: the classes each run
    loads anew come from the archive only after a checksum of their bytes, and they are not
    unloaded as loaded ones are, so the heap grows to the size at which a driver retires
    (bench/results.md)."""
    global _held, _holders
    with _held_lock:
        if _holders == 0:
            mode = _mode()
            _held = None if mode == "per-run" else Pool(mode, archive=few_runs)
        _holders += 1
        pool = _held
    try:
        yield pool
    finally:
        with _held_lock:
            _holders -= 1
            ending = _held if _holders == 0 else None
            if _holders == 0:
                _held = None
        if ending is not None:
            ending.close()


def run(module: Path, config: Path, **options: Any) -> TLCResult:
    """:func:`run_tlc`'s answer: from a warm driver while :func:`held`, else (or while
    `$RESUME_CHECK_TLC_JVM=per-run`, looked at on every run) from a JVM of its own."""
    pool = _held
    if pool is None or _mode() == "per-run":
        return run_tlc(module, config, **options)
    return pool.run(module, config, **options)
