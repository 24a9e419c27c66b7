"""`resume-check run crewai`: CrewAI Flows with @persist on SQLite under SIGKILL, reviews, forks."""

from rctools.crewai import matrix
from rctools.suite.command import suite_command

command = suite_command(
    "crewai",
    matrix.SUITE,
    """CrewAI Flows with class-level @persist on SQLite: SIGKILL at every method boundary
and inside methods, resume by kickoff(inputs={"id": ...}), forks by
restore_from_state_id, asynchronous human feedback answered and re-answered (ResumeCore).""",
)
