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

\* The moves the reference runtime could make next, as partial trace events:
\* what a trace that stops matching was expected to do instead.
Expected ==
    LET up == agent.up /\ head # None
        ready == up /\ agent.got /\ ~Busy /\ Current \in Turns
    IN  (IF head = None THEN {[ev |-> "start"]} ELSE {})
        \cup (IF ready /\ Todo(Current) # {}
              THEN {[ev |-> "cmd_start", turn |-> Current, cmd |-> Min(Todo(Current))]}
              ELSE {})
        \cup (IF up /\ Busy THEN {[ev |-> "cmd_end", turn |-> Current, cmd |-> agent.cmd]}
              ELSE {})
        \cup (IF ready /\ Todo(Current) = {} THEN {[ev |-> "boundary", turn |-> Current]}
              ELSE {})
        \cup (IF up /\ decided < agent.sent THEN {[ev |-> "checkpoint", turn |-> agent.sent]}
              ELSE {})
        \cup (IF up THEN {[ev |-> "job_done", turn |-> c[2]]
                             : c \in {c \in DOMAIN imgs : ~imgs[c].done}}
              ELSE {})
        \cup (IF /\ up /\ head.turn < decided
                 /\ Complete("files", LatestImg("files", decided))
                 /\ Complete("procs", LatestImg("procs", decided))
              THEN {[ev |-> "publish", turn |-> decided]} ELSE {})
        \cup (IF /\ up /\ ~agent.got /\ agent.sent \in Turns
                 /\ (agent.sent \notin resp \/ agent.sent \in stale)
              THEN {[ev |-> "response", turn |-> agent.sent]} ELSE {})
        \cup (IF /\ up /\ ~agent.got /\ agent.sent \in resp \ stale
                 /\ agent.sent <= head.turn
              THEN {[ev |-> "release", turn |-> agent.sent]} ELSE {})
        \cup (IF ~agent.up /\ head # None THEN {[ev |-> "restore", turn |-> head.turn]} ELSE {})

\* What a conforming trace showed: whether RestoreConsistency and
\* RewindConsistency were put to the test by a restore or a rewind, or held
\* only vacuously.
Summary == [restore |-> IF rest = None THEN "none" ELSE "consistent",
            rewind |-> IF rew = None THEN "none" ELSE "consistent"]

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
