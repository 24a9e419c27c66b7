"""Record real LangGraph runs as ResumeCore traces, with faults injected, and judge them.

The recorder only records (`recorder`, `saver`, `callbacks`, `ledger`); the spec judges.
`scenarios` are the apps, `driver` runs one scenario with one fault in forked worker
processes, `matrix` runs every cell on the saver under test and on the reference saver, and
`command` is `resume-check run langgraph`, and `app` puts a user's own graph through it
(`--app`).

The public API: `record_run` (one run of your own graph into a trace, for a test; its twin
`arecord_run` for an app whose nodes are async def) and `Recording` (the recorder it is built
on).
"""

from rctools.langgraph.record import Recording, arecord_run, record_run

__all__ = ["Recording", "arecord_run", "record_run"]
