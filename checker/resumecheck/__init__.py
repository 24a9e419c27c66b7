"""resume-check: judge checkpoint/interrupt/resume traces against a TLA+ contract.

The TLA+ modules under ``spec/`` (installed as the package ``resumecheck_spec``, found by
``resumecheck.contract``) are the single source of truth for semantics; this package only moves
data between traces, TLC and reports.
"""

__version__ = "0.1.0"
