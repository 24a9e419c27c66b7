------------------------------ MODULE ResumeCore ------------------------------
(***************************************************************************)
(* Resume semantics of one workflow thread.                                *)
(*                                                                         *)
(* A workflow is a DAG of nodes run in supersteps.  Each step runs from a  *)
(* checkpoint; a finished task's result is a pending write against that    *)
(* checkpoint; when every task of the step has finished the runtime makes  *)
(* the next checkpoint.  Checkpoints and writes are first made in a        *)
(* process's memory and become durable when the saver acknowledges them.   *)
(* A process can crash at any instant (SIGKILL): what was not durable is   *)
(* lost, except what the store had already taken silently.  A later        *)
(* process loads the latest checkpoint and its pending writes and resumes. *)
(* A node may call interrupt(); a resume value answers it and the node     *)
(* re-executes from its start.  An older checkpoint can be forked.  Every  *)
(* effect on the outside world goes through a ledger.                      *)
(*                                                                         *)
(* The actions are written as the runtime's observable moves, parameterized *)
(* by the choices a runtime makes (which checkpoint it loaded, which task  *)
(* it started, which value it delivered).  They admit wrong choices too,   *)
(* so that a recorded trace of a faulty runtime still has a behaviour; the *)
(* properties at the end say which choices are correct.  Next is the       *)
(* reference runtime: it makes only correct choices, and model checking    *)
(* shows it keeps every property.                                          *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences, TLC

CONSTANTS
    Workflows,  \* the workflows, with declared guarantees, a behaviour may start from
    Procs       \* the processes that may run the thread

(***************************************************************************)
(* A workflow record:                                                      *)
(*   nodes      a set of node ids                                          *)
(*   pred       [nodes -> SUBSET nodes]: the nodes each node waits for     *)
(*   body       [nodes -> Seq(Int)]: what a node does, in order; 0 calls    *)
(*              interrupt(), k > 0 fires effect intent k (only the         *)
(*              reference runtime reads it; traces say what happened)      *)
(*   durability "sync" | "async" | "exit"                                  *)
(*   effects    "exactly-once" | "at-least-once": the declared guarantee   *)
(*              for effects ("at-least-once": a re-fire only after a crash) *)
(***************************************************************************)

VARIABLES
    wf,         \* the workflow and its declared guarantees, fixed by Init
    ckpt,       \* durable checkpoints: id -> [parent, done, fork]
    pw,         \* durable pending writes: set of [at, node, kind, val]
    mem,        \* per process: checkpoints and writes made, not yet durable
    run,        \* per process: the invocation it runs (volatile)
    ledger,     \* effects fired: <<at, node, intent>> -> [total, recent]
    addr,       \* resume values given: value -> the interrupt it answers
    delivered   \* every delivery of a resume value: set of [v, to]

vars == <<wf, ckpt, pw, mem, run, ledger, addr, delivered>>

None == [none |-> TRUE]

-----------------------------------------------------------------------------
(* Derived views of the thread.                                            *)

Nodes == wf.nodes

\* The tasks whose inputs are all in `done`.
Ready(done) == {n \in Nodes : n \notin done /\ wf.pred[n] \subseteq done}

\* The tasks a step runs from state s: ready, and no result saved for them.
Schedule(s) == Ready(s.done) \ s.ok

Max(S) == CHOOSE x \in S : \A y \in S : y <= x

\* The latest durable checkpoint (ids grow with creation time, like uuid6).
Latest == IF DOMAIN ckpt = {} THEN 0 ELSE Max(DOMAIN ckpt)

WritesAt(c, kind) == {w \in pw : w.at = c /\ w.kind = kind}
OkAt(c) == {w.node : w \in WritesAt(c, "ok")}
ValuesAt(c) == {w.val : w \in WritesAt(c, "resume")}

\* What the store holds for checkpoint c: what a correct load returns.
Saved(c) ==
    IF c \in DOMAIN ckpt
    THEN [id |-> c, parent |-> ckpt[c].parent, done |-> ckpt[c].done,
          ok |-> OkAt(c), rv |-> ValuesAt(c)]
    ELSE [id |-> 0, parent |-> 0, done |-> {}, ok |-> {}, rv |-> {}]

\* Task n's result for the step that runs from c is durable: as a pending
\* write, or inside a durable checkpoint made by that step.
DurableResult(c, n) ==
    \/ n \in OkAt(c)
    \/ \E d \in DOMAIN ckpt : ckpt[d].parent = c /\ ~ckpt[d].fork /\ n \in ckpt[d].done

\* Resume values still alive: durable, or held by a process.
LiveValues ==
    {w \in pw : w.kind = "resume"} \cup UNION {{w \in mem[p].ws : w.kind = "resume"} : p \in Procs}

Answers(to) == {w.val : w \in {w \in LiveValues : addr[w.val] = to}}

\* Checkpoint ids something still refers to (a new id is larger than all).
IdsInUse == DOMAIN ckpt \cup {w.at : w \in pw} \cup UNION {{k.id : k \in mem[p].cks} : p \in Procs}

(* A process's invocation, run[p]:                                         *)
(*   st       "down" (no invocation), "up", or "ended" (it returned)         *)
(*   at       the checkpoint the current step runs from (0: none yet)        *)
(*   rv       the resume values it holds                                     *)
(*   task     per node: "idle", "run", "parked", "ok" or "error"             *)
(*   pos      per node: the next operation of its body (reference runtime)   *)
(*   from     the state the current step was scheduled from: [done, ok]      *)
(*   started  the tasks the current step started                             *)
(*   last     the previous step: [from, started, ran, made] (for PC and RD)  *)
(*   load     what the saver returned and what it holds: [got, want] (CV)    *)
(*   fork     the fork it runs, what it saw and should see (FD)              *)
Idle == [st |-> "down", at |-> 0, rv |-> {},
         task |-> [n \in {} |-> "idle"], pos |-> [n \in {} |-> 1],
         from |-> None, started |-> {}, last |-> None, load |-> None, fork |-> None]

-----------------------------------------------------------------------------
(* The runtime's moves.  Each is one event of a trace.                     *)

\* The thread before anything ran, for workflow w.
InitWith(w) ==
    /\ wf = w
    /\ ckpt = [c \in {} |-> None]
    /\ pw = {}
    /\ mem = [p \in Procs |-> [cks |-> {}, ws |-> {}]]
    /\ run = [p \in Procs |-> Idle]
    /\ ledger = [k \in {} |-> None]
    /\ addr = [v \in {} |-> None]
    /\ delivered = {}

Init == \E w \in Workflows : InitWith(w)

\* Process p starts an invocation and the saver returns `got` as the latest
\* checkpoint with its pending writes (id 0: the thread has no checkpoint).
Load(p, got) ==
    /\ run[p].st \in {"down", "ended"}
    /\ run' = [run EXCEPT ![p] =
                 [Idle EXCEPT !.st = "up", !.at = got.id, !.rv = got.rv,
                              !.task = [n \in Nodes |-> "idle"],
                              !.pos = [n \in Nodes |-> 1],
                              !.from = [done |-> got.done, ok |-> got.ok],
                              !.load = [got |-> got, want |-> Saved(Latest)]]]
    /\ mem' = [mem EXCEPT ![p] = [cks |-> {}, ws |-> {}]]
    /\ UNCHANGED <<wf, ckpt, pw, ledger, addr, delivered>>

\* Process p forks durable checkpoint `src`: it runs from checkpoint `c`
\* whose state it observed as `got` (done nodes, carried writes and values).
Fork(p, src, c, got) ==
    /\ run[p].st \in {"down", "ended"}
    /\ src \in DOMAIN ckpt
    /\ c = src \/ c \notin IdsInUse
    /\ mem' = [mem EXCEPT ![p] =
                 [cks |-> IF c = src THEN {}
                          ELSE {[id |-> c, parent |-> src, done |-> got.done, fork |-> TRUE]},
                  ws |-> {}]]
    /\ run' = [run EXCEPT ![p] =
                 [Idle EXCEPT !.st = "up", !.at = c, !.rv = got.rv,
                              !.task = [n \in Nodes |-> "idle"],
                              !.pos = [n \in Nodes |-> 1],
                              !.from = [done |-> got.done, ok |-> got.ok],
                              !.fork = [from |-> src, to |-> c,
                                        got |-> [done |-> got.done, ok |-> got.ok, rv |-> got.rv],
                                        want |-> [done |-> ckpt[src].done,
                                                  ok |-> {}, rv |-> {}]]]]
    /\ UNCHANGED <<wf, ckpt, pw, ledger, addr, delivered>>

\* Process p gives resume value v, addressed to interrupt `to`, and writes it
\* against the checkpoint it runs from.
Resume(p, v, to) ==
    /\ run[p].st = "up" /\ run[p].at # 0
    /\ v \notin DOMAIN addr
    /\ addr' = addr @@ (v :> to)
    /\ mem' = [mem EXCEPT ![p].ws = @ \cup
                 {[at |-> run[p].at, node |-> 0, kind |-> "resume", val |-> v]}]
    /\ run' = [run EXCEPT ![p].rv = @ \cup {v}]
    /\ UNCHANGED <<wf, ckpt, pw, ledger, delivered>>

\* Process p starts task n of its current step.
StartTask(p, n) ==
    /\ run[p].st = "up" /\ run[p].at # 0
    /\ n \in Nodes /\ run[p].task[n] # "run"
    /\ run' = [run EXCEPT ![p].task[n] = "run", ![p].pos[n] = 1,
                          ![p].started = @ \cup {n}]
    /\ UNCHANGED <<wf, ckpt, pw, mem, ledger, addr, delivered>>

\* Running task n fires effect intent k through the ledger.
Effect(p, n, k) ==
    /\ run[p].st = "up" /\ n \in Nodes /\ run[p].task[n] = "run"
    /\ LET key == <<run[p].at, n, k>>
       IN ledger' = IF key \in DOMAIN ledger
                    THEN [ledger EXCEPT ![key] = [total |-> @.total + 1,
                                                  recent |-> @.recent + 1]]
                    ELSE ledger @@ (key :> [total |-> 1, recent |-> 1])
    /\ run' = [run EXCEPT ![p].pos[n] = @ + 1]
    /\ UNCHANGED <<wf, ckpt, pw, mem, addr, delivered>>

\* Running task n calls its i-th interrupt(): the runtime delivers resume
\* value v (v > 0) and the task goes on, or (v = 0) the task parks.
Interrupt(p, n, i, v) ==
    /\ run[p].st = "up" /\ n \in Nodes /\ run[p].task[n] = "run"
    /\ LET to == <<run[p].at, n, i>> IN
       IF v = 0
       THEN /\ run' = [run EXCEPT ![p].task[n] = "parked"]
            /\ mem' = [mem EXCEPT ![p].ws = @ \cup
                         {[at |-> run[p].at, node |-> n, kind |-> "interrupt", val |-> i]}]
            /\ UNCHANGED delivered
       ELSE /\ v \in DOMAIN addr
            /\ delivered' = delivered \cup {[v |-> v, to |-> to]}
            /\ run' = [run EXCEPT ![p].pos[n] = @ + 1]
            /\ UNCHANGED mem
    /\ UNCHANGED <<wf, ckpt, pw, ledger, addr>>

\* Running task n finishes with outcome "ok" or "error"; its write is made.
EndTask(p, n, outcome) ==
    /\ run[p].st = "up" /\ n \in Nodes /\ run[p].task[n] = "run"
    /\ run' = [run EXCEPT ![p].task[n] = outcome]
    /\ mem' = [mem EXCEPT ![p].ws = @ \cup
                 {[at |-> run[p].at, node |-> n, kind |-> outcome, val |-> 0]}]
    /\ UNCHANGED <<wf, ckpt, pw, ledger, addr, delivered>>

\* Process p ends its step and makes checkpoint c recording `done` as the
\* nodes done (the first checkpoint of a thread has parent 0).
Step(p, c, done) ==
    /\ run[p].st = "up"
    /\ c \notin IdsInUse
    /\ \A n \in DOMAIN run[p].task : run[p].task[n] # "run"
    /\ mem' = [mem EXCEPT ![p].cks = @ \cup
                 {[id |-> c, parent |-> run[p].at, done |-> done, fork |-> FALSE]}]
    /\ run' = [run EXCEPT ![p] =
                 [@ EXCEPT !.at = c, !.rv = {},
                           !.task = [n \in Nodes |-> "idle"],
                           !.from = [done |-> done, ok |-> {}], !.started = {},
                           !.last = IF run[p].at = 0 THEN None
                                    ELSE [from |-> run[p].from, started |-> run[p].started,
                                          ran |-> {n \in Nodes : run[p].task[n] = "ok"},
                                          made |-> done]]]
    /\ UNCHANGED <<wf, ckpt, pw, ledger, addr, delivered>>

\* The saver acknowledges checkpoint c of process p: it is durable.
Persist(p, c) ==
    /\ \E k \in mem[p].cks :
         /\ k.id = c
         /\ ckpt' = ckpt @@ (c :> [parent |-> k.parent, done |-> k.done, fork |-> k.fork])
         /\ mem' = [mem EXCEPT ![p].cks = @ \ {k}]
    /\ UNCHANGED <<wf, pw, run, ledger, addr, delivered>>

\* The saver acknowledges write w of process p: it is durable.
PersistWrite(p, w) ==
    /\ w \in mem[p].ws
    /\ pw' = pw \cup {w}
    /\ mem' = [mem EXCEPT ![p].ws = @ \ {w}]
    /\ UNCHANGED <<wf, ckpt, run, ledger, addr, delivered>>

\* Process p's invocation returns (done, parked or failed).
Finish(p) ==
    /\ run[p].st = "up"
    /\ run' = [run EXCEPT ![p].st = "ended"]
    /\ UNCHANGED <<wf, ckpt, pw, mem, ledger, addr, delivered>>

\* Process p is killed.  The store may already hold some of what p had in
\* flight (`kept`); the rest is lost with p's memory.
Crash(p, kept) ==
    /\ run[p].st \in {"up", "ended"}
    /\ kept \subseteq mem[p].cks \cup mem[p].ws
    /\ ckpt' = ckpt @@ [k \in {x.id : x \in kept \cap mem[p].cks} |->
                          LET x == CHOOSE x \in kept \cap mem[p].cks : x.id = k
                          IN [parent |-> x.parent, done |-> x.done, fork |-> x.fork]]
    /\ pw' = pw \cup (kept \cap mem[p].ws)
    /\ mem' = [mem EXCEPT ![p] = [cks |-> {}, ws |-> {}]]
    /\ run' = [run EXCEPT ![p] = Idle]
    /\ ledger' = [key \in DOMAIN ledger |-> [ledger[key] EXCEPT !.recent = 0]]
    /\ UNCHANGED <<wf, addr, delivered>>

-----------------------------------------------------------------------------
(* The reference runtime: the correct choice at every move.               *)

\* A new id, larger than every id in S: checkpoint ids grow with time (uuid6).
Fresh(S) == IF S = {} THEN 1 ELSE Max(S) + 1

Up(p) == run[p].st = "up"

\* A lease fences the thread: one process runs it at a time.
RefLoad(p) ==
    /\ \A q \in Procs : ~Up(q)
    /\ Load(p, Saved(Latest))

RefFork(p) ==
    /\ \A q \in Procs : ~Up(q)
    /\ \E src \in DOMAIN ckpt :
         Fork(p, src, Fresh(IdsInUse), [done |-> ckpt[src].done, ok |-> {}, rv |-> {}])

Parked(p) == {<<w.node, w.val>> : w \in WritesAt(run[p].at, "interrupt")}

RefResume(p) ==
    /\ run[p].started = {}
    /\ \E pi \in Parked(p) :
         LET to == <<run[p].at, pi[1], pi[2]>> IN
         /\ \A v \in run[p].rv : addr[v] # to
         /\ Resume(p, Fresh(DOMAIN addr), to)

\* In sync mode a step starts only from a durable checkpoint.
StepMayStart(p) == wf.durability = "sync" => run[p].at \in DOMAIN ckpt

RefStart(p) ==
    /\ StepMayStart(p)
    /\ \E n \in Schedule(run[p].from) \ run[p].started : StartTask(p, n)

\* The next operation of a running task's body.
RefOp(p) ==
    \E n \in Nodes :
      /\ run[p].task[n] = "run"
      /\ LET pos == run[p].pos[n]
             body == wf.body[n]
             to == <<run[p].at, n, pos>>
             vals == {v \in run[p].rv : addr[v] = to}
         IN IF pos > Len(body) THEN EndTask(p, n, "ok")
            ELSE IF body[pos] = 0
                 THEN IF vals = {} THEN Interrupt(p, n, pos, 0)
                      ELSE \E v \in vals : Interrupt(p, n, pos, v)
                 ELSE IF <<run[p].at, n, body[pos]>> \in DOMAIN ledger
                      \* the ledger knows this intent fired: skip it
                      THEN /\ run' = [run EXCEPT ![p].pos[n] = @ + 1]
                           /\ UNCHANGED <<wf, ckpt, pw, mem, ledger, addr, delivered>>
                      ELSE Effect(p, n, body[pos])

StepDone(p) ==
    /\ run[p].started = Schedule(run[p].from)
    /\ \A n \in run[p].started : run[p].task[n] = "ok"

RefStep(p) ==
    /\ \/ run[p].at = 0
       \/ StepDone(p) /\ Ready(run[p].from.done) # {}
    /\ Step(p, Fresh(IdsInUse),
             IF run[p].at = 0 THEN {} ELSE run[p].from.done \cup Ready(run[p].from.done))

\* A step is over: nothing left to run, or a task parked at an interrupt.
AboutToReturn(p) ==
    /\ run[p].at # 0
    /\ \/ StepDone(p) /\ Ready(run[p].from.done) = {}
       \/ /\ run[p].started = Schedule(run[p].from)
          /\ \A n \in run[p].started : run[p].task[n] \in {"ok", "parked"}
          /\ \E n \in run[p].started : run[p].task[n] = "parked"

\* An invocation returns only after all it made is durable.
RefFinish(p) ==
    /\ mem[p] = [cks |-> {}, ws |-> {}]
    /\ AboutToReturn(p)
    /\ Finish(p)

\* Sync and async mode call the saver as soon as a thing is made (async goes
\* on with the next step meanwhile); exit mode only when about to return.
RefPersist(p) ==
    /\ wf.durability = "exit" => AboutToReturn(p)
    /\ \/ \E k \in mem[p].cks : Persist(p, k.id)
       \/ \E w \in mem[p].ws : PersistWrite(p, w)

Run ==
    \E p \in Procs :
        \/ RefLoad(p)
        \/ Up(p) /\ (RefResume(p) \/ RefStart(p) \/ RefOp(p) \/ RefStep(p) \/ RefFinish(p))
        \/ RefPersist(p)

Fault ==
    \E p \in Procs :
        \/ \E kept \in SUBSET (mem[p].cks \cup mem[p].ws) : Crash(p, kept)
        \/ RefFork(p)

Next == Run \/ Fault

Spec == Init /\ [][Next]_vars

\* The moves the reference runtime could make next, as partial trace events:
\* what a trace that stops matching was expected to do instead.  A running
\* task's next move (effect, interrupt or task_end) depends on its body, which
\* traces do not declare; it is shown as task_end.
Expected ==
    LET up == {p \in Procs : Up(p)}
        persist(p) == wf.durability = "exit" => AboutToReturn(p)
    IN  {[ev |-> "load", proc |-> p] : p \in {p \in Procs : ENABLED RefLoad(p)}}
        \cup {[ev |-> "resume", proc |-> p] : p \in {p \in up : ENABLED RefResume(p)}}
        \cup UNION {{[ev |-> "task_start", proc |-> p, node |-> n]
                        : n \in Schedule(run[p].from) \ run[p].started}
                     : p \in {p \in up : StepMayStart(p)}}
        \cup UNION {{[ev |-> "task_end", proc |-> p, node |-> n]
                        : n \in {n \in DOMAIN run[p].task : run[p].task[n] = "run"}}
                     : p \in up}
        \cup {[ev |-> "step", proc |-> p] : p \in {p \in up : ENABLED RefStep(p)}}
        \cup UNION {{[ev |-> "put", proc |-> p, checkpoint |-> k.id] : k \in mem[p].cks}
                     : p \in {p \in Procs : persist(p)}}
        \cup UNION {{[ev |-> "put_writes", proc |-> p, checkpoint |-> w.at, node |-> w.node]
                        : w \in mem[p].ws}
                     : p \in {p \in Procs : persist(p)}}
        \cup {[ev |-> "finish", proc |-> p] : p \in {p \in up : ENABLED RefFinish(p)}}

-----------------------------------------------------------------------------
(* The contract.  Each property is a state invariant; Properties names    *)
(* them for resume-check, which checks every one on every trace.           *)

\* PC, prefix continuation: a run continues the durable prefix -- it never
\* re-runs a task whose result is durable, in sync mode it runs a step only
\* from a durable checkpoint, it returns only once its last checkpoint and
\* that checkpoint's writes are durable, and each checkpoint records exactly
\* the results of its step.
PC ==
    \A p \in Procs :
        /\ Up(p) => \A n \in DOMAIN run[p].task :
                        run[p].task[n] = "run" => ~DurableResult(run[p].at, n)
        /\ Up(p) /\ wf.durability = "sync" /\ run[p].at \notin DOMAIN ckpt =>
               \A n \in DOMAIN run[p].task : run[p].task[n] = "idle"
        /\ run[p].st = "ended" =>
               /\ run[p].at \in DOMAIN ckpt
               /\ \A w \in mem[p].ws : w.at # run[p].at
        /\ run[p].last # None =>
               run[p].last.made = run[p].last.from.done \cup run[p].last.from.ok
                                      \cup run[p].last.ran

\* EO, effect exactly-once: each effect intent of a task fires at most once,
\* across interrupts, crashes and resumes; a runtime that declares
\* at-least-once may fire it again only after a crash.
EO ==
    \A key \in DOMAIN ledger :
        IF wf.effects = "exactly-once" THEN ledger[key].total <= 1
                                       ELSE ledger[key].recent <= 1

\* CO, consume-once: a resume value is delivered only to the interrupt it
\* answers, and no interrupt is answered by two live resume values.
CO ==
    /\ \A d \in delivered : addr[d.v] = d.to
    /\ \A to \in {addr[v] : v \in DOMAIN addr} : Cardinality(Answers(to)) <= 1

\* CV, checkpoint validity: every load returns the latest durable checkpoint
\* of the thread exactly as stored, with its parent and its pending writes.
CV ==
    \A p \in Procs : run[p].load # None => run[p].load.got = run[p].load.want

\* FD, fork determinism: a fork from c sees exactly c's state, none of c's
\* pending writes, and runs on a new checkpoint so c's branch is unchanged.
FD ==
    \A p \in Procs : run[p].fork # None =>
        /\ run[p].fork.got = run[p].fork.want
        /\ run[p].fork.to # run[p].fork.from

\* RD, recovery determinism: every step runs exactly the tasks its starting
\* state schedules (ready, no saved result), whatever a lost process did.
RD ==
    \A p \in Procs :
        /\ Up(p) => run[p].started \subseteq Schedule(run[p].from)
        /\ run[p].last # None => run[p].last.started = Schedule(run[p].last.from)

Properties == [PC |-> PC, EO |-> EO, CO |-> CO, CV |-> CV, FD |-> FD, RD |-> RD]

\* What a conforming trace showed beyond what it promised.
Summary ==
    [effects |-> IF \A key \in DOMAIN ledger : ledger[key].total <= 1
                 THEN "exactly-once" ELSE "at-least-once"]
=============================================================================
