"""`resume-check run llamaindex`: LlamaIndex Workflows snapshots under SIGKILL, answers, forks."""

from rctools.llamaindex import matrix
from rctools.suite.command import suite_command

command = suite_command(
    "llamaindex",
    matrix.SUITE,
    """LlamaIndex Workflows with ctx.to_dict() stored at every step boundary: SIGKILL at
every step boundary and inside steps, resume by run(ctx=Context.from_dict(...)),
wait_for_event answered and re-answered, forks from older snapshots (ResumeCore).""",
)
