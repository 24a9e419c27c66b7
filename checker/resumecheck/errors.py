"""Errors a user can cause or meet, each knowing its exit code.

The CLI turns every one of these into a one-line message and the exit code (and, under
`--format json|junit`, into a document that carries the error); anything else that escapes is a
bug in resume-check, never the user's fault. The codes are a contract with CI scripts:

    0  every trace conforms (every row of `spec` passes)
    1  a violation or a finding: the answer is "no", and the answer is trustworthy
    2  invalid input: a bad trace, a bad command line
    3  the environment could not run it: Java, the TLC jar, the spec files, a service

A script can tell "the runtime is wrong" (1) from "the trace is wrong" (2) from "fix the
machine and try again" (3).
"""

from __future__ import annotations

from typing import ClassVar

CONFORMS, VIOLATES, INVALID_INPUT, ENVIRONMENT = 0, 1, 2, 3

EXIT_CODES: dict[int, str] = {
    CONFORMS: "all conform (spec: every configuration passes, every mutant is rejected)",
    VIOLATES: "a violation or a finding (spec: a row fails)",
    INVALID_INPUT: "invalid input: a trace that cannot be judged, a bad command line",
    ENVIRONMENT: "could not run: Java, TLC jar, spec files or a service missing or broken",
}


def exit_codes_help() -> str:
    """The exit-code table as `--help` shows it, so every command documents the same codes."""
    return "\b\nExit codes:\n" + "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES.items())


class ResumeCheckError(Exception):
    """Base class: a message for a person and the process exit code."""

    exit_code: ClassVar[int] = INVALID_INPUT
    # What a JSON or JUnit document calls this kind of failure.
    kind: ClassVar[str] = "input"


class UsageError(ResumeCheckError):
    """The command line or its inputs make no sense together."""


class EnvironmentProblem(ResumeCheckError):
    """Something outside the input must be fixed before resume-check can give an answer."""

    exit_code = ENVIRONMENT
    kind = "environment"


class ToolchainError(EnvironmentProblem):
    """Java or the TLC jar is missing or unusable."""


class SpecError(EnvironmentProblem):
    """A contract's TLA+ files are missing, or a spec folder named on the spec path is not."""


class TLCError(EnvironmentProblem):
    """TLC failed in a way that is not a verdict (parse error, crash, timeout, odd output)."""


class ExecutorError(EnvironmentProblem):
    """The cluster of `--executor` could not judge: no scheduler, no workers, a worker died."""


class InternalError(ResumeCheckError):
    """A bug in resume-check: reported as one, with exit code 3, never as the user's fault."""

    exit_code = ENVIRONMENT
    kind = "internal"
