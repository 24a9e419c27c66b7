------------------------------ MODULE ResumeCore ------------------------------
(***************************************************************************)
(* Resume semantics of workflow threads on one persistence layer (v2).     *)
(*                                                                         *)
(* A thread runs in steps.  A step runs from a checkpoint: the runtime's   *)
(* routing decides which tasks the checkpoint schedules -- task instances, *)
(* each with the runtime's task id, its node and its path, so a node may   *)
(* run in many steps (loops) and several times in one step (fan-out).  A   *)
(* finished task's result is a pending write against the checkpoint its   *)
(* step runs from; when every scheduled task has a result the runtime      *)
(* makes the next checkpoint.  A task may run a child thread in its own    *)
(* namespace (a subgraph): every (thread, namespace) is a chain of its own, *)
(* judged by the same rules.  Checkpoints and writes are made in a         *)
(* process's memory and become stored when the saver acknowledges them or *)
(* when a load returns them.  A process can crash at any instant           *)
(* (SIGKILL): what was in flight may or may not have reached the store.    *)
(* A later process loads a checkpoint and its pending writes and resumes.  *)
(* A task may park at an interrupt; an answer (a resume value) addressed   *)
(* to that interrupt is delivered when the task runs again from its start. *)
(* A checkpoint may be forked (time travel) or edited (update_state).      *)
(*                                                                         *)
(* The actions are the runtime's observable moves, parameterized by what   *)
(* the runtime chose or the saver returned.  They admit wrong choices, so  *)
(* that a recorded trace of a faulty runtime still has a behaviour; each   *)
(* move records in `broke` the properties its own choice breaks.  Checking *)
(* a property on the move that can break it, instead of re-scanning the    *)
(* whole history after every move, keeps the cost of judging an event      *)
(* independent of how long the trace is; since every property is a safety *)
(* property of the moves, "no move broke it" is the same as "it holds".    *)
(* Next is the reference runtime: it makes only correct choices, and model *)
(* checking shows it never breaks a property.                              *)
(*                                                                         *)
(* Each property is stated a second time over the observed history alone   *)
(* (HistPC ... HistRD, in ResumeCoreHistory): MCResumeCoreSound shows      *)
(* that every behaviour no check flags satisfies them, and the reference   *)
(* does too (docs/contract.md, "Every property stated twice").             *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences, TLC

CONSTANTS
    Workflows,  \* the declared guarantees (and, for the reference, the plan) a behaviour may start from
    Procs       \* the processes that may run threads

(***************************************************************************)
(* A workflow record:                                                      *)
(*   durability "sync" | "async" | "exit"                                  *)
(*   effects    [default |-> Level, kinds |-> set of [kind, level]]: the   *)
(*              declared guarantee per kind of effect                      *)
(*   fencing    "none" | "lease": whether concurrent runners of one chain  *)
(*              are excluded                                               *)
(*   plan       the reference runtime's routing (model checking only):     *)
(*              depth -> set of [path, node, body]; body a tuple of ops,   *)
(*              0 = interrupt(), k > 0 = fire effect intent k              *)
(* Level: "exactly-once" | "at-least-once" | "at-most-once".               *)
(***************************************************************************)

VARIABLES
    wf,       \* the workflow's declared guarantees, fixed by Init
    ck,       \* checkpoint id -> [ch, parent, order, depth, branch, st, by, digest, origin, edit,
              \*                   begun: the tasks any run started from it,
              \*                   handled: <<t, h>> -- h ran from it as t's error handler,
              \*                   root: what it copies, transitively (itself if nothing),
              \*                   family: at a root, it and every copy of it]
    latest,   \* chain -> the stored checkpoint of highest creation order
    sched,    \* checkpoint id -> the set of [task, node, path] it schedules, once known
    wr,       \* checkpoint id -> task -> [stored, fly, kinds, raised, made]: the task's pending write
    aw,       \* checkpoint id -> the answers written on it: [stored, fly, old]
    ans,      \* interrupt -> the live answers addressed to it, as <<proc, value>>
    dlv,      \* interrupt -> the values stored task writes record it received
    closed,   \* the interrupts whose task's final result is stored: answers to them are inert
    run,      \* <<proc, chain>> -> what the process runs on that chain
    alive,    \* proc -> "down" | "up" | "ended"
    holders,  \* chain -> the processes up on it
    inflight, \* proc -> what it made that the store has not acknowledged
    ledger,   \* effect key -> [fired, by, task, at, hosts, over, cut]: times fired, the
              \* process, task and checkpoint of the last fire and the <<checkpoint,
              \* task>> of each task it ran inside, whether that attempt ended
              \* otherwise than ok, and whether a crash cut it short
    crashes,  \* crashes so far
    ending,   \* how the last invocation ended: "none", "running", "crashed", "done", "parked", "failed"
    broke,    \* the properties the last move broke
    hist      \* the observed history: every move as an event record (auxiliary, see Observe)

vars == <<wf, ck, latest, sched, wr, aw, ans, dlv, closed, run, alive, holders, inflight,
          ledger, crashes, ending, broke, hist>>

None == [none |-> TRUE]
NoWrite == [kind |-> "none", interrupt |-> 0, res |-> {}, by |-> 0, digest |-> 0]

-----------------------------------------------------------------------------
(* Small helpers on functions whose domain grows.                         *)

\* f with k mapped to v, whether or not k was in f's domain.
Put(f, k, v) == IF k \in DOMAIN f THEN [f EXCEPT ![k] = v] ELSE f @@ (k :> v)

\* f[k], or d when k is not in f's domain.
Get(f, k, d) == IF k \in DOMAIN f THEN f[k] ELSE d

Max(a, b) == IF a >= b THEN a ELSE b

-----------------------------------------------------------------------------
(* Derived views.                                                          *)

Known(c) == c \in DOMAIN ck
Stored(c) == Known(c) /\ ck[c].st = "stored"
Latest(ch) == Get(latest, ch, 0)
Order(c) == IF Known(c) THEN ck[c].order ELSE 0
Depth(c) == IF Known(c) THEN ck[c].depth ELSE 0
Branch(c) == IF Known(c) THEN ck[c].branch ELSE 0

\* The writes of checkpoint c, task -> [stored, fly, back, kinds, raised, made]: the
\* write the store holds, each process's write not yet acknowledged (process ->
\* write: two unfenced runs may end one task at once), each process's write that
\* a load showed landed before its call returned (its acknowledgement is still
\* to come, and changes nothing: a slower store), the kinds ever stored,
\* the interrupts an attempt of the task that ended raised or received (Raises),
\* whether its write was stored or not, and the contents its successful writes
\* were handed to the saver with (0: one whose content was not observed).
WritesOf(c) == Get(wr, c, [t \in {} |-> None])
NoFly == [q \in {} |-> NoWrite]
WriteOf(c, t) == Get(WritesOf(c), t, [stored |-> NoWrite, fly |-> NoFly, back |-> NoFly, kinds |-> {},
                                      raised |-> {}, made |-> {}])
Raises(w) == (IF w.kind = "interrupt" THEN {w.interrupt} ELSE {}) \cup {d.interrupt : d \in w.res}
FlyOf(c, t, p) == Get(WriteOf(c, t).fly, p, NoWrite)
Flying(c, t) == {WriteOf(c, t).fly[q] : q \in DOMAIN WriteOf(c, t).fly}
Without(f, k) == [x \in DOMAIN f \ {k} |-> f[x]]

\* Task t's successful result for the step that runs from c is stored.
StoredOk(c, t) == WriteOf(c, t).stored.kind = "ok"

\* Task t has a result for the step from c: stored, or made by process p.
HasResult(p, c, t) ==
    \/ StoredOk(c, t)
    \/ FlyOf(c, t, p).kind = "ok"

\* An error handler of task t ran from c and has a result there, for p: it
\* stands in for t's.
Handled(p, c, t) == Known(c) /\ \E x \in ck[c].handled : x[1] = t /\ HasResult(p, c, x[2])

\* The pending writes a load of c must return (stored) and may return (in flight).
\* A write is seen as [task, kind, interrupt]; an answer as [interrupt, value].
\* A load reports each write it returned with the digest of its content (0: not
\* observed) as well; Shapes leaves that out, Contents keeps a successful
\* write's content ([task, digest]) where it was observed.
SeenWrite(t, w) == [task |-> t, kind |-> w.kind, interrupt |-> w.interrupt]
Shapes(ws) == {[task |-> x.task, kind |-> x.kind, interrupt |-> x.interrupt] : x \in ws}
Contents(ws) == {[task |-> x.task, digest |-> x.digest] : x \in {x \in ws : x.kind = "ok" /\ x.digest # 0}}
\* The stored writes of c as a correct load returns them, with their content.
ShownWrites(c) == {[task |-> t, kind |-> WriteOf(c, t).stored.kind,
                    interrupt |-> WriteOf(c, t).stored.interrupt, digest |-> WriteOf(c, t).stored.digest] :
                     t \in {t \in DOMAIN WritesOf(c) : WriteOf(c, t).stored.kind # "none"}}
MustWrites(c) == {SeenWrite(t, WriteOf(c, t).stored) :
                    t \in {t \in DOMAIN WritesOf(c) : WriteOf(c, t).stored.kind # "none"}}
MayWrites(c) == MustWrites(c) \cup
                UNION {{SeenWrite(t, w) : w \in Flying(c, t)} : t \in DOMAIN WritesOf(c)}
\* An answer in flight is [interrupt, value, by, over]: `over`, the answers stored
\* on the checkpoint when it was handed to the saver, which it replaces once it
\* lands; `old`, the stored answers so replaced.
AnswersOf(c) == Get(aw, c, [stored |-> {}, fly |-> {}, old |-> {}])
Answer(a) == [interrupt |-> a.interrupt, value |-> a.value]
InFlight(c, a, v, p) == \E x \in AnswersOf(c).fly : x.interrupt = a /\ x.value = v /\ x.by = p
\* The record of c's answers once the answers in flight `landed` reached the store.
Land(r, landed) ==
    [stored |-> r.stored \cup {Answer(a) : a \in landed},
     fly |-> r.fly \ landed,
     old |-> (r.old \cup UNION {a.over : a \in landed}) \ {Answer(a) : a \in landed}]
\* A stored answer may leave the store once a stored task write records that its
\* interrupt received it, or once a later answer replaced it (a saver keeps one
\* answer slot per checkpoint).
MustAnswers(c) == {x \in AnswersOf(c).stored \ AnswersOf(c).old : x.value \notin Get(dlv, x.interrupt, {})}
KeptAnswers(c) == AnswersOf(c).stored
FlyAnswers(c) == {Answer(a) : a \in AnswersOf(c).fly}
MayAnswers(c) == KeptAnswers(c) \cup FlyAnswers(c)

\* One answer slot per checkpoint: a later answer stored there replaces an earlier
\* one, so a load returns at least one of the answers stored, not yet received and
\* not replaced (the last stored, where the trace cannot tell which one that was),
\* unless it returns one still in flight, which may have landed over them.
OneSlot(must, fly, answers) == must # {} => (must \cap answers # {} \/ fly \cap answers # {})

\* The values interrupt a may legitimately receive.
Heard(a) == {x[2] : x \in Get(ans, a, {})} \cup Get(dlv, a, {})

LevelOf(kind) ==
    IF \E d \in wf.effects.kinds : d.kind = kind
    THEN (CHOOSE d \in wf.effects.kinds : d.kind = kind).level
    ELSE wf.effects.default

RunOf(p, ch) == run[<<p, ch>>]
HasRun(p, ch) == <<p, ch>> \in DOMAIN run /\ alive[p] = "up"

(* A process's run on a chain, run[<<p, ch>>]:                             *)
(*   cur      the checkpoint its current step runs from (0: none yet)      *)
(*   pinned   it loaded an older checkpoint than the latest: it must fork *)
(*            before it changes anything                                   *)
(*   started  the tasks of the current step it started, as [task, node,    *)
(*            path]                                                        *)
(*   running  the tasks running now                                        *)
(*   failed   the tasks whose last attempt in this step ended in an error  *)
(*   pos      per task: the next op of its body (reference runtime only)   *)
(*   res      per task: the deliveries its current attempt received       *)
(*   ended    per task: how its last attempt in this step ended            *)
(*   up       a nested run's: the <<chain, task>> of the task it runs      *)
(*            inside, while that attempt lasts (<<>>: none, or not known)  *)
(*   hz       how many checkpoints were made when its load (or fork) began *)
(*            it: the ones it surely comes after                           *)
(*   into     the checkpoint of another chain (a subgraph's) its load was  *)
(*            asked to continue from, until a nested load of the process   *)
(*            returns it (0: none)                                         *)
NewRun(c, pinned, nested, up, hz) ==
    [cur |-> c, pinned |-> pinned, nested |-> nested, started |-> {}, running |-> {}, failed |-> {},
     pos |-> [t \in {} |-> 1], res |-> [t \in {} |-> {}], ended |-> [t \in {} |-> "none"],
     up |-> up, hz |-> hz, into |-> 0]

\* A running task's record among those its step started.
StartedAs(r, t) == CHOOSE s \in r.started : s.task = t

-----------------------------------------------------------------------------
(* The checks: each names what one kind of move must not do, and which    *)
(* property that is part of.  A move puts into `broke` the names of the    *)
(* checks it fails.                                                        *)

\* The set of property names whose check failed, from <<name, failed>> pairs.
Failing(checks) == {c[1] : c \in {c \in checks : c[2]}}

\* Checkpoint x surely comes after checkpoint c: its maker made c before it, or
\* made it in a run whose load began after c was made, or a load returned x as
\* the latest while c was stored (`above`).  Two processes running one chain at
\* once make checkpoints in an order the trace can see only so.
MadeAfter(x, c) == Order(c) <= ck[x].hz \/ (ck[x].by = ck[c].by /\ Order(c) < Order(x))
After(x, c) == MadeAfter(x, c) \/ x \in ck[c].above

\* A stored checkpoint a load returned as the latest while c was stored.
ShownAbove(c) == Known(c) /\ \E x \in ck[c].above : Stored(x)

\* What a load returning got as the latest of ch shows came before it: the
\* checkpoints of ch stored then that it was not already known to come after
\* (none for a load asked for one, or for the latest before another).  Kept on
\* each of them (`above`): one process's run makes none, so the state stays small.
ShownBelow(ch, asked, before, got) ==
    IF asked = 0 /\ before = 0 /\ got # 0 /\ Known(got)
    THEN {x \in DOMAIN ck : Stored(x) /\ ck[x].ch = ch /\ x # got /\ ~MadeAfter(got, x)} ELSE {}

\* A stored checkpoint of ch that no other stored one of ch surely comes after: the
\* stored one of highest creation order is one; one made concurrently with it is too.
Newest(ch, c) ==
    Stored(c) /\ ck[c].ch = ch /\ ~\E x \in DOMAIN ck : Stored(x) /\ ck[x].ch = ch /\ After(x, c)

\* A checkpoint of ch still in flight that no stored one of ch surely comes
\* after: a store may show a put before it acknowledges it, so a load in another
\* process may return one made concurrently with the latest stored, not only a newer one.
NewestInFlight(ch, c) ==
    /\ Known(c) /\ ck[c].st = "made" /\ ck[c].ch = ch
    /\ ~\E x \in DOMAIN ck : Stored(x) /\ ck[x].ch = ch /\ After(x, c)

\* The stored checkpoints of ch made before checkpoint b: what a request for
\* "the latest before b" chooses from (none if b was never made).
StoredBefore(ch, b) == {c \in DOMAIN ck : Stored(c) /\ ck[c].ch = ch /\ Order(c) < Order(b)}

\* CV: a load asked for the latest checkpoint of ch made before b (LangGraph's
\* `list(before=b, limit=1)` when a subgraph starts under a replaying parent)
\* returned one made before b that no stored one made before b surely comes after,
\* or nothing only when none is stored.
BeforeWrong(ch, b, got) ==
    IF got = 0 THEN StoredBefore(ch, b) # {}
    ELSE ~(Known(got) /\ Order(got) < Order(b) /\ ~\E x \in StoredBefore(ch, b) : After(x, got))

\* CV: a load of c returned a write the store neither holds nor has in flight, or
\* left out a task whose write it holds: a task has one write slot, so the load shows
\* its stored write or one of its writes still in flight, which may have landed over it.
WritesWrong(c, writes) ==
    \/ ~(Shapes(writes) \subseteq MayWrites(c))
    \/ \E m \in MustWrites(c) : ~\E x \in Shapes(writes) : x.task = m.task

\* The nearest stored checkpoint among c and its ancestors (0: none).
RECURSIVE StoredAncestor(_)
StoredAncestor(c) ==
    IF c = 0 THEN 0 ELSE IF ck[c].st = "stored" THEN c ELSE StoredAncestor(ck[c].parent)

\* The parent a load shows checkpoint c with: the one it has, but (exit
\* durability) a run's checkpoint still in flight is handed to the saver as a
\* child of the last stored one, as its put will store it (PutCheckpoint).
ShownParent(c) ==
    IF wf.durability = "exit" /\ ~ck[c].edit /\ ck[c].st = "made"
    THEN StoredAncestor(ck[c].parent) ELSE ck[c].parent

\* CV: the checkpoint a load returned is the one it had to return: the one
\* asked for (or nothing, if no checkpoint of that id was stored on this chain),
\* or (none asked) the stored one of highest creation order (or one
\* made concurrently with it, see After, never one an earlier load of the latest
\* returned a stored one over) or one still in flight that no stored one surely
\* comes after (a store may show a put before it acknowledges it), or (asked
\* for the latest before b) the latest stored before b; with the parent, content
\* and pending writes that were saved.
LoadWrong(ch, asked, before, got, parent, digest, writes, answers) ==
    \/ asked # 0 /\ got # asked /\ ~(got = 0 /\ ~(Stored(asked) /\ ck[asked].ch = ch))
    \/ asked = 0 /\ before # 0 /\ BeforeWrong(ch, before, got)
    \/ asked = 0 /\ before = 0 /\ got = 0 /\ Latest(ch) # 0
    \/ asked = 0 /\ before = 0 /\ got # 0 /\
          \/ ~(got = Latest(ch) \/ Newest(ch, got) \/ NewestInFlight(ch, got))
          \/ ShownAbove(got)
    \/ got # 0 /\ ~Known(got)
    \/ got # 0 /\ Known(got) /\
          \/ ck[got].ch # ch
          \/ ck[got].st = "lost"
          \/ ShownParent(got) # parent
          \/ ck[got].digest # 0 /\ digest # 0 /\ ck[got].digest # digest
          \/ WritesWrong(got, writes)
          \/ ~(OneSlot(MustAnswers(got), FlyAnswers(got), answers) /\ answers \subseteq MayAnswers(got))

\* CV: a successful write a load returned has a content one of the task's
\* writes on that checkpoint was handed to the saver with (a write stored in
\* part, or one no run made, has another), unless one was handed over unobserved.
WriteContentWrong(got, writes) ==
    got # 0 /\ Known(got) /\
    \E x \in Contents(writes) : LET made == WriteOf(got, x.task).made IN 0 \notin made /\ x.digest \notin made

\* PC: a task whose result is stored is never run again.
RerunsStored(p, ch, t) == StoredOk(RunOf(p, ch).cur, t)

\* PC: in sync mode a step runs only from a checkpoint the store acknowledged.
RunsAhead(p, ch) == wf.durability = "sync" /\ ~Stored(RunOf(p, ch).cur)

\* PC: a step ends (a new checkpoint is made) only when every task its
\* checkpoint schedules has a result; on a fork copy this is FD's.
StepIncomplete(p, ch) ==
    LET c == RunOf(p, ch).cur IN
    \E s \in sched[c] : ~HasResult(p, c, s.task) /\ ~Handled(p, c, s.task)

\* In exit durability a subgraph that completes saves nothing of its own: its
\* result is in the parent's checkpoint.
SavedWithParent(k) ==
    /\ wf.durability = "exit" /\ run[k].nested
    /\ run[k].cur \in DOMAIN sched /\ sched[run[k].cur] = {}

\* Run k ends with a write of that kind (an interrupt, an error): one of a task t
\* on the checkpoint it runs from reached the store, and the run's own last attempt
\* of t there, if any, ended so too (what another process wrote over it since is
\* not this run's doing: without a lease a concurrent run may replace it).  In exit
\* durability a later save may drop the run's own result unsaved: not asked there.
OwnEnd(k, t, kind) == wf.durability = "exit" \/ Get(run[k].ended, t, kind) = kind
RunEnds(k, kind) ==
    \E t \in DOMAIN WritesOf(run[k].cur) :
        kind \in WriteOf(run[k].cur, t).kinds /\ OwnEnd(k, t, kind)

\* PC: an invocation returns only when the checkpoints it is on, its writes and answers are
\* stored (acknowledged, or returned by a load: the store has them either way),
\* and ends as it says: done with nothing scheduled, parked at an interrupt,
\* or failed -- one that reached the store and that its own run has not since
\* answered and completed, or retried to another end.
FinishWrong(p, outcome) ==
    LET mine == {k \in DOMAIN run : k[1] = p}
        curs == {run[k].cur : k \in mine}
    IN  \/ \E c \in inflight[p].cks : ~Stored(c) /\ wf.durability # "exit"
        \/ \E x \in inflight[p].ans : InFlight(x[1], x[2], x[3], p)
        \/ \E w \in inflight[p].wrs : w[1] \in curs /\ p \in DOMAIN WriteOf(w[1], w[2]).fly
        \/ \E k \in mine : run[k].cur # 0 /\ ~Stored(run[k].cur) /\ ~SavedWithParent(k)
        \/ outcome = "done" /\ \E c \in curs : c \notin DOMAIN sched \/ sched[c] # {}
        \/ outcome = "parked" /\ ~\E k \in mine : RunEnds(k, "interrupt")
        \/ outcome = "failed" /\ ~\E k \in mine : RunEnds(k, "error")

\* RD: every run from a checkpoint schedules the same tasks.
ScheduleDiffers(c, tasks) == c \in DOMAIN sched /\ sched[c] # tasks

\* RD: a step starts only tasks its checkpoint schedules.
StartsUnscheduled(c, s) == c \in DOMAIN sched /\ s \notin sched[c]

\* RD: a task no schedule names is made by the run of a task of the same step --
\* one running (a call), or one whose last attempt failed here or whose error
\* the store holds (its error handler).
Failed(r, b) == b \in r.failed \/ WriteOf(r.cur, b).stored.kind = "error"
CallerIdle(r, b) == b \notin r.running /\ ~Failed(r, b)

\* RD: a task the checkpoint schedules runs as scheduled, never as a task another
\* task's run makes (a call, an error handler).
CallsScheduled(r, t) == r.cur \in DOMAIN sched /\ \E s \in sched[r.cur] : s.task = t

\* FD: a run changes only its own branch -- never the checkpoint it left,
\* never one older than the latest without forking it first.
ChangesOtherBranch(p, ch, c) == c # RunOf(p, ch).cur \/ RunOf(p, ch).pinned

\* A checkpoint's copies: the checkpoint it is a fork copy of (transitively), and
\* every copy of that one -- one state, whichever of them shows it first.
Root(c) == ck[c].root
Family(c) == ck[Root(c)].family
FamilyDigests(c) == {ck[x].digest : x \in Family(c)} \ {0}

\* FD: a fork copy holds exactly the state of the checkpoint it copies and
\* schedules the same work -- whichever of the two shows its content or its
\* schedule first.  CopyDiffers: a copy of src made with content d;
\* FamilyDiffers: checkpoint c, its own content not yet known, shown with d.
CopyDiffers(src, d) == d # 0 /\ \E x \in FamilyDigests(src) : x # d
FamilyDiffers(c, d) == c # 0 /\ Known(c) /\ ck[c].digest = 0 /\ CopyDiffers(c, d)

\* CV: a checkpoint has one content -- the one it was made with, or else the
\* one its first put or load showed; it is never stored or returned as another.
ContentChanged(c, digest) == ck[c].digest # 0 /\ digest # 0 /\ ck[c].digest # digest

ShapeOf(tasks) == {[node |-> s.node, path |-> s.path] : s \in tasks}
ForkSchedulesOther(c, tasks) ==
    \E x \in Family(c) \ {c} : x \in DOMAIN sched /\ ShapeOf(sched[x]) # ShapeOf(tasks)

\* FD: a checkpoint whose own schedule is not known yet starts only work that every
\* known schedule of its copies (or of the checkpoint it copies) names -- a copy's
\* task ids are its own, its work (node and path) is its source's.
StartsOutsideFamily(c, s) ==
    /\ Known(c) /\ c \notin DOMAIN sched
    /\ \E x \in Family(c) \ {c} :
          x \in DOMAIN sched /\ [node |-> s.node, path |-> s.path] \notin ShapeOf(sched[x])

\* FD: a schedule of c names the work any of its copies (or the checkpoint it
\* copies) began, scheduled or not.
FamilyBegunOutside(c, tasks) ==
    \E x \in Family(c) \ {c} : ~(ShapeOf(ck[x].begun) \subseteq ShapeOf(tasks))

\* EO: an effect fires as often as its kind's declared level allows: at most
\* once for exactly-once and at-most-once, again only after a crash cut short
\* the work that fired it last (its process crashed, or its invocation returned,
\* while that attempt had not ended otherwise than ok and its ok result was not
\* yet stored on a stored checkpoint) for at-least-once; and (but for
\* at-most-once) it is skipped only if it fired.
Unfired == [fired |-> 0, by |-> 0, task |-> 0, at |-> 0, hosts |-> {}, over |-> TRUE, cut |-> FALSE,
           ended |-> FALSE, levels |-> {}]
\* p's attempt of task t ended otherwise than ok: a later crash of p does not cut
\* short the effects it fired.
Over(l, p, t) == [k \in DOMAIN l |-> IF l[k].by = p /\ l[k].task = t THEN [l[k] EXCEPT !.over = TRUE]
                                    ELSE l[k]]
\* The work that fired ledger entry l is safe: its ok result is stored on a
\* stored checkpoint, and so is that of every task it ran inside (a subgraph's
\* result is safe only once its host's is: a host run again runs it again).
Safe(c, t) == c # 0 /\ ck[c].st = "stored" /\ StoredOk(c, t)
Saved(l) == Safe(l.at, l.task) /\ \A h \in l.hosts : Safe(h[1], h[2])
\* The ledger once p's memory is gone (killed, or its invocation returned): the
\* effects p fired last in work not over and not saved were cut short; those in
\* work saved then have `ended`, and are cut short once that work is no longer
\* saved (a concurrent run's write replaced its result: see Cut).
CutBy(p) == [k \in DOMAIN ledger |->
                IF ledger[k].by = p /\ ~ledger[k].over
                THEN IF ~Saved(ledger[k]) THEN [ledger[k] EXCEPT !.cut = TRUE, !.by = 0]
                     ELSE [ledger[k] EXCEPT !.ended = TRUE]
                ELSE ledger[k]]
\* The work that fired ledger entry l was cut short: when its process's memory
\* went, or since then, by another write replacing the result it had saved.
Cut(l) == l.cut \/ (l.ended /\ ~Saved(l))
\* An effect's level is its own, not an event's: the levels of the kinds its
\* fires were recorded with all hold (a fire recorded without its kind, or with
\* another, does not weaken the promise the first one made).
EffectWrong(key, kind, status) ==
    LET seen == Get(ledger, key, Unfired)
        levels == seen.levels \cup {LevelOf(kind)}
    IN  IF status = "fired"
        THEN seen.fired > 0 /\ (levels # {"at-least-once"} \/ ~Cut(seen))
        ELSE seen.fired = 0 /\ levels # {"at-most-once"}

\* CO: an interrupt receives only a value answered to it.
DeliversForeign(res) == \E d \in res : d.value \notin Heard(d.interrupt)

\* CO: an attempt receives one value per interrupt (its interrupt() call returns once).
TwoValues(res) == \E d, x \in res : d.interrupt = x.interrupt /\ d.value # x.value

\* CO: an answer to an interrupt a task raised reaches only that task, resumed on
\* the checkpoint it parked on (an attempt of it there that ended raised or
\* received it, its write stored or lost). An interrupt no ended attempt raised is
\* a live wait (a durable-execution signal): the task waiting receives it as it runs.
RaisedAnywhere(a) == \E c \in DOMAIN wr : \E t \in DOMAIN wr[c] : a \in wr[c][t].raised
ReceivesUnraised(c, t, res) ==
    \E d \in res : d.interrupt \notin WriteOf(c, t).raised /\ RaisedAnywhere(d.interrupt)

\* CO: an interrupt has at most one live answer (once its task's final result is
\* stored, a late answer can no longer reach it).
AnsweredTwice(a, entries) == a \notin closed /\ Cardinality(entries) > 1

\* CO: an interrupt not yet consumed is answered with a value other than one a
\* stored task write records it received (that answer lost since with its writer).
ReceivedOther(a, v) == a \notin closed /\ \E x \in Get(dlv, a, {}) : x # v

\* CO: under a lease, one process at a time runs a chain.
Unfenced(ch, p) == wf.fencing = "lease" /\ Get(holders, ch, {}) \ {p} # {}

\* The tasks a nested load of ch by p may run inside: <<chain, task>> of each task
\* p's live runs on other chains are running (of id `under`, when the load names it).
Hosts(p, ch, under) ==
    LET ks == IF alive[p] = "up" THEN {k \in DOMAIN run : k[1] = p /\ k[2] # ch} ELSE {}
    IN  UNION {{<<k[2], t>> : t \in {t \in run[k].running : under = 0 \/ t = under}} : k \in ks}

\* The task a nested load runs inside, when only one can be it (<<>> otherwise).
Host(p, ch, nested, under) ==
    IF nested /\ Cardinality(Hosts(p, ch, under)) = 1 THEN CHOOSE x \in Hosts(p, ch, under) : TRUE
    ELSE <<>>

\* PC: a nested load (a subgraph's) happens inside a task its process runs on
\* another chain (the one it names, if it names one); a run that only says it is
\* nested would, in exit durability, finish having saved nothing of its own
\* (SavedWithParent).
NestedOrphan(p, ch, nested, under) == nested /\ Hosts(p, ch, under) = {}

\* PC: a task ends ok only if no subgraph run inside its attempt parked: an
\* interrupt raised in a subgraph parks the task that runs it, so its answer is
\* asked for and the subgraph resumed (ended ok, a crash would leave the
\* interrupt answerable by no one).
EndsOverParked(p, ch, t, outcome) ==
    outcome = "ok" /\
    \E k \in DOMAIN run :
        k[1] = p /\ run[k].up = <<ch, t>> /\ \E x \in DOMAIN run[k].ended : run[k].ended[x] = "interrupt"

\* A nested load that returned checkpoint got, with content digest, continues from
\* checkpoint x: it returned x, or a copy of x's content.
Continues(x, got, digest) ==
    x # 0 /\ got # 0 /\ (got = x \/ (Known(x) /\ ck[x].digest # 0 /\ digest = ck[x].digest))

\* PC: a run asked to continue from a checkpoint inside a subgraph (time travel
\* into it) steps on, or its invocation returns, only once a nested load of its
\* process continued from that checkpoint.
LeavesAsked(p, ch) == <<p, ch>> \in DOMAIN run /\ run[<<p, ch>>].into # 0
ReturnsLeavingAsked(p) == \E k \in DOMAIN run : k[1] = p /\ run[k].into # 0

\* The move's properties: one set for the whole move.
Broke(checks) == broke' = Failing(checks)

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

Empty == [cks |-> {}, wrs |-> {}, ans |-> {}]

InitWith(w) ==
    /\ wf = w
    /\ ck = [c \in {} |-> None]
    /\ latest = [c \in {} |-> 0]
    /\ sched = [c \in {} |-> {}]
    /\ wr = [c \in {} |-> None]
    /\ aw = [c \in {} |-> None]
    /\ ans = [a \in {} |-> {}]
    /\ dlv = [a \in {} |-> {}]
    /\ closed = {}
    /\ run = [k \in {} |-> None]
    /\ alive = [p \in Procs |-> "down"]
    /\ holders = [c \in {} |-> {}]
    /\ inflight = [p \in Procs |-> Empty]
    /\ ledger = [k \in {} |-> None]
    /\ crashes = 0
    /\ ending = "none"
    /\ broke = {}
    /\ hist = <<>>

Init == \E w \in Workflows : InitWith(w)

\* Task writes `recs` became stored: the values they record each interrupt received
\* may be delivered to it again, and a final result closes the interrupts it consumed.
Settle(recs) ==
    LET res == UNION {r.res : r \in recs}
        final == UNION {{d.interrupt : d \in r.res} : r \in {r \in recs : r.kind # "interrupt"}}
    IN  /\ dlv' = IF res = {} THEN dlv
                  ELSE [x \in DOMAIN dlv \cup {d.interrupt : d \in res} |->
                          Get(dlv, x, {}) \cup {d.value : d \in {d \in res : d.interrupt = x}}]
        /\ closed' = closed \cup final

\* The writes in flight of task t on c that a load returned: they had landed.
Landed(c, t, writes) == {w \in Flying(c, t) : SeenWrite(t, w) \in Shapes(writes)}

\* What a load saw becomes stored: the checkpoint (under the parent it was shown
\* with, ShownParent) and every write it returned; and each checkpoint it showed
\* came before got (`below`, from ShownBelow) has got in its `above`.
StoreSeen(got, digest, writes, answers, below) ==
    /\ ck' = LET own == IF got # 0 /\ Known(got)
                        THEN [ck EXCEPT ![got].st = IF @ = "made" THEN "stored" ELSE @,
                                        ![got].digest = IF @ = 0 THEN digest ELSE @,
                                        ![got].parent = ShownParent(got)]
                        ELSE ck
             IN  IF below = {} THEN own
                 ELSE [x \in DOMAIN own |-> IF x \in below THEN [own[x] EXCEPT !.above = @ \cup {got}]
                                          ELSE own[x]]
    /\ latest' = IF got # 0 /\ Known(got) /\ Order(got) > Order(Latest(ck[got].ch))
                 THEN Put(latest, ck[got].ch, got) ELSE latest
    /\ Settle(IF got = 0 \/ got \notin DOMAIN wr THEN {}
              ELSE UNION {Landed(got, t, writes) : t \in DOMAIN wr[got]})
    /\ wr' = IF got = 0 \/ got \notin DOMAIN wr THEN wr
             ELSE [wr EXCEPT ![got] =
                     [t \in DOMAIN @ |->
                        LET landed == Landed(got, t, writes) IN
                        IF landed = {} THEN @[t]
                        ELSE [stored |-> CHOOSE w \in landed : TRUE,
                              fly |-> [q \in {q \in DOMAIN @[t].fly : @[t].fly[q] \notin landed} |-> @[t].fly[q]],
                              back |-> [q \in {q \in DOMAIN @[t].fly : @[t].fly[q] \in landed} |-> @[t].fly[q]]
                                       @@ @[t].back,
                              kinds |-> @[t].kinds \cup {w.kind : w \in landed},
                              raised |-> @[t].raised \cup UNION {Raises(w) : w \in landed},
                              made |-> @[t].made]]]
    /\ aw' = IF got = 0 \/ got \notin DOMAIN aw THEN aw
             ELSE [aw EXCEPT ![got] = Land(@, {a \in @.fly : Answer(a) \in answers})]

\* Process p reads chain ch: it asked the saver for checkpoint `asked` (0: the
\* latest, or with `before` # 0 the latest made before checkpoint `before`) and
\* got checkpoint `got` (0: none) with that parent, content digest, pending writes
\* and answers.  A read inside p's run on ch orders that run's later checkpoints
\* after every one made so far, as its load did (hz).
Read(p, ch, asked, before, got, parent, digest, writes, answers) ==
    /\ Observe([ev |-> "read", p |-> p, ch |-> ch, asked |-> asked, before |-> before, got |-> got,
                parent |-> parent, digest |-> digest, writes |-> Shapes(writes),
                contents |-> Contents(writes), answers |-> answers])
    /\ Broke({<<"CV", LoadWrong(ch, asked, before, got, parent, digest, writes, answers)>>,
              <<"FD", FamilyDiffers(got, digest)>>, <<"CV", WriteContentWrong(got, writes)>>})
    /\ StoreSeen(got, digest, writes, answers, ShownBelow(ch, asked, before, got))
    /\ run' = IF <<p, ch>> \in DOMAIN run THEN [run EXCEPT ![<<p, ch>>].hz = Cardinality(DOMAIN ck)]
              ELSE run
    /\ UNCHANGED <<wf, sched, ans, alive, holders, inflight, ledger, crashes, ending>>

\* Process p starts (or restarts) its run on chain ch from what a load returned;
\* `into`: the invocation asked to continue from that checkpoint of another chain
\* (time travel into a subgraph; 0: none).  A nested load continuing from what a
\* run of p was asked to continue from settles that run's request.
LoadInto(p, ch, asked, before, got, parent, digest, writes, answers, nested, under, into) ==
    /\ Observe([ev |-> "load", p |-> p, ch |-> ch, asked |-> asked, before |-> before, got |-> got,
                parent |-> parent, digest |-> digest, writes |-> Shapes(writes),
                contents |-> Contents(writes), answers |-> answers,
                nested |-> nested, under |-> under, into |-> into])
    /\ Broke({<<"CV", LoadWrong(ch, asked, before, got, parent, digest, writes, answers)>>,
              <<"FD", FamilyDiffers(got, digest)>>, <<"CO", Unfenced(ch, p)>>,
              <<"PC", NestedOrphan(p, ch, nested, under)>>, <<"CV", WriteContentWrong(got, writes)>>})
    /\ StoreSeen(got, digest, writes, answers, ShownBelow(ch, asked, before, got))
    /\ run' = Put([k \in DOMAIN run |->
                      IF k[1] = p /\ nested /\ Continues(run[k].into, got, digest)
                      THEN [run[k] EXCEPT !.into = 0] ELSE run[k]],
                   <<p, ch>>,
                   [NewRun(got, asked # 0 /\ got # 0 /\ Order(got) < Order(Latest(ch)), nested,
                           Host(p, ch, nested, under), Cardinality(DOMAIN ck)) EXCEPT !.into = into])
    /\ alive' = [alive EXCEPT ![p] = "up"]
    /\ holders' = Put(holders, ch, Get(holders, ch, {}) \cup {p})
    /\ ending' = "running"
    /\ UNCHANGED <<wf, sched, ans, inflight, ledger, crashes>>

Load(p, ch, asked, before, got, parent, digest, writes, answers, nested, under) ==
    LoadInto(p, ch, asked, before, got, parent, digest, writes, answers, nested, under, 0)

\* CV: a runtime refuses a load only while another process runs the chain (its
\* exclusion at work); refusing otherwise hides the thread's stored checkpoints.
RefusesFreeChain(ch, p) == Get(holders, ch, {}) \ {p} = {}

\* Process p's load of chain ch is refused because another process holds it: no run
\* starts.
Refused(p, ch) ==
    /\ Observe([ev |-> "refused", p |-> p, ch |-> ch])
    /\ Broke({<<"CV", RefusesFreeChain(ch, p)>>})
    /\ UNCHANGED <<wf, ck, latest, sched, wr, aw, ans, dlv, closed, run, alive, holders, inflight,
                   ledger, crashes, ending, closed>>

\* A new checkpoint c of chain ch made by p in memory, with content digest d
\* (0: not observed; then its first put or load fixes it).  It surely comes after
\* p's own earlier checkpoints and, within a run, those made before the run's load
\* began it (hz); outside a run, after every checkpoint made so far.
Made(p, ch, c, parent, depth, branch, origin, d) ==
    [ch |-> ch, parent |-> parent, order |-> Cardinality(DOMAIN ck) + 1, depth |-> depth,
     branch |-> branch, st |-> "made", by |-> p, digest |-> d, origin |-> origin, edit |-> FALSE,
     begun |-> {}, handled |-> {}, above |-> {},
     root |-> IF origin = 0 THEN c ELSE ck[origin].root, family |-> {c},
     hz |-> IF <<p, ch>> \in DOMAIN run THEN run[<<p, ch>>].hz ELSE Cardinality(DOMAIN ck)]

\* The tasks checkpoint c schedules, as the runtime's routing decided them.
Schedule(p, ch, c, tasks) ==
    /\ Known(c)
    /\ Observe([ev |-> "schedule", p |-> p, ch |-> ch, c |-> c, tasks |-> tasks])
    /\ Broke({<<"RD", ScheduleDiffers(c, tasks)>>,
              <<"RD", ~(ck[c].begun \subseteq tasks)>>,
              <<"FD", ForkSchedulesOther(c, tasks)>>,
              <<"FD", FamilyBegunOutside(c, tasks)>>})
    /\ sched' = IF c \in DOMAIN sched THEN sched ELSE sched @@ (c :> tasks)
    /\ UNCHANGED <<wf, ck, latest, wr, aw, ans, dlv, closed, run, alive, holders, inflight, ledger,
                   crashes, ending>>

\* Task t (of node n, path pa) begins running in p's current step on ch; the
\* subgraph runs inside its earlier attempt are no longer inside this one.
Begin(p, ch, t, n, pa) ==
    run' = [k \in DOMAIN run |->
              IF k = <<p, ch>>
              THEN [run[k] EXCEPT !.started = @ \cup {[task |-> t, node |-> n, path |-> pa]},
                                  !.running = @ \cup {t}, !.pos = Put(@, t, 1), !.res = Put(@, t, {})]
              ELSE IF k[1] = p /\ run[k].up = <<ch, t>> THEN [run[k] EXCEPT !.up = <<>>]
              ELSE run[k]]

\* Process p starts task t (of node n, path pa) in its current step on ch.
StartTask(p, ch, t, n, pa) ==
    LET r == RunOf(p, ch)
        s == [task |-> t, node |-> n, path |-> pa]
    IN
    /\ HasRun(p, ch) /\ r.cur # 0
    /\ t \notin r.running
    /\ Observe([ev |-> "start", p |-> p, ch |-> ch, task |-> t, node |-> n, path |-> pa, by |-> 0])
    /\ Broke({<<"PC", RerunsStored(p, ch, t)>>, <<"PC", RunsAhead(p, ch)>>,
              <<"RD", StartsUnscheduled(r.cur, s)>>, <<"FD", StartsOutsideFamily(r.cur, s)>>})
    /\ Begin(p, ch, t, n, pa)
    /\ ck' = IF Known(r.cur) THEN [ck EXCEPT ![r.cur].begun = @ \cup {s}] ELSE ck
    /\ UNCHANGED <<wf, latest, sched, wr, aw, ans, dlv, closed, alive, holders, inflight, ledger,
                   crashes, ending>>

\* The run of task b makes task t (of node n, path pa): b's body calls it while
\* b runs (LangGraph's functional-API `@task` call), or the runtime runs it as
\* b's error handler once b failed (then t's result stands in for b's when the
\* step completes).  Its checkpoint does not schedule t; t runs in the same
\* step and stores its result on the same checkpoint -- so one whose result is
\* stored is never run again either.
CallTask(p, ch, b, t, n, pa) ==
    LET r == RunOf(p, ch) IN
    /\ HasRun(p, ch) /\ r.cur # 0
    /\ t \notin r.running /\ t # b
    /\ Observe([ev |-> "start", p |-> p, ch |-> ch, task |-> t, node |-> n, path |-> pa, by |-> b])
    /\ Broke({<<"RD", CallerIdle(r, b)>>, <<"RD", CallsScheduled(r, t)>>,
              <<"PC", RerunsStored(p, ch, t)>>, <<"PC", RunsAhead(p, ch)>>})
    /\ Begin(p, ch, t, n, pa)
    /\ ck' = IF Known(r.cur) /\ b \notin r.running /\ Failed(r, b)
             THEN [ck EXCEPT ![r.cur].handled = @ \cup {<<b, t>>}] ELSE ck
    /\ UNCHANGED <<wf, latest, sched, wr, aw, ans, dlv, closed, alive, holders, inflight,
                   ledger, crashes, ending>>

\* The task a nested run of p runs inside (its `up`) is still that attempt, in p's
\* current step of the host's chain.
HostLive(p, up) ==
    up # <<>> /\ <<p, up[1]>> \in DOMAIN run /\ \E s \in run[<<p, up[1]>>].started : s.task = up[2]

\* The logical work of task t in p's run on ch: the chain, branch, step depth and
\* task path -- the same for every re-creation of the task's checkpoint -- where
\* a subgraph's chain (a nested run inside a live host) stands for the host's own
\* work, so that a subgraph run again under a re-created parent checkpoint (a new
\* host task id, so a new namespace and chain) is the same work.  `n` bounds the
\* hosts followed (a trace may link runs in a cycle).  A flat tuple: the host's
\* work, then <<branch, depth, path>> per level down.
RECURSIVE WorkOf(_, _, _, _)
WorkOf(p, ch, t, n) ==
    LET r == RunOf(p, ch)
        own == <<Branch(r.cur), Depth(r.cur), StartedAs(r, t).path>>
    IN  IF n > 0 /\ HostLive(p, r.up) THEN WorkOf(p, r.up[1], r.up[2], n - 1) \o own
        ELSE <<ch>> \o own

\* The <<checkpoint, task>> of every live host task p's run on ch runs inside.
RECURSIVE HostsOf(_, _, _)
HostsOf(p, ch, n) ==
    LET up == RunOf(p, ch).up IN
    IF n > 0 /\ HostLive(p, up) THEN {<<RunOf(p, up[1]).cur, up[2]>>} \cup HostsOf(p, up[1], n - 1)
    ELSE {}

\* The logical work an effect belongs to, and its intent.
EffectKey(p, ch, t, i) == <<WorkOf(p, ch, t, Cardinality(DOMAIN run)), i>>

\* Running task t fires (or skips, believing it fired) effect intent i of kind k.
Effect(p, ch, t, i, k, status) ==
    LET r == RunOf(p, ch)
        key == EffectKey(p, ch, t, i)
        seen == Get(ledger, key, Unfired)
    IN
    /\ HasRun(p, ch) /\ t \in r.running
    /\ Observe([ev |-> "effect", p |-> p, ch |-> ch, task |-> t, intent |-> i, kind |-> k,
                status |-> status])
    /\ Broke({<<"EO", EffectWrong(key, k, status)>>})
    /\ ledger' = IF status = "fired"
                 THEN Put(ledger, key, [fired |-> seen.fired + 1, by |-> p, task |-> t, at |-> r.cur,
                                        hosts |-> HostsOf(p, ch, Cardinality(DOMAIN run)),
                                        over |-> FALSE, cut |-> FALSE, ended |-> FALSE,
                                        levels |-> seen.levels \cup {LevelOf(k)}])
                 ELSE ledger
    /\ run' = [run EXCEPT ![<<p, ch>>].pos[t] = @ + 1]
    /\ UNCHANGED <<wf, ck, latest, sched, wr, aw, ans, dlv, closed, alive, holders, inflight,
                   crashes, ending>>

\* Running task t ends: "ok", "error", or "interrupt" (parked at interrupt a),
\* having received the deliveries `res` (a set of [interrupt, value]); a result
\* ("ok") with content d (0: not observed).  Its write is made against the
\* checkpoint its step runs from.
EndTask(p, ch, t, outcome, a, res, d) ==
    LET r == RunOf(p, ch)
        w == [kind |-> outcome, interrupt |-> a, res |-> res, by |-> p,
              digest |-> IF outcome = "ok" THEN d ELSE 0]
    IN
    /\ HasRun(p, ch) /\ t \in r.running
    /\ Observe([ev |-> "end", p |-> p, ch |-> ch, task |-> t, outcome |-> outcome, interrupt |-> a,
                res |-> res, digest |-> w.digest])
    /\ Broke({<<"CO", DeliversForeign(res)>>, <<"CO", ReceivesUnraised(r.cur, t, res)>>,
              <<"CO", TwoValues(res)>>,
              <<"FD", ChangesOtherBranch(p, ch, r.cur)>>, <<"PC", EndsOverParked(p, ch, t, outcome)>>})
    /\ wr' = Put(wr, r.cur, Put(WritesOf(r.cur), t,
                                [WriteOf(r.cur, t) EXCEPT !.fly = Put(@, p, w), !.back = Without(@, p),
                                                          !.raised = @ \cup Raises(w),
                                                          !.made = IF outcome = "ok" THEN @ \cup {d} ELSE @]))
    /\ inflight' = [inflight EXCEPT ![p].wrs = @ \cup {<<r.cur, t>>}]
    /\ run' = [run EXCEPT ![<<p, ch>>] =
                 [@ EXCEPT !.running = @ \ {t},
                           !.failed = IF outcome = "error" THEN @ \cup {t} ELSE @ \ {t},
                           !.ended = Put(@, t, outcome)]]
    /\ ledger' = IF outcome = "ok" THEN ledger ELSE Over(ledger, p, t)
    /\ UNCHANGED <<wf, ck, latest, sched, aw, ans, dlv, closed, alive, holders, crashes, ending>>

\* Process p writes answer v to interrupt a against checkpoint c.
Resume(p, ch, c, a, v) ==
    LET entries == Get(ans, a, {}) \cup {<<p, v>>}
    IN
    /\ HasRun(p, ch)
    /\ Observe([ev |-> "resume", p |-> p, ch |-> ch, c |-> c, interrupt |-> a, value |-> v])
    /\ Broke({<<"CO", AnsweredTwice(a, entries)>>, <<"CO", ReceivedOther(a, v)>>,
              <<"FD", ChangesOtherBranch(p, ch, c)>>})
    /\ ans' = Put(ans, a, entries)
    /\ aw' = Put(aw, c, [AnswersOf(c) EXCEPT !.fly = @ \cup {[interrupt |-> a, value |-> v, by |-> p,
                                                                 over |-> AnswersOf(c).stored]}])
    /\ inflight' = [inflight EXCEPT ![p].ans = @ \cup {<<c, a, v>>}]
    /\ UNCHANGED <<wf, ck, latest, sched, wr, dlv, closed, run, alive, holders, ledger, crashes, ending>>

\* Process p ends its step on ch and makes checkpoint c (in memory) with
\* content digest d.
Step(p, ch, c, parent, d) ==
    LET r == RunOf(p, ch) IN
    /\ HasRun(p, ch) /\ r.running = {}
    /\ parent = r.cur
    /\ ~Known(c) /\ c # 0
    /\ parent = 0 \/ parent \in DOMAIN sched
    /\ Observe([ev |-> "step", p |-> p, ch |-> ch, c |-> c, parent |-> parent, digest |-> d])
    /\ Broke(IF parent = 0 THEN {<<"PC", LeavesAsked(p, ch)>>}
             ELSE {<<IF ck[parent].origin # 0 THEN "FD" ELSE "PC", StepIncomplete(p, ch)>>,
                   <<"FD", r.pinned>>, <<"PC", LeavesAsked(p, ch)>>})
    /\ ck' = ck @@ (c :> Made(p, ch, c, parent,
                              IF parent = 0 THEN 0 ELSE Depth(parent) + 1,
                              IF parent = 0 THEN 0 ELSE Branch(parent), 0, d))
    /\ inflight' = [inflight EXCEPT ![p].cks = @ \cup {c}]
    /\ run' = [run EXCEPT ![<<p, ch>>] = [NewRun(c, FALSE, @.nested, @.up, @.hz) EXCEPT !.into = r.into]]
    /\ UNCHANGED <<wf, latest, sched, wr, aw, ans, dlv, closed, alive, holders, ledger, crashes, ending>>

\* Process p forks checkpoint src of ch (time travel): it makes the copy c, with
\* content digest d, and runs from it, on a new branch.
Fork(p, ch, src, c, d) ==
    /\ Known(src) /\ ck[src].ch = ch /\ ck[src].st # "lost"
    /\ ~Known(c) /\ c # 0
    /\ Observe([ev |-> "fork", p |-> p, ch |-> ch, c |-> c, parent |-> src, digest |-> d])
    /\ Broke({<<"FD", CopyDiffers(src, d)>>, <<"CO", Unfenced(ch, p)>>})
    /\ ck' = [ck EXCEPT ![Root(src)].family = @ \cup {c}] @@ (c :> Made(p, ch, c, src, Depth(src), c, src, d))
    /\ inflight' = [inflight EXCEPT ![p].cks = @ \cup {c}]
    /\ run' = Put(run, <<p, ch>>, [NewRun(c, FALSE, FALSE, <<>>, Cardinality(DOMAIN ck)) EXCEPT
                                     !.into = IF <<p, ch>> \in DOMAIN run THEN run[<<p, ch>>].into ELSE 0])
    /\ alive' = [alive EXCEPT ![p] = "up"]
    /\ holders' = Put(holders, ch, Get(holders, ch, {}) \cup {p})
    /\ ending' = "running"
    /\ UNCHANGED <<wf, latest, sched, wr, aw, ans, dlv, closed, ledger, crashes>>

\* Process p edits the state of ch after checkpoint parent (update_state): it
\* makes checkpoint c, with content digest d; an edit of an older checkpoint than
\* the latest starts a branch.
Update(p, ch, parent, c, d) ==
    /\ Known(parent) /\ ck[parent].ch = ch /\ ck[parent].st # "lost"
    /\ ~Known(c) /\ c # 0
    /\ Observe([ev |-> "update", p |-> p, ch |-> ch, c |-> c, parent |-> parent, digest |-> d])
    /\ Broke({<<"CO", Unfenced(ch, p)>>})
    /\ ck' = ck @@ (c :> [Made(p, ch, c, parent, Depth(parent) + 1,
                               IF parent = Latest(ch) THEN Branch(parent) ELSE c, 0, d)
                          EXCEPT !.edit = TRUE])
    /\ inflight' = [inflight EXCEPT ![p].cks = @ \cup {c}]
    /\ UNCHANGED <<wf, latest, sched, wr, aw, ans, dlv, closed, run, alive, holders, ledger, crashes,
                   ending>>

\* The saver acknowledged checkpoint c, given with content digest d.  Exit
\* durability saves only a run's last checkpoint, as a child of the last stored
\* one (the checkpoint the run started from): the checkpoints p's run made on
\* c's chain before c, and the writes and answers p made on them, never reach
\* the store.  An edit (update_state) is no run's checkpoint: its put keeps its
\* parent and loses nothing, and no run's put loses it.
PutCheckpoint(p, c, d) ==
    LET exit == wf.durability = "exit" /\ ~ck[c].edit
        older(x) == x # c /\ ck[x].ch = ck[c].ch /\ Order(x) < Order(c)
        gone == IF exit THEN {x \in inflight[p].cks : older(x) /\ ck[x].st = "made" /\ ~ck[x].edit}
                ELSE {}
    IN
    /\ c \in inflight[p].cks
    /\ Observe([ev |-> "put", p |-> p, c |-> c, digest |-> d])
    /\ Broke({<<"FD", FamilyDiffers(c, d)>>, <<"CV", ContentChanged(c, d)>>})
    /\ ck' = LET own == [ck EXCEPT ![c].st = "stored", ![c].digest = IF @ = 0 THEN d ELSE @,
                                   ![c].parent = IF exit THEN StoredAncestor(@) ELSE @]
             IN  IF gone = {} THEN own
                 ELSE [x \in DOMAIN own |-> IF x \in gone THEN [own[x] EXCEPT !.st = "lost"] ELSE own[x]]
    /\ latest' = IF Order(c) > Order(Latest(ck[c].ch)) THEN Put(latest, ck[c].ch, c) ELSE latest
    /\ inflight' = [inflight EXCEPT ![p].cks = (@ \ {c}) \ gone,
                                    ![p].wrs = IF exit THEN {w \in @ : ~older(w[1])} ELSE @,
                                    ![p].ans = IF exit THEN {a \in @ : ~older(a[1])} ELSE @]
    /\ UNCHANGED <<wf, sched, wr, aw, ans, dlv, closed, run, alive, holders, ledger, crashes, ending>>

\* An edit by p writes on c: one its update made, or the latest of a chain p runs nothing on.
EditsOn(p, ch, c) == (ck[c].by = p /\ ck[c].edit) \/ (c = Latest(ch) /\ ~HasRun(p, ch))

\* Process p, editing ch (update_state), hands the saver its write of task t on
\* c: from now on the store may hold it, and a crash may leave it there.  Like
\* the acknowledged write of an edit (PutWrites), it writes values (EditsOn),
\* with content d (0: not observed).
EditWrite(p, ch, c, t, d) ==
    LET w == [kind |-> "ok", interrupt |-> 0, res |-> {}, by |-> p, digest |-> d]
    IN
    /\ Known(c) /\ ck[c].ch = ch
    /\ Observe([ev |-> "edit", p |-> p, ch |-> ch, c |-> c, task |-> t, digest |-> d])
    /\ Broke({<<"FD", ~EditsOn(p, ch, c)>>, <<"CO", ~HasRun(p, ch) /\ Unfenced(ch, p)>>})
    /\ wr' = Put(wr, c, Put(WritesOf(c), t, [WriteOf(c, t) EXCEPT !.fly = Put(@, p, w),
                                                                 !.back = Without(@, p),
                                                                 !.made = @ \cup {d}]))
    /\ inflight' = [inflight EXCEPT ![p].wrs = @ \cup {<<c, t>>}]
    /\ UNCHANGED <<wf, ck, latest, sched, aw, ans, dlv, closed, run, alive, holders, ledger, crashes,
                   ending>>

\* The saver acknowledged p's write of task t (kind k, interrupt a; a result
\* handed over with content d, 0: not observed) on c.
\* A write p did not make there, on a checkpoint p did not edit, changes
\* another branch.  An edit (update_state) builds on the latest checkpoint of
\* the chain and records its writes there before it makes its own checkpoint:
\* a process that runs nothing on the chain may write on the latest.  An edit
\* writes values: it never parks nor fails a task.  A write the store holds
\* already may be acknowledged again (a saver's retry): that changes nothing.
PutWrites(p, ch, c, t, k, a, d) ==
    LET w == WriteOf(c, t)
        mine == FlyOf(c, t, p).kind = k /\ FlyOf(c, t, p).interrupt = a
        \* the store holds that write already (a load returned it before the saver's
        \* answer came back, or the write is acknowledged again): storing it changes nothing
        same == ~mine /\ w.stored.kind = k /\ w.stored.interrupt = a
        \* the call returns a write of p's that a load showed landed: a slower store's
        \* answer, after which the store may hold another process's write (it keeps that)
        back == ~mine /\ p \in DOMAIN w.back /\ w.back[p].kind = k /\ w.back[p].interrupt = a
        edit == Known(c) /\ k = "ok" /\ EditsOn(p, ch, c)
        dk == IF k = "ok" THEN d ELSE 0
        rec == CASE mine -> [FlyOf(c, t, p) EXCEPT !.digest = IF @ = 0 THEN dk ELSE @]
                 [] same \/ back -> w.stored
                 [] OTHER -> [kind |-> k, interrupt |-> a, res |-> {}, by |-> p, digest |-> dk]
    IN
    /\ Known(c) /\ ck[c].ch = ch
    /\ Observe([ev |-> "putw", p |-> p, ch |-> ch, c |-> c, task |-> t, kind |-> k, interrupt |-> a,
                digest |-> dk])
    /\ Broke({<<"FD", ~mine /\ ~same /\ ~back /\ ~edit>>, <<"CO", ~HasRun(p, ch) /\ Unfenced(ch, p)>>})
    /\ wr' = Put(wr, c, Put(WritesOf(c), t, [stored |-> rec, fly |-> IF mine THEN Without(w.fly, p) ELSE w.fly,
                                             back |-> Without(w.back, p),
                                             kinds |-> w.kinds \cup {k},
                                             raised |-> w.raised \cup Raises(rec),
                                             made |-> IF k = "ok" THEN w.made \cup {dk} ELSE w.made]))
    /\ Settle({rec})
    \* (p's own write of t, if another, is still in flight: this acknowledged the one stored)
    /\ inflight' = [inflight EXCEPT ![p].wrs = IF ~mine /\ p \in DOMAIN w.fly THEN @ ELSE @ \ {<<c, t>>}]
    /\ UNCHANGED <<wf, ck, latest, sched, aw, ans, run, alive, holders, ledger, crashes, ending>>

\* The saver acknowledged p's answers on c.
PutAnswers(p, c) ==
    LET mine == {a \in AnswersOf(c).fly : a.by = p} IN
    /\ \E x \in inflight[p].ans : x[1] = c
    /\ Observe([ev |-> "puta", p |-> p, c |-> c])
    /\ Broke({})
    /\ aw' = [aw EXCEPT ![c] = Land(@, mine)]
    /\ inflight' = [inflight EXCEPT ![p].ans = {x \in @ : x[1] # c}]
    /\ UNCHANGED <<wf, ck, latest, sched, wr, ans, dlv, closed, run, alive, holders, ledger, crashes, ending>>

\* Process p's invocation returns: "done", "parked" or "failed", and its runs end
\* (a process runs one invocation at a time; its next one starts with a load).  In
\* exit mode the checkpoints of its intermediate steps, never saved, are dropped.
\* Returning cuts short, as a crash does, the work whose result is not safe yet:
\* an attempt still running when a sibling's failure ends the invocation (LangGraph
\* does not wait for it) may run again, its effects fired again at-least-once.
Finish(p, outcome) ==
    /\ alive[p] = "up"
    /\ Observe([ev |-> "finish", p |-> p, outcome |-> outcome])
    /\ Broke({<<"PC", FinishWrong(p, outcome)>>, <<"PC", ReturnsLeavingAsked(p)>>})
    /\ run' = [k \in {k \in DOMAIN run : k[1] # p} |-> run[k]]
    /\ alive' = [alive EXCEPT ![p] = "ended"]
    /\ holders' = [ch \in DOMAIN holders |-> holders[ch] \ {p}]
    /\ ending' = IF \E q \in Procs \ {p} : alive[q] = "up" THEN "running" ELSE outcome
    /\ ck' = [c \in DOMAIN ck |-> IF c \in inflight[p].cks /\ ck[c].st = "made"
                                 THEN [ck[c] EXCEPT !.st = "lost"] ELSE ck[c]]
    /\ inflight' = [inflight EXCEPT ![p].cks = {}]
    /\ ledger' = CutBy(p)
    /\ UNCHANGED <<wf, latest, sched, wr, aw, ans, dlv, closed, crashes>>

\* The ledger entries of work on chain ch: keyed by it (the chain its work is
\* named after) or fired inside a host task whose checkpoint is on ch.
LedgerOn(l, k, ch) == k[1][1] = ch \/ \E h \in l[k].hosts : h[1] # 0 /\ Known(h[1]) /\ ck[h[1]].ch = ch

\* The store is asked to forget chain ch (LangGraph's `delete_thread`, one move per
\* namespace of the thread), by process p.  Every checkpoint of ch the store holds
\* is gone, with its writes and answers, and ch has no latest: a later load that
\* returns one of them, or anything while nothing new was stored, breaks CV
\* through LoadWrong.  A checkpoint still in flight ("made") may land after the
\* delete and stays as it is (a racing put is no alarm); one already stored that
\* its maker still holds in flight landed before, so its put cannot store it again.
\* A run after the delete is a new execution: the ledger forgets the work of ch
\* (and of work hosted on it), so a fresh run may fire the same effect again.
\* Only a chain no process runs is deleted (a runtime deletes a thread it is not
\* running; a trace that deletes under a live run does not match).  Interrupts,
\* answers and task ids are not forgotten: a fresh run has new ones (LangGraph
\* derives them from the new checkpoints), and an answer to an old interrupt is
\* judged as before.  A delete itself breaks nothing.
Delete(p, ch) ==
    LET gone == {c \in DOMAIN ck : ck[c].ch = ch /\ ck[c].st = "stored"} IN
    /\ \A q \in Procs : ~HasRun(q, ch)
    /\ Observe([ev |-> "delete", p |-> p, ch |-> ch])
    /\ Broke({})
    /\ ck' = [c \in DOMAIN ck |-> IF c \in gone THEN [ck[c] EXCEPT !.st = "lost"] ELSE ck[c]]
    /\ latest' = Without(latest, ch)
    /\ inflight' = [q \in Procs |-> [inflight[q] EXCEPT !.cks = @ \ gone]]
    /\ ledger' = [k \in {k \in DOMAIN ledger : ~LedgerOn(ledger, k, ch)} |-> ledger[k]]
    /\ UNCHANGED <<wf, sched, wr, aw, ans, dlv, closed, run, alive, holders, crashes, ending>>

\* The checkpoints p has in flight that the saver may have been handed: in exit
\* durability only the last of each chain (the exit save's) and edits, which
\* are put at once; the intermediate steps' never leave p's memory.
Handed(p) ==
    {c \in inflight[p].cks :
        ~(wf.durability = "exit" /\ ~ck[c].edit /\
          \E d \in inflight[p].cks : ck[d].ch = ck[c].ch /\ ~ck[d].edit /\ Order(d) > Order(c))}

\* The parts of what p has in flight that the store may already hold (a write a
\* load showed landed is held already, or was replaced since: no crash keeps it).
Keepable(p) ==
    [cks : SUBSET Handed(p),
     wrs : SUBSET {w \in inflight[p].wrs : p \in DOMAIN WriteOf(w[1], w[2]).fly},
     ans : SUBSET inflight[p].ans]

\* Process p is killed.  The store may already hold some of what p had in
\* flight (`kept`, one of Keepable(p)); the rest is lost with p's memory.
Crash(p, kept) ==
    LET f == inflight[p]
        \* the answers lost with p: in flight, not kept, and not seen stored by a load
        lostAns == {x \in f.ans \ kept.ans : InFlight(x[1], x[2], x[3], p)}
    IN
    /\ kept \in Keepable(p)
    /\ Observe([ev |-> "crash", p |-> p, kept |-> kept])
    /\ Broke({})
    /\ ck' = [c \in DOMAIN ck |->
                IF c \in f.cks
                \* a checkpoint a load already returned stays stored
                THEN [ck[c] EXCEPT !.st = IF c \in kept.cks \/ @ = "stored" THEN "stored" ELSE "lost",
                                   \* exit durability: saved as a child of the last stored one
                                   !.parent = IF wf.durability = "exit" /\ c \in kept.cks
                                              THEN StoredAncestor(@) ELSE @]
                ELSE ck[c]]
    /\ latest' = [ch \in DOMAIN latest \cup {ck[c].ch : c \in kept.cks} |->
                    LET mine == {c \in kept.cks : ck[c].ch = ch}
                        best == IF mine = {} THEN Latest(ch)
                                ELSE CHOOSE c \in mine : \A d \in mine : Order(d) <= Order(c)
                    IN IF Order(best) > Order(Latest(ch)) THEN best ELSE Latest(ch)]
    /\ wr' = [c \in DOMAIN wr |->
                IF \E w \in f.wrs : w[1] = c
                THEN [t \in DOMAIN wr[c] |->
                        IF <<c, t>> \in f.wrs /\ p \in DOMAIN wr[c][t].fly
                        THEN IF <<c, t>> \in kept.wrs
                             THEN [stored |-> wr[c][t].fly[p], fly |-> Without(wr[c][t].fly, p),
                                   back |-> Without(wr[c][t].back, p),
                                   kinds |-> wr[c][t].kinds \cup {wr[c][t].fly[p].kind},
                                   raised |-> wr[c][t].raised \cup Raises(wr[c][t].fly[p]),
                                   made |-> wr[c][t].made]
                             ELSE [wr[c][t] EXCEPT !.fly = Without(@, p), !.back = Without(@, p)]
                        ELSE [wr[c][t] EXCEPT !.back = Without(@, p)]]
                ELSE wr[c]]
    /\ Settle({FlyOf(w[1], w[2], p) : w \in {w \in kept.wrs : p \in DOMAIN WriteOf(w[1], w[2]).fly}})
    /\ aw' = [c \in DOMAIN aw |->
                IF \E x \in f.ans : x[1] = c
                THEN [Land(aw[c], {a \in aw[c].fly : a.by = p /\ <<c, a.interrupt, a.value>> \in kept.ans})
                        EXCEPT !.fly = {a \in @ : a.by # p}]
                ELSE aw[c]]
    \* (an entry stays live while an answer it stands for is stored somewhere)
    /\ ans' = [a \in DOMAIN ans |->
                ans[a] \ {<<p, x[3]>> : x \in {x \in lostAns :
                            x[2] = a /\ ~\E c \in DOMAIN aw :
                                          [interrupt |-> a, value |-> x[3]] \in aw[c].stored}}]
    /\ run' = [k \in {k \in DOMAIN run : k[1] # p} |-> run[k]]
    /\ alive' = [alive EXCEPT ![p] = "down"]
    /\ holders' = [ch \in DOMAIN holders |-> holders[ch] \ {p}]
    /\ inflight' = [inflight EXCEPT ![p] = Empty]
    /\ crashes' = crashes + 1
    /\ ledger' = CutBy(p)
    /\ ending' = IF \E q \in Procs \ {p} : alive[q] = "up" THEN "running" ELSE "crashed"
    /\ UNCHANGED <<wf, sched>>

-----------------------------------------------------------------------------
(* The reference runtime: the correct choice at every move.  It runs one   *)
(* chain (1); its task ids are <<checkpoint, path>>, its interrupts        *)
(* <<task, index>>; checkpoint ids grow with creation (like uuid6).        *)

Chain == 1
Fresh == Cardinality(DOMAIN ck) + 1
R(p) == RunOf(p, Chain)
Up(p) == HasRun(p, Chain)

PlanAt(c) == IF Depth(c) \in DOMAIN wf.plan THEN wf.plan[Depth(c)] ELSE {}
TasksOf(c) == {[task |-> <<c, x.path>>, node |-> x.node, path |-> x.path] : x \in PlanAt(c)}
BodyOf(c, path) == (CHOOSE x \in PlanAt(c) : x.path = path).body

Fenced == \A q \in Procs : ~Up(q)

RefLoad(p) ==
    LET c == Latest(Chain) IN
    /\ Fenced
    /\ Load(p, Chain, 0, 0, c, IF c = 0 THEN 0 ELSE ck[c].parent, IF c = 0 THEN 0 ELSE ck[c].digest,
            IF c = 0 THEN {} ELSE ShownWrites(c), IF c = 0 THEN {} ELSE MustAnswers(c), FALSE, 0)

\* Time travel: load a stored older checkpoint, then fork it.
RefPin(p) ==
    /\ Fenced
    /\ \E c \in DOMAIN ck :
         /\ ck[c].st = "stored" /\ c # Latest(Chain)
         /\ Load(p, Chain, c, 0, c, ck[c].parent, ck[c].digest, ShownWrites(c), MustAnswers(c), FALSE,
                 0)

\* The latest stored checkpoint of ch made before b (0: none).
LatestBefore(ch, b) ==
    LET s == StoredBefore(ch, b) IN
    IF s = {} THEN 0 ELSE CHOOSE c \in s : \A d \in s : Order(d) <= Order(c)

\* A read of the latest checkpoint made before another (as a subgraph's run starts
\* under a replaying parent), while no process runs.
RefReadBefore(p) ==
    /\ Fenced
    /\ \E b \in DOMAIN ck :
         LET c == LatestBefore(Chain, b) IN
         Read(p, Chain, 0, b, c, IF c = 0 THEN 0 ELSE ck[c].parent, IF c = 0 THEN 0 ELSE ck[c].digest,
              IF c = 0 THEN {} ELSE ShownWrites(c), IF c = 0 THEN {} ELSE MustAnswers(c))

RefFork(p) ==
    /\ Up(p) /\ R(p).pinned /\ R(p).started = {}
    /\ Fork(p, Chain, R(p).cur, Fresh, ck[R(p).cur].digest)

\* An edit after a stored checkpoint, by a process that runs nothing.
RefUpdate(p) ==
    /\ Fenced /\ alive[p] # "up"
    /\ \E c \in DOMAIN ck : ck[c].st = "stored" /\ Update(p, Chain, c, Fresh, Fresh)

RefSchedule(p) ==
    /\ Up(p) /\ R(p).cur # 0 /\ R(p).cur \notin DOMAIN sched
    /\ Schedule(p, Chain, R(p).cur, TasksOf(R(p).cur))

\* The interrupts parked on the current checkpoint, unanswered.
Parked(c) == {WriteOf(c, t).stored.interrupt :
                t \in {t \in DOMAIN WritesOf(c) : WriteOf(c, t).stored.kind = "interrupt"}}

RefResume(p) ==
    /\ Up(p) /\ ~R(p).pinned /\ R(p).started = {} /\ R(p).cur # 0
    /\ \E a \in Parked(R(p).cur) :
         /\ Get(ans, a, {}) = {}
         /\ Resume(p, Chain, R(p).cur, a, Cardinality(DOMAIN ans) + 1)

StepMayStart(p) == wf.durability = "sync" => Stored(R(p).cur)

RefStart(p) ==
    /\ Up(p) /\ ~R(p).pinned /\ R(p).cur \in DOMAIN sched /\ StepMayStart(p)
    /\ \E s \in sched[R(p).cur] :
         /\ s \notin R(p).started
         /\ ~StoredOk(R(p).cur, s.task)
         /\ StartTask(p, Chain, s.task, s.node, s.path)

\* The next op of a running task's body.
RefOp(p) ==
    /\ Up(p)
    /\ \E t \in R(p).running :
         LET c == R(p).cur
             body == BodyOf(c, StartedAs(R(p), t).path)
             pos == R(p).pos[t]
             a == <<t, Cardinality(R(p).res[t]) + 1>>
             key == EffectKey(p, Chain, t, body[pos])
         \* (every result has one content: the reference's nodes are deterministic)
         IN IF pos > Len(body) THEN EndTask(p, Chain, t, "ok", 0, R(p).res[t], 1)
            ELSE IF body[pos] = 0
                 THEN IF Heard(a) = {} THEN EndTask(p, Chain, t, "interrupt", a, R(p).res[t], 0)
                      ELSE \E v \in Heard(a) :
                             /\ run' = [run EXCEPT ![<<p, Chain>>].pos[t] = @ + 1,
                                                   ![<<p, Chain>>].res[t] = @ \cup {[interrupt |-> a, value |-> v]}]
                             /\ broke' = {}
                             /\ UNCHANGED <<hist, wf, ck, latest, sched, wr, aw, ans, dlv, closed, alive, holders,
                                            inflight, ledger, crashes, ending>>
                 \* the ledger knows this intent fired: skip it
                 ELSE Effect(p, Chain, t, body[pos], 0,
                             IF key \in DOMAIN ledger THEN "skipped" ELSE "fired")

RefStep(p) ==
    LET c == R(p).cur IN
    /\ Up(p) /\ ~R(p).pinned
    /\ \/ c = 0
       \/ /\ c \in DOMAIN sched /\ sched[c] # {}
          /\ \A s \in sched[c] : HasResult(p, c, s.task)
    /\ Step(p, Chain, Fresh, c, Fresh)

\* A step's checkpoint is saved before its writes are (LangGraph's order is
\* not fixed; the reference takes the simplest).  Exit mode saves only when
\* the invocation is about to return.
AboutToReturn(p) ==
    LET c == R(p).cur IN
    /\ <<p, Chain>> \in DOMAIN run
    /\ c \in DOMAIN sched /\ R(p).running = {}
    /\ \/ sched[c] = {}
       \/ \E s \in sched[c] : FlyOf(c, s.task, p).kind = "interrupt"
                              \/ WriteOf(c, s.task).stored.kind = "interrupt"

RefPut(p) ==
    /\ wf.durability = "exit" /\ <<p, Chain>> \in DOMAIN run => AboutToReturn(p)
    /\ \/ \E c \in inflight[p].cks : PutCheckpoint(p, c, ck[c].digest)
       \/ \E w \in inflight[p].wrs :
            PutWrites(p, Chain, w[1], w[2], FlyOf(w[1], w[2], p).kind, FlyOf(w[1], w[2], p).interrupt,
                      FlyOf(w[1], w[2], p).digest)
       \/ \E x \in inflight[p].ans : PutAnswers(p, x[1])

RefFinish(p) ==
    /\ Up(p) /\ ~R(p).pinned
    /\ inflight[p] = Empty
    /\ AboutToReturn(p)
    /\ Finish(p, IF sched[R(p).cur] = {} THEN "done" ELSE "parked")

Run ==
    \E p \in Procs :
        \/ RefLoad(p) \/ RefSchedule(p) \/ RefResume(p) \/ RefStart(p) \/ RefOp(p)
        \/ RefStep(p) \/ RefPut(p) \/ RefFinish(p) \/ RefFork(p) \/ RefReadBefore(p)

Fault ==
    \E p \in Procs :
        \/ alive[p] # "down" /\ \E kept \in Keepable(p) : Crash(p, kept)
        \/ RefPin(p)
        \/ RefUpdate(p)

Next == Run \/ Fault

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* The contract.  Each property holds when no move broke it; Properties    *)
(* names them for resume-check, which checks every one on every trace.     *)

\* PC, prefix continuation: a run continues the durable prefix -- it never re-runs a task whose result is stored, in sync mode runs a step only from a stored checkpoint, makes a checkpoint only when every scheduled task has a result, and returns only with everything stored and the end it claims.
PC == "PC" \notin broke

\* EO, effects as declared: each effect (keyed by chain, branch, step, task path and intent; a subgraph's chain by its host's work) fires as its kind's declared level allows -- at most once, or again only after the process that fired it crashed -- and is never skipped without having fired.
EO == "EO" \notin broke

\* CO, consume-once: an interrupt receives only a value answered to it, never has two live answers, and under a lease one process at a time runs a chain.
CO == "CO" \notin broke

\* CV, checkpoint validity: a load returns the checkpoint asked for, or the latest by creation (made before a named one, if so asked), with the parent, content and pending writes that were saved, each result with a content it was handed over with.
CV == "CV" \notin broke

\* FD, fork determinism: a run changes only its own branch, a fork copy holds exactly its source's state and work, and a fork never takes over its source's pending writes.
FD == "FD" \notin broke

\* RD, recovery determinism: every run from a checkpoint schedules the same tasks and starts only those.
RD == "RD" \notin broke

Properties == [PC |-> PC, EO |-> EO, CO |-> CO, CV |-> CV, FD |-> FD, RD |-> RD]

\* The properties a store breaks by how it answers a load, whatever the runs around it did: where runs raced and broke another property first, only these are still a saver's.
StoreProperties == {"CV"}
=============================================================================
