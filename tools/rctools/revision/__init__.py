"""Revision recovery on real LangGraph graphs: four policies, workloads, DagRevision traces.

A revision (a changed input field, a flipped route) arrives while a workflow runs. The runtime
here recovers by one of four policies (`full`, `suffix`, `stale`, `validity`) and records what
it did as a DagRevision trace; `resumecheck` judges the traces, nothing here does.
"""
