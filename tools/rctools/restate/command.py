"""`resume-check run restate`: Restate workflows on a private restate-server under SIGKILL."""

from rctools.restate import matrix
from rctools.suite.command import suite_command

command = suite_command(
    "restate",
    matrix.SUITE,
    """Restate workflows on a private restate-server (npm package, loopback): SIGKILL of the
service process at every ctx.run boundary and inside one (Restate retries and replays its
journal), SIGKILL of restate-server itself, durable promises answered and re-answered
(ResumeCore).""",
)
