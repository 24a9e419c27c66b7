------------------------- MODULE MCResumeCoreSound -------------------------
(***************************************************************************)
(* Soundness of ResumeCore's checks against its history predicates.        *)
(*                                                                         *)
(* AnyMove is the trace-validation relation on a small universe: every     *)
(* move, with every choice a recorded trace could make (who moves, which   *)
(* checkpoint a load returns, with which parent, content, writes and       *)
(* answers; which tasks are scheduled and started; what an effect, a task  *)
(* end or an answer says; what a crash left in the store). A move whose    *)
(* check fired is never taken (the action constraint NoCheckFired), so     *)
(* every state TLC checks ends a behaviour the checks call conforming, and *)
(* each history predicate must hold there. A history predicate violated    *)
(* here is a hole in the checks -- a move that admits a wrong choice no    *)
(* named check catches -- or a history form stated too strongly.           *)
(***************************************************************************)
EXTENDS ResumeCore, ResumeCoreHistory

CONSTANTS
    MaxEvents,       \* the longest history explored
    MaxCheckpoints,  \* checkpoint ids are 1..MaxCheckpoints, made in order
    Durabilities, Levels, Fencings,
    Values,          \* the answer values
    Digests,         \* the content digests a put or a load may report (0: unknown)
    MadeDigests,     \* the content digests a step, fork or edit may be made with
    WriteDigests,    \* the contents a task's result may be made, acknowledged or loaded with
    Outcomes,        \* the ends a task may report
    Moves            \* the kinds of move explored (a model may leave some out to go deeper)

\* The task instances a schedule or a start may name: two tasks of one node (one, where
\* the model needs length more than breadth).
TaskSet == IF "one-task" \in Moves THEN {[task |-> 1, node |-> "A", path |-> "a"]}
           ELSE {[task |-> 1, node |-> "A", path |-> "a"], [task |-> 2, node |-> "A", path |-> "b"]}

\* One chain; two (a thread and a subgraph of it) where nested loads, or loads of the
\* latest made before a checkpoint of another chain, are explored; three where one
\* host's work runs its subgraph in two namespaces ("three-chains").
Chains == IF "three-chains" \in Moves THEN {1, 2, 3}
          ELSE IF {"nested", "before"} \cap Moves # {} THEN {1, 2} ELSE {1}
\* One interrupt; two where answers to two interrupts share a checkpoint's answer slot.
Interrupts == IF "two-interrupts" \in Moves THEN {1, 2} ELSE {1}
Intents == {1}
Kinds == {"k"}

SoundWorkflows ==
    {[durability |-> d, effects |-> [default |-> g, kinds |-> {}], fencing |-> f,
      plan |-> [x \in {} |-> {}]] : d \in Durabilities, g \in Levels, f \in Fencings}

Cks == DOMAIN ck
CkOrNone == {0} \cup Cks
\* What a load may return: any write or answer some checkpoint has, stored or in
\* flight, a result with any content.
WriteChoices ==
    UNION {{[task |-> w.task, kind |-> w.kind, interrupt |-> w.interrupt, digest |-> d] :
              d \in IF w.kind = "ok" THEN {0} \cup WriteDigests ELSE {0}} :
             w \in UNION {MayWrites(c) : c \in Cks}}
AnswerChoices == UNION {MayAnswers(c) : c \in Cks}
Deliveries == {[interrupt |-> a, value |-> v] : a \in Interrupts, v \in Values}
TaskIds == {s.task : s \in TaskSet}

\* A load that returns nothing reports nothing else; one asks for a checkpoint, for
\* the latest, or (with "before") for the latest made before a checkpoint; with
\* "fresh-loads", every load starts a chain afresh (asks for and gets nothing).
AnyLoad ==
    \E p \in Procs, ch \in Chains, asked, got \in IF "fresh-loads" \in Moves THEN {0} ELSE CkOrNone :
    \E before \in IF asked = 0 /\ "before" \in Moves THEN CkOrNone ELSE {0} :
    \E parent \in IF got = 0 THEN {0} ELSE CkOrNone, d \in IF got = 0 THEN {0} ELSE {0} \cup Digests,
       ws \in IF got = 0 THEN {{}} ELSE SUBSET WriteChoices,
       as \in IF got = 0 THEN {{}} ELSE SUBSET AnswerChoices :
        \/ "load" \in Moves /\ \E nested \in IF "nested" \in Moves THEN BOOLEAN ELSE {FALSE} :
              \E under \in IF nested THEN {0} \cup TaskIds ELSE {0},
                 into \in IF "into" \in Moves /\ ~nested THEN CkOrNone ELSE {0} :
                  LoadInto(p, ch, asked, before, got, parent, d, ws, as, nested, under, into)
        \/ "read" \in Moves /\ Read(p, ch, asked, before, got, parent, d, ws, as)

AnyRun ==
    \E p \in Procs, ch \in Chains :
        \/ "refused" \in Moves /\ Refused(p, ch)
        \/ "schedule" \in Moves /\ \E c \in Cks, tasks \in SUBSET TaskSet : Schedule(p, ch, c, tasks)
        \/ "start" \in Moves /\ \E s \in TaskSet : StartTask(p, ch, s.task, s.node, s.path)
        \/ "call" \in Moves /\ \E s \in TaskSet, b \in TaskIds : CallTask(p, ch, b, s.task, s.node, s.path)
        \/ "effect" \in Moves /\
              \E t \in TaskIds, i \in Intents, k \in Kinds, st \in {"fired", "skipped"} :
                  Effect(p, ch, t, i, k, st)
        \/ "end" \in Moves /\
              \E t \in TaskIds, o \in Outcomes, a \in {0} \cup Interrupts, res \in SUBSET Deliveries :
                  \E d \in IF o = "ok" THEN {0} \cup WriteDigests ELSE {0} :
                      (o = "interrupt") = (a # 0) /\ EndTask(p, ch, t, o, a, res, d)
        \/ "resume" \in Moves /\ \E c \in Cks, a \in Interrupts, v \in Values : Resume(p, ch, c, a, v)
        \/ "step" \in Moves /\ HasRun(p, ch) /\ \E d \in MadeDigests : Step(p, ch, Fresh, RunOf(p, ch).cur, d)
        \/ "fork" \in Moves /\ \E src \in Cks, d \in MadeDigests : Fork(p, ch, src, Fresh, d)
        \/ "update" \in Moves /\ \E parent \in Cks, d \in MadeDigests : Update(p, ch, parent, Fresh, d)
        \/ "edit" \in Moves /\ \E c \in Cks, t \in TaskIds, d \in {0} \cup WriteDigests :
                                 EditWrite(p, ch, c, t, d)
        \/ "putw" \in Moves /\
              \E c \in Cks, t \in TaskIds, o \in Outcomes, a \in {0} \cup Interrupts :
                  \E d \in IF o = "ok" THEN {0} \cup WriteDigests ELSE {0} :
                      (o = "interrupt") = (a # 0) /\ PutWrites(p, ch, c, t, o, a, d)

AnyStore ==
    \E p \in Procs :
        \/ "put" \in Moves /\ \E c \in inflight[p].cks, d \in {0} \cup Digests : PutCheckpoint(p, c, d)
        \/ "puta" \in Moves /\ \E c \in Cks : PutAnswers(p, c)
        \/ "finish" \in Moves /\ \E o \in {"done", "parked", "failed"} : Finish(p, o)
        \* "crash": a process that runs or ran; "crash-any": also one that never did
        \/ "crash" \in Moves /\ alive[p] # "down" /\ \E kept \in Keepable(p) : Crash(p, kept)
        \/ "crash-any" \in Moves /\ \E kept \in Keepable(p) : Crash(p, kept)
        \* "delete": the store forgets a chain no process runs
        \/ "delete" \in Moves /\ \E ch \in Chains : Delete(p, ch)

AnyMove == AnyLoad \/ AnyRun \/ AnyStore

SoundInit == \E w \in SoundWorkflows : InitWith(w)

\* The moves no check flags: a behaviour stops where a check would fire, so every
\* state TLC reaches ends a behaviour the checks call conforming.
SoundNext == AnyMove /\ broke' = {}

\* Bounds the model.
SoundBounds ==
    /\ Len(hist) <= MaxEvents
    /\ Cardinality(DOMAIN ck) <= MaxCheckpoints

SoundSymmetry == Permutations(Procs)

\* States told apart by everything but the history (as MCView does for the
\* reference): each state of the checks is reached once, by a shortest
\* behaviour, whose history the predicates judge.  Without it every behaviour is
\* a state of its own and only the shortest histories could be explored.
SoundView == <<wf, ck, latest, sched, wr, aw, ans, dlv, closed, run, alive, holders, inflight,
               ledger, crashes, ending, broke>>

\* SoundView with the last event: a move whose report changes no state of the checks
\* (a load's answers) is judged for every report it could make, each reached by
\* its shortest behaviour.
LastView == <<SoundView, IF hist = <<>> THEN <<>> ELSE hist[Len(hist)]>>
=============================================================================
