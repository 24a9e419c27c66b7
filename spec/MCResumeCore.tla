---------------------------- MODULE MCResumeCore ----------------------------
(***************************************************************************)
(* Model-checking instance of ResumeCore: one chain, small plans with a    *)
(* loop, a fan-out of one node and an interrupt, bounded faults (crashes,  *)
(* forks, edits) and checkpoint ids.                                       *)
(***************************************************************************)
EXTENDS ResumeCore, ResumeCoreHistory

CONSTANTS MaxFaults, MaxCheckpoints, Durabilities, Plans, Levels, Fencings

VARIABLE faults   \* crashes, forks and edits so far

\* A, then two tasks of node B (a fan-out, as Send makes): b1 fires an
\* effect and asks for input, b2 does nothing; then A again (a loop).
Loop == (0 :> {[path |-> "a", node |-> "A", body |-> <<1>>]}
         @@ 1 :> {[path |-> "b1", node |-> "B", body |-> <<2, 0>>],
                  [path |-> "b2", node |-> "B", body |-> <<>>]}
         @@ 2 :> {[path |-> "a", node |-> "A", body |-> <<1>>]})

\* One task that asks twice and fires an effect in between.
Ask == (0 :> {[path |-> "a", node |-> "A", body |-> <<0, 1, 0>>]})

PlanNamed == ("loop" :> Loop @@ "ask" :> Ask)

MCWorkflows ==
    {[durability |-> d, effects |-> [default |-> g, kinds |-> {}], fencing |-> f,
      plan |-> PlanNamed[s]] : s \in Plans, d \in Durabilities, g \in Levels, f \in Fencings}

MCInit == Init /\ faults = 0

MCNext ==
    \/ Run /\ UNCHANGED faults
    \/ faults < MaxFaults /\ Fault /\ faults' = faults + 1

MCSpec == MCInit /\ [][MCNext]_<<vars, faults>>

\* Bounds the model: few checkpoints.
MCBounds == Cardinality(DOMAIN ck) <= MaxCheckpoints

MCSymmetry == Permutations(Procs)

\* A read changes nothing but the history: told apart, so that the history
\* predicates are checked on it too.
ReadLast == hist # <<>> /\ hist[Len(hist)].ev = "read"

\* States told apart by everything but the history: each state of the reference is
\* explored once, and the history predicates are checked on the history of the
\* first behaviour that reached it (a shortest one).  Without it every behaviour
\* is a state of its own and no configuration here would end.
MCView == <<wf, ck, latest, sched, wr, aw, ans, dlv, closed, run, alive, holders, inflight,
            ledger, crashes, ending, broke, faults, ReadLast>>

TypeOK ==
    /\ \A p \in Procs : alive[p] \in {"down", "up", "ended"}
    /\ \A c \in DOMAIN ck : ck[c].st \in {"made", "stored", "lost"}
    /\ ending \in {"none", "running", "crashed", "done", "parked", "failed"}
=============================================================================
