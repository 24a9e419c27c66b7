--------------------------- MODULE SemanticRecovery ---------------------------
(***************************************************************************)
(* Semantic recoverability of a structured tool-agent workflow (after the  *)
(* DART system).                                                           *)
(*                                                                         *)
(* A task runs as subtask instances.  Each instance does a sequence of     *)
(* actions: it emits outputs before it commits (drafts), commits one       *)
(* output, consumes outputs of other instances (producer -> consumer       *)
(* handoffs) and calls tools.  A tool has a policy: its effect is none,    *)
(* reversible (a restore undoes it), compensable (a restore compensates    *)
(* it) or irreversible (nothing undoes it; a ledger keyed by intent may    *)
(* only replay its recorded result).  An instance has checkpoints at its   *)
(* entry, commit and exit, and may save a restore point at any other      *)
(* action boundary (after any action: Checkpoint).  An instance may fail   *)
(* at any action boundary; the controller localizes the failure to an      *)
(* instance and then restores one instance to one of its checkpoints,      *)
(* blocks, or reruns the whole task.                                       *)
(*                                                                         *)
(* A restore is legal for the controller when the checkpoint exists.  It   *)
(* is admissible only if, besides, no committed consumer depends on an     *)
(* output produced after the checkpoint (it would be orphaned: a re-run    *)
(* may choose another value, as a re-sampled model does) and no            *)
(* irreversible effect lies after it.  The two differ, and a reachable     *)
(* state shows it (LegalButInadmissible, checked by a witness run).        *)
(*                                                                         *)
(* As in ResumeCore, the actions are the runtime's observable moves and    *)
(* admit wrong choices, so that a faulty runtime's trace has a behaviour;  *)
(* the properties say which choices are correct.  Next is the reference    *)
(* runtime with its controller: it may save a restore point at any         *)
(* boundary, restores the failed instance to its latest admissible         *)
(* checkpoint and blocks or reruns when none is.                           *)
(*                                                                         *)
(* Each property is stated a second time over the observed history alone  *)
(* (HistRestoreSound ... HistNoResurrectedEffect, at the end):             *)
(* MCSemanticRecoverySound shows that every behaviour the properties call  *)
(* conforming satisfies them, and the reference does too                   *)
(* (docs/recovery.md, "Every property stated twice").                      *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences, TLC

CONSTANTS
    Workloads   \* the workloads, with their tools' policies, a behaviour may start from

(***************************************************************************)
(* A workload record:                                                      *)
(*   insts  a set of instance ids                                          *)
(*   tools  [tool ids -> "none" | "reversible" | "compensable" |           *)
(*          "irreversible"]: each tool's policy                            *)
(*   body   [insts -> Seq(op)]: what an instance does, in order (only the  *)
(*          reference runtime reads it; traces say what happened):         *)
(*            [op |-> "emit"]     an output before the commit (a draft)    *)
(*            [op |-> "commit"]   the committed output                     *)
(*            [op |-> "consume", from |-> j, pre |-> b]  j's committed     *)
(*                                output, or (b) one of its drafts         *)
(*            [op |-> "effect", tool |-> t, intent |-> k]                  *)
(*   vals   the values a model may choose for an output; a re-execution    *)
(*          may choose another                                             *)
(***************************************************************************)

VARIABLES
    wl,       \* the workload, fixed by Init
    st,       \* per instance: "idle", "run", "failed" or "exited"
    pos,      \* per instance: the number of actions of its current incarnation
    ck,       \* per instance: its named checkpoints, boundary -> position
    pt,       \* per instance: its restore points, point id -> position
    outs,     \* live outputs: set of [inst, pos, val, committed]
    dep,      \* per instance: what it consumed, set of [out, at] (at: the consume's position)
    fx,       \* effects of the current incarnations not undone: set of [inst, pos, intent, policy]
    issued,   \* the ledger: irreversible intent -> times issued (replays excluded)
    ctl,      \* the controller: [mode |-> "run" | "localized" | "blocked", loc |-> inst or 0,
              \*   with |-> the instances the runtime must roll back with loc if it restores it]
    last,     \* the last recovery decision and what held when it was made
    tally,    \* recovery decisions so far, for the summary of a conforming trace
    hist      \* the observed history: every move as an event record (auxiliary, see Observe)

vars == <<wl, st, pos, ck, pt, outs, dep, fx, issued, ctl, last, tally, hist>>

\* The named checkpoints, taken by begin, commit and exit.
Named == {"entry", "commit", "exit"}

\* What a restore names: a named checkpoint, or a restore point (with its id).
Boundaries == Named \cup {"point"}

NoDecision == [kind |-> "none", inst |-> 0, boundary |-> "none", point |-> 0, loc |-> 0,
               adm |-> {}, lost |-> {}]

-----------------------------------------------------------------------------
(* Derived views.                                                          *)

Insts == wl.insts

Committed(i) == "commit" \in DOMAIN ck[i]

Failed == {i \in Insts : st[i] = "failed"}

\* Instance i holds checkpoint <<b, p>>: a named one (p = 0) or restore point p.
Holds(i, b, p) == IF b = "point" THEN p \in DOMAIN pt[i] ELSE b \in DOMAIN ck[i] /\ p = 0

\* The checkpoints instance i holds, as <<boundary, point>>.
Held(i) == {<<b, 0>> : b \in DOMAIN ck[i]} \cup {<<"point", p>> : p \in DOMAIN pt[i]}

\* The position (the number of actions of i's run before it) of a checkpoint i holds.
At(i, b, p) == IF b = "point" THEN pt[i][p] ELSE ck[i][b]

\* The committed instances other than i that consumed a live output of i
\* produced after position q: a restore of i to a checkpoint at q orphans them.
Orphans(i, q) ==
    {j \in Insts \ {i} :
        /\ Committed(j)
        /\ \E d \in dep[j] : d.out \in outs /\ d.out.inst = i /\ d.out.pos > q}

\* The irreversible effects of i's current incarnation after position q.
IrreversibleAfter(i, q) ==
    {e \in fx : e.inst = i /\ e.policy = "irreversible" /\ e.pos > q}

\* The controller may restore i to <<b, p>>: a failure was localized and the
\* checkpoint exists.  That is all a checkpoint-aligned controller checks.
Legal(i, b, p) == ctl.mode = "localized" /\ i \in Insts /\ Holds(i, b, p)

\* The committed work a restore of i to b that rolls `also` back with it
\* loses: the instances it rolls back that committed or did something
\* irreversible, and those it keeps committed that keep a read of a live output
\* of one it rolls back (orphans: the rolled-back producer may choose another
\* value when it runs again).
Lost(i, b, p, also) ==
    {j \in also : Committed(j) \/ \E e \in fx : e.inst = j /\ e.policy = "irreversible"}
    \cup {j \in Insts \ also :
            /\ Committed(j)
            /\ \E d \in dep[j] : /\ d.out \in outs /\ d.out.inst \in also
                                 /\ j = i => d.at <= At(i, b, p)}

\* The instances a checkpoint-aligned runtime must roll back with i if it
\* restores it (LangGraph runs a failed task's cancelled siblings again), as
\* its localize said: {} for any instance but the localized one.
WithOf(i) == IF i = ctl.loc THEN ctl.with ELSE {}

\* Restoring i to <<b, p>> is admissible: the checkpoint exists, no committed
\* consumer depends on output produced after it, no irreversible effect lies
\* after it, and rolling back the instances the runtime must roll back with it
\* loses nothing (`Lost`, below).  The rule reads positions only, so it is the
\* same for a named checkpoint and for a restore point at any boundary.
Admissible(i, b, p) ==
    /\ Holds(i, b, p)
    /\ Orphans(i, At(i, b, p)) = {}
    /\ IrreversibleAfter(i, At(i, b, p)) = {}
    /\ Lost(i, b, p, WithOf(i)) = {}

\* The checkpoints of instance i, as <<boundary, point>>, the reference
\* controller may restore it to.
AdmissibleOf(i) == {c \in Held(i) : Admissible(i, c[1], c[2])}

\* The admissible restores of failed instances, as <<instance, boundary, point>>
\* (enumerated, not a filter of a product: `last` keeps it, and TLC cannot write
\* an unevaluated set filter to its disk queue).
AdmissibleSet ==
    UNION {{<<i, c[1], c[2]>> : c \in {c \in Held(i) : Admissible(i, c[1], c[2])}} : i \in Failed}

\* The separation between legality and validity: the controller could
\* restore the failed instance it localized to a checkpoint that exists but is
\* not admissible.
LegalButInadmissible ==
    /\ ctl.mode = "localized"
    /\ ctl.loc \in Failed
    /\ \E c \in Held(ctl.loc) : ~Admissible(ctl.loc, c[1], c[2])

\* Violated in a reachable state of the reference runtime (a witness run).
NoLegalButInadmissibleRestore == ~LegalButInadmissible

\* The move, as an event of the observed history.  `hist` is an auxiliary
\* variable (Lamport and Merz, "Auxiliary Variables in TLA+"): every move
\* appends itself and no move reads it, so the other variables' behaviours are
\* the same with or without it.  The history predicates below read it; a
\* configuration that checks none of them replaces Observe with Unobserved (trace
\* validation does, so that an event costs the same however long the trace).
Observe(e) == hist' = Append(hist, e)
Unobserved(e) == UNCHANGED hist

-----------------------------------------------------------------------------
(* The runtime's moves.  Each is one event of a trace.                     *)

\* Nothing has run yet, for workload w.
InitWith(w) ==
    /\ wl = w
    /\ st = [i \in w.insts |-> "idle"]
    /\ pos = [i \in w.insts |-> 0]
    /\ ck = [i \in w.insts |-> [b \in {} |-> 0]]
    /\ pt = [i \in w.insts |-> [p \in {} |-> 0]]
    /\ outs = {}
    /\ dep = [i \in w.insts |-> {}]
    /\ fx = {}
    /\ issued = [k \in {} |-> 0]
    /\ ctl = [mode |-> "run", loc |-> 0, with |-> {}]
    /\ last = NoDecision
    /\ tally = [restores |-> 0, blocks |-> 0, needless |-> 0, reruns |-> 0]
    /\ hist = <<>>

Init == \E w \in Workloads : InitWith(w)

\* Instance i starts: its entry checkpoint is taken.
Begin(i) ==
    /\ i \in Insts /\ st[i] = "idle"
    /\ st' = [st EXCEPT ![i] = "run"]
    /\ ck' = [ck EXCEPT ![i] = ("entry" :> 0)]
    /\ pt' = [pt EXCEPT ![i] = [p \in {} |-> 0]]
    /\ Observe([ev |-> "begin", instance |-> i, at |-> 0])
    /\ UNCHANGED <<wl, pos, outs, dep, fx, issued, ctl, last, tally>>

\* Running instance i does one more action, with outputs `new` ({} or one).
\* An output's `pos` is its place in its producer's run: with the producer and
\* the value it names the output (a consume's event carries it: which live
\* output was read is a choice trace validation resolves, as TLC searches it).
Act(i, new) ==
    /\ pos' = [pos EXCEPT ![i] = @ + 1]
    /\ outs' = outs \cup new

\* Instance i emits value v before its commit (a draft others may read).
Emit(i, v) ==
    /\ i \in Insts /\ st[i] = "run"
    /\ Act(i, {[inst |-> i, pos |-> pos[i] + 1, val |-> v, committed |-> FALSE]})
    /\ Observe([ev |-> "emit", instance |-> i, value |-> v, at |-> pos[i] + 1])
    /\ UNCHANGED <<wl, st, ck, pt, dep, fx, issued, ctl, last, tally>>

\* Instance i commits value v: its commit checkpoint is taken.
Commit(i, v) ==
    /\ i \in Insts /\ st[i] = "run" /\ ~Committed(i)
    /\ Act(i, {[inst |-> i, pos |-> pos[i] + 1, val |-> v, committed |-> TRUE]})
    /\ ck' = [ck EXCEPT ![i] = @ @@ ("commit" :> pos[i] + 1)]
    /\ Observe([ev |-> "commit", instance |-> i, value |-> v, at |-> pos[i] + 1])
    /\ UNCHANGED <<wl, st, pt, dep, fx, issued, ctl, last, tally>>

\* Instance i consumes live output o of another instance (a handoff).
Consume(i, o) ==
    /\ i \in Insts /\ st[i] = "run"
    /\ o \in outs /\ o.inst # i
    /\ Act(i, {})
    /\ dep' = [dep EXCEPT ![i] = @ \cup {[out |-> o, at |-> pos[i] + 1]}]
    /\ Observe([ev |-> "consume", instance |-> i, from |-> o.inst, value |-> o.val,
                draft |-> ~o.committed, at |-> o.pos])
    /\ UNCHANGED <<wl, st, ck, pt, fx, issued, ctl, last, tally>>

\* Instance i calls tool t for intent k.  An irreversible intent the ledger
\* knows may be `replayed`: its recorded result is used, nothing is issued.
Effect(i, t, k, replayed) ==
    /\ i \in Insts /\ st[i] = "run"
    /\ t \in DOMAIN wl.tools
    /\ LET policy == wl.tools[t] IN
       /\ replayed => policy = "irreversible" /\ k \in DOMAIN issued
       /\ fx' = IF policy = "none" THEN fx
                ELSE fx \cup {[inst |-> i, pos |-> pos[i] + 1, intent |-> k, policy |-> policy]}
       /\ issued' = IF policy # "irreversible" \/ replayed THEN issued
                    ELSE IF k \in DOMAIN issued THEN [issued EXCEPT ![k] = @ + 1]
                    ELSE issued @@ (k :> 1)
    /\ Act(i, {})
    /\ Observe([ev |-> "effect", instance |-> i, tool |-> t, intent |-> k, replayed |-> replayed])
    /\ UNCHANGED <<wl, st, ck, pt, dep, ctl, last, tally>>

\* Instance i finishes: its exit checkpoint is taken.
Exit(i) ==
    /\ i \in Insts /\ st[i] = "run"
    /\ st' = [st EXCEPT ![i] = "exited"]
    /\ ck' = [ck EXCEPT ![i] = @ @@ ("exit" :> pos[i])]
    /\ Observe([ev |-> "exit", instance |-> i, at |-> pos[i]])
    /\ UNCHANGED <<wl, pos, pt, outs, dep, fx, issued, ctl, last, tally>>

\* Running instance i saves its state at its current action boundary as
\* restore point p: a checkpoint besides entry, commit and exit, which a
\* runtime may take after any action.  No checkpoint i holds is at that
\* boundary already (one name per boundary: a restore names the state there).
Checkpoint(i, p) ==
    /\ i \in Insts /\ st[i] = "run"
    /\ p \notin DOMAIN pt[i]
    /\ \A c \in Held(i) : At(i, c[1], c[2]) # pos[i]
    /\ pt' = [pt EXCEPT ![i] = @ @@ (p :> pos[i])]
    /\ Observe([ev |-> "checkpoint", instance |-> i, point |-> p, at |-> pos[i]])
    /\ UNCHANGED <<wl, st, pos, ck, outs, dep, fx, issued, ctl, last, tally>>

\* Running instance i fails at an action boundary.
Fail(i) ==
    /\ i \in Insts /\ st[i] = "run"
    /\ st' = [st EXCEPT ![i] = "failed"]
    /\ Observe([ev |-> "fail", instance |-> i])
    /\ UNCHANGED <<wl, pos, ck, pt, outs, dep, fx, issued, ctl, last, tally>>

\* The controller attributes a failure to instance i; the runtime must roll
\* back the instances `with` with it if it restores it.
Localize(i, with) ==
    /\ i \in Insts /\ ctl.mode = "run"
    /\ with \subseteq Insts \ {i}
    /\ ctl' = [mode |-> "localized", loc |-> i, with |-> with]
    /\ Observe([ev |-> "localize", instance |-> i, with |-> with])
    /\ UNCHANGED <<wl, st, pos, ck, pt, outs, dep, fx, issued, last, tally>>

\* What held when the controller decided, for the properties.
Decision(kind, i, b, p, lost) ==
    [kind |-> kind, inst |-> i, boundary |-> b, point |-> p, loc |-> ctl.loc,
     adm |-> AdmissibleSet, lost |-> lost]

\* The controller restores instance i to its checkpoint <<b, p>> and, with it,
\* rolls the instances `also` back to their start (a checkpoint-aligned runtime
\* may rewind more than the failed instance).  What i did after the checkpoint
\* is undone: outputs and consumptions dropped, reversible effects undone,
\* compensable ones compensated; irreversible ones stay.  i keeps the
\* checkpoints taken at or before it, but an exit at its position only when it
\* is the exit restored to (the exit was taken after any other there).
Restore(i, b, p, also) ==
    /\ Legal(i, b, p)
    /\ also \subseteq Insts \ {i}
    /\ WithOf(i) \subseteq also
    /\ LET q == At(i, b, p)
           reset(j) == j \in also
           after(x) == x.inst = i /\ x.pos > q
           kept(c) == ck[i][c] < q \/ (ck[i][c] = q /\ (c # "exit" \/ b = "exit"))
       IN /\ st' = [j \in Insts |-> IF j = i THEN "run" ELSE IF reset(j) THEN "idle" ELSE st[j]]
          /\ pos' = [j \in Insts |-> IF j = i THEN q ELSE IF reset(j) THEN 0 ELSE pos[j]]
          /\ ck' = [j \in Insts |->
                      IF j = i THEN [c \in {c \in DOMAIN ck[i] : kept(c)} |-> ck[i][c]]
                      ELSE IF reset(j) THEN [c \in {} |-> 0] ELSE ck[j]]
          /\ pt' = [j \in Insts |->
                      IF j = i THEN [x \in {x \in DOMAIN pt[i] : pt[i][x] <= q} |-> pt[i][x]]
                      ELSE IF reset(j) THEN [x \in {} |-> 0] ELSE pt[j]]
          /\ outs' = {o \in outs : ~after(o) /\ ~reset(o.inst)}
          /\ dep' = [j \in Insts |->
                       IF j = i THEN {d \in dep[i] : d.at <= q}
                       ELSE IF reset(j) THEN {} ELSE dep[j]]
          /\ fx' = {e \in fx : ~reset(e.inst) /\ (after(e) => e.policy = "irreversible")}
    /\ ctl' = [mode |-> "run", loc |-> 0, with |-> {}]
    /\ last' = Decision("restore", i, b, p, Lost(i, b, p, also))
    /\ tally' = [tally EXCEPT !.restores = @ + 1]
    /\ Observe([ev |-> "restore", instance |-> i, boundary |-> b, point |-> p,
                at |-> At(i, b, p), also |-> also])
    /\ UNCHANGED <<wl, issued>>

\* The controller blocks: recovery is left to a person.
Block ==
    /\ ctl.mode = "localized"
    /\ ctl' = [ctl EXCEPT !.mode = "blocked"]
    /\ last' = Decision("block", 0, "none", 0, {})
    /\ tally' = [tally EXCEPT !.blocks = @ + 1,
                              !.needless = @ + (IF AdmissibleSet = {} THEN 0 ELSE 1)]
    /\ Observe([ev |-> "block"])
    /\ UNCHANGED <<wl, st, pos, ck, pt, outs, dep, fx, issued>>

\* The controller reruns the whole task: every instance starts again, every
\* effect that can be undone is; irreversible ones stay, in the ledger.
Rerun ==
    /\ ctl.mode = "localized"
    /\ st' = [i \in Insts |-> "idle"]
    /\ pos' = [i \in Insts |-> 0]
    /\ ck' = [i \in Insts |-> [b \in {} |-> 0]]
    /\ pt' = [i \in Insts |-> [p \in {} |-> 0]]
    /\ outs' = {}
    /\ dep' = [i \in Insts |-> {}]
    /\ fx' = {}
    /\ ctl' = [mode |-> "run", loc |-> 0, with |-> {}]
    /\ last' = Decision("rerun", 0, "none", 0, {})
    /\ tally' = [tally EXCEPT !.reruns = @ + 1]
    /\ Observe([ev |-> "rerun"])
    /\ UNCHANGED <<wl, issued>>

-----------------------------------------------------------------------------
(* The reference runtime and its controller.                              *)

Body(i) == wl.body[i]

\* Instance i does the next action of its body, or exits after the last.
RefOp(i) ==
    /\ st[i] = "run"
    /\ IF pos[i] >= Len(Body(i)) THEN Exit(i)
       ELSE LET op == Body(i)[pos[i] + 1] IN
            CASE op.op = "emit" -> \E v \in wl.vals : Emit(i, v)
              [] op.op = "commit" -> \E v \in wl.vals : Commit(i, v)
              [] op.op = "consume" ->
                     \E o \in outs : o.inst = op.from /\ o.committed = ~op.pre /\ Consume(i, o)
              [] op.op = "effect" ->
                     \* the ledger knows this irreversible intent: replay it
                     Effect(i, op.tool, op.intent,
                            wl.tools[op.tool] = "irreversible" /\ op.intent \in DOMAIN issued)

\* Instance i may save a restore point at its current boundary, named by its
\* position (a runtime names it as it likes; a trace's names are numbered).
RefCheckpoint(i) == Checkpoint(i, pos[i])

\* A failure is localized to a failed instance; the runtime must roll back
\* with it any set of the instances still running uncommitted (as LangGraph
\* runs a failed task's cancelled siblings again).
Forceable(i) == {j \in Insts \ {i} : st[j] = "run" /\ ~Committed(j)}
RefLocalize == \E i \in Failed : \E with \in SUBSET Forceable(i) : Localize(i, with)

\* The latest admissible checkpoint of the localized instance; block or
\* rerun when it has none.
RefDecide ==
    /\ ctl.mode = "localized"
    /\ LET i == ctl.loc
           adm == AdmissibleOf(i)
       IN IF adm # {}
          THEN \E c \in adm : /\ \A d \in adm : At(i, d[1], d[2]) <= At(i, c[1], c[2])
                              /\ Restore(i, c[1], c[2], ctl.with)
          ELSE Block \/ Rerun

Run ==
    \/ \E i \in Insts : Begin(i) \/ RefOp(i) \/ RefCheckpoint(i)
    \/ RefLocalize
    \/ RefDecide

Fault == \E i \in Insts : Fail(i)

Next == Run \/ Fault

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* The contract.  Each property is a state invariant; Properties names    *)
(* them for resume-check, which checks every one on every trace.           *)

\* RestoreSound: when a failed instance has an admissible checkpoint, a local
\* restore targets the localized failed instance at one of its admissible
\* checkpoints.
RestoreSound ==
    last.kind = "restore" /\ last.adm # {} =>
        /\ last.inst = last.loc
        /\ <<last.inst, last.boundary, last.point>> \in last.adm

\* BlockWhenNone: when no checkpoint of a failed instance is admissible,
\* recovery blocks or reruns the whole task; it never restores locally.
BlockWhenNone ==
    last.kind = "restore" => last.adm # {}

\* PreserveCommitted: a restore leaves every other committed instance and its
\* output as they were, and every committed instance it keeps with the outputs
\* it read: it rolls back no instance that committed, did something
\* irreversible, or whose output one read.
PreserveCommitted ==
    last.kind = "restore" => last.lost = {}

\* NoResurrectedEffect: an irreversible effect is issued at most once per
\* intent, across restores and reruns, whatever request id it is issued under.
NoResurrectedEffect ==
    \A k \in DOMAIN issued : issued[k] <= 1

Properties == [RestoreSound |-> RestoreSound, BlockWhenNone |-> BlockWhenNone,
               PreserveCommitted |-> PreserveCommitted,
               NoResurrectedEffect |-> NoResurrectedEffect]

-----------------------------------------------------------------------------
(* The contract over the observed history: each property stated again,     *)
(* declaratively, over `hist` and the workload alone -- what was observed,  *)
(* never the moves' bookkeeping (st, pos, ck, outs, dep, fx, issued, ctl,   *)
(* last).  Which instance failed, which checkpoints it has, what it did    *)
(* after one, who read it and what a restore undid are recomputed from the  *)
(* events.  `resume-check spec` checks on bounded models that the two forms *)
(* agree: every behaviour in which every property held satisfies every      *)
(* history predicate (soundness: MCSemanticRecoverySound), and the          *)
(* reference satisfies both (no false alarm: MCSemanticRecoveryTwoFaults).  *)

\* Each property over the history is "every event i is right given the events
\* before it" (XRightAt(i) reads only hist[1..i]).  Every event was the last
\* one once, and the history only grows, so checking the last event in every
\* state checks every event of every behaviour.
Last(RightAt(_)) == hist = <<>> \/ RightAt(Len(hist))
Before(i) == 1..(i - 1)
Between(i, j) == (i + 1)..(j - 1)
Is(j, kinds) == hist[j].ev \in kinds
MaxOf(S) == CHOOSE x \in S : \A y \in S : y <= x
MinOf(S) == CHOOSE x \in S : \A y \in S : x <= y

\* Event j is instance f's own action (of one of the kinds).
By(j, kinds, f) == Is(j, kinds) /\ hist[j].instance = f

\* Event k starts f afresh: a rerun, or a restore that rolls f back with it.
ResetBy(k, f) == Is(k, {"rerun"}) \/ (Is(k, {"restore"}) /\ f \in hist[k].also)

\* The begin of f's current run before event i (0: f is not running one).
BegunAt(f, i) ==
    LET bs == {j \in Before(i) : By(j, {"begin"}, f)}
        s == IF bs = {} THEN 0 ELSE MaxOf(bs)
    IN  IF s = 0 \/ \E k \in Between(s, i) : ResetBy(k, f) THEN 0 ELSE s

\* The kind of event that takes each checkpoint.
Taking == ("entry" :> "begin" @@ "commit" :> "commit" @@ "exit" :> "exit"
           @@ "point" :> "checkpoint")

\* Event k takes f's checkpoint <<b, p>> (p names a restore point; 0 a named one).
Takes(k, f, b, p) ==
    /\ By(k, {Taking[b]}, f)
    /\ IF b = "point" THEN hist[k].point = p ELSE p = 0

\* The checkpoint event k of f is still in force before event i: no restore of
\* f since went back to an earlier boundary (each event says at which boundary:
\* `at`, the number of f's actions before it), nor, for an exit, to the same
\* boundary but another checkpoint there (the exit was taken after it).
HeldAt(k, f, i) ==
    ~\E r \in Between(k, i) :
        /\ By(r, {"restore"}, f)
        /\ \/ hist[r].at < hist[k].at
           \/ hist[r].at = hist[k].at /\ Is(k, {"exit"}) /\ hist[r].boundary # "exit"

\* The event that took f's checkpoint <<b, p>> in force before event i (0:
\* none): the first since f began to take it and still be in force.
TakenAt(f, b, p, i) ==
    LET s == BegunAt(f, i)
        takes == {k \in s..(i - 1) : Takes(k, f, b, p) /\ HeldAt(k, f, i)}
    IN  IF s = 0 \/ takes = {} THEN 0 ELSE MinOf(takes)

\* f's action x is in force before event i: in f's current run, and no restore
\* of f since went back to a checkpoint taken before x.
LiveAt(x, f, i) ==
    /\ BegunAt(f, i) # 0 /\ x > BegunAt(f, i)
    /\ ~\E r \in Between(x, i) :
           By(r, {"restore"}, f) /\ TakenAt(f, hist[r].boundary, hist[r].point, r) < x

\* f's current run has a commit in force before event i.
HasCommittedAt(f, i) == TakenAt(f, "commit", 0, i) # 0

\* f failed, and no restore or restart of f followed, before event i.
FailedAt(f, i) ==
    \E x \in Before(i) : By(x, {"fail"}, f) /\
        ~\E k \in Between(x, i) : ResetBy(k, f) \/ By(k, {"restore"}, f)

\* Output event x is the one consume event c read (same producer, place, value, kind).
Reads(c, x) ==
    /\ Is(x, {"emit", "commit"}) /\ hist[x].instance = hist[c].from
    /\ hist[x].at = hist[c].at /\ hist[x].value = hist[c].value
    /\ Is(x, {"emit"}) = hist[c].draft

\* Instance j, before event i, holds a read of an output f has in force, made
\* after event a.
ReadsAfterAt(j, f, a, i) ==
    \E c \in Before(i) : /\ By(c, {"consume"}, j) /\ hist[c].from = f /\ LiveAt(c, j, i)
                         /\ \E x \in Before(i) : Reads(c, x) /\ x > a /\ LiveAt(x, f, i)

\* A restore before event i of f to <<b, p>> that rolls `also` back with it
\* keeps consume c of instance k: k is not rolled back, and if k is f, c came
\* before the checkpoint.
KeepsRead(i, also, f, b, p, k, c) ==
    /\ k \notin also
    /\ k = f => c < TakenAt(k, b, p, i)

\* Such a restore loses nothing: it rolls back no instance whose current run has
\* committed or called an irreversible tool, nor one whose output, in force, an
\* instance that stays committed read and keeps reading.
LosesNothingAt(i, also, f, b, p) ==
    \A j \in also :
        /\ ~HasCommittedAt(j, i)
        /\ BegunAt(j, i) # 0 =>
              ~\E x \in Between(BegunAt(j, i), i) :
                  By(x, {"effect"}, j) /\ wl.tools[hist[x].tool] = "irreversible"
        /\ ~\E k \in Insts, c \in Before(i) :
              /\ HasCommittedAt(k, i) /\ By(c, {"consume"}, k) /\ hist[c].from = j
              /\ LiveAt(c, k, i) /\ KeepsRead(i, also, f, b, p, k, c)
              /\ \E x \in Before(i) : Reads(c, x) /\ LiveAt(x, j, i)

\* The instances the last localize before event i said the runtime must roll
\* back with f ({} when it blamed another).
WithAt(f, i) ==
    LET ls == {j \in Before(i) : Is(j, {"localize"})}
    IN  IF ls = {} \/ hist[MaxOf(ls)].instance # f THEN {} ELSE hist[MaxOf(ls)].with

\* Restoring f to <<b, p>> before event i: the checkpoint exists, no other
\* instance that committed holds a read of an output f made after it, f did
\* nothing irreversible after it, and rolling back with it what the runtime
\* must loses nothing.
AdmissibleAt(f, b, p, i) ==
    LET a == TakenAt(f, b, p, i) IN
    /\ a # 0
    /\ ~\E j \in Insts \ {f} : HasCommittedAt(j, i) /\ ReadsAfterAt(j, f, a, i)
    /\ ~\E x \in Between(a, i) : By(x, {"effect"}, f) /\ wl.tools[hist[x].tool] = "irreversible"
    /\ LosesNothingAt(i, WithAt(f, i), f, b, p)

\* The checkpoints a restore of f before event i could name: the named ones and
\* every restore point f saved.
NamesAt(f, i) ==
    {<<b, 0>> : b \in Named}
    \cup {<<"point", hist[k].point>> : k \in {k \in Before(i) : By(k, {"checkpoint"}, f)}}

\* The admissible restores of failed instances before event i, as
\* <<instance, boundary, point>>.
AdmissibleSetAt(i) ==
    UNION {{<<f, c[1], c[2]>> : c \in {c \in NamesAt(f, i) : AdmissibleAt(f, c[1], c[2], i)}}
           : f \in {f \in Insts : FailedAt(f, i)}}

\* The instance the last localize before event i blamed.
BlamedAt(i) == hist[MaxOf({j \in Before(i) : Is(j, {"localize"})})].instance

\* Event j issues an irreversible effect: not a replay of the ledger's result.
Issues(j) == Is(j, {"effect"}) /\ wl.tools[hist[j].tool] = "irreversible" /\ ~hist[j].replayed

\* RestoreSound over the history: a restore made while some failed instance
\* had an admissible checkpoint restores the blamed instance, failed, to one.
RestoreSoundRightAt(i) ==
    Is(i, {"restore"}) /\ AdmissibleSetAt(i) # {} =>
        /\ hist[i].instance = BlamedAt(i)
        /\ <<hist[i].instance, hist[i].boundary, hist[i].point>> \in AdmissibleSetAt(i)
HistRestoreSound == Last(RestoreSoundRightAt)

\* BlockWhenNone over the history: a restore is made only while some failed
\* instance has an admissible checkpoint.
BlockWhenNoneRightAt(i) == Is(i, {"restore"}) => AdmissibleSetAt(i) # {}
HistBlockWhenNone == Last(BlockWhenNoneRightAt)

\* PreserveCommitted over the history: a restore loses nothing of what it rolls
\* back with it.
PreserveCommittedRightAt(i) ==
    Is(i, {"restore"}) =>
        LosesNothingAt(i, hist[i].also, hist[i].instance, hist[i].boundary, hist[i].point)
HistPreserveCommitted == Last(PreserveCommittedRightAt)

\* NoResurrectedEffect over the history: no two issues of an irreversible
\* effect, ever, for one intent.
NoResurrectedEffectRightAt(i) ==
    Issues(i) => ~\E j \in Before(i) : Issues(j) /\ hist[j].intent = hist[i].intent
HistNoResurrectedEffect == Last(NoResurrectedEffectRightAt)

\* Each property's history form, by name: resume-check spec requires one per
\* name of Properties, and shows on bounded models that the two forms agree.
HistoryProperties ==
    [RestoreSound |-> HistRestoreSound, BlockWhenNone |-> HistBlockWhenNone,
     PreserveCommitted |-> HistPreserveCommitted, NoResurrectedEffect |-> HistNoResurrectedEffect]
=============================================================================
