"""Recorders and runtimes under test: they run real workflows, inject faults and write traces.

Nothing here decides conformance; `resumecheck` judges what these tools record.
"""
