"""Agent workloads replayed from scripted turns: the model's recorded responses.

Response i of a workload is the list of tool commands of turn i+1 (response 0 answers the task);
the last response ends the task. The base image is built here, deterministically, so every run
starts from the same bytes: a source tree, a package tarball to install, a small server with its
client. Commands print only what depends on the sandbox's state (no timestamps, no PIDs), so a
command re-run on the same state prints the same thing -- which the contract checks.
"""

from __future__ import annotations

import gzip
import io
import random
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

REPOS = Path(__file__).with_name("repos")

# The servers listen on an abstract unix socket (no file; scoped to the sandbox's network
# namespace): criu 4.1 cannot dump an AF_INET socket on this kernel (6.18 answers its
# getsockopt(SO_PASSCRED) on a TCP socket with EOPNOTSUPP).
CLIENT = """\
import socket, sys, time

deadline = time.monotonic() + 5
while True:
    try:
        conn = socket.socket(socket.AF_UNIX)
        conn.settimeout(5)
        conn.connect("\\0rc-server")
        break
    except OSError:
        if time.monotonic() > deadline:
            print("no server")
            sys.exit(1)
        time.sleep(0.02)
conn.sendall(sys.argv[1].encode() + b"\\n")
print(conn.makefile().readline().strip())
"""

# Keeps its state in a file of the workspace: a restore of the files restores it.
FILE_SERVER = """\
import os, socket

LOG = "data/hits.log"
srv = socket.socket(socket.AF_UNIX)
srv.bind("\\0rc-server")
srv.listen()
while True:
    conn, _ = srv.accept()
    request = conn.makefile().readline().strip()
    if request == "hit":
        with open(LOG, "a") as log:
            log.write("hit\\n")
    hits = sum(1 for _ in open(LOG)) if os.path.exists(LOG) else 0
    conn.sendall(b"pong\\n" if request == "ping" else f"hits={hits}\\n".encode())
    conn.close()
"""

# Keeps its state in memory only: re-spawning it from its command line loses the count; a criu
# image keeps it.
MEMORY_SERVER = """\
import socket

hits = 0
srv = socket.socket(socket.AF_UNIX)
srv.bind("\\0rc-server")
srv.listen()
while True:
    conn, _ = srv.accept()
    request = conn.makefile().readline().strip()
    if request == "hit":
        hits += 1
    conn.sendall(b"pong\\n" if request == "ping" else f"hits={hits}\\n".encode())
    conn.close()
"""

TOOL = """\
#!/bin/sh
echo "tool 1.0 ($(ls "$(dirname "$0")/../lib/tool" | wc -l) modules)"
"""


@dataclass(frozen=True)
class Workload:
    """Scripted turns; `rollback` (M, K): the suite's rollback run goes back from turn M to
    turn K; `fork_at` K and `rollouts`: its fork run forks after turn K into these workloads
    (each starts with the same K turns as this one)."""

    name: str
    description: str
    turns: tuple[tuple[str, ...], ...]
    rollback: tuple[int, int] | None = None
    fork_at: int | None = None
    rollouts: tuple[str, ...] = ()
    repo: str | None = None  # the base image is this repository of `repos/`, not the demo tree

    def response(self, turn: int) -> dict[str, object]:
        """The model's recorded response to turn `turn` (0: to the task)."""
        if turn < len(self.turns):
            return {"turn": turn, "commands": list(self.turns[turn])}
        return {"turn": turn, "final": f"{self.name}: done"}

    def build_base(self, root: Path) -> None:
        """Writes the base image (the sandbox before turn 1) into `root`: the demo tree (a
        source tree, a package to install, servers and their client), or `repo`."""
        if self.repo:
            shutil.copytree(REPOS / self.repo, root)
            return
        rng = random.Random(7)
        (root / "src").mkdir(parents=True)
        (root / "data").mkdir()
        (root / "pkgs").mkdir()
        (root / "README.md").write_text("# demo project\nBuild with the tool package.\n")
        (root / "notes.txt").write_text("agent notes\n")
        words = [rng.choice(["alpha", "beta", "gamma", "delta", "omega"]) for _ in range(400)]
        (root / "src" / "words.txt").write_text("\n".join(words) + "\n")
        for i in range(20):
            (root / "src" / f"mod{i:02}.py").write_text(f"VALUE = {i}\n" * 40)
        (root / "client.py").write_text(CLIENT)
        (root / "server.py").write_text(FILE_SERVER)
        (root / "memserver.py").write_text(MEMORY_SERVER)
        (root / "pkgs" / "tool-1.0.tar.gz").write_bytes(_package(rng))


def _package(rng: random.Random) -> bytes:
    """A package of about 1 MiB: a launcher script and binary-like modules. The same bytes in
    every run: the gzip header's time is fixed (tarfile's "w:gz" writes the current time, which
    made two runs' base images, and so their final states, differ)."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        members = [("bin/tool", TOOL.encode(), 0o755)]
        members += [(f"lib/tool/mod{i:02}.so", rng.randbytes(32 * 1024), 0o644) for i in range(32)]
        members.append(("share/doc/tool/README", b"tool 1.0\n", 0o644))
        for name, content, mode in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(content), mode, 1_700_000_000
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


SERVER_UP = "python3 {script} </dev/null >/dev/null 2>&1 &"

DEV_TASK_START = (
    ("ls src", "cat README.md"),
    (
        "mkdir -p prefix && tar -xzf pkgs/tool-1.0.tar.gz -C prefix",
        "prefix/bin/tool --version",
        "rm pkgs/tool-1.0.tar.gz",
    ),
    (
        "sort src/words.txt > .sorted.tmp && uniq -c .sorted.tmp > .counts.tmp",
        "wc -l < .counts.tmp && rm -f .sorted.tmp .counts.tmp",
    ),
    (SERVER_UP.format(script="server.py"), "python3 client.py ping"),
    ("python3 client.py hit",),
)
# The tests' verdict without their timing line: a re-run prints what the first run printed.
UNITTEST = "python3 -m unittest test_stats 2>&1 | grep -E '^(FAIL|ERROR|OK|FAILED)'"
CODE_REPAIR = (
    ("ls", "cat README.md"),
    (UNITTEST,),
    ("grep -n -A 2 'def mean' stats.py",),
    ("sed -i 's/(len(values) - 1)/len(values)/' stats.py", "grep -n 'len(values)' stats.py"),
    (UNITTEST,),
    ("sed -n '/def median/,$p' stats.py",),
    (
        "sed -i 's/^    return ordered\\[middle\\]$/    return (ordered[middle - 1] + "
        "ordered[middle]) \\/ 2/' stats.py",
    ),
    (UNITTEST,),
    ("python3 cli.py corpus.txt > .report.tmp && cat .report.tmp && rm .report.tmp",),
    ("python3 cli.py corpus.txt > REPORT.txt", UNITTEST),
)
PACK = "tar --sort=name --mtime=@0 --owner=0 --group=0 -cf - build | gzip -n > build.tgz"
SHELL_HEAVY = (
    ("find . -type f | sort | head -n 12", "wc -l src/*.py | tail -n 1"),
    ("grep -rl 'VALUE = 1' src | sort", "grep -c alpha src/words.txt"),
    ("sort src/words.txt | uniq -c | sort -rn | head -n 3",),
    (
        "mkdir -p build && for f in src/mod0*.py; do sed s/VALUE/CONST/ $f > build/${f#src/}; done",
        "ls build | wc -l",
    ),
    ("head -n 2 build/mod03.py", "grep -c CONST build/mod07.py"),
    (PACK + " && rm -r build", "tar -tzf build.tgz | wc -l"),
    ("tr -s ' ' '\\n' < README.md | sort -u | head -n 5", "md5sum build.tgz | cut -c1-8"),
    (SERVER_UP.format(script="server.py"), "python3 client.py ping"),
    ("LC_ALL=C sort -u src/words.txt | tr '\\n' ' '", "ls -1 | wc -l"),
    ("python3 client.py count", "find . -name '*.tmp' | wc -l"),
    ("cat notes.txt", "tar -xzOf build.tgz build/mod01.py | head -n 1"),
    ("echo 'packed build.tgz' >> notes.txt", "tail -n 1 notes.txt"),
)
MEMORY_START = (
    (SERVER_UP.format(script="memserver.py"), "python3 client.py ping"),
    ("python3 client.py hit",),
)

WORKLOADS = {
    w.name: w
    for w in (
        Workload(
            "dev-task",
            "explore, install a package and delete its tarball, temp files, start a server, "
            "query it, append, a failing command, read-only turns",
            (
                *DEV_TASK_START,
                ("echo 'checked the server' >> notes.txt", "tail -n 2 notes.txt"),
                ("cat missing.txt", "python3 client.py count"),
                ("grep -c . notes.txt", "python3 client.py count"),
            ),
            rollback=(6, 2),
            fork_at=5,
            rollouts=("dev-task", "dev-task-alt"),
        ),
        Workload(
            "dev-task-alt",
            "dev-task's first five turns, then another attempt: more hits, the package removed",
            (
                *DEV_TASK_START,
                ("python3 client.py hit", "python3 client.py count"),
                ("rm -r prefix", "ls"),
            ),
        ),
        Workload(
            "memory-server",
            "a server that counts requests in memory, queried on later turns",
            (*MEMORY_START, ("python3 client.py hit",), ("python3 client.py count",)),
            rollback=(4, 2),
            fork_at=2,
            rollouts=("memory-server", "memory-server-alt"),
        ),
        Workload(
            "memory-server-alt",
            "memory-server's first two turns, then three more hits and a count",
            (*MEMORY_START, ("python3 client.py hit",) * 3, ("python3 client.py count",)),
        ),
        Workload(
            "code-repair",
            "a small repository with two bugs: read it, run its tests, fix both with sed, run "
            "the tests again, write a report",
            CODE_REPAIR,
            repo="textstats",
        ),
        Workload(
            "shell-heavy",
            "pipelines over the demo tree (find, grep, sort, sed, tar), a build folder packed "
            "and removed, a server started and queried",
            SHELL_HEAVY,
        ),
    )
}
