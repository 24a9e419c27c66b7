--------------------------- MODULE TraceSandboxCR ---------------------------
(***************************************************************************)
(* Trace validation for SandboxCR: each event of a trace (format v1) is    *)
(* one SandboxCR action with the event's fields as its parameters.  Every  *)
(* digest is an interned identifier, so equal contents are equal numbers.  *)
(* Nothing is hidden: a crash loses exactly the jobs that had not finished, *)
(* so validation is deterministic.                                          *)
(***************************************************************************)
EXTENDS SandboxCR, TraceValidation

\* The workload record SandboxCR expects, built from a trace header (the
\* fault-free boundary states are the reference runtime's, not a trace's).
WorkloadOf(h) == [cmds |-> h.workload.commands, state |-> <<>>]

\* The SandboxCR action that event e records.
Apply(e) ==
    \/ e.ev = "start" /\ Start(e.files, e.procs)
    \/ e.ev = "cmd_start" /\ CmdStart(e.turn, e.cmd)
    \/ e.ev = "cmd_end" /\ CmdEnd(e.turn, e.cmd, e.out)
    \/ e.ev = "boundary" /\ Boundary(e.turn, e.files, e.procs, e.changed)
    \/ e.ev = "checkpoint" /\ Checkpoint(e.turn, e.capture)
    \/ e.ev = "job_done" /\ JobDone(e.turn, e.files, e.procs)
    \/ e.ev = "publish" /\ Publish(e.turn, e.files_at, e.procs_at)
    \/ e.ev = "response" /\ Response(e.turn)
    \/ e.ev = "release" /\ Release(e.turn)
    \/ e.ev = "crash" /\ Crash
    \/ e.ev = "restore" /\ Restore(e.turn, e.files, e.procs, e.history)
    \/ e.ev = "rollback" /\ Rewind(e.turn, e.files, e.procs, e.history)
    \/ e.ev = "fork" /\ Rewind(e.turn, e.files, e.procs, e.history)

Broken == {name \in DOMAIN Properties : ~Properties[name]}

\* Printed in a diagnosis run, at the end of the prefix a trace matched: the
\* moves the reference runtime expected next.
TraceExpected == Matched => PrintT(<<"rc-expected", t, Expected>>)

TraceInit ==
    /\ t \in DOMAIN Traces
    /\ l = 1
    /\ InitWith(WorkloadOf(Traces[t].header))

TraceNext ==
    /\ ~Matched
    /\ Apply(Ev)
    /\ Advance(Broken', Summary')
=============================================================================
