--------------------------- MODULE TraceResumeCore ---------------------------
(***************************************************************************)
(* Trace validation for ResumeCore: each event of a trace (format v1) is   *)
(* one ResumeCore action with the event's fields as its parameters.        *)
(* Hidden choices -- what a killed process's store had already taken --    *)
(* stay free, and TLC searches over them.                                  *)
(***************************************************************************)
EXTENDS ResumeCore, TraceValidation

\* The workflow record ResumeCore expects, built from a trace header.
WorkflowOf(h) ==
    [nodes |-> h.workflow.nodes,
     pred |-> [n \in h.workflow.nodes |-> {e[1] : e \in {e \in h.workflow.edges : e[2] = n}}],
     body |-> [n \in h.workflow.nodes |-> <<>>],
     durability |-> h.guarantees.durability,
     effects |-> h.guarantees.effects]

\* As many processes as the batch's busiest trace had.
TraceProcs == 1..IdCounts.proc

Observed(e) == [id |-> e.checkpoint, parent |-> e.parent, done |-> e.done,
                ok |-> e.ok, rv |-> e.values]

\* The pending write a put_writes event acknowledges.
WriteOf(e) ==
    [at |-> e.checkpoint, node |-> e.node, kind |-> e.kind,
     val |-> CASE e.kind = "interrupt" -> e.index
               [] e.kind = "resume" -> e.value
               [] OTHER -> 0]

\* The ResumeCore action that event e records.
Apply(e) ==
    \/ e.ev = "load" /\ Load(e.proc, Observed(e))
    \/ e.ev = "fork" /\ Fork(e.proc, e.parent, e.checkpoint, Observed(e))
    \/ e.ev = "resume" /\ Resume(e.proc, e.value, <<e.checkpoint, e.node, e.index>>)
    \/ e.ev = "task_start" /\ StartTask(e.proc, e.node)
    \/ e.ev = "effect" /\ Effect(e.proc, e.node, e.intent)
    \/ e.ev = "interrupt" /\ Interrupt(e.proc, e.node, e.index, e.value)
    \/ e.ev = "task_end" /\ EndTask(e.proc, e.node, e.outcome)
    \/ e.ev = "step" /\ e.parent = run[e.proc].at /\ Step(e.proc, e.checkpoint, e.done)
    \/ e.ev = "put" /\ Persist(e.proc, e.checkpoint)
    \/ e.ev = "put_writes" /\ PersistWrite(e.proc, WriteOf(e))
    \/ e.ev = "finish" /\ Finish(e.proc)
    \/ e.ev = "crash" /\ \E kept \in SUBSET (mem[e.proc].cks \cup mem[e.proc].ws) :
                            Crash(e.proc, kept)

Broken == {name \in DOMAIN Properties : ~Properties[name]}

\* Printed in a diagnosis run, at the end of the prefix a trace matched: the
\* moves the reference runtime expected next.
TraceExpected == Matched => PrintT(<<"rc-expected", t, Expected>>)

TraceInit ==
    /\ t \in DOMAIN Traces
    /\ l = 1
    /\ InitWith(WorkflowOf(Traces[t].header))

TraceNext ==
    /\ ~Matched
    /\ Apply(Ev)
    /\ Advance(Broken', Summary')
=============================================================================
