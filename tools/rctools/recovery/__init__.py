"""Semantic recoverability under test: tool-agent workflows on LangGraph, restore policies.

`resume-check run recovery` records one SemanticRecovery trace per (policy, workload) and lets
the spec judge them; `--audit` does so on generated workflows (generate.py, audit.py), `--app`
on a user's own graph (app.py, appengine.py, appmatrix.py; rctools.langgraph.appdriver runs it
sync or async, appkill.py kills its process with --kill); see docs/recovery.md.
"""
