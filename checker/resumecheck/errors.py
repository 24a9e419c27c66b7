"""Errors a user can cause or meet, each knowing its exit code.

The CLI turns every one of these into a one-line message and the exit code; anything else that
escapes is a bug in resume-check, never the user's fault.
"""

from __future__ import annotations


class ResumeCheckError(Exception):
    """Base class: a message for a person and the process exit code."""

    exit_code = 2


class ToolchainError(ResumeCheckError):
    """Java or the TLC jar is missing or unusable."""


class TLCError(ResumeCheckError):
    """TLC failed in a way that is not a verdict (parse error, crash, unexpected output)."""


class UsageError(ResumeCheckError):
    """The command line or its inputs make no sense together."""
