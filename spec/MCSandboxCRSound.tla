-------------------------- MODULE MCSandboxCRSound --------------------------
(***************************************************************************)
(* Soundness of SandboxCR's properties against their history forms.        *)
(*                                                                         *)
(* AnyMove is the trace-validation relation on a small universe: every     *)
(* move, with every parameter a recorded trace could give it (which turn   *)
(* and command, what a boundary, a job, a restore or a rewind showed, what *)
(* a command printed, what the inspector said and the policy captured,     *)
(* which images a publish names, which history a restore cut).  A move     *)
(* after which some property fails is never taken (SoundNext), so every    *)
(* state TLC reaches ends a behaviour the checker calls "conforms so far", *)
(* and each history form must hold there.  A history form violated here is *)
(* a hole in the operational form -- a move that admits a wrong choice     *)
(* nothing catches -- or a history form stated too strongly.               *)
(***************************************************************************)
EXTENDS SandboxCR

CONSTANTS
    Commands,   \* the workload explored: the number of commands in each turn
    Digests,    \* the digests a start, a boundary, a job, a restore or a rewind may report
    Outputs,    \* what a command may print
    Moves,      \* the kinds of move explored (a model may leave some out to go deeper)
    MaxEvents   \* the longest history explored

\* Workloads a configuration may explore (Commands <- one of them).
OneTurn == <<1>>
TwoTurns == <<1, 1>>
TwoQuietTurns == <<0, 0>>     \* turns that run no command: the model reaches further turns

AnyTurn == 0..Len(Commands)
AnyCmd == 1..Max({Commands[i] : i \in DOMAIN Commands})

AnyMove ==
    \/ "start" \in Moves /\ \E f, p \in Digests : Start(f, p)
    \/ "cmd" \in Moves /\ \E i \in AnyTurn, k \in AnyCmd :
          \/ CmdStart(i, k)
          \/ \E o \in Outputs : CmdEnd(i, k, o)
    \/ "boundary" \in Moves /\
          \E i \in AnyTurn, f, p \in Digests, said \in SUBSET Kinds : Boundary(i, f, p, said)
    \/ "checkpoint" \in Moves /\ \E i \in AnyTurn, capture \in SUBSET Kinds : Checkpoint(i, capture)
    \/ "job_done" \in Moves /\ \E i \in AnyTurn, f, p \in Digests : JobDone(i, f, p)
    \/ "publish" \in Moves /\ \E t, fa, pa \in AnyTurn : Publish(t, fa, pa)
    \/ "response" \in Moves /\ \E i \in AnyTurn : Response(i) \/ Release(i)
    \/ "crash" \in Moves /\ Crash
    \/ "restore" \in Moves /\ \E h, n \in AnyTurn, f, p \in Digests : Restore(h, f, p, n)
    \/ "rewind" \in Moves /\ \E h, n \in AnyTurn, f, p \in Digests : Rewind(h, f, p, n)

SoundInit == InitWith([cmds |-> Commands, state |-> <<>>])

\* Every property of the contract (Properties) holds: the checker's verdict
\* "conforms so far".  Spelled out, so that TLC evaluates each property once.
Conforms ==
    /\ InspectorSound /\ BoundaryAligned /\ ManifestComposition /\ AtomicPublish
    /\ CompletionGating /\ RestoreConsistency /\ RewindConsistency /\ RolloutResamples

\* The moves after which every property still holds: a behaviour stops where
\* the checker would flag it, so every state TLC reaches ends a behaviour the
\* checker calls conforming.
SoundNext == AnyMove /\ Conforms'

\* Bounds the model.
SoundBounds == Len(hist) <= MaxEvents

\* Digests and outputs are compared only for equality: any renaming of them is
\* the same behaviour.
SoundSymmetry == Permutations(Digests) \cup Permutations(Outputs)

\* The last event observed (none at first).
LastEvent == IF hist = <<>> THEN None ELSE hist[Len(hist)]

\* States told apart by what the moves read and by the last event, not by the
\* whole history (as MCView does for the reference): each pair of them is
\* reached once, by a shortest behaviour, whose history the history forms
\* judge.  With the last event in the view, a wrong move that leaves the
\* bookkeeping as a right one would (the hole the model looks for) is still a
\* state of its own, judged.  The last inspection, restore and rewind (insp,
\* rest, rew) are left out: no move reads them, only the properties, which hold
\* in every state explored, and a move that leaves one unchanged cannot make its
\* property fail.
SoundView == <<wl, at, imgs, last, decided, head, points, resp, stale, agent, runs, outs,
               missing, diverged, LastEvent>>
=============================================================================
