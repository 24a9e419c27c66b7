---------------------------- MODULE SimResumeCore ----------------------------
(***************************************************************************)
(* The bench's traces, from the contract itself: TLC simulates the         *)
(* reference runtime of ResumeCore (MCResumeCore's Run and Fault: loads,   *)
(* steps, tasks, effects, interrupts and answers, saves, crashes keeping   *)
(* any part of what was in flight, time-travel forks, update_state edits)  *)
(* on a plan with a loop, a fan-out and interrupts, and prints each        *)
(* behaviour's observed history (`hist`, every move as an event) once it   *)
(* has at least TraceEvents events and its last invocation returned.       *)
(* bench/simulate.py turns each printed history into a trace; the judge    *)
(* must call every one of them `conforms`.  Not a model-checking instance  *)
(* (no MC prefix): its behaviours are far too long to enumerate, so TLC    *)
(* walks them at random (`-simulate`); `resume-check spec` walks it too    *)
(* (manifest.json's "walks"), and no walk may break a property: it goes    *)
(* where the bounded models do not reach.                                  *)
(***************************************************************************)
EXTENDS MCResumeCore

CONSTANT TraceEvents   \* a history is printed at the first return after this many events

\* A, a fan-out of B (b1 fires an effect and asks, b2 does nothing), C asking
\* twice around an effect, A again (a loop), and a fan-out of D (one fires an
\* effect, one asks).
Bench == (0 :> {[path |-> "a", node |-> "A", body |-> <<1>>]}
          @@ 1 :> {[path |-> "b1", node |-> "B", body |-> <<2, 0>>],
                   [path |-> "b2", node |-> "B", body |-> <<>>]}
          @@ 2 :> {[path |-> "c", node |-> "C", body |-> <<0, 3, 0>>]}
          @@ 3 :> {[path |-> "a", node |-> "A", body |-> <<1>>]}
          @@ 4 :> {[path |-> "d1", node |-> "D", body |-> <<4>>],
                   [path |-> "d2", node |-> "D", body |-> <<0>>]})

SimWorkflows ==
    {[durability |-> d, effects |-> [default |-> g, kinds |-> {}], fencing |-> f, plan |-> Bench] :
        d \in Durabilities, g \in Levels, f \in Fencings}

\* The behaviour is long enough and its last invocation returned: every chain's run
\* ended and nothing made is in flight (a complete trace).
Done ==
    /\ Len(hist) >= TraceEvents /\ ending \in {"done", "parked", "failed"}
    /\ \A q \in Procs : inflight[q].cks = {}   \* (an edit's checkpoint is not still in flight)

\* Always true: prints the history (and the workflow it ran) of a finished behaviour.
\* TLC checks an invariant on every successor of a state, not only on the one its walk
\* goes on with: a finished successor left aside is printed too, and the walk's own
\* later history extends all of it but its last event (bench/simulate.py drops it).
Printed == Done => PrintT(<<"sim-trace", wf, hist>>)

\* A read changes nothing but the history, and is enabled whenever no process runs:
\* a walk would spend a third of its moves on reads.  Never two in a row.
OneRead == ReadLast' => ~ReadLast
SimSpec == MCInit /\ [][MCNext /\ OneRead]_<<vars, faults>>

\* A finished behaviour is not extended: its walk ends there; nor is one whose last move
\* broke a property (TLC, run with -continue, reports it): no printed history has a bad move.
SimBounds == MCBounds /\ ~Done /\ broke = {}
=============================================================================
