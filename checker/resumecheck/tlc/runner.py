"""Run TLC as a subprocess; :mod:`resumecheck.tlc.output` reads what it prints.

TLC's verdict is data, not an exception: a violated invariant is the *answer* resume-check is
after. So :func:`run_tlc` returns every verdict (OK, violation, deadlock, spec error, ...) as a
value and raises only when TLC could not give one (no Java, no jar, timeout, JVM crash).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from resumecheck import tempdirs
from resumecheck.errors import TLCError, ToolchainError, UsageError
from resumecheck.tlc.locate import find_jar, find_java
from resumecheck.tlc.output import Collector, TLCResult, result_of

__all__ = [
    "JAVA_OPTS_ENV",
    "jvm_options",
    "kill",
    "run_tlc",
    "spawn",
    "spawn_kept",
    "system_properties",
    "tlc_arguments",
]

JAVA_OPTS_ENV = "RESUME_CHECK_JAVA_OPTS"


def jvm_options(heap: int | None = None) -> list[str]:
    """The JVM options of every TLC run (and of the warm driver, `resumecheck.tlc.warm`)."""
    # TLC asks for the throughput collector; without it every run opens with warning 2401.
    # The client compiler only: a TLC run here lasts seconds, and the optimizing compiler's
    # threads cost more CPU than they win back (bench/results.md: a 10,000-event trace and a
    # batch of 1,000 traces both take about a fifth less CPU). $RESUME_CHECK_JAVA_OPTS comes
    # after, so `-XX:TieredStopAtLevel=4` there brings it back.
    # A heap cap (--max-heap) before $RESUME_CHECK_JAVA_OPTS, whose -Xmx wins.
    return [
        "-XX:+UseParallelGC",
        "-XX:TieredStopAtLevel=1",
        *([f"-Xmx{max(1, heap >> 20)}m"] if heap else []),
        *shlex.split(os.environ.get(JAVA_OPTS_ENV, "")),
    ]


def _command(
    java: str,
    jar: Path,
    module: Path,
    config: Path,
    metadir: str,
    *,
    library_paths: Sequence[Path],
    workers: int,
    check_deadlock: bool,
    extra_args: Sequence[str],
    classpath: Sequence[Path] = (),
    properties: Mapping[str, str] | None = None,
    heap: int | None = None,
) -> list[str]:
    command = [java, *jvm_options(heap)]
    # TLC unpacks its standard modules (TLC.tla, Naturals.tla, ...) into java.io.tmpdir and
    # deletes them on exit; concurrent runs sharing /tmp then read each other's half-written or
    # deleted files (tlaplus/tlaplus#378). Each run gets a private temporary folder.
    private_tmp = Path(metadir) / "java-tmp"
    private_tmp.mkdir(exist_ok=True)
    command.append(f"-Djava.io.tmpdir={private_tmp}")
    command += system_properties(library_paths, properties or {})
    # Extra classes (TLC's module overrides) come first, so that they win over the jar's.
    search = os.pathsep.join([*(str(Path(p).resolve()) for p in classpath), str(jar)])
    command += ["-cp", search, "tlc2.TLC"]
    return command + tlc_arguments(
        module.stem, str(config), metadir, workers, check_deadlock, extra_args
    )


def system_properties(library_paths: Sequence[Path], properties: Mapping[str, str]) -> list[str]:
    """A run's `-D` options: its module folders as TLC's library path, then `properties`
    (a plain run puts them on java's command line, the warm driver sets them for one run)."""
    options = []
    if library_paths:
        folders = os.pathsep.join(str(Path(folder).resolve()) for folder in library_paths)
        options.append(f"-DTLA-Library={folders}")
    return options + [f"-D{name}={value}" for name, value in sorted(properties.items())]


def tlc_arguments(
    spec: str,
    config: str,
    metadir: str,
    workers: int = 1,
    check_deadlock: bool = False,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The arguments of `tlc2.TLC` (its `main`, or the warm driver's copy of it)."""
    arguments = ["-tool", "-workers", str(workers), "-metadir", metadir]
    if not check_deadlock:
        arguments.append("-deadlock")  # TLC's flag *disables* deadlock checking
    return [*arguments, *extra_args, "-config", config, spec]


def kill(process: subprocess.Popen[str]) -> None:
    """Kill TLC's whole process group (it was started as a session leader)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def run_tlc(
    module_path: Path,
    config_path: Path,
    *,
    library_paths: Sequence[Path] = (),
    workers: int = 1,
    check_deadlock: bool = False,
    extra_args: Sequence[str] = (),
    timeout: float | None = None,
    on_line: Callable[[str], None] | None = None,
    classpath: Sequence[Path] = (),
    properties: Mapping[str, str] | None = None,
    heap: int | None = None,
) -> TLCResult:
    """Model-check ``module_path`` with ``config_path`` and return TLC's verdict.

    TLC runs in the module's directory (so modules beside it are found), with
    ``library_paths`` as extra module folders and a throw-away ``-metadir`` (TLC's state files
    never land in the user's tree). ``on_line`` sees each raw stdout line as it arrives, for
    progress display. ``$RESUME_CHECK_JAVA_OPTS`` adds JVM options (e.g. ``-Xss16m -Xmx4g``).
    ``classpath`` folders go before the jar (module overrides), ``properties`` become ``-D``
    system properties, ``heap`` (bytes) the JVM's ``-Xmx``.

    Raises :class:`ToolchainError` when java or the jar is missing or unusable,
    :class:`UsageError` when the module or config file does not exist, and :class:`TLCError`
    on timeout or when the JVM does not start; every TLC verdict is returned, never raised.
    """
    module = Path(module_path).resolve()
    config = Path(config_path).resolve()
    for path, what in ((module, "TLA+ module"), (config, "TLC config")):
        if not path.is_file():
            raise UsageError(f"{what} {path} does not exist")
    java, jar = find_java(), find_jar()
    metadir = str(tempdirs.mkdtemp("tlc-"))
    try:
        command = _command(
            java,
            jar,
            module,
            config,
            metadir,
            library_paths=library_paths,
            workers=workers,
            check_deadlock=check_deadlock,
            extra_args=extra_args,
            classpath=classpath,
            properties=properties,
            heap=heap,
        )
        return _run(command, module.parent, jar, timeout=timeout, on_line=on_line)
    finally:
        shutil.rmtree(metadir, ignore_errors=True)


# Linux's prctl(2), looked up before any fork: a child of a threaded parent should run no
# more than it must between fork and exec (no import, no symbol lookup).
_PRCTL = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """In the child, before exec: the kernel kills it when the thread that started it dies.

    TLC runs in its own session (so a terminal's Ctrl-C reaches resume-check, which stops it
    cleanly); without this, a resume-check killed by SIGKILL or a timeout would leave a JVM
    behind that keeps a core busy for as long as the model takes. `parent` is the pid that
    started the child: if it died before the request was made, the child stops at once."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


def spawn(command: list[str], cwd: Path, *, stdin: int) -> subprocess.Popen[str]:
    """Start a JVM in its own session, text pipes for stdout and stderr, that dies with the
    thread that started it (see :func:`_die_with_parent`)."""
    try:
        return subprocess.Popen(
            command,
            cwd=cwd,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            start_new_session=True,
            preexec_fn=functools.partial(_die_with_parent, os.getpid()),
        )
    except OSError as exc:
        raise ToolchainError(f"cannot start {command[0]}: {exc}") from exc


_kept: ThreadPoolExecutor | None = None
_kept_lock = threading.Lock()


def _forget_kept() -> None:
    global _kept
    _kept = None  # a forked child has the object but not its thread


os.register_at_fork(after_in_child=_forget_kept)


def spawn_kept(command: list[str], cwd: Path, *, stdin: int) -> subprocess.Popen[str]:
    """:func:`spawn`, from one thread kept for the life of this process: for a JVM that
    outlives the thread that asks for it (a warm driver is started by whichever thread runs
    first -- a pool thread of `judge --jobs 2`, a thread waiting for a driver's answer -- and
    serves later runs from others). It still dies with this process."""
    global _kept
    with _kept_lock:
        if _kept is None:
            _kept = ThreadPoolExecutor(max_workers=1, thread_name_prefix="resume-check-spawn")
        kept = _kept
    return kept.submit(spawn, command, cwd, stdin=stdin).result()


def _run(
    command: list[str],
    cwd: Path,
    jar: Path,
    *,
    timeout: float | None,
    on_line: Callable[[str], None] | None,
) -> TLCResult:
    started = time.monotonic()
    process = spawn(command, cwd, stdin=subprocess.DEVNULL)
    assert process.stdout is not None and process.stderr is not None
    stderr_parts: list[str] = []
    stderr_stream = process.stderr
    drain = threading.Thread(target=lambda: stderr_parts.append(stderr_stream.read()), daemon=True)
    drain.start()
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        kill(process)

    timer = threading.Timer(timeout, expire) if timeout is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    collector = Collector()
    lines: list[str] = []
    try:
        for raw in process.stdout:
            line = raw.rstrip("\r\n")
            lines.append(line)
            if on_line is not None:
                on_line(line)
            collector.feed(line)
        exit_code = process.wait()
    finally:
        if timer is not None:
            timer.cancel()
        if process.poll() is None:  # on_line raised, or KeyboardInterrupt: do not leave TLC
            kill(process)
            process.wait()
        drain.join(timeout=10)
        process.stdout.close()
        stderr_stream.close()
    seconds = time.monotonic() - started
    stderr = "".join(stderr_parts)
    if timed_out.is_set():
        raise TLCError(f"TLC did not finish within {timeout:g} s and was stopped")
    if not collector.saw_marker and exit_code != 0:
        detail = stderr.strip().splitlines()[-3:] or [f"exit code {exit_code}"]
        if "Could not find or load main class" in stderr:
            raise ToolchainError(f"{jar} does not contain TLC (tlc2.TLC): " + " ".join(detail))
        raise TLCError("java could not start TLC: " + " ".join(detail))
    stdout = "\n".join(lines) + ("\n" if lines else "")
    return result_of(collector, stdout, exit_code=exit_code, seconds=seconds, stderr=stderr)
