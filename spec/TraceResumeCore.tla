--------------------------- MODULE TraceResumeCore ---------------------------
(***************************************************************************)
(* Trace validation for ResumeCore: each event of a trace (format v2) is   *)
(* one ResumeCore action with the event's fields as its parameters.        *)
(* Hidden choices -- what a killed process's store had already taken --    *)
(* stay free, and TLC searches over them.  The trace vocabulary (the       *)
(* expected moves, the summary of a conforming trace) lives here, not in   *)
(* the base module.                                                        *)
(***************************************************************************)
EXTENDS ResumeCore, TraceValidation

VARIABLES
    keeps,   \* what each crash of the trace left in the store, in order
    past,    \* what the trace did so far: the events that may justify a repeat
    allowed, \* every repeat the contract let through, with the event that justified it
    settled, \* per chain, how the last invocation that ran it ended so far
    hosts    \* per nested chain, the task its load named as its host (`under`)

\* Every move but a crash is a function of its event, so a state of the trace spec is
\* determined by the cursor and the crashes' hidden choices: TLC tells states apart by
\* that alone (the VIEW), instead of fingerprinting the whole history at every event.
TraceView == <<t, l, keeps>>

\* The declared guarantees ResumeCore expects, built from a trace header.
WorkflowOf(h) ==
    [durability |-> h.guarantees.durability,
     effects |-> [default |-> h.guarantees.effects.default, kinds |-> h.guarantees.effects.kinds],
     fencing |-> h.guarantees.fencing,
     plan |-> [d \in {} |-> {}]]

\* As many processes as the batch's busiest trace had.
TraceProcs == 1..IdCounts.proc

(* A repeat -- a task run again, an effect fired again, an answer delivered   *)
(* again -- is legal only because something lost or ended the earlier attempt. *)
(* `past` keeps, per task, effect and interrupt, the event of its last attempt  *)
(* and the last crash; `allowed` names, for each repeat the contract accepted,  *)
(* the event that justified it: the later of the last crash and the end of the  *)
(* earlier attempt (or the return that left it running).  They are functions of *)
(* the events, so the VIEW omits them.                                          *)
NothingPast == [task |-> [x \in {} |-> 0], effect |-> [x \in {} |-> 0],
             answer |-> [x \in {} |-> 0], ended |-> [x \in {} |-> 0], crash |-> 0]

Repeat(kind, key, table, because) ==
    IF key \in DOMAIN past[table]
    THEN allowed' = Append(allowed, [event |-> l, repeat |-> kind,
                                     because |-> Max(because, past.crash)])
    ELSE UNCHANGED allowed

Remember(table, key) == [past EXCEPT ![table] = Put(@, key, l)]

Justify(e) ==
    CASE e.ev = "task_start" ->
            /\ Repeat("task", e.task, "task", Get(past.ended, e.task, 0))
            /\ past' = Remember("task", e.task)
      [] e.ev = "effect" /\ e.status = "fired" ->
            LET key == EffectKey(e.proc, e.thread, e.task, e.intent) IN
            /\ Repeat("effect", key, "effect", Get(past.ended, e.task, 0))
            /\ past' = Remember("effect", key)
      [] e.ev = "task_end" ->
            /\ \/ e.resumed = {} /\ UNCHANGED allowed
               \/ e.resumed # {} /\
                    LET again == {d \in e.resumed : d \in DOMAIN past.answer} IN
                    allowed' = IF again = {} THEN allowed
                               ELSE Append(allowed, [event |-> l, repeat |-> "answer",
                                                     because |-> Max(past.crash,
                                                                     Get(past.ended, e.task, 0))])
            /\ past' = [past EXCEPT !.ended = Put(@, e.task, l),
                                    !.answer = [x \in DOMAIN @ \cup e.resumed |-> l]]
      [] e.ev = "crash" ->
            /\ past' = [past EXCEPT !.crash = l]
            /\ UNCHANGED allowed
      \* a return ends the attempts its process still runs (LangGraph does not wait
      \* for a failed step's siblings): a later run of them repeats no live attempt
      [] e.ev = "finish" ->
            LET running == UNION {run[k].running : k \in {k \in DOMAIN run : k[1] = e.proc}} IN
            /\ past' = [past EXCEPT !.ended = [x \in DOMAIN @ \cup running |->
                                                  IF x \in running THEN l ELSE @[x]]]
            /\ UNCHANGED allowed
      \* a fresh run after a delete is a new execution: its fires repeat nothing
      [] e.ev = "delete" ->
            /\ past' = [past EXCEPT !.effect = [k \in {k \in DOMAIN past.effect : k[1][1] # e.thread} |->
                                                  past.effect[k]]]
            /\ UNCHANGED allowed
      [] OTHER -> UNCHANGED <<past, allowed>>

\* A load or a fork starts an invocation on its chain ("running"); an end of the
\* task a nested chain runs inside (its host, named by a load's `under`), by any
\* attempt, ends that chain as the task ended (a subgraph that completed is done,
\* whatever its process does later; one whose host ran again and failed is over);
\* a crash of the process leaves every chain it still runs "crashed", its return
\* ends them as it says.  Functions of the events, like `past`, so the VIEW omits
\* them.
SettleChains(e) ==
    LET mine == {k[2] : k \in {k \in DOMAIN run : k[1] = e.proc}}
        on(ch) == ch \in mine /\ settled[ch] = "running"
        hosted == {ch \in DOMAIN hosts : hosts[ch] = e.task}
        ended == IF e.outcome = "ok" THEN "done" ELSE IF e.outcome = "interrupt" THEN "parked" ELSE "failed"
    IN
    /\ hosts' = IF e.ev = "load" /\ ~e.refused /\ e.under # 0 THEN Put(hosts, e.thread, e.under)
                ELSE hosts
    /\ settled' = CASE e.ev = "load" /\ ~e.refused -> Put(settled, e.thread, "running")
                    [] e.ev = "fork" -> Put(settled, e.thread, "running")
                    [] e.ev = "task_end" ->
                         [ch \in DOMAIN settled |-> IF ch \in hosted THEN ended ELSE settled[ch]]
                    [] e.ev = "crash" ->
                         [ch \in DOMAIN settled |-> IF on(ch) THEN "crashed" ELSE settled[ch]]
                    [] e.ev = "finish" ->
                         [ch \in DOMAIN settled |-> IF on(ch) THEN e.outcome ELSE settled[ch]]
                    [] OTHER -> settled

\* The ResumeCore action that event e records.
Apply(e) ==
    \/ e.ev = "load" /\ ~e.refused /\ LoadInto(e.proc, e.thread, e.asked, e.before, e.checkpoint,
                                                e.parent, e.digest, e.writes, e.answers,
                                                e.nested \/ e.under # 0, e.under, e.into)
    \/ e.ev = "load" /\ e.refused /\ Refused(e.proc, e.thread)
    \/ e.ev = "read" /\ Read(e.proc, e.thread, e.asked, e.before, e.checkpoint, e.parent,
                             e.digest, e.writes, e.answers)
    \/ e.ev = "schedule" /\ Schedule(e.proc, e.thread, e.checkpoint, e.tasks)
    \/ e.ev = "task_start" /\ e.by = 0 /\ StartTask(e.proc, e.thread, e.task, e.node, e.path)
    \/ e.ev = "task_start" /\ e.by # 0 /\ CallTask(e.proc, e.thread, e.by, e.task, e.node, e.path)
    \/ e.ev = "effect" /\ Effect(e.proc, e.thread, e.task, e.intent, e.kind, e.status)
    \/ e.ev = "task_end" /\ EndTask(e.proc, e.thread, e.task, e.outcome, e.interrupt, e.resumed,
                                    e.digest)
    \/ e.ev = "resume" /\ Resume(e.proc, e.thread, e.checkpoint, e.interrupt, e.value)
    \/ e.ev = "step" /\ Step(e.proc, e.thread, e.checkpoint, e.parent, e.digest)
    \/ e.ev = "fork" /\ Fork(e.proc, e.thread, e.parent, e.checkpoint, e.digest)
    \/ e.ev = "update" /\ Update(e.proc, e.thread, e.parent, e.checkpoint, e.digest)
    \/ e.ev = "put" /\ PutCheckpoint(e.proc, e.checkpoint, e.digest)
    \/ e.ev = "put_writes" /\ e.task # 0 /\
          PutWrites(e.proc, e.thread, e.checkpoint, e.task, e.kind, e.interrupt, e.digest)
    \/ e.ev = "put_writes" /\ e.task = 0 /\ PutAnswers(e.proc, e.checkpoint)
    \/ e.ev = "edit" /\ EditWrite(e.proc, e.thread, e.checkpoint, e.task, e.digest)
    \/ e.ev = "finish" /\ Finish(e.proc, e.outcome)
    \/ e.ev = "delete" /\ Delete(e.proc, e.thread)
    \/ e.ev = "crash" /\ \E kept \in Keepable(e.proc) :
                           Crash(e.proc, kept) /\ keeps' = Append(keeps, kept)

Broken == {name \in DOMAIN Properties : ~Properties[name]}

\* A trace is complete when something ran, every chain's last invocation
\* returned (done, parked or failed: a thread killed and never resumed, or a run
\* that never returned, leaves it incomplete, whatever other threads did), and
\* nothing made is still in flight (an edit whose put never came back).
Complete ==
    /\ DOMAIN settled # {}
    /\ \A ch \in DOMAIN settled : settled[ch] \in {"done", "parked", "failed"}
    /\ \A p \in Procs : inflight[p].cks = {}

\* What a conforming trace showed: how its last invocation ended, whether it is
\* complete (above), and the strongest effect level it met.
Summary ==
    [end |-> ending,
     complete |-> Complete,
     effects |-> IF \A key \in DOMAIN ledger : ledger[key].fired <= 1
                 THEN "exactly-once" ELSE "at-least-once",
     repeats |-> allowed]

\* The moves a correct runtime could make next, as partial trace events:
\* what a trace that stops matching was expected to do instead.
Expected ==
    LET up == {k \in DOMAIN run : alive[k[1]] = "up"}
    IN  {[ev |-> "schedule", proc |-> k[1], thread |-> k[2], checkpoint |-> run[k].cur]
            : k \in {k \in up : run[k].cur # 0 /\ run[k].cur \notin DOMAIN sched}}
        \cup UNION {{[ev |-> "task_start", proc |-> k[1], thread |-> k[2], task |-> s.task]
                        : s \in {s \in sched[run[k].cur] :
                                   ~HasResult(k[1], run[k].cur, s.task) /\ s.task \notin run[k].running}}
                     : k \in {k \in up : run[k].cur \in DOMAIN sched}}
        \cup UNION {{[ev |-> "task_end", proc |-> k[1], thread |-> k[2], task |-> x]
                        : x \in run[k].running} : k \in up}
        \cup {[ev |-> "step", proc |-> k[1], thread |-> k[2], parent |-> run[k].cur]
                : k \in {k \in up : run[k].running = {} /\
                                    (run[k].cur = 0 \/ (run[k].cur \in DOMAIN sched /\
                                     sched[run[k].cur] # {} /\
                                     \A s \in sched[run[k].cur] : HasResult(k[1], run[k].cur, s.task)))}}
        \cup UNION {{[ev |-> "put", proc |-> p, checkpoint |-> c] : c \in inflight[p].cks} : p \in Procs}
        \cup UNION {{[ev |-> "put_writes", proc |-> p, checkpoint |-> w[1], task |-> w[2]]
                        : w \in inflight[p].wrs} : p \in Procs}
        \cup {[ev |-> "finish", proc |-> p] : p \in {p \in Procs : alive[p] = "up"}}
        \cup {[ev |-> "load", proc |-> p] : p \in {p \in Procs : alive[p] # "up"}}

\* Printed in a diagnosis run, at the end of the prefix a trace matched: the
\* moves a correct runtime could make next.
TraceExpected == Matched => PrintT(<<"rc-expected", t, Expected>>)

TraceInit ==
    /\ t \in DOMAIN Traces
    /\ l = 1
    /\ InitWith(WorkflowOf(Traces[t].header))
    /\ keeps = <<>>
    /\ past = NothingPast
    /\ allowed = <<>>
    /\ settled = [ch \in {} |-> "none"]
    /\ hosts = [ch \in {} |-> 0]

\* The move the current event records, with what it justifies.
Consume ==
    /\ ~Matched
    /\ Apply(Ev)
    /\ Ev.ev # "crash" => UNCHANGED keeps
    /\ Justify(Ev)
    /\ SettleChains(Ev)

\* A trace with no event is judged too: nothing ran, so it conforms, incomplete.
NothingToMatch == Len(Events) = 0 => PrintT(<<"rc-accepted", t, Summary>>)

TraceNext == Consume /\ Advance(Broken', Summary')
=============================================================================
