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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from resumecheck import tempdirs
from resumecheck.errors import ToolchainError
from resumecheck.tlc import override
from resumecheck.tlc.locate import find_jar, find_java
from resumecheck.tlc.output import Collector, TLCResult, result_of
from resumecheck.tlc.runner import jvm_options, kill, run_tlc, spawn, tlc_arguments

__all__ = ["MODE_ENV", "Runner", "WarmTLC", "plain", "runner"]

MODE_ENV = "RESUME_CHECK_TLC_JVM"
"""`shared` (the default), `loader-per-run` or `per-run`: see the module's docstring."""

MODES = ("shared", "loader-per-run", "per-run")

MAIN_CLASS = "resumecheck.WarmTLC"

Runner = Callable[[Path, Path], TLCResult]
"""Model-checks a module with a configuration beside it, one TLC worker, no deadlock check."""


def plain(module: Path, config: Path) -> TLCResult:
    """A JVM of its own for one run."""
    return run_tlc(module, config, workers=1)


def _mode() -> str:
    choice = os.environ.get(MODE_ENV, "").strip().lower() or "shared"
    if choice not in MODES:
        raise ToolchainError(f"{MODE_ENV}={choice!r}: use {', '.join(MODES)}")
    return choice


def _discard(stream: IO[str]) -> None:
    with contextlib.suppress(OSError, ValueError):  # closed under it: the driver is gone
        stream.read()


class WarmTLC:
    """One driver JVM, used by one thread: started on first use, started again after it died."""

    def __init__(self, classes: Path, *, shared_parser: bool = True) -> None:
        self._classes = classes
        self._shared_parser = shared_parser
        self._process: subprocess.Popen[str] | None = None
        self._folder: Path | None = None
        self._drain: threading.Thread | None = None
        self._ids = itertools.count(1)
        self.restarts = 0
        """How many drivers died under a run (each such run was run again alone)."""
        self.fallbacks = 0
        """How many runs were run again alone (the driver crashed, or refused a class)."""
        self.retired = 0
        """How many drivers ended after an answer (a heap past 1 GiB, or a refused class)."""

    @property
    def pid(self) -> int | None:
        """The driver's process id while one runs."""
        return None if self._process is None else self._process.pid

    def run(self, module: Path, config: Path) -> TLCResult:
        module, config = module.resolve(), config.resolve()
        spec = str(module.with_suffix(""))
        if config.parent != module.parent or any(c in spec for c in "\t\n"):
            return plain(module, config)  # the driver's protocol: one line, fields tab-separated
        metadir = tempdirs.mkdtemp("tlc-")
        try:
            out, err = metadir / "stdout", metadir / "stderr"
            # The config by its name: TLC resolves it in the main module's folder.
            arguments = tlc_arguments(spec, config.name, str(metadir))
            started = time.monotonic()
            status = self._ask(str(next(self._ids)), out, err, arguments)
            seconds = time.monotonic() - started
            if status is None:
                self.fallbacks += 1
                return plain(module, config)
            collector = Collector()
            lines = out.read_text(encoding="utf-8", errors="replace").splitlines()
            for line in lines:
                collector.feed(line)
            if not collector.saw_marker and status != 0:
                return plain(module, config)  # TLC did not start: let a plain run say why
            stdout = "\n".join(lines) + ("\n" if lines else "")
            stderr = err.read_text(encoding="utf-8", errors="replace")
            return result_of(collector, stdout, exit_code=status, seconds=seconds, stderr=stderr)
        finally:
            shutil.rmtree(metadir, ignore_errors=True)

    def _ask(self, ident: str, out: Path, err: Path, arguments: list[str]) -> int | None:
        """The exit status of one run in the driver; None when it crashed or the driver died."""
        process = self._driver()
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write("\t".join([ident, str(out), str(err), *arguments]) + "\n")
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
        self.close()
        self._folder = tempdirs.mkdtemp("warm-")
        private_tmp = self._folder / "java-tmp"  # as run_tlc does: TLC unpacks modules there
        private_tmp.mkdir()
        command = [
            find_java(),
            *jvm_options(),
            f"-Djava.io.tmpdir={private_tmp}",
            "-cp",  # the jar too, as for a plain run; the driver loads TLC from it anew
            os.pathsep.join([str(self._classes), str(find_jar())]),
            MAIN_CLASS,
            str(find_jar()),
            *([] if self._shared_parser else ["--no-shared-parser"]),
        ]
        self._process = spawn(command, self._folder, stdin=subprocess.PIPE)
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
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


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

    def run(module: Path, config: Path) -> TLCResult:
        driver = getattr(local, "driver", None)
        if driver is None:
            with guard:
                if not found:
                    found.append(_driver_classes())
                classes = found[0]
            if classes is None:
                return plain(module, config)
            driver = local.driver = WarmTLC(classes, shared_parser=mode == "shared")
            with guard:
                drivers.append(driver)
        return driver.run(module, config)

    try:
        yield run
    finally:
        for driver in drivers:
            driver.close()
