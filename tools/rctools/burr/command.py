"""`resume-check run burr`: Burr's SQLitePersister under SIGKILL."""

from rctools.burr import matrix
from rctools.suite.command import suite_command

command = suite_command(
    "burr",
    matrix.SUITE,
    """Burr applications on SQLitePersister: SIGKILL at every action boundary and inside
actions, recovery by initialize_from(resume_at_next_action=True), concurrent resumers
(ResumeCore).""",
)
