------------------------- MODULE MCDagRevisionSound -------------------------
(***************************************************************************)
(* Soundness of DagRevision's properties against their history forms.      *)
(*                                                                         *)
(* AnyMove is the trace-validation relation on a small universe: every     *)
(* move, with every choice a recorded trace could make (which path an      *)
(* accepted revision changes and to which value; what a plan cancels and   *)
(* invalidates, in which mode; which node an attempt runs and which        *)
(* attempts it consumes; which version a read returns, or that it escaped  *)
(* tracking; which branches a router's attempt chooses; which attempt     *)
(* stages, ends, commits, is rejected, publishes or revokes; what a finish *)
(* returns; a crash and a restart).  A move                                *)
(* after which some property of Properties is broken is never taken, so    *)
(* every state TLC checks ends a behaviour the contract calls conforming   *)
(* so far, and each history predicate must hold there.  A history          *)
(* predicate violated here is a hole in the operational form -- a move     *)
(* that admits a wrong choice nothing catches -- or a history form stated  *)
(* too strongly.  Histories are bounded by MaxEvents, attempt ids by       *)
(* MaxAttempts.                                                            *)
(***************************************************************************)
EXTENDS DagRevision

CONSTANTS
    Shape,        \* the workflow explored: "chain", "route", "one" or "decide"
    MaxEvents,    \* the longest history explored
    MaxAttempts,  \* attempt ids are 1..MaxAttempts, started in order
    Values,       \* the values a revision may set
    Moves         \* the kinds of move explored (a model may leave some out to go deeper)

\* A -> B: B reads the data path x, runs only while the control path c is 1
\* (it is off the route until a revision puts it on) and has an effect.
Chain == [nodes |-> {"A", "B"}, order |-> <<"A", "B">>,
          pred |-> ("A" :> {} @@ "B" :> {"A"}),
          paths |-> {"x", "c"},
          reads |-> ("A" :> {} @@ "B" :> {"x"}),
          routes |-> {[node |-> "B", path |-> "c", value |-> 1]},
          effects |-> {"B"}]

\* R -> {B1 | B2} -> J: c selects B1 (0) or B2 (1); R reads q; J has an effect.
Route == [nodes |-> {"R", "B1", "B2", "J"}, order |-> <<"R", "B1", "B2", "J">>,
          pred |-> ("R" :> {} @@ "B1" :> {"R"} @@ "B2" :> {"R"} @@ "J" :> {"B1", "B2"}),
          paths |-> {"q", "c"},
          reads |-> ("R" :> {"q"} @@ "B1" :> {} @@ "B2" :> {} @@ "J" :> {}),
          routes |-> {[node |-> "B1", path |-> "c", value |-> 0],
                      [node |-> "B2", path |-> "c", value |-> 1]},
          effects |-> {"J"}]

\* One node A with an effect, reading and routed on nothing: its output never
\* changes, so only the number of its published effects can go wrong.
One == [nodes |-> {"A"}, order |-> <<"A">>, pred |-> ("A" :> {}), paths |-> {"x"},
        reads |-> ("A" :> {}), routes |-> {}, effects |-> {"A"}]

\* C -> B where C is a router reading x: B runs only while C's current output
\* chose it (C may choose nothing).
Decide == [nodes |-> {"C", "B"}, order |-> <<"C", "B">>,
           pred |-> ("C" :> {} @@ "B" :> {"C"}),
           paths |-> {"x"},
           reads |-> ("C" :> {"x"} @@ "B" :> {}),
           routes |-> {}, branches |-> {[node |-> "B", by |-> "C", to |-> "B"]},
           effects |-> {}]

SoundWorkflow ==
    LET w == CASE Shape = "chain" -> Chain [] Shape = "route" -> Route [] Shape = "one" -> One
                  [] Shape = "decide" -> Decide
    IN  [nodes |-> w.nodes, order |-> w.order, pred |-> w.pred, paths |-> w.paths,
         reads |-> w.reads, routes |-> w.routes, effects |-> w.effects,
         branches |-> IF "branches" \in DOMAIN w THEN w.branches ELSE {},
         init |-> [p \in w.paths |-> 0], policy |-> "none", untracked |-> {}, revisable |-> {},
         irreversible |-> {}]

Att == DOMAIN att

\* Every move with every parameter a trace could give it.  A content
\* revision's value is never read (one stands for all), nor a control
\* revision's of a path no route tests (the content one stands for it); a
\* rejected revision changes nothing and no history form reads it (left out);
\* a new attempt takes the next id.
AnyMove ==
    \/ "revise" \in Moves /\
          \/ \E p \in Paths : Revise("replace", p, ver[p], 0, TRUE)
          \/ \E p \in ControlPaths, v \in Values : Revise("control", p, ver[p], v, TRUE)
    \/ "plan" \in Moves /\
          \E mode \in {"selective", "suffix", "full"}, cancel \in SUBSET InFlight,
             invalidate \in SUBSET Committed : Plan(mode, cancel, invalidate)
    \/ "start" \in Moves /\ Cardinality(Att) < MaxAttempts /\
          \E n \in Nodes, parents \in SUBSET Att : Start(Cardinality(Att) + 1, n, parents)
    \/ \E a \in Att :
          \/ "read" \in Moves /\
                \/ \E p \in Paths : \E v \in 0..ver[p] : Read(a, p, v)
                \/ ReadUnknown(a)
          \/ "route" \in Moves /\ \E to \in SUBSET Nodes : RouteTo(a, to)
          \/ "stage" \in Moves /\ \E revocable \in BOOLEAN : Stage(a, revocable)
          \/ "end" \in Moves /\ End(a)
          \/ "commit" \in Moves /\ Commit(a)
          \/ "reject" \in Moves /\ Reject(a)
          \/ "publish" \in Moves /\ Publish(a)
          \/ "revoke" \in Moves /\ Revoke(a)
    \/ "crash" \in Moves /\ Crash
    \/ "restart" \in Moves /\ Restart
    \/ "finish" \in Moves /\ \E result \in SUBSET Nodes : Finish(result)

SoundInit == InitWith(SoundWorkflow)

\* The moves after which the contract still holds: a behaviour stops where a
\* property would break, so every state TLC reaches ends a behaviour the
\* contract calls conforming so far.
SoundNext ==
    /\ Len(hist) < MaxEvents
    /\ AnyMove
    /\ \A name \in DOMAIN Properties : Properties'[name]

\* States told apart by everything but the history (as MCView does for the
\* reference), save its last event: each state of the contract is reached
\* once per last move, by a shortest behaviour, whose history the predicates
\* judge.  Without it every behaviour is a state of its own and only the
\* shortest histories could be explored; without the last event, a wrong
\* move that leaves the same state as a right one might never be judged.
SoundView == <<state, IF hist = <<>> THEN None ELSE hist[Len(hist)]>>
=============================================================================
