------------------------ MODULE TraceSemanticRecovery ------------------------
(***************************************************************************)
(* Trace validation for SemanticRecovery: each event of a trace (format    *)
(* v1) is one SemanticRecovery action with the event's fields as its       *)
(* parameters.  Which live output a consume read, when a producer emitted  *)
(* and committed the same value, stays free and TLC searches over it.      *)
(***************************************************************************)
EXTENDS SemanticRecovery, TraceValidation

\* The workload record SemanticRecovery expects, built from a trace header.
WorkloadOf(h) ==
    LET tools == h.workflow.tools IN
    [insts |-> h.workflow.instances,
     tools |-> [k \in {r.name : r \in tools} |-> (CHOOSE r \in tools : r.name = k).policy],
     body |-> [i \in h.workflow.instances |-> <<>>],
     vals |-> {}]

\* The SemanticRecovery action that event e records.
Apply(e) ==
    \/ e.ev = "begin" /\ Begin(e.instance)
    \/ e.ev = "emit" /\ Emit(e.instance, e.value)
    \/ e.ev = "commit" /\ Commit(e.instance, e.value)
    \/ e.ev = "consume" /\ \E o \in outs : /\ o.inst = e.from /\ o.val = e.value
                                           /\ Consume(e.instance, o)
    \/ e.ev = "effect" /\ Effect(e.instance, e.tool, e.intent, e.replayed)
    \/ e.ev = "exit" /\ Exit(e.instance)
    \/ e.ev = "checkpoint" /\ Checkpoint(e.instance, e.point)
    \/ e.ev = "fail" /\ Fail(e.instance)
    \/ e.ev = "localize" /\ Localize(e.instance, e.with)
    \/ e.ev = "restore" /\ Restore(e.instance, e.boundary, e.point, e.also)
    \/ e.ev = "block" /\ Block
    \/ e.ev = "rerun" /\ Rerun

\* The controller's moves the reference runtime could make next, as partial
\* trace events: what a trace that stops matching was expected to do instead.
\* The instances' own next actions depend on their bodies, which traces do
\* not declare.
Expected ==
    IF ctl.mode = "localized"
    THEN LET i == ctl.loc
             adm == AdmissibleOf(i)
         IN IF adm = {} THEN {[ev |-> "block"], [ev |-> "rerun"]}
            ELSE LET latest == {c \in adm : \A d \in adm : At(i, d[1], d[2]) <= At(i, c[1], c[2])}
                 IN  {[ev |-> "restore", instance |-> i, boundary |-> c[1]] :
                        c \in {c \in latest : c[1] # "point"}}
                     \cup {[ev |-> "restore", instance |-> i, boundary |-> "point", point |-> c[2]] :
                            c \in {c \in latest : c[1] = "point"}}
    ELSE IF ctl.mode = "run"
    THEN {[ev |-> "localize", instance |-> i] : i \in Failed}
    ELSE {}

\* What a conforming trace showed: its recovery decisions, and the blocks
\* taken although an admissible checkpoint existed.
Summary ==
    [restores |-> tally.restores, blocks |-> tally.blocks,
     needless_blocks |-> tally.needless, reruns |-> tally.reruns]

Broken == {name \in DOMAIN Properties : ~Properties[name]}

\* Printed in a diagnosis run, at the end of the prefix a trace matched: the
\* moves the reference controller expected next.
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
