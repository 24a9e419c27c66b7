------------------------------ MODULE SandboxCR ------------------------------
(***************************************************************************)
(* Checkpoint and restore of an agent's sandbox (after the Crab system).   *)
(*                                                                         *)
(* An agent runs turns.  In turn i it executes the tool commands the       *)
(* model's response to turn i-1 asked for, in a sandbox with files and     *)
(* processes; at the turn boundary it sends the results to the model and   *)
(* waits for the model's response to turn i.  Meanwhile the runtime's      *)
(* effect inspector classifies the turn's net effect since the last        *)
(* checkpoint (files, processes, both, none) and the checkpoint policy     *)
(* decides what to capture: nothing (skip), files, processes or both.  A   *)
(* checkpoint job writes the images in the background; once they are       *)
(* complete the runtime publishes a restore point for the turn (the        *)
(* restore head), composed of the latest file image and the latest process *)
(* image at or before that turn.  The model's response is cached durably   *)
(* when it arrives and released to the agent only when the turn's restore  *)
(* point is published.                                                     *)
(*                                                                         *)
(* The sandbox and the agent can be killed at any instant (SIGKILL).  The  *)
(* runtime then restores the sandbox from the restore head, cuts the       *)
(* agent's history at that turn, fast-forwards over a cached response and  *)
(* re-issues the commands that were in flight.                             *)
(*                                                                         *)
(* Without a crash, the runtime can also rewind the sandbox to any earlier  *)
(* published restore point: a rollback (the agent undoes an attempt), or a  *)
(* fork, which starts a rollout from a parent's restore point (the trace of *)
(* a rollout is its parent's trace up to the fork, then its own).  Every    *)
(* published restore point is kept for that; a rewind makes the chosen one *)
(* the restore head again, and the agent asks the model anew for its       *)
(* response to that turn: a rollout samples again.                         *)
(*                                                                         *)
(* The state of the sandbox is seen only through digests: the files and   *)
(* the process table at each turn boundary, what each image holds, what    *)
(* a restore produced, what each command printed.  The actions take the    *)
(* runtime's observations and choices as parameters and admit wrong ones,  *)
(* so a faulty runtime's trace still has a behaviour; the properties at    *)
(* the end say which are correct.  Next is the reference runtime, with the *)
(* checkpoint policy Policy; model checking shows it keeps every property. *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences, TLC

CONSTANTS
    Workloads,  \* the workloads a behaviour may run
    Policy      \* the reference runtime's policy: "chat-only", "chat-files", "full", "effect-aware"

(***************************************************************************)
(* A workload record:                                                      *)
(*   cmds    <<c1, ..., cn>>: the number of commands in each of the n turns *)
(*   state   [0..n -> [files, procs]]: the digests a fault-free run shows  *)
(*           at each turn boundary (0: the sandbox before turn 1); only    *)
(*           the reference runtime reads it, traces say what they saw      *)
(***************************************************************************)

VARIABLES
    wl,         \* the workload, fixed by Init
    at,         \* turn -> the sandbox observed at its boundary: [files, procs]
    imgs,       \* <<kind, turn>> -> [dig, done]: checkpoint images taken
    last,       \* kind -> the turn whose state the last checkpoint of that kind holds
    decided,    \* the latest turn whose checkpoint decision was made
    head,       \* the restore head: [turn, files_at, procs_at] (durable)
    points,     \* turn -> [files_at, procs_at]: every restore point published (durable)
    resp,       \* the turns whose model response is cached (durable)
    stale,      \* cached responses to a turn a rewind went back to (they answered once)
    agent,      \* [up, sent, got, cmd]: see below
    runs,       \* <<turn, cmd>> -> executions whose effects no restore has undone
    outs,       \* <<turn, cmd>> -> what its first finished execution printed
    insp,       \* the last inspection: [turn, said, truly]
    missing,    \* commands of the last boundary's turn that never ran
    diverged,   \* re-executed commands that printed something else than before
    rest,       \* the last restore: what it produced and what it should have
    rew,        \* the last rewind (rollback or fork): the same, and whether it was published
    hist        \* the observed history: every move as an event record (auxiliary, see Observe)

vars == <<wl, at, imgs, last, decided, head, points, resp, stale, agent, runs, outs, insp,
          missing, diverged, rest, rew, hist>>

None == [none |-> TRUE]

Kinds == {"files", "procs"}

(* The agent, agent:                                                       *)
(*   up    the sandbox and the agent run                                   *)
(*   sent  the last turn whose results are in the agent's history (sent to *)
(*         the model); 0 is the task itself                                *)
(*   got   the model's response to turn `sent` was released to the agent   *)
(*   cmd   the command of turn sent+1 in flight (0: none)                  *)
Down == [up |-> FALSE, sent |-> 0, got |-> FALSE, cmd |-> 0]

-----------------------------------------------------------------------------
(* Derived views.                                                          *)

Turns == 1..Len(wl.cmds)

Cmds == UNION {{<<i, k>> : k \in 1..wl.cmds[i]} : i \in Turns}

Max(S) == CHOOSE x \in S : \A y \in S : y <= x
Min(S) == CHOOSE x \in S : \A y \in S : x <= y

Busy == agent.cmd # 0

\* The turn the agent executes commands of.
Current == agent.sent + 1

\* The latest image of `kind` taken at or before turn t.
LatestImg(kind, t) == Max({c[2] : c \in {c \in DOMAIN imgs : c[1] = kind /\ c[2] <= t}})

\* The kinds whose state differs from the state their last checkpoint holds.
Changed(f, p) ==
    {k \in Kinds : [files |-> f, procs |-> p][k] # at[last[k]][k]}

Complete(kind, t) == <<kind, t>> \in DOMAIN imgs /\ imgs[<<kind, t>>].done

\* The move, as an event of the observed history.  `hist` is an auxiliary
\* variable (Lamport and Merz, "Auxiliary Variables in TLA+"): every move
\* appends itself and no move reads it, so the other variables' behaviours are
\* the same with or without it.  The history forms at the end read it; a
\* configuration that checks none of them replaces Observe with Unobserved (trace
\* validation does, so that an event costs the same however long the trace).
Observe(e) == hist' = Append(hist, e)
Unobserved(e) == UNCHANGED hist

-----------------------------------------------------------------------------
(* The runtime's moves.  Each is one event of a trace.                     *)

InitWith(w) ==
    /\ wl = w
    /\ at = [i \in {} |-> None]
    /\ imgs = [c \in {} |-> None]
    /\ last = [k \in Kinds |-> 0]
    /\ decided = 0
    /\ head = None
    /\ points = [t \in {} |-> None]
    /\ resp = {}
    /\ stale = {}
    /\ agent = Down
    /\ runs = [c \in Cmds |-> 0]
    /\ outs = [c \in {} |-> 0]
    /\ insp = None
    /\ missing = {}
    /\ diverged = {}
    /\ rest = None
    /\ rew = None
    /\ hist = <<>>

Init == \E w \in Workloads : InitWith(w)

\* The sandbox starts with files f and processes p; that state is the first
\* restore point, and the task is the agent's first "response".
Start(f, p) ==
    /\ head = None
    /\ at' = (0 :> [files |-> f, procs |-> p])
    /\ imgs' = (<<"files", 0>> :> [dig |-> f, done |-> TRUE])
                @@ (<<"procs", 0>> :> [dig |-> p, done |-> TRUE])
    /\ head' = [turn |-> 0, files_at |-> 0, procs_at |-> 0]
    /\ points' = (0 :> [files_at |-> 0, procs_at |-> 0])
    /\ resp' = {0}
    /\ agent' = [Down EXCEPT !.up = TRUE]
    /\ Observe([ev |-> "start", files |-> f, procs |-> p])
    /\ UNCHANGED <<wl, last, decided, stale, runs, outs, insp, missing, diverged, rest, rew>>

\* The agent starts command k of turn i.
CmdStart(i, k) ==
    /\ agent.up /\ agent.got /\ ~Busy
    /\ i = Current
    /\ <<i, k>> \in Cmds
    /\ agent' = [agent EXCEPT !.cmd = k]
    /\ runs' = [runs EXCEPT ![<<i, k>>] = @ + 1]
    /\ Observe([ev |-> "cmd_start", turn |-> i, cmd |-> k])
    /\ UNCHANGED <<wl, at, imgs, last, decided, head, points, resp, stale, outs, insp, missing,
                   diverged, rest, rew>>

\* Command k of turn i finishes and printed `out`.
CmdEnd(i, k, out) ==
    /\ agent.up /\ agent.cmd = k /\ k # 0
    /\ i = Current
    /\ agent' = [agent EXCEPT !.cmd = 0]
    /\ IF <<i, k>> \in DOMAIN outs
       THEN /\ diverged' = IF outs[<<i, k>>] = out THEN diverged
                           ELSE diverged \cup {<<i, k>>}
            /\ UNCHANGED outs
       ELSE /\ outs' = (<<i, k>> :> out) @@ outs
            /\ UNCHANGED diverged
    /\ Observe([ev |-> "cmd_end", turn |-> i, cmd |-> k, out |-> out])
    /\ UNCHANGED <<wl, at, imgs, last, decided, head, points, resp, stale, runs, insp, missing,
                   rest, rew>>

\* Turn i ends: the sandbox shows files f and processes p, the inspector says
\* the kinds in `said` changed since the last checkpoint, and the results go
\* to the model.
Boundary(i, f, p, said) ==
    /\ agent.up /\ agent.got /\ ~Busy
    /\ i = Current /\ i \in Turns
    /\ said \subseteq Kinds
    /\ at' = (i :> [files |-> f, procs |-> p]) @@ at
    /\ agent' = [agent EXCEPT !.sent = i, !.got = FALSE]
    /\ insp' = [turn |-> i, said |-> said, truly |-> Changed(f, p)]
    /\ missing' = {<<i, k>> : k \in {k \in 1..wl.cmds[i] : runs[<<i, k>>] = 0}}
    /\ Observe([ev |-> "boundary", turn |-> i, files |-> f, procs |-> p, changed |-> said])
    /\ UNCHANGED <<wl, imgs, last, decided, head, points, resp, stale, runs, outs, diverged,
                   rest, rew>>

\* The policy decides what turn i's checkpoint captures (nothing: a skip);
\* a checkpoint job for those images starts.
Checkpoint(i, capture) ==
    /\ agent.up
    /\ i = decided + 1 /\ i = agent.sent
    /\ capture \subseteq Kinds
    /\ imgs' = [c \in {<<k, i>> : k \in capture} |-> [dig |-> 0, done |-> FALSE]] @@ imgs
    /\ last' = [k \in Kinds |-> IF k \in capture THEN i ELSE last[k]]
    /\ decided' = i
    /\ Observe([ev |-> "checkpoint", turn |-> i, capture |-> capture])
    /\ UNCHANGED <<wl, at, head, points, resp, stale, agent, runs, outs, insp, missing,
                   diverged, rest, rew>>

\* The checkpoint job of turn i has written its images durably: the file
\* image holds files f, the process image processes p.
JobDone(i, f, p) ==
    /\ agent.up
    /\ \E k \in Kinds : <<k, i>> \in DOMAIN imgs /\ ~imgs[<<k, i>>].done
    /\ imgs' = [c \in DOMAIN imgs |->
                  IF c[2] = i THEN [dig |-> IF c[1] = "files" THEN f ELSE p, done |-> TRUE]
                  ELSE imgs[c]]
    /\ Observe([ev |-> "job_done", turn |-> i, files |-> f, procs |-> p])
    /\ UNCHANGED <<wl, at, last, decided, head, points, resp, stale, agent, runs, outs, insp,
                   missing, diverged, rest, rew>>

\* The runtime publishes the restore point of turn t: the file image of turn
\* fa and the process image of turn pa.
Publish(t, fa, pa) ==
    /\ agent.up
    /\ head # None /\ head.turn < t /\ t <= decided
    /\ head' = [turn |-> t, files_at |-> fa, procs_at |-> pa]
    /\ points' = (t :> [files_at |-> fa, procs_at |-> pa]) @@ points
    /\ Observe([ev |-> "publish", turn |-> t, files_at |-> fa, procs_at |-> pa])
    /\ UNCHANGED <<wl, at, imgs, last, decided, resp, stale, agent, runs, outs, insp, missing,
                   diverged, rest, rew>>

\* The model's response to turn i arrives and is cached (replacing one that a
\* rewind made stale).
Response(i) ==
    /\ agent.up /\ ~agent.got
    /\ i = agent.sent /\ (i \notin resp \/ i \in stale)
    /\ resp' = resp \cup {i}
    /\ stale' = stale \ {i}
    /\ Observe([ev |-> "response", turn |-> i])
    /\ UNCHANGED <<wl, at, imgs, last, decided, head, points, agent, runs, outs, insp, missing,
                   diverged, rest, rew>>

\* The cached response to turn i is released to the agent.
Release(i) ==
    /\ agent.up /\ ~agent.got
    /\ i = agent.sent /\ i \in resp
    /\ agent' = [agent EXCEPT !.got = TRUE]
    /\ Observe([ev |-> "release", turn |-> i])
    /\ UNCHANGED <<wl, at, imgs, last, decided, head, points, resp, stale, runs, outs, insp,
                   missing, diverged, rest, rew>>

\* The sandbox and the agent are killed; checkpoint jobs in progress are lost.
Crash ==
    /\ agent.up
    /\ agent' = Down
    /\ imgs' = [c \in {c \in DOMAIN imgs : imgs[c].done} |-> imgs[c]]
    /\ Observe([ev |-> "crash"])
    /\ UNCHANGED <<wl, at, last, decided, head, points, resp, stale, runs, outs, insp, missing,
                   diverged, rest, rew>>

\* The runtime restores the sandbox to turn h: it shows files f and processes
\* p, and the agent's history holds the turns up to n.  What was done after
\* turn h is undone, and so are the model's responses to it: they answered
\* results that the restored history does not hold.
Restore(h, f, p, n) ==
    /\ ~agent.up /\ head # None
    /\ h \in DOMAIN at
    /\ rest' = [got |-> [turn |-> h, files |-> f, procs |-> p, history |-> n],
                want |-> [turn |-> head.turn, files |-> at[h].files, procs |-> at[h].procs,
                          history |-> h]]
    /\ imgs' = [c \in {c \in DOMAIN imgs : c[2] <= h} |-> imgs[c]]
    /\ last' = [k \in Kinds |-> h]
    /\ decided' = h
    /\ runs' = [c \in Cmds |-> IF c[1] > h THEN 0 ELSE runs[c]]
    /\ agent' = [Down EXCEPT !.up = TRUE, !.sent = n]
    /\ resp' = {i \in resp : i <= h}
    /\ points' = [t \in {t \in DOMAIN points : t <= h} |-> points[t]]
    /\ Observe([ev |-> "restore", turn |-> h, files |-> f, procs |-> p, history |-> n])
    /\ UNCHANGED <<wl, at, head, stale, outs, insp, missing, diverged, rew>>

\* Without a crash, the runtime rewinds the sandbox to turn h (a rollback or a
\* fork): it shows files f and processes p, and the agent's history holds the
\* turns up to n.  The sandbox that ran is thrown away with the checkpoint
\* jobs in progress; what was done after turn h is undone, later restore
\* points are forgotten and the published point of h is the restore head
\* again.  A rewind starts a new branch: commands of later turns may print
\* something else than on the old one, and a cached response to turn h is
\* stale -- it answered once, the agent asks the model again.
Rewind(h, f, p, n) ==
    /\ agent.up /\ head # None
    /\ h \in DOMAIN at
    /\ rew' = [got |-> [turn |-> h, files |-> f, procs |-> p, history |-> n],
               want |-> [turn |-> h, files |-> at[h].files, procs |-> at[h].procs,
                         history |-> h],
               published |-> h \in DOMAIN points]
    /\ head' = IF h \in DOMAIN points
               THEN [turn |-> h, files_at |-> points[h].files_at,
                     procs_at |-> points[h].procs_at]
               ELSE head
    /\ points' = [t \in {t \in DOMAIN points : t <= h} |-> points[t]]
    /\ imgs' = [c \in {c \in DOMAIN imgs : c[2] <= h /\ imgs[c].done} |-> imgs[c]]
    /\ last' = [k \in Kinds |-> h]
    /\ decided' = h
    /\ runs' = [c \in Cmds |-> IF c[1] > h THEN 0 ELSE runs[c]]
    /\ outs' = [c \in {c \in DOMAIN outs : c[1] <= h} |-> outs[c]]
    /\ agent' = [Down EXCEPT !.up = TRUE, !.sent = n]
    /\ resp' = {i \in resp : i <= h}
    /\ stale' = {i \in resp : i = h /\ h > 0}
    /\ Observe([ev |-> "rewind", turn |-> h, files |-> f, procs |-> p, history |-> n])
    /\ UNCHANGED <<wl, at, insp, missing, diverged, rest>>

-----------------------------------------------------------------------------
(* The reference runtime: the correct choice at every move.               *)

S(i) == wl.state[i]

\* What command k of turn i prints in a fault-free run.
Out(i, k) == 10 * i + k

Todo(i) == {k \in 1..wl.cmds[i] : runs[<<i, k>>] = 0}

RefStart == Start(S(0).files, S(0).procs)

RefCmd ==
    \/ /\ ~Busy /\ Current \in Turns /\ Todo(Current) # {}
       /\ CmdStart(Current, Min(Todo(Current)))
    \/ Busy /\ CmdEnd(Current, agent.cmd, Out(Current, agent.cmd))

\* The inspector: the kinds whose state changed since their last checkpoint.
Inspect(i) == Changed(S(i).files, S(i).procs)

RefBoundary ==
    /\ Current \in Turns /\ Todo(Current) = {}
    /\ Boundary(Current, S(Current).files, S(Current).procs, Inspect(Current))

\* What the policy captures, given the inspector's classification.
Capture ==
    CASE Policy = "chat-only" -> {}
      [] Policy = "chat-files" -> {"files"}
      [] Policy = "full" -> Kinds
      [] Policy = "effect-aware" -> insp.said

RefCheckpoint == decided < agent.sent /\ Checkpoint(agent.sent, Capture)

\* The job copies the images frozen at the boundary.
RefJobDone ==
    \E i \in {c[2] : c \in {c \in DOMAIN imgs : ~imgs[c].done}} :
        JobDone(i, at[i].files, at[i].procs)

\* A restore point is published once every image it names is complete.
RefPublish ==
    LET t == decided
        fa == LatestImg("files", t)
        pa == LatestImg("procs", t)
    IN /\ Complete("files", fa) /\ Complete("procs", pa)
       /\ Publish(t, fa, pa)

RefResponse == agent.sent \in Turns /\ Response(agent.sent)

\* Completion gating: a response waits for its turn's restore point; after a
\* rewind, the response to the turn it went back to is a new one.
RefRelease == agent.sent <= head.turn /\ agent.sent \notin stale /\ Release(agent.sent)

RefRestore ==
    Restore(head.turn, imgs[<<"files", head.files_at>>].dig,
            imgs[<<"procs", head.procs_at>>].dig, head.turn)

\* A rollback or a fork to any published restore point, from its images.
RefRewind ==
    \E h \in DOMAIN points :
        Rewind(h, imgs[<<"files", points[h].files_at>>].dig,
               imgs[<<"procs", points[h].procs_at>>].dig, h)

Run ==
    \/ RefStart
    \/ /\ agent.up /\ head # None
       /\ \/ RefCmd \/ RefBoundary \/ RefCheckpoint \/ RefJobDone \/ RefPublish
          \/ RefResponse \/ RefRelease
    \/ ~agent.up /\ head # None /\ RefRestore

Fault == head # None /\ Crash

\* The runtime's own choice, not a reaction: going back to an earlier turn.
Rollout == agent.up /\ head # None /\ RefRewind

Next == Run \/ Fault \/ Rollout

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* The contract.  Each property is a state invariant; Properties names    *)
(* them for resume-check, which checks every one on every trace.           *)

\* InspectorSound: the inspector reports every kind (files, processes) whose
\* state differs from what its last checkpoint holds; false alarms are allowed.
InspectorSound ==
    insp # None => insp.truly \subseteq insp.said

\* BoundaryAligned: every complete checkpoint image holds exactly the state
\* its turn's boundary showed.
BoundaryAligned ==
    \A c \in DOMAIN imgs : imgs[c].done => imgs[c].dig = at[c[2]][c[1]]

\* ManifestComposition: the restore head combines the latest file image and
\* the latest process image taken at or before its turn.
ManifestComposition ==
    head # None =>
        /\ head.files_at = LatestImg("files", head.turn)
        /\ head.procs_at = LatestImg("procs", head.turn)

\* AtomicPublish: the restore head only ever names complete images.
AtomicPublish ==
    head # None => Complete("files", head.files_at) /\ Complete("procs", head.procs_at)

\* CompletionGating: the model's response to a turn reaches the agent only
\* once that turn's restore point is published.
CompletionGating ==
    agent.got => head # None /\ agent.sent <= head.turn

\* RestoreConsistency: a restore goes to the restore head, its files and
\* processes equal that turn's boundary and the agent's history is cut there;
\* no command runs twice on the same state, none is skipped, and a re-run
\* command prints what it printed before.
RestoreConsistency ==
    /\ rest # None => rest.got = rest.want
    /\ \A c \in DOMAIN runs : runs[c] <= 1
    /\ missing = {}
    /\ diverged = {}

\* RewindConsistency: a rollback or a fork goes to a published restore point,
\* its files and processes equal that turn's boundary and the agent's history
\* is cut there.
RewindConsistency ==
    rew # None => rew.published /\ rew.got = rew.want

\* RolloutResamples: after a rewind to a turn, the agent gets a new model
\* response to it, never the one cached before the rewind.
RolloutResamples ==
    agent.got => agent.sent \notin stale

Properties ==
    [InspectorSound |-> InspectorSound, BoundaryAligned |-> BoundaryAligned,
     ManifestComposition |-> ManifestComposition, AtomicPublish |-> AtomicPublish,
     CompletionGating |-> CompletionGating, RestoreConsistency |-> RestoreConsistency,
     RewindConsistency |-> RewindConsistency, RolloutResamples |-> RolloutResamples]

-----------------------------------------------------------------------------
(* The contract over the observed history: each property stated again,     *)
(* declaratively, over `hist` and the workload alone -- what was observed, *)
(* never the moves' bookkeeping (at, imgs, last, decided, head, points,    *)
(* resp, stale, runs, outs, ...).  `resume-check spec` checks on bounded   *)
(* models that the two forms agree: the reference runtime satisfies both   *)
(* (no false alarm: MCSandboxCR*.cfg), and every behaviour of the          *)
(* trace-validation relation that keeps every property satisfies every     *)
(* history form (soundness: MCSandboxCRSound).  A mutant that deletes what *)
(* makes a property fire must be caught by that property's history form.   *)

\* Each history form is "every event e is right given the events before it"
\* (XRightAt(e) reads only hist[1..e]).  Every event was the last one once, and
\* the history only grows, so checking the last event in every state checks
\* every event of every behaviour.
Last(RightAt(_)) == hist = <<>> \/ RightAt(Len(hist))
Before(e) == 1..(e - 1)
Between(i, j) == (i + 1)..(j - 1)
Is(e, kinds) == hist[e].ev \in kinds

\* The turn event j is about; the start is turn 0.
TurnOf(j) == IF Is(j, {"start"}) THEN 0 ELSE hist[j].turn

\* Event j undoes turn u: a restore or a rewind goes back to an earlier turn.
Undoes(j, u) == Is(j, {"restore", "rewind"}) /\ hist[j].turn < u

\* No event after j and before e undid turn u.
Standing(j, e, u) == \A m \in Between(j, e) : ~Undoes(m, u)

\* The sandbox event e shows: the files and processes it records.
Shown(e) == [files |-> hist[e].files, procs |-> hist[e].procs]

\* What the boundary of turn u (turn 0: the start) showed, as of event e: the
\* latest one, if no restore or rewind since went back before u; else None.
BoundaryAt(u, e) ==
    LET js == {j \in Before(e) : IF u = 0 THEN Is(j, {"start"})
                                 ELSE Is(j, {"boundary"}) /\ hist[j].turn = u}
    IN  IF js # {} /\ Standing(Max(js), e, u) THEN Shown(Max(js)) ELSE None

\* Event j takes an image of kind k: the start, or a checkpoint that captures k.
Takes(j, k) == Is(j, {"start"}) \/ (Is(j, {"checkpoint"}) /\ k \in hist[j].capture)

\* The job of the checkpoint at event j had written its images before event e.
WrittenBy(j, e) ==
    \/ Is(j, {"start"})
    \/ \E m \in Between(j, e) : Is(m, {"job_done"}) /\ hist[m].turn = hist[j].turn

\* The images taken at event j are still held at event e: no restore or rewind
\* went back before their turn, and no crash or rewind threw their job away
\* before the job had written them.
Held(j, e) ==
    /\ Standing(j, e, TurnOf(j))
    /\ \A m \in Between(j, e) : Is(m, {"crash", "rewind"}) => WrittenBy(j, m)

\* The turns at or before u of which an image of kind k is held at event e.
ImagesAt(k, u, e) ==
    {TurnOf(j) : j \in {j \in Before(e) : Takes(j, k) /\ TurnOf(j) <= u /\ Held(j, e)}}

\* The turns of which a complete image of kind k is held at event e.
CompleteAt(k, e) ==
    {TurnOf(j) : j \in {j \in Before(e) : Takes(j, k) /\ Held(j, e) /\ WrittenBy(j, e)}}

\* The turns whose restore point is published at event e: a publish (the
\* start: turn 0) that no restore or rewind since went back before.
PointsAt(e) ==
    {TurnOf(j) : j \in {j \in Before(e) : Is(j, {"start", "publish"}) /\ Standing(j, e, TurnOf(j))}}

\* The turn whose state kind k of the sandbox was last captured or restored at,
\* before event e: the last checkpoint that captured k, or a later restore or rewind.
BaseOf(k, e) ==
    LET js == {j \in Before(e) : Takes(j, k) \/ Is(j, {"restore", "rewind"})}
    IN  IF js = {} THEN 0 ELSE TurnOf(Max(js))

\* A start of command k of turn u before event e that no restore or rewind since undid.
RanBefore(e, u, k) ==
    \E j \in Before(e) : Is(j, {"cmd_start"}) /\ hist[j].turn = u /\ hist[j].cmd = k
                         /\ Standing(j, e, u)

\* XRightAt(e): event e is right for property X given the events before it;
\* the comment above HistX below says what each demands.
InspectorSoundRightAt(e) ==
    Is(e, {"boundary"}) =>
        \A k \in Kinds :
            LET base == BoundaryAt(BaseOf(k, e), e)
            IN  base # None /\ base[k] # Shown(e)[k] => k \in hist[e].changed

BoundaryAlignedRightAt(e) ==
    Is(e, {"job_done"}) =>
        LET u == hist[e].turn
            cps == {j \in Before(e) : Is(j, {"checkpoint"}) /\ hist[j].turn = u}
        IN  \A k \in IF cps = {} THEN {} ELSE hist[Max(cps)].capture :
                BoundaryAt(u, e) # None /\ Shown(e)[k] = BoundaryAt(u, e)[k]

ManifestCompositionRightAt(e) ==
    Is(e, {"publish"}) =>
        LET fs == ImagesAt("files", hist[e].turn, e)
            ps == ImagesAt("procs", hist[e].turn, e)
        IN  /\ fs # {} /\ hist[e].files_at = Max(fs)
            /\ ps # {} /\ hist[e].procs_at = Max(ps)

AtomicPublishRightAt(e) ==
    Is(e, {"publish"}) =>
        hist[e].files_at \in CompleteAt("files", e) /\ hist[e].procs_at \in CompleteAt("procs", e)

CompletionGatingRightAt(e) ==
    Is(e, {"release"}) => \E u \in PointsAt(e) : hist[e].turn <= u

RestoreConsistencyRightAt(e) ==
    /\ Is(e, {"restore"}) =>
          /\ PointsAt(e) # {} /\ hist[e].turn = Max(PointsAt(e))
          /\ BoundaryAt(hist[e].turn, e) = Shown(e)
          /\ hist[e].history = hist[e].turn
    /\ Is(e, {"cmd_start"}) => ~RanBefore(e, hist[e].turn, hist[e].cmd)
    /\ Is(e, {"boundary"}) =>
          \A k \in 1..wl.cmds[hist[e].turn] : RanBefore(e, hist[e].turn, k)
    /\ Is(e, {"cmd_end"}) =>
          \A j \in Before(e) :
              (/\ Is(j, {"cmd_end"}) /\ hist[j].turn = hist[e].turn /\ hist[j].cmd = hist[e].cmd
               /\ \A m \in Between(j, e) : ~(Is(m, {"rewind"}) /\ hist[m].turn < hist[e].turn))
              => hist[j].out = hist[e].out

RewindConsistencyRightAt(e) ==
    Is(e, {"rewind"}) =>
        /\ hist[e].turn \in PointsAt(e)
        /\ BoundaryAt(hist[e].turn, e) = Shown(e)
        /\ hist[e].history = hist[e].turn

RolloutResamplesRightAt(e) ==
    Is(e, {"release"}) /\ hist[e].turn > 0 =>
        \A m \in Before(e) :
            Is(m, {"rewind"}) /\ hist[m].turn = hist[e].turn =>
                \E r \in Between(m, e) : Is(r, {"response"}) /\ hist[r].turn = hist[e].turn

\* HistInspectorSound: every boundary reports each kind whose state differs from what the boundary of its base turn showed -- the turn of the last checkpoint that captured that kind, or of a later restore or rewind.
HistInspectorSound == Last(InspectorSoundRightAt)

\* HistBoundaryAligned: every finished job reports, for each kind its turn's checkpoint captured, what that turn's boundary showed.
HistBoundaryAligned == Last(BoundaryAlignedRightAt)

\* HistManifestComposition: every publish names, of each kind, the latest image taken at or before its turn and still held (not undone by a restore or rewind, not lost unwritten in a crash or rewind).
HistManifestComposition == Last(ManifestCompositionRightAt)

\* HistAtomicPublish: every publish names only held images whose job had finished.
HistAtomicPublish == Last(AtomicPublishRightAt)

\* HistCompletionGating: the response to a turn is released only while a restore point of that turn or a later one stands published (no restore or rewind since went back before it).
HistCompletionGating == Last(CompletionGatingRightAt)

\* HistRestoreConsistency: a restore goes to the latest standing restore point, shows what that turn's boundary showed and cuts the history there; a command starts at most once between undoes of its turn; a boundary comes only once every command of its turn started since its turn was last undone; a command prints what every earlier run of it printed since the last rewind before its turn.
HistRestoreConsistency == Last(RestoreConsistencyRightAt)

\* HistRewindConsistency: a rollback or fork goes to a standing published restore point, shows what that turn's boundary showed and cuts the history there.
HistRewindConsistency == Last(RewindConsistencyRightAt)

\* HistRolloutResamples: a response to a turn after the start, released after a rewind to that turn, arrived after the rewind.
HistRolloutResamples == Last(RolloutResamplesRightAt)

HistoryProperties ==
    [InspectorSound |-> HistInspectorSound, BoundaryAligned |-> HistBoundaryAligned,
     ManifestComposition |-> HistManifestComposition, AtomicPublish |-> HistAtomicPublish,
     CompletionGating |-> HistCompletionGating, RestoreConsistency |-> HistRestoreConsistency,
     RewindConsistency |-> HistRewindConsistency, RolloutResamples |-> HistRolloutResamples]
=============================================================================
