------------------------- MODULE MCSemanticRecovery -------------------------
(***************************************************************************)
(* Model-checking instance of SemanticRecovery: instances A (1), B (2) and *)
(* C (3) in the shapes of the schedule-form scenario and a pipeline, a     *)
(* bounded number of failures, and the values a re-sampled model may       *)
(* choose.                                                                 *)
(***************************************************************************)
EXTENDS SemanticRecovery

CONSTANTS MaxFaults, Shapes, Vals

VARIABLE faults   \* failures so far

Tools == ("book" :> "reversible" @@ "invite" :> "compensable"
          @@ "pay" :> "irreversible" @@ "lookup" :> "none")

Op(kind) == [op |-> kind]
Use(j, pre) == [op |-> "consume", from |-> j, pre |-> pre]
Call(t, k) == [op |-> "effect", tool |-> t, intent |-> k]

\* A commits a slot, then books a room; B reads the committed slot, sends an
\* invitation for it and commits.
Schedule ==
    1 :> <<Op("commit"), Call("book", 1)>>
    @@ 2 :> <<Use(1, FALSE), Call("invite", 2), Op("commit")>>

\* As Schedule, but A pays (irreversibly) after its commit.
Payment ==
    1 :> <<Call("lookup", 4), Op("commit"), Call("pay", 3), Call("book", 1)>>
    @@ 2 :> <<Use(1, FALSE), Call("invite", 2), Op("commit")>>

\* B reads A's draft, before A commits.
Precommit ==
    1 :> <<Op("emit"), Call("book", 1), Op("commit")>>
    @@ 2 :> <<Use(1, TRUE), Call("invite", 2), Op("commit")>>

\* A pipeline: B reads A's commit, C reads B's (as in diagnosis and ETL).
Chain ==
    1 :> <<Op("commit"), Call("book", 1)>>
    @@ 2 :> <<Use(1, FALSE), Call("invite", 2), Op("commit")>>
    @@ 3 :> <<Use(2, FALSE), Call("lookup", 4), Op("commit")>>

ShapeNamed == ("schedule" :> Schedule @@ "payment" :> Payment @@ "precommit" :> Precommit
               @@ "chain" :> Chain)

MCWorkloads ==
    {[insts |-> DOMAIN ShapeNamed[s], tools |-> Tools, body |-> ShapeNamed[s], vals |-> Vals]
        : s \in Shapes}

MCInit == Init /\ faults = 0

MCNext ==
    \/ Run /\ UNCHANGED faults
    \/ faults < MaxFaults /\ Fault /\ faults' = faults + 1

MCSpec == MCInit /\ [][MCNext]_<<vars, faults>>

\* States told apart by everything but the history: each state of the reference is
\* explored once, and the history predicates are checked on the history of the
\* first behaviour that reached it (a shortest one).  Without it every behaviour
\* is a state of its own.
MCView == <<wl, st, pos, ck, pt, outs, dep, fx, issued, ctl, last, tally, faults>>

TypeOK ==
    /\ \A i \in Insts : st[i] \in {"idle", "run", "failed", "exited"}
    /\ \A i \in Insts : DOMAIN ck[i] \subseteq Named
    /\ ctl.mode \in {"run", "localized", "blocked"}
    /\ last.kind \in {"none", "restore", "block", "rerun"}
=============================================================================
