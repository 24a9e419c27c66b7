"""Semantic recoverability under test: tool-agent workflows on LangGraph, restore policies.

`resume-check run recovery` records one SemanticRecovery trace per (policy, workload) and lets
the spec judge them; see docs/recovery.md.
"""
