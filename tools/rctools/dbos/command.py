"""`resume-check run dbos`: DBOS Transact on SQLite under SIGKILL, answers and forks."""

from rctools.dbos import matrix
from rctools.suite.command import suite_command

command = suite_command(
    "dbos",
    matrix.SUITE,
    """DBOS workflows on SQLite: SIGKILL at every step boundary and inside steps, recovery by
DBOS.launch() or a rerun of the workflow id, recv/send answered and re-answered, concurrent
resumers, fork_workflow (ResumeCore).""",
)
