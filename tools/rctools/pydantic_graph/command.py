"""`resume-check run pydantic-graph`: pydantic-graph's FileStatePersistence under SIGKILL."""

from rctools.pydantic_graph import matrix
from rctools.suite.command import suite_command

command = suite_command(
    "pydantic-graph",
    matrix.SUITE,
    """pydantic-graph runs on FileStatePersistence: SIGKILL at every node boundary and inside
nodes, recovery by iter_from_persistence, concurrent resumers (ResumeCore).""",
)
