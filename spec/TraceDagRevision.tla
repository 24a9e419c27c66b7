-------------------------- MODULE TraceDagRevision --------------------------
(***************************************************************************)
(* Trace validation for DagRevision: each event of a trace (format v1) is  *)
(* one DagRevision action with the event's fields as its parameters.  The  *)
(* workflow, its paths and who reads them come from the trace's header.    *)
(* Nothing is hidden: the affected set, the suffix and the oracle are      *)
(* computed by the contract from what the events recorded.                 *)
(***************************************************************************)
EXTENDS DagRevision, TraceValidation

\* The initial value of path p: declared in the header, else 0.
InitialValue(w, p) ==
    IF \E v \in w.values : v.path = p THEN (CHOOSE v \in w.values : v.path = p).value ELSE 0

\* The workflow record DagRevision expects, built from a trace header.  The
\* reference-runtime fields (policy, untracked, revisable) are unused here.
WorkflowOf(h) ==
    LET w == h.workflow
        ns == {w.nodes[i] : i \in DOMAIN w.nodes}
    IN  [nodes |-> ns,
         order |-> w.nodes,
         pred |-> [n \in ns |-> {e[1] : e \in {e \in w.edges : e[2] = n}}],
         paths |-> w.paths,
         reads |-> [n \in ns |-> {r.path : r \in {r \in w.reads : r.node = n}}],
         routes |-> w.routes,
         branches |-> w.branches,
         effects |-> w.effects,
         init |-> [p \in w.paths |-> InitialValue(w, p)],
         policy |-> "none", untracked |-> {}, revisable |-> {}, irreversible |-> {}]

\* The DagRevision action that event e records (path 0: a read tracking missed).
Apply(e) ==
    \/ e.ev = "revise" /\ Revise(e.kind, e.path, e.base, e.value, e.accepted)
    \/ e.ev = "plan" /\ Plan(e.mode, e.cancel, e.invalidate)
    \/ e.ev = "start" /\ Start(e.attempt, e.node, e.parents)
    \/ e.ev = "read" /\ IF e.path = 0 THEN ReadUnknown(e.attempt)
                                      ELSE Read(e.attempt, e.path, e.version)
    \/ e.ev = "stage" /\ Stage(e.attempt, e.revocable)
    \/ e.ev = "route" /\ RouteTo(e.attempt, e.to)
    \/ e.ev = "end" /\ End(e.attempt)
    \/ e.ev = "commit" /\ Commit(e.attempt)
    \/ e.ev = "reject" /\ Reject(e.attempt)
    \/ e.ev = "publish" /\ Publish(e.attempt)
    \/ e.ev = "revoke" /\ Revoke(e.attempt)
    \/ e.ev = "crash" /\ Crash
    \/ e.ev = "restart" /\ Restart
    \/ e.ev = "finish" /\ Finish(e.result)

\* The moves a reference runtime could make next, as partial trace events:
\* what a trace that stops matching was expected to do instead.  A running
\* attempt's next move depends on its node's reads; it is shown as end.
Expected ==
    LET one(b) == IF b THEN {1} ELSE {} IN
        {[ev |-> "plan"] : x \in one(up /\ due)}
        \cup {[ev |-> "start", node |-> n] : n \in {n \in Nodes : up /\ ~due /\ Ready(n)}}
        \cup {[ev |-> "end", attempt |-> a] : a \in {a \in InFlight : att[a].st = "run"}}
        \cup {[ev |-> IF Stale(a) THEN "reject" ELSE "commit", attempt |-> a]
                : a \in {a \in InFlight : att[a].st = "done"}}
        \cup {[ev |-> "publish", attempt |-> a] : a \in {a \in DOMAIN att : Publishable(a)}}
        \cup {[ev |-> "revoke", attempt |-> a] : a \in {a \in DOMAIN att : Revocable(a)}}
        \cup {[ev |-> "finish"] : x \in one(up /\ ENABLED RefFinish)}
        \cup {[ev |-> "restart"] : x \in one(~up)}

\* What a conforming trace showed: attempts started and committed.
Summary ==
    [attempts |-> Cardinality(DOMAIN att),
     committed |-> Cardinality({a \in DOMAIN att : att[a].st = "committed"})]

Broken == {name \in DOMAIN Properties : ~Properties[name]}

\* Printed in a diagnosis run, at the end of the prefix a trace matched: the
\* moves a reference runtime expected next.
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
