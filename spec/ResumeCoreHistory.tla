------------------------- MODULE ResumeCoreHistory -------------------------
(***************************************************************************)
(* ResumeCore's properties stated a second time, over the observed         *)
(* history `hist` alone (see the comment at the head of ResumeCore).  A    *)
(* module of its own: trace validation checks the moves' named checks and  *)
(* never reads these, so TLC does not parse them for every batch;          *)
(* model checking (MCResumeCore, MCResumeCoreSound) and the history        *)
(* oracle (TraceResumeCoreHistory) extend it.                              *)
(***************************************************************************)
EXTENDS ResumeCore

(* The contract over the observed history: each property stated again,     *)
(* declaratively, over `hist` alone -- what was observed, never the moves' *)
(* bookkeeping (ck, wr, ledger, run, ...).  `resume-check spec` checks on   *)
(* bounded models that the two forms agree: every behaviour in which no    *)
(* move's check fired satisfies every history predicate (soundness:        *)
(* MCResumeCoreSound), and the reference runtime satisfies both (no false  *)
(* alarm: MCResumeCoreHistory).  A mutant that deletes a named check must  *)
(* be caught by the history predicate of that check's property.            *)

\* Each property over the history is "every event i is right given the events
\* before it" (XRightAt(i) reads only hist[1..i]).  Every event was the last
\* one once, and the history only grows, so checking the last event in every
\* state checks every event of every behaviour, at a fraction of the cost.
Last(RightAt(_)) == hist = <<>> \/ RightAt(Len(hist))
Before(i) == 1..(i - 1)
Between(i, j) == (i + 1)..(j - 1)
Is(i, kinds) == hist[i].ev \in kinds
MaxOf(S) == CHOOSE x \in S : \A y \in S : y <= x
MinOf(S) == CHOOSE x \in S : \A y \in S : x <= y

\* Process p's invocation ended at j: it crashed or returned.
EndsAt(p, j) == Is(j, {"crash", "finish"}) /\ hist[j].p = p
CrashAt(p, j) == Is(j, {"crash"}) /\ hist[j].p = p
NoCrash(p, i, j) == \A k \in Between(i, j) : ~CrashAt(p, k)

\* The load or fork that began p's run on chain ch in force at event i (0: none).
OpenAt(p, ch, i) ==
    LET os == {j \in Before(i) : Is(j, {"load", "fork"}) /\ hist[j].p = p /\ hist[j].ch = ch}
        o == IF os = {} THEN 0 ELSE MaxOf(os)
    IN  IF o = 0 \/ \E k \in Between(o, i) : EndsAt(p, k) THEN 0 ELSE o

\* Task t runs in p's run on ch when event i happens: started there, not ended since.
RunningAt(p, ch, t, i) ==
    OpenAt(p, ch, i) # 0 /\
    \E j \in Between(OpenAt(p, ch, i), i) :
        /\ Is(j, {"start"}) /\ hist[j].p = p /\ hist[j].ch = ch /\ hist[j].task = t
        /\ ~\E k \in Between(j, i) : Is(k, {"end"}) /\ hist[k].p = p /\ hist[k].ch = ch
                                    /\ hist[k].task = t

\* The last attempt of task t in p's current step on ch, as of event i, ended in
\* an error (the step began at the run's load or fork, or at p's last step).
FailedAt(p, ch, t, i) ==
    LET o == OpenAt(p, ch, i)
        steps == {j \in Between(o, i) : Is(j, {"step"}) /\ hist[j].p = p /\ hist[j].ch = ch}
        since == IF steps = {} THEN o ELSE MaxOf(steps)
        ends == {j \in Between(since, i) : Is(j, {"end"}) /\ hist[j].p = p /\ hist[j].ch = ch
                                           /\ hist[j].task = t}
    IN  o # 0 /\ ends # {} /\ hist[MaxOf(ends)].outcome = "error"

\* The checkpoint p's run on ch ran from when event i happened (0: none).
CurAt(p, ch, i) ==
    LET o == OpenAt(p, ch, i)
        steps == {j \in Between(o, i) : Is(j, {"step"}) /\ hist[j].p = p /\ hist[j].ch = ch}
    IN  IF o = 0 THEN 0
        ELSE IF steps # {} THEN hist[MaxOf(steps)].c
        ELSE IF Is(o, {"load"}) THEN hist[o].got ELSE hist[o].c

\* Checkpoints: made by a step, a fork or an edit; its maker, chain and parent.
Creates(j) == Is(j, {"step", "fork", "update"})
MadeSet(i) == {hist[j].c : j \in {j \in Before(i) : Creates(j)}}
MadeIdx(c) == CHOOSE j \in DOMAIN hist : Creates(j) /\ hist[j].c = c
Maker(c) == hist[MadeIdx(c)].p
ChainOf(c) == hist[MadeIdx(c)].ch
MadeParent(c) == hist[MadeIdx(c)].parent
IsFork(c) == c # 0 /\ Is(MadeIdx(c), {"fork"})

IsEdit(c) == Is(MadeIdx(c), {"update"})

\* Exit durability: c is an intermediate step's checkpoint at event j -- its
\* maker made a later one of its chain since (neither an edit) -- which no save
\* is ever handed, so a crash cannot leave it in the store.
Intermediate(c, j) ==
    /\ wf.durability = "exit" /\ ~IsEdit(c)
    /\ \E x \in MadeSet(j) : /\ Maker(x) = Maker(c) /\ ChainOf(x) = ChainOf(c)
                            /\ MadeIdx(x) > MadeIdx(c) /\ ~IsEdit(x)

\* Event j stored checkpoint c: the saver acknowledged it, a crash left it in
\* the store (in exit durability, not an intermediate step's), or a load returned it.
StoresCk(c, j) ==
    /\ c # 0
    /\ \/ Is(j, {"put"}) /\ hist[j].c = c
       \/ Is(j, {"crash"}) /\ c \in hist[j].kept.cks /\ ~Intermediate(c, j)
       \/ Is(j, {"load", "read"}) /\ hist[j].got = c
StoredAt(c, i) == \E j \in Before(i) : StoresCk(c, j)
FirstStored(c, i) == CHOOSE j \in Before(i) : StoresCk(c, j) /\ ~StoredAt(c, j)

\* Exit durability: event k saved a later checkpoint of c's chain that p's run
\* made, and what p made on c never reaches the store.  (An edit is no run's
\* checkpoint: saving one loses nothing, and it is never lost so.)
ExitSaves(p, c, k) ==
    /\ wf.durability = "exit" /\ Is(k, {"put"}) /\ hist[k].p = p
    /\ hist[k].c \in MadeSet(k) /\ ChainOf(hist[k].c) = ChainOf(c)
    /\ MadeIdx(hist[k].c) > MadeIdx(c)
    /\ ~IsEdit(hist[k].c)

\* Event j lost checkpoint c, not stored before: its maker died or returned
\* with it in memory, or (exit durability) saved a later one of its chain.
LosesCk(c, j) ==
    /\ j > MadeIdx(c) /\ ~StoredAt(c, j)
    /\ \/ EndsAt(Maker(c), j) /\ ~StoresCk(c, j)
       \/ ~IsEdit(c) /\ ExitSaves(Maker(c), c, j)
LostAt(c, i) == \E j \in Before(i) : LosesCk(c, j)

\* A delete of c's chain came after c was stored: the store forgot it.  (One in
\* flight at the delete may land later, and is held from then on.)  The store
\* holds c at i: stored and not forgotten since.
DeletedAt(c, i) == \E j \in Before(i) : Is(j, {"delete"}) /\ hist[j].ch = ChainOf(c) /\ StoredAt(c, j)
HeldAt(c, i) == StoredAt(c, i) /\ ~DeletedAt(c, i)

\* The stored checkpoint of ch made last, as of event i (0: none).
LatestAt(ch, i) ==
    LET s == {c \in MadeSet(i) : ChainOf(c) = ch /\ HeldAt(c, i)}
    IN  IF s = {} THEN 0 ELSE CHOOSE c \in s : \A d \in s : MadeIdx(d) <= MadeIdx(c)
Newer(c, d) == d = 0 \/ MadeIdx(c) > MadeIdx(d)

\* Checkpoint x surely came after c: its maker made c first, or made x in a run
\* begun (by a load or a fork) or read (a read of the chain in the run) after c was
\* made; outside a run, after c was made.
HorizonOf(x) ==
    LET o == OpenAt(Maker(x), ChainOf(x), MadeIdx(x))
        reads == {j \in Between(o, MadeIdx(x)) :
                    Is(j, {"read"}) /\ hist[j].p = Maker(x) /\ hist[j].ch = ChainOf(x)}
    IN  IF o = 0 THEN MadeIdx(x) ELSE IF reads = {} THEN o ELSE MaxOf(reads)
AfterH(x, c) == MadeIdx(c) < HorizonOf(x) \/ (Maker(x) = Maker(c) /\ MadeIdx(c) < MadeIdx(x))
\* ... or, as of event i, a load returned x as the latest of its chain while c was held.
ShownAfter(x, c, i) ==
    \E j \in Before(i) : /\ Is(j, {"load", "read"}) /\ hist[j].asked = 0 /\ hist[j].before = 0
                        /\ hist[j].got = x /\ x # c /\ c \in MadeSet(j)
                        /\ ChainOf(c) = hist[j].ch /\ HeldAt(c, j)
AfterAt(x, c, i) == AfterH(x, c) \/ ShownAfter(x, c, i)

\* As of event i, c is a stored checkpoint of ch that no stored one surely came after.
NewestAt(ch, c, i) ==
    /\ c \in MadeSet(i) /\ ChainOf(c) = ch /\ HeldAt(c, i)
    /\ ~\E x \in MadeSet(i) : ChainOf(x) = ch /\ HeldAt(x, i) /\ AfterAt(x, c, i)

\* The parent a load must report: the one it was made with, but (exit durability)
\* a run's checkpoint is handed to the saver, and saved, under the nearest
\* checkpoint stored before (as of its first showing as stored, or of the load
\* itself while it is in flight).
RECURSIVE StoredAncestorAt(_, _)
StoredAncestorAt(c, j) ==
    IF c = 0 THEN 0 ELSE IF StoredAt(c, j) THEN c ELSE StoredAncestorAt(MadeParent(c), j)
ParentAt(c, i) ==
    IF wf.durability = "exit" /\ ~IsEdit(c)
    THEN StoredAncestorAt(MadeParent(c), IF StoredAt(c, i) THEN FirstStored(c, i) ELSE i)
    ELSE MadeParent(c)

\* The content checkpoint c has before event i: the digest it was made with, else
\* the first one a put or a load of it showed (0: none yet).
ShowsContent(j, c) ==
    /\ Is(j, {"step", "fork", "update", "put", "load", "read"})
    /\ hist[j].digest # 0
    /\ IF Is(j, {"load", "read"}) THEN hist[j].got = c ELSE hist[j].c = c
ContentAt(c, i) ==
    LET js == {j \in Before(i) : ShowsContent(j, c)}
    IN  IF js = {} THEN 0 ELSE hist[MinOf(js)].digest
SameContent(c, d, i) == ContentAt(c, i) # 0 /\ d # 0 => d = ContentAt(c, i)

\* A checkpoint's copies (as the history made them): the checkpoint it is a fork
\* copy of, transitively, and every copy of that one; the contents they showed
\* before event i; checkpoint c, its own content not yet shown, shown with d
\* agrees with them.
RECURSIVE RootAt(_)
RootAt(c) == IF IsFork(c) THEN RootAt(MadeParent(c)) ELSE c
FamilyAt(c, i) == {x \in MadeSet(i) : RootAt(x) = RootAt(c)}
FamilyContentAt(c, i) == {ContentAt(x, i) : x \in FamilyAt(c, i)} \ {0}
FamilyAgrees(c, d, i) == ContentAt(c, i) = 0 /\ d # 0 => FamilyContentAt(c, i) \subseteq {d}

\* What checkpoint c schedules, as first observed before i ({} if never).
Scheduled(c, i) == \E j \in Before(i) : Is(j, {"schedule"}) /\ hist[j].c = c
SchedAt(c, i) ==
    IF Scheduled(c, i)
    THEN hist[CHOOSE j \in Before(i) : Is(j, {"schedule"}) /\ hist[j].c = c /\ ~Scheduled(c, j)].tasks
    ELSE {}

\* Task writes: event j is task t's end on checkpoint c by its process.
EndOn(j, c, t) == Is(j, {"end"}) /\ hist[j].task = t /\ CurAt(hist[j].p, hist[j].ch, j) = c

\* Event j handed the saver a write: a task's end (on the checkpoint its run is
\* on) or an edit's; the checkpoint and the write.
SentCk(j) == IF Is(j, {"edit"}) THEN hist[j].c ELSE CurAt(hist[j].p, hist[j].ch, j)
SentOf(j) == IF Is(j, {"edit"}) THEN [task |-> hist[j].task, kind |-> "ok", interrupt |-> 0]
             ELSE [task |-> hist[j].task, kind |-> hist[j].outcome, interrupt |-> hist[j].interrupt]
SendOn(j, c, t) == Is(j, {"end", "edit"}) /\ hist[j].task = t /\ SentCk(j) = c

\* The write event j handed over reached the store before i: acknowledged (by the
\* return of its own call: its process neither crashed nor handed over another
\* write of the task there in between), left by a crash, or returned by a load.
WriteStored(j, i) ==
    LET e == hist[j]
        c == SentCk(j)
    IN  \E k \in Between(j, i) :
          \/ Is(k, {"putw"}) /\ hist[k].p = e.p /\ hist[k].c = c /\ hist[k].task = e.task
             /\ hist[k].kind = SentOf(j).kind /\ hist[k].interrupt = SentOf(j).interrupt
             /\ NoCrash(e.p, j, k) /\ ~\E m \in Between(j, k) : SendOn(m, c, e.task) /\ hist[m].p = e.p
          \/ CrashAt(e.p, k) /\ <<c, e.task>> \in hist[k].kept.wrs
          \/ Is(k, {"load", "read"}) /\ hist[k].got = c /\ SentOf(j) \in hist[k].writes

\* The contents the successful writes of task t on c were handed to the saver
\* with before i: by its ends and edits, and as acknowledged (0: not observed).
MadeContentsAt(c, t, i) ==
    {hist[j].digest : j \in {j \in Before(i) :
        \/ SendOn(j, c, t) /\ SentOf(j).kind = "ok"
        \/ Is(j, {"putw"}) /\ hist[j].c = c /\ hist[j].task = t /\ hist[j].kind = "ok"}}

\* A result of kind k of task t on c is stored before i.
StoredKind(c, t, k, i) ==
    \/ \E j \in Before(i) : Is(j, {"putw"}) /\ hist[j].c = c /\ hist[j].task = t /\ hist[j].kind = k
    \/ \E j \in Before(i) : Is(j, {"load", "read"}) /\ hist[j].got = c
                            /\ \E w \in hist[j].writes : w.task = t /\ w.kind = k
    \/ \E j \in Before(i) : SendOn(j, c, t) /\ SentOf(j).kind = k /\ WriteStored(j, i)

\* p made result ok of t on c and has not crashed since.
HasOwnResult(p, c, t, i) ==
    \E j \in Before(i) : EndOn(j, c, t) /\ hist[j].p = p /\ hist[j].outcome = "ok" /\ NoCrash(p, j, i)

\* Effects: the logical work an effect belongs to, from what was observed.
RECURSIVE DepthH(_)
DepthH(c) ==
    IF c = 0 THEN 0
    ELSE LET e == hist[MadeIdx(c)] IN
         CASE e.ev = "step" -> IF e.parent = 0 THEN 0 ELSE DepthH(e.parent) + 1
           [] e.ev = "fork" -> DepthH(e.parent)
           [] OTHER -> DepthH(e.parent) + 1
RECURSIVE BranchH(_)
BranchH(c) ==
    IF c = 0 THEN 0
    ELSE LET e == hist[MadeIdx(c)] IN
         CASE e.ev = "step" -> IF e.parent = 0 THEN 0 ELSE BranchH(e.parent)
           [] e.ev = "fork" -> c
           [] OTHER -> IF e.parent = LatestAt(e.ch, MadeIdx(c)) THEN BranchH(e.parent) ELSE c
\* The last start of task t in p's run on ch before i (0: none).
LastStart(p, ch, t, i) ==
    LET s == {j \in Between(OpenAt(p, ch, i), i) :
                Is(j, {"start"}) /\ hist[j].p = p /\ hist[j].ch = ch /\ hist[j].task = t}
    IN  IF s = {} THEN 0 ELSE MaxOf(s)

\* Answers: the answer of resume j is lost before i when its process died
\* before the store had it (that life's crash: a later one cannot lose it).  Only
\* the life that resumed stores its answers.
AnswerKept(j, k) ==
    LET e == hist[j] IN
    \/ \E m \in Between(j, k) : Is(m, {"puta"}) /\ hist[m].p = e.p /\ hist[m].c = e.c
                               /\ NoCrash(e.p, j, m)
    \/ \E m \in Between(j, k) : Is(m, {"load", "read"}) /\ hist[m].got = e.c
                               /\ [interrupt |-> e.interrupt, value |-> e.value] \in hist[m].answers
AnswerLost(j, i) ==
    \E k \in Between(j, i) : CrashAt(hist[j].p, k) /\ NoCrash(hist[j].p, j, k) /\ ~AnswerKept(j, k)
                             /\ <<hist[j].c, hist[j].interrupt, hist[j].value>> \notin hist[k].kept.ans
LiveAnswers(a, i) ==
    {j \in Before(i) : Is(j, {"resume"}) /\ hist[j].interrupt = a /\ ~AnswerLost(j, i)}
\* A stored task write records that interrupt a received v (a final one consumed it).
Recorded(a, v, i, kinds) ==
    \E j \in Before(i) : Is(j, {"end"}) /\ hist[j].outcome \in kinds
                         /\ [interrupt |-> a, value |-> v] \in hist[j].res /\ WriteStored(j, i)
ClosedAt(a, i) ==
    \E j \in Before(i) : Is(j, {"end"}) /\ hist[j].outcome # "interrupt"
                         /\ \E d \in hist[j].res : d.interrupt = a /\ WriteStored(j, i)
HeardAt(a, v, i) ==
    \/ \E j \in LiveAnswers(a, i) : hist[j].value = v
    \/ Recorded(a, v, i, {"ok", "error", "interrupt"})

\* The interrupts task end j raised or received; those an end of task t on c
\* raised or received before i; whether an end of any task did (stored or not).
RaisesH(j) ==
    (IF hist[j].outcome = "interrupt" THEN {hist[j].interrupt} ELSE {})
        \cup {d.interrupt : d \in hist[j].res}
RaisedOnAt(c, t, i) == UNION {RaisesH(j) : j \in {j \in Before(i) : EndOn(j, c, t)}}
RaisedAnywhereAt(a, i) == \E j \in Before(i) : Is(j, {"end"}) /\ a \in RaisesH(j)

\* The store as a register per task: the write of task t on c it holds after
\* events 1..i (kind "none": nothing).  A write reaches the store when the saver
\* acknowledges it, when a crash leaves it there, or when a load returns a write
\* the store did not hold before (it was in flight and had landed).
NoneSeen(t) == [task |-> t, kind |-> "none", interrupt |-> 0]
LastSentOn(p, c, t, i) ==
    MaxOf({j \in Before(i) : SendOn(j, c, t) /\ hist[j].p = p})
\* The call that handed over event j's write has not returned before i: its
\* process has not crashed nor handed over another write of that task there
\* since, and the write was not acknowledged (an acknowledgement is the return of
\* the write's one call: it comes once -- after a load showed the write landed,
\* too: a slower store answers late).
FlyingAt(j, i) ==
    LET e == hist[j]
        c == SentCk(j)
    IN
    /\ NoCrash(e.p, j, i)
    /\ ~\E k \in Between(j, i) :
          \/ SendOn(k, c, e.task) /\ hist[k].p = e.p
          \/ Is(k, {"putw"}) /\ hist[k].p = e.p /\ hist[k].c = c /\ hist[k].task = e.task
             /\ hist[k].kind = SentOf(j).kind /\ hist[k].interrupt = SentOf(j).interrupt

\* Acknowledgement i returns a write its process handed over (at j) that a load
\* showed landed before: the store got it then, and the return changes nothing.
ReturnsLanded(i) ==
    LET e == hist[i] IN
    \E j \in Before(i) :
        /\ SendOn(j, e.c, e.task) /\ hist[j].p = e.p /\ FlyingAt(j, i)
        /\ SentOf(j) = [task |-> e.task, kind |-> e.kind, interrupt |-> e.interrupt]
        /\ \E k \in Between(j, i) : Is(k, {"load", "read"}) /\ hist[k].got = e.c /\ SentOf(j) \in hist[k].writes
\* Event j put a write of task t on c into the store, or showed the store held one.
PutsW(j, c, t) ==
    \/ Is(j, {"putw"}) /\ hist[j].c = c /\ hist[j].task = t /\ ~ReturnsLanded(j)
    \/ Is(j, {"crash"}) /\ <<c, t>> \in hist[j].kept.wrs
    \/ Is(j, {"load", "read"}) /\ hist[j].got = c /\ \E w \in hist[j].writes : w.task = t
RECURSIVE HeldW(_, _, _)
HeldW(c, t, i) ==
    LET js == {j \in 1..i : PutsW(j, c, t)}
    IN  IF js = {} THEN NoneSeen(t)
        ELSE LET j == MaxOf(js)
                 e == hist[j]
                 shown == {w \in e.writes : w.task = t}
             IN  CASE Is(j, {"putw"}) -> [task |-> t, kind |-> e.kind, interrupt |-> e.interrupt]
                   [] Is(j, {"crash"}) -> SentOf(LastSentOn(e.p, c, t, j))
                   \* a load showing two writes of t: the one the store did not hold had landed
                   [] Cardinality(shown) > 1 -> CHOOSE w \in shown : w # HeldW(c, t, j - 1)
                   [] OTHER -> CHOOSE w \in shown : TRUE

\* The tasks with a write on c, made or returned, before i.
TasksOn(c, i) ==
    {hist[j].task : j \in {j \in Before(i) : (Is(j, {"putw"}) /\ hist[j].c = c) \/ SendOn(j, c, hist[j].task)}}
    \cup UNION {{w.task : w \in hist[j].writes} : j \in {j \in Before(i) : Is(j, {"load", "read"}) /\ hist[j].got = c}}

\* A load of c at i must return every write the store holds, and may return
\* besides one a live process made and the saver has not acknowledged.
MustWritesAt(c, i) == {w \in {HeldW(c, t, i - 1) : t \in TasksOn(c, i)} : w.kind # "none"}
FlyingW(c, w, i) ==
    \E j \in Before(i) :
        /\ SendOn(j, c, w.task) /\ SentOf(j) = w /\ NoCrash(hist[j].p, j, i)
        /\ ~\E k \in Between(j, i) : Is(k, {"putw"}) /\ hist[k].p = hist[j].p /\ hist[k].c = c
                                    /\ hist[k].task = w.task

\* Answers: the answer of resume j reached the store before i (acknowledged, left
\* by a crash, or returned by a load).  A load must return one of the stored
\* answers that no stored task write records as received and that no other
\* answer, handed to the saver after it was stored and stored since, replaced --
\* or else one still in flight -- and may return any stored or in flight.
AnswerStored(j, i) ==
    \/ AnswerKept(j, i)
    \/ \E k \in Between(j, i) : CrashAt(hist[j].p, k)
                               /\ <<hist[j].c, hist[j].interrupt, hist[j].value>> \in hist[k].kept.ans
AnswerOf(j) == [interrupt |-> hist[j].interrupt, value |-> hist[j].value]
ResumesOn(c, i) == {j \in Before(i) : Is(j, {"resume"}) /\ hist[j].c = c}
ReplacedAt(j, i) ==
    \E k \in ResumesOn(hist[j].c, i) :
        j < k /\ AnswerStored(j, k) /\ AnswerStored(k, i) /\ AnswerOf(k) # AnswerOf(j)
MustAnswersAt(c, i) ==
    {AnswerOf(j) : j \in {j \in ResumesOn(c, i) : AnswerStored(j, i) /\ ~ReplacedAt(j, i)
                         /\ ~Recorded(hist[j].interrupt, hist[j].value, i, {"ok", "error", "interrupt"})}}
FlyAnswersAt(c, i) ==
    {AnswerOf(j) : j \in {j \in ResumesOn(c, i) : ~AnswerStored(j, i) /\ NoCrash(hist[j].p, j, i)}}
MayAnswersAt(c, i) ==
    {AnswerOf(j) : j \in {j \in ResumesOn(c, i) : AnswerStored(j, i) \/ NoCrash(hist[j].p, j, i)}}

\* p's run on ch at i loaded an older checkpoint than the latest and has not forked.
PinnedAt(p, ch, i) ==
    LET o == OpenAt(p, ch, i) IN
    /\ o # 0 /\ Is(o, {"load"}) /\ hist[o].asked # 0 /\ hist[o].got # 0
    /\ hist[o].got \in MadeSet(o) /\ ~Newer(hist[o].got, LatestAt(ch, o))
    /\ hist[o].got # LatestAt(ch, o)
    /\ ~\E j \in Between(o, i) : Is(j, {"step"}) /\ hist[j].p = p /\ hist[j].ch = ch

Holds(q, ch, i) == OpenAt(q, ch, i) # 0
ShapeOfTasks(tasks) == {[node |-> s.node, path |-> s.path] : s \in tasks}

\* PC over the history: no task is started again on a checkpoint where the store
\* holds its result; in sync mode a step runs only from a stored checkpoint; a
\* step is taken only when every scheduled task has a result; an invocation
\* returns with all it made stored, and ends as it says.

\* As of event i, task t failed for p's run on ch: its last attempt in the step
\* ended in an error, or the store holds its error (the history's Failed).
FailedForAt(p, ch, t, i) ==
    FailedAt(p, ch, t, i) \/ HeldW(CurAt(p, ch, i), t, i - 1).kind = "error"

\* Task t has a result on c for p at i: held by the store, or p's own.
ResultAt(p, c, t, i) == HeldW(c, t, i - 1).kind = "ok" \/ HasOwnResult(p, c, t, i)

\* Event j starts, from c, an error handler of task t (t is not running, and
\* failed in this step or has its error stored).
HandlesAt(j, c, t) ==
    /\ Is(j, {"start"}) /\ hist[j].by = t
    /\ CurAt(hist[j].p, hist[j].ch, j) = c
    /\ ~RunningAt(hist[j].p, hist[j].ch, t, j) /\ FailedForAt(hist[j].p, hist[j].ch, t, j)

\* Every task the parent schedules has a result for the stepping process, its
\* own or stored -- or an error handler of it has one.
StepCompleteAt(i) ==
    LET e == hist[i] IN
    \A s \in SchedAt(e.parent, i) :
        \/ ResultAt(e.p, e.parent, s.task, i)
        \/ \E j \in Before(i) :
              HandlesAt(j, e.parent, s.task) /\ ResultAt(e.p, e.parent, hist[j].task, i)

TasksSeen(i) == {hist[j].task : j \in {j \in Before(i) : Is(j, {"end", "putw", "edit"})}}
                \cup UNION {{w.task : w \in hist[j].writes} : j \in {j \in Before(i) : Is(j, {"load", "read"})}}

FinishRightAt(i) ==
    LET p == hist[i].p
        life == {j \in Before(i) : EndsAt(p, j)}
        since == IF life = {} THEN 0 ELSE MaxOf(life)
        chs == {hist[j].ch : j \in {j \in Before(i) : Is(j, {"load", "fork"}) /\ hist[j].p = p}}
        runs == {ch \in chs : Holds(p, ch, i)}
        curs == {CurAt(p, ch, i) : ch \in runs}
        nested(ch) == Is(OpenAt(p, ch, i), {"load"}) /\ hist[OpenAt(p, ch, i)].nested
        savedWithParent(ch) == wf.durability = "exit" /\ nested(ch)
                               /\ Scheduled(CurAt(p, ch, i), i) /\ SchedAt(CurAt(p, ch, i), i) = {}
        o == hist[i].outcome
        \* p's own last end of t on the checkpoint its run on ch is on, if any, is of kind k
        ownEnd(ch, t, k) ==
            LET ends == {j \in Between(OpenAt(p, ch, i), i) :
                           Is(j, {"end"}) /\ hist[j].p = p /\ hist[j].ch = ch /\ hist[j].task = t
                           /\ CurAt(p, ch, j) = CurAt(p, ch, i)}
            IN  wf.durability = "exit" \/ ends = {} \/ hist[MaxOf(ends)].outcome = k
        endsAt(k) == \E ch \in runs, t \in TasksSeen(i) :
                        StoredKind(CurAt(p, ch, i), t, k, i) /\ ownEnd(ch, t, k)
    IN
    /\ wf.durability # "exit" =>
          \A j \in Between(since, i) : Creates(j) /\ hist[j].p = p =>
              StoredAt(hist[j].c, i) \/ LostAt(hist[j].c, i)
    /\ \A j \in Between(since, i) :
          Is(j, {"resume"}) /\ hist[j].p = p =>
              AnswerKept(j, i) \/ \E k \in Between(j, i) : ExitSaves(p, hist[j].c, k)
    \* (a write p replaced in its memory by a later end of the task there is not one to save)
    /\ \A j \in Between(since, i) :
          /\ Is(j, {"end"}) /\ hist[j].p = p /\ CurAt(p, hist[j].ch, j) \in curs
          /\ ~\E m \in Between(j, i) : EndOn(m, CurAt(p, hist[j].ch, j), hist[j].task) /\ hist[m].p = p
          => WriteStored(j, i) \/ \E k \in Between(j, i) : ExitSaves(p, CurAt(p, hist[j].ch, j), k)
    /\ \A ch \in runs : CurAt(p, ch, i) = 0 \/ StoredAt(CurAt(p, ch, i), i) \/ savedWithParent(ch)
    /\ o = "done" => \A c \in curs : Scheduled(c, i) /\ SchedAt(c, i) = {}
    /\ o = "parked" => endsAt("interrupt")
    /\ o = "failed" => endsAt("error")

\* The tasks a nested load at j may run inside: <<chain, task>> of each task its
\* process runs on another chain then (of id `under`, when the load names it).
HostsAt(j) ==
    LET e == hist[j] IN
    {<<hist[s].ch, hist[s].task>> :
        s \in {x \in Before(j) : /\ Is(x, {"start"}) /\ hist[x].p = e.p /\ hist[x].ch # e.ch
                                /\ (e.under = 0 \/ hist[x].task = e.under)
                                /\ RunningAt(e.p, hist[x].ch, hist[x].task, j)}}
HostAt(j) == IF Cardinality(HostsAt(j)) = 1 THEN CHOOSE x \in HostsAt(j) : TRUE ELSE <<>>

\* Effects: the logical work an effect belongs to, from what was observed.  The
\* host h (<<chain, task>>) that p's nested run on a chain, opened at o, runs
\* inside is still that attempt at i, in p's current step of the host's chain:
\* no new start of it, and no step, load, fork or edit of p's on that chain since.
HostLiveAt(p, h, o, i) ==
    ~\E k \in Between(o, i) :
        /\ hist[k].p = p /\ "ch" \in DOMAIN hist[k] /\ hist[k].ch = h[1]
        /\ Is(k, {"step", "load", "fork", "update"}) \/ (Is(k, {"start"}) /\ hist[k].task = h[2])
\* The host p's run on ch at i runs inside, where it is live (<<>>: none).
LiveHostAt(p, ch, i) ==
    LET o == OpenAt(p, ch, i)
        h == IF o # 0 /\ Is(o, {"load"}) /\ hist[o].nested THEN HostAt(o) ELSE <<>>
    IN  IF h # <<>> /\ HostLiveAt(p, h, o, i) THEN h ELSE <<>>
\* Task t's work in p's run on ch at i: chain, branch, depth and path, a live
\* host's work standing for a nested run's chain (at most n hosts followed).
RECURSIVE WorkAt(_, _, _, _, _)
WorkAt(p, ch, t, i, n) ==
    LET c == CurAt(p, ch, i)
        s == LastStart(p, ch, t, i)
        own == <<BranchH(c), DepthH(c), IF s = 0 THEN 0 ELSE hist[s].path>>
        h == LiveHostAt(p, ch, i)
    IN  IF n > 0 /\ h # <<>> THEN WorkAt(p, h[1], h[2], i, n - 1) \o own ELSE <<ch>> \o own
KeyAt(i) == <<WorkAt(hist[i].p, hist[i].ch, hist[i].task, i, i), hist[i].intent>>
\* The <<checkpoint, task>> of each live host p's run on ch runs inside, at i.
RECURSIVE HostsUpAt(_, _, _, _)
HostsUpAt(p, ch, i, n) ==
    LET h == LiveHostAt(p, ch, i) IN
    IF n > 0 /\ h # <<>> THEN {<<CurAt(p, h[1], i), h[2]>>} \cup HostsUpAt(p, h[1], i, n - 1) ELSE {}

\* p's run on ch, as of event i, parked: the last attempt of some task in its
\* current step ended at an interrupt.
ParkedAt(p, ch, i) ==
    \E m \in Between(OpenAt(p, ch, i), i) :
        /\ Is(m, {"end"}) /\ hist[m].p = p /\ hist[m].ch = ch /\ hist[m].outcome = "interrupt"
        /\ CurAt(p, ch, m) = CurAt(p, ch, i)
        /\ ~\E x \in Between(m, i) : Is(x, {"end"}) /\ hist[x].p = p /\ hist[x].ch = ch
                                     /\ hist[x].task = hist[m].task

\* The loads of p's current invocation, before i, that asked it to continue from a
\* checkpoint of another chain, each the latest load of p on its chain; and whether
\* a nested load of p after load j returned that checkpoint or a copy of its content.
AskedAt(p, i) ==
    LET life == {j \in Before(i) : EndsAt(p, j)}
        since == IF life = {} THEN 0 ELSE MaxOf(life)
        ls == {j \in Between(since, i) : Is(j, {"load"}) /\ hist[j].p = p}
    IN  {j \in ls : hist[j].into # 0 /\ ~\E k \in ls : k > j /\ hist[k].ch = hist[j].ch}
ContinuedAt(j, i) ==
    LET x == hist[j].into IN
    \E k \in Between(j, i) :
        /\ Is(k, {"load"}) /\ hist[k].p = hist[j].p /\ hist[k].nested /\ hist[k].got # 0
        /\ hist[k].got = x \/ (ContentAt(x, k) # 0 /\ hist[k].digest = ContentAt(x, k))

PCRightAt(i) ==
        LET e == hist[i] IN
        /\ Is(i, {"start"}) =>
             LET c == CurAt(e.p, e.ch, i) IN
             /\ HeldW(c, e.task, i - 1).kind # "ok"
             /\ wf.durability = "sync" => StoredAt(c, i)
        /\ Is(i, {"step"}) /\ e.parent # 0 /\ ~IsFork(e.parent) => StepCompleteAt(i)
        /\ Is(i, {"finish"}) => FinishRightAt(i)
        /\ Is(i, {"step"}) => \A j \in AskedAt(e.p, i) : hist[j].ch = e.ch => ContinuedAt(j, i)
        /\ Is(i, {"finish"}) => \A j \in AskedAt(e.p, i) : ContinuedAt(j, i)
        /\ Is(i, {"load"}) /\ e.nested => HostsAt(i) # {}
        /\ Is(i, {"end"}) /\ e.outcome = "ok" =>
             ~\E j \in Before(i) :
                 /\ Is(j, {"load"}) /\ hist[j].p = e.p /\ hist[j].nested /\ HostAt(j) = <<e.ch, e.task>>
                 /\ ~\E s \in Between(j, i) : Is(s, {"start"}) /\ hist[s].p = e.p /\ hist[s].ch = e.ch
                                              /\ hist[s].task = e.task
                 /\ OpenAt(e.p, hist[j].ch, i) = j
                 /\ ParkedAt(e.p, hist[j].ch, i)
HistPC == Last(PCRightAt)

\* EO over the history: an effect key fired again only for at-least-once (the
\* level of every kind its fires were recorded with), and only after a crash cut
\* short the work that fired it last -- its process crashed, or its invocation
\* returned, before that task's attempt ended otherwise than ok, and either
\* before its ok result, and that of every task it ran inside, was stored on a
\* stored checkpoint, or with them stored and since replaced (by a concurrent
\* run's write); skipped only if fired.  A fire before a delete of its work's chain is of an
\* execution the store forgot: it does not count.
SafeAt(c, t, k) == StoredAt(c, k) /\ HeldW(c, t, k - 1).kind = "ok"
CutShort(j, i) ==
    LET p == hist[j].p
        t == hist[j].task
        c == CurAt(p, hist[j].ch, j)
        ups == HostsUpAt(p, hist[j].ch, j, j)
    IN  \E k \in Between(j, i) :
            /\ EndsAt(p, k)
            /\ ~\E m \in Between(j, k) :
                   hist[m].p = p /\ Is(m, {"end"}) /\ hist[m].task = t /\ hist[m].outcome # "ok"
            /\ \/ ~(SafeAt(c, t, k) /\ \A h \in ups : SafeAt(h[1], h[2], k))
               \/ ~(SafeAt(c, t, i) /\ \A h \in ups : SafeAt(h[1], h[2], i))
\* A delete at k of the chain fire j's work is named after, or of the chain of a
\* host it ran inside: the run after it is a new execution.
ForgetsAt(j, k) ==
    /\ Is(k, {"delete"})
    /\ \/ KeyAt(j)[1][1] = hist[k].ch
       \/ \E h \in HostsUpAt(hist[j].p, hist[j].ch, j, j) :
              h[1] \in MadeSet(k) /\ ChainOf(h[1]) = hist[k].ch
EORightAt(i) ==
        Is(i, {"effect"}) =>
            LET e == hist[i]
                fired == {j \in Before(i) : Is(j, {"effect"}) /\ hist[j].status = "fired"
                                            /\ KeyAt(j) = KeyAt(i)
                                            /\ ~\E k \in Between(j, i) : ForgetsAt(j, k)}
                \* the effect's level: its earlier fires' kinds hold as well as this event's
                levels == {LevelOf(hist[j].kind) : j \in fired} \cup {LevelOf(e.kind)}
            IN  /\ e.status = "fired" /\ fired # {} =>
                     /\ levels = {"at-least-once"}
                     /\ CutShort(MaxOf(fired), i)
                /\ e.status = "skipped" => fired # {} \/ LevelOf(e.kind) = "at-most-once"
HistEO == Last(EORightAt)

\* CO over the history: a task's attempt receives one value per interrupt, only
\* values answered to that interrupt and not lost, or recorded received by a
\* stored write, and only for an interrupt it
\* raised there itself or one no task raised (a live wait); an interrupt not yet
\* consumed gets no second answer, nor one other than a value a stored write records
\* it received; under a lease no process loads, edits, forks or
\* (running nothing there itself) writes on a chain another runs.
CORightAt(i) ==
        LET e == hist[i] IN
        /\ Is(i, {"end"}) => ~\E d, x \in e.res : d.interrupt = x.interrupt /\ d.value # x.value
        /\ Is(i, {"end"}) => \A d \in e.res :
              /\ HeardAt(d.interrupt, d.value, i)
              /\ \/ d.interrupt \in RaisedOnAt(CurAt(e.p, e.ch, i), e.task, i)
                 \/ ~RaisedAnywhereAt(d.interrupt, i)
        /\ Is(i, {"resume"}) /\ ~ClosedAt(e.interrupt, i) =>
              /\ \A j \in LiveAnswers(e.interrupt, i) : hist[j].p = e.p /\ hist[j].value = e.value
              /\ \A j \in Before(i) : Is(j, {"end"}) /\ WriteStored(j, i) =>
                    \A d \in hist[j].res : d.interrupt = e.interrupt => d.value = e.value
        /\ Is(i, {"load", "update", "fork"}) /\ wf.fencing = "lease" =>
              \A q \in Procs \ {e.p} : ~Holds(q, e.ch, i)
        /\ Is(i, {"putw", "edit"}) /\ wf.fencing = "lease" /\ ~Holds(e.p, e.ch, i) =>
              \A q \in Procs \ {e.p} : ~Holds(q, e.ch, i)
HistCO == Last(CORightAt)

\* Checkpoint c was made before checkpoint b, both made before event i; and the
\* stored checkpoints of ch made before b, as of event i.
MadeBeforeAt(c, b, i) == b \in MadeSet(i) /\ MadeIdx(c) < MadeIdx(b)
StoredBeforeAt(ch, b, i) ==
    {c \in MadeSet(i) : ChainOf(c) = ch /\ HeldAt(c, i) /\ MadeBeforeAt(c, b, i)}

\* CV over the history: a load returns the checkpoint asked for (or nothing, if it
\* was never stored), or the latest stored one or one in flight that no stored one
\* surely came after (asked for
\* the latest before b: the latest stored one made before b), of its own
\* chain, not lost, not forgotten by a delete (stored means held: stored and not
\* deleted since), with the parent, content, writes and answers saved, each
\* successful write with a content it was handed over with; a load is refused
\* only while another process runs the chain.
LoadRightAt(i) ==
    LET e == hist[i]
        last == LatestAt(e.ch, i)
    IN
    /\ e.asked # 0 => \/ e.got = e.asked
                      \/ e.got = 0 /\ ~(e.asked \in MadeSet(i) /\ ChainOf(e.asked) = e.ch
                                       /\ HeldAt(e.asked, i))
    /\ e.asked = 0 /\ e.before = 0 /\ e.got = 0 => last = 0
    /\ e.asked = 0 /\ e.before # 0 /\ e.got = 0 => StoredBeforeAt(e.ch, e.before, i) = {}
    /\ e.got # 0 =>
         /\ e.got \in MadeSet(i) /\ ChainOf(e.got) = e.ch /\ ~LostAt(e.got, i) /\ ~DeletedAt(e.got, i)
         /\ e.asked = 0 /\ e.before = 0 =>
              /\ \/ e.got = last \/ NewestAt(e.ch, e.got, i)
                 \/ /\ ~StoredAt(e.got, i)
                    /\ ~\E x \in MadeSet(i) : ChainOf(x) = e.ch /\ HeldAt(x, i) /\ AfterAt(x, e.got, i)
              /\ ~\E x \in MadeSet(i) : ChainOf(x) = e.ch /\ HeldAt(x, i) /\ ShownAfter(x, e.got, i)
         /\ e.asked = 0 /\ e.before # 0 =>
              /\ MadeBeforeAt(e.got, e.before, i)
              /\ ~\E x \in StoredBeforeAt(e.ch, e.before, i) : AfterAt(x, e.got, i)
         /\ e.parent = ParentAt(e.got, i)
         /\ SameContent(e.got, e.digest, i)
         /\ \A m \in MustWritesAt(e.got, i) :
               m \in e.writes \/ \E w \in e.writes : w.task = m.task /\ FlyingW(e.got, w, i)
         /\ \A w \in e.writes : w = HeldW(e.got, w.task, i - 1) \/ FlyingW(e.got, w, i)
         /\ \A x \in e.contents : LET made == MadeContentsAt(e.got, x.task, i)
                                 IN  0 \in made \/ x.digest \in made
         /\ OneSlot(MustAnswersAt(e.got, i), FlyAnswersAt(e.got, i), e.answers)
         /\ e.answers \subseteq MayAnswersAt(e.got, i)

CVRightAt(i) ==
        /\ Is(i, {"load", "read"}) => LoadRightAt(i)
        /\ Is(i, {"put"}) => SameContent(hist[i].c, hist[i].digest, i)
        /\ Is(i, {"refused"}) => \E q \in Procs \ {hist[i].p} : Holds(q, hist[i].ch, i)
HistCV == Last(CVRightAt)

\* FD over the history: a run writes, answers and steps only on its own branch,
\* never from an older checkpoint it loaded without forking; a write is stored
\* only by the process that made it while in flight, by an edit, or again as
\* the store holds it; a fork copy has its source's content and work, and steps
\* only when its work is done.
\* Event i (a write) is an edit's: on a checkpoint its update made or on the latest.
EditsAt(i) ==
    LET e == hist[i] IN
    \/ Maker(e.c) = e.p /\ Is(MadeIdx(e.c), {"update"})
    \/ e.c = LatestAt(e.ch, i) /\ ~Holds(e.p, e.ch, i)

PutwRightAt(i) ==
    LET e == hist[i] IN
    \/ \E j \in Before(i) : SendOn(j, e.c, e.task) /\ hist[j].p = e.p /\ FlyingAt(j, i)
                            /\ SentOf(j) = [task |-> e.task, kind |-> e.kind, interrupt |-> e.interrupt]
    \/ HeldW(e.c, e.task, i - 1) = [task |-> e.task, kind |-> e.kind, interrupt |-> e.interrupt]
    \* an edit writes values
    \/ e.kind = "ok" /\ EditsAt(i)

FDRightAt(i) ==
        LET e == hist[i] IN
        /\ Is(i, {"end", "step"}) => ~PinnedAt(e.p, e.ch, i)
        /\ Is(i, {"resume"}) => ~PinnedAt(e.p, e.ch, i) /\ e.c = CurAt(e.p, e.ch, i)
        /\ Is(i, {"putw"}) => PutwRightAt(i)
        /\ Is(i, {"edit"}) => EditsAt(i)
        /\ Is(i, {"fork"}) /\ e.digest # 0 => FamilyContentAt(e.parent, i) \subseteq {e.digest}
        /\ Is(i, {"put"}) => FamilyAgrees(e.c, e.digest, i)
        /\ Is(i, {"load", "read"}) /\ e.got \in MadeSet(i) => FamilyAgrees(e.got, e.digest, i)
        /\ Is(i, {"schedule"}) =>
              \A x \in FamilyAt(e.c, i) \ {e.c} :
                  Scheduled(x, i) => ShapeOfTasks(SchedAt(x, i)) = ShapeOfTasks(e.tasks)
        /\ Is(i, {"schedule"}) =>
              \A j \in Before(i) :
                  /\ Is(j, {"start"}) /\ hist[j].by = 0
                  /\ CurAt(hist[j].p, hist[j].ch, j) \in FamilyAt(e.c, i) \ {e.c}
                  => [node |-> hist[j].node, path |-> hist[j].path] \in ShapeOfTasks(e.tasks)
        /\ Is(i, {"start"}) /\ e.by = 0 =>
              LET c == CurAt(e.p, e.ch, i) IN
              c \in MadeSet(i) /\ ~Scheduled(c, i) =>
                  \A x \in FamilyAt(c, i) \ {c} :
                      Scheduled(x, i) => [node |-> e.node, path |-> e.path] \in ShapeOfTasks(SchedAt(x, i))
        /\ Is(i, {"step"}) /\ IsFork(e.parent) => StepCompleteAt(i)
HistFD == Last(FDRightAt)

\* RD over the history: every run from a checkpoint schedules the same tasks,
\* and every task started from it is among them or, named by none of them, made
\* by the run of a task of the same step (called by one running, or handling one
\* that failed or whose error is stored).
RDRightAt(i) ==
        LET e == hist[i] IN
        /\ Is(i, {"schedule"}) /\ Scheduled(e.c, i) => SchedAt(e.c, i) = e.tasks
        /\ Is(i, {"schedule"}) =>
              \A j \in Before(i) : Is(j, {"start"}) /\ hist[j].by = 0
                                   /\ CurAt(hist[j].p, hist[j].ch, j) = e.c =>
                  [task |-> hist[j].task, node |-> hist[j].node, path |-> hist[j].path] \in e.tasks
        /\ Is(i, {"start"}) /\ e.by = 0 /\ Scheduled(CurAt(e.p, e.ch, i), i) =>
              [task |-> e.task, node |-> e.node, path |-> e.path] \in SchedAt(CurAt(e.p, e.ch, i), i)
        /\ Is(i, {"start"}) /\ e.by # 0 =>
              RunningAt(e.p, e.ch, e.by, i) \/ FailedForAt(e.p, e.ch, e.by, i)
        /\ Is(i, {"start"}) /\ e.by # 0 /\ Scheduled(CurAt(e.p, e.ch, i), i) =>
              ~\E s \in SchedAt(CurAt(e.p, e.ch, i), i) : s.task = e.task
HistRD == Last(RDRightAt)

\* Each property's history form, by name: resume-check spec requires one per
\* name of Properties, and shows on bounded models that the two forms agree.
HistoryProperties ==
    [PC |-> HistPC, EO |-> HistEO, CO |-> HistCO, CV |-> HistCV, FD |-> HistFD, RD |-> HistRD]
=============================================================================
