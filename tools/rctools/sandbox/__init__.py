"""A real sandbox runtime with checkpoint/restore, replaying agent workloads (SandboxCR).

The sandbox is a mount, PID and network namespace whose workspace is an overlay mount; the
agent process (`agent.py`) runs scripted turns in it under one of four checkpoint policies
(`policies.py`), and the recorder (`recorder.py`) SIGKILLs it at every turn and recovers.
`resume-check run sandbox` (`command.py`) records the matrix and judges it against SandboxCR.
"""
