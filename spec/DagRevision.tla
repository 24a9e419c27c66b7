------------------------------ MODULE DagRevision ------------------------------
(***************************************************************************)
(* Revision recovery for a DAG workflow (after the REVISE system).          *)
(*                                                                         *)
(* The workflow's inputs are versioned paths (fields of the input record). *)
(* Each execution of a node is an attempt: it records the version of every *)
(* path it read (data reads; a read that escaped tracking marks the        *)
(* attempt's provenance unknown), the route it ran on (control reads: the  *)
(* paths its conditional edges test) and the parent attempts whose outputs *)
(* it consumed.  While the workflow runs, revisions arrive: replace or     *)
(* append a value, cancel an earlier revision (restore a value), or change *)
(* a control path (flip a route).  A revision is accepted only against the *)
(* current version of its path and makes a new version.                    *)
(*                                                                         *)
(* After revisions the runtime plans: it cancels attempts in flight and    *)
(* invalidates committed outputs (to be recomputed), and keeps the rest    *)
(* (in-flight attempts continue, committed outputs are reused).  A         *)
(* finished attempt commits -- its output becomes the node's current       *)
(* output -- or is rejected; an effect on the outside world is staged by   *)
(* an attempt and published (or later revoked) by the runtime.  Finish     *)
(* returns the outputs of the result nodes.                                *)
(*                                                                         *)
(* A crash loses the attempts in flight, their staged effects and the      *)
(* plan; commits, published effects and accepted revisions are durable.    *)
(* This is ResumeCore's Crash in sync durability, seen at the level of     *)
(* attempts: a committed attempt is a task whose write is durable (PC says *)
(* it is not re-run), an attempt in flight is a task of the lost process,  *)
(* and Restart is ResumeCore's Load of the latest durable state.  What     *)
(* DagRevision adds is that a durable commit may have gone stale while the *)
(* process was down, so a restarted runtime must revalidate before reuse.  *)
(*                                                                         *)
(* As in ResumeCore, the actions are the runtime's observable moves with   *)
(* the runtime's choices as parameters; they admit wrong choices so that a *)
(* faulty runtime's trace still has a behaviour, and the properties say    *)
(* which choices are correct.  Next is a family of reference runtimes      *)
(* (policies full, suffix and validity) that make only correct choices.    *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences, TLC

CONSTANTS
    Workflows,  \* the workflows (with a policy for the reference runtime) a behaviour may run
    Width       \* how many attempts the reference runtime runs at once

(***************************************************************************)
(* A workflow record:                                                      *)
(*   nodes    a set of node ids                                            *)
(*   order    a sequence of all nodes, topologically sorted (the order a   *)
(*            sequential runtime runs them in; suffix recovery cuts it)    *)
(*   pred     [nodes -> SUBSET nodes]: the nodes whose outputs it consumes *)
(*   paths    the input paths                                              *)
(*   reads    [nodes -> SUBSET paths]: the paths each node truly reads     *)
(*   routes   a set of [node, path, value]: the node is on the route only  *)
(*            while control path `path` holds `value`                      *)
(*   branches (optional) a set of [node, by, to]: the node is on the route *)
(*            only while the current output of node `by` (a router: its    *)
(*            conditional edge) chose branch `to` (see RouteTo)              *)
(*   effects  the nodes that have an effect on the outside world           *)
(*            (whether an effect can be revoked is declared when it is      *)
(*            staged: see Stage)                                           *)
(*   init     [paths -> Int]: initial values (only control values matter)  *)
(* For the reference runtime only:                                         *)
(*   policy   "full" | "suffix" | "validity"                               *)
(*   untracked the nodes whose reads escape tracking                       *)
(*   irreversible the effect nodes whose effects cannot be revoked         *)
(*   fanout   (optional) the routers that fan out with Send: one task per  *)
(*            item of their output, the k-th on branch slot k (see Choices) *)
(***************************************************************************)

VARIABLES
    wf,     \* the workflow, fixed by Init
    ver,    \* per path: its current version (0 at the start; +1 per accepted revision)
    val,    \* per path: its current value (what control paths route on)
    att,    \* attempts: id -> the attempt record below
    cur,    \* per node: its current committed attempt (0: none)
    plan,   \* the last plan and what it was judged against (None: no plan yet)
    due,    \* a plan is due: a revision or a restart happened since the last plan
    up,     \* the runtime process is running
    final,  \* what Finish returned, until the next revision (None: not finished)
    hist    \* the observed history: every move as an event record (auxiliary, see Observe)

state == <<wf, ver, val, att, cur, plan, due, up, final>>
vars == <<state, hist>>

None == [none |-> TRUE]

(* An attempt record, att[a]:                                              *)
(*   node     the node it executes                                         *)
(*   parents  the attempts whose outputs it consumed                       *)
(*   vers     the version of every path when it started                    *)
(*   reads    the recorded data reads: a set of <<path, version>>          *)
(*   unknown  a read escaped tracking: its provenance is unknown           *)
(*   st       "run", "done" (finished, not committed), "committed",        *)
(*            "rejected", "cancelled" or "lost" (in flight at a crash)     *)
(*   fx       its effect: "none", "staged", "published", "revoked" or      *)
(*            "dropped" (staged, never published)                          *)
(*   commit   "none", or whether it was "fresh" or "stale" when committed  *)
(*   basis    the versions its output depends on, itself and through its   *)
(*            parents: a set of <<path, version>> (fixed when it finishes) *)
(*   lin      the nodes whose outputs reached it through its parents       *)
(*   early    a parent was still running when it started: it consumed an   *)
(*            output that did not exist yet                                *)
(*   chose    the branches it chose, if its node is a router (see RouteTo)  *)
(*   irrev    its effect was declared irreversible when staged: it can     *)
(*            never be revoked                                             *)
(*   fence    for an irreversible effect: "none", "unfenced" (published    *)
(*            while its work was affected or uncommitted) or "owed" (a     *)
(*            plan was made that would need to revoke it)                  *)

-----------------------------------------------------------------------------
(* Derived views.                                                          *)

Nodes == wf.nodes
Paths == wf.paths

RoutePaths(n) == {r.path : r \in {r \in wf.routes : r.node = n}}

\* The conditional edges a node computes (none when the workflow declares none).
Branches == IF "branches" \in DOMAIN wf THEN wf.branches ELSE {}
\* The routers that fan out with Send (none when the workflow declares none).
Fanouts == IF "fanout" \in DOMAIN wf THEN wf.fanout ELSE {}
\* The branches router n may choose.
Targets(n) == {b.to : b \in {b \in Branches : b.by = n}}
\* Node m's current output chose branch t.
Chose(m, t) == cur[m] # 0 /\ t \in att[cur[m]].chose
\* Whether n is on the route is known: every router guarding it has a current output.
Decided(n) == \A b \in Branches : b.node = n => cur[b.by] # 0

\* A node is on the route while every control path it is guarded by holds its
\* value and every router it is guarded by currently chose its branch.
Active(n) ==
    /\ \A r \in wf.routes : r.node = n => val[r.path] = r.value
    /\ \A b \in Branches : b.node = n => Chose(b.by, b.to)
\* The same on control values W (Active(n) is ActiveIn(n, val)); a router's
\* choice is its current output's, whatever W.
ActiveIn(n, W) ==
    /\ \A r \in wf.routes : r.node = n => W[r.path] = r.value
    /\ \A b \in Branches : b.node = n => Chose(b.by, b.to)
ActiveNodes == {n \in Nodes : Active(n)}
ActivePreds(n) == {m \in wf.pred[n] : Active(m)}

InFlight == {a \in DOMAIN att : att[a].st \in {"run", "done"}}
Committed == {n \in Nodes : cur[n] # 0}
\* The work a plan decides about: attempts in flight and current committed attempts.
Work == InFlight \cup {cur[n] : n \in Committed}

\* The paths revised since attempt a started.
Touched(a) == {p \in Paths : ver[p] # att[a].vers[p]}

\* Attempt a's provenance is unknown and something changed since it started.
Blind(a) == att[a].unknown /\ Touched(a) # {}

\* Attempt a's output would not be what the workflow computes now: a read
\* changed, provenance is unknown and anything changed, its route changed, its
\* parents are not the current committed attempts of its active inputs, or one
\* of them was still running when it started (it consumed no output of it).
Stale(a) ==
    LET n == att[a].node IN
    \/ \E r \in att[a].reads : ver[r[1]] # r[2]
    \/ Blind(a)
    \/ RoutePaths(n) \cap Touched(a) # {}
    \/ ~Active(n)
    \/ att[a].parents # {cur[m] : m \in ActivePreds(n)}
    \/ att[a].early

\* The nodes whose work is stale: where recovery must start.
Conflicts == {att[a].node : a \in {a \in Work : Stale(a)}}

\* S closed under dependents.
RECURSIVE Downstream(_)
Downstream(S) ==
    LET wider == S \cup {n \in Nodes : wf.pred[n] \cap S # {}}
    IN  IF wider = S THEN S ELSE Downstream(wider)

\* The affected set: active nodes whose work is stale, and their dependents.
Affected == Downstream(Conflicts) \cap ActiveNodes

Pos(n) == CHOOSE i \in DOMAIN wf.order : wf.order[i] = n
Min(S) == CHOOSE x \in S : \A y \in S : x <= y

\* The topological suffix from the earliest conflict.
Suffix ==
    IF Conflicts = {} THEN {}
    ELSE {n \in ActiveNodes : Pos(n) >= Min({Pos(m) : m \in Conflicts})}

\* Some work's provenance is too coarse to compute the affected set from.
Unknown == \E a \in Work : Blind(a)

\* What a full restart on the current inputs computes at node n: the
\* versions of what it reads and routes on, and of what its inputs depend on.
RECURSIVE OracleIn(_, _, _)
OracleIn(n, V, W) ==
    {<<p, V[p]>> : p \in wf.reads[n] \cup RoutePaths(n)}
    \cup UNION {OracleIn(m, V, W) : m \in {m \in wf.pred[n] : ActiveIn(m, W)}}
\* ... on the current versions V = ver and values W = val.
Oracle(n) == OracleIn(n, ver, val)

\* What attempt a's output depends on, as far as the runtime recorded it.
BasisOf(a) ==
    LET n == att[a].node
        unseen == IF att[a].unknown THEN wf.reads[n] ELSE {}
    IN  att[a].reads
        \cup {<<p, att[a].vers[p]>> : p \in RoutePaths(n) \cup unseen}
        \cup UNION {att[q].basis : q \in att[a].parents}

\* The attempts whose effects are published, and what each published.
Publishers == {a \in DOMAIN att : att[a].fx = "published"}
Published == {<<att[a].node, att[a].basis>> : a \in Publishers}
\* The irreversible effects published: they can never be taken back.
Sent == {a \in Publishers : att[a].irrev}
\* The irreversible effects published that a full restart on versions V and
\* control values W would not publish: off the route, or of another output.
Unsendable(V, W) ==
    {a \in Sent : ~ActiveIn(att[a].node, W) \/ att[a].basis # OracleIn(att[a].node, V, W)}
\* Accepting a revision of path p of this kind (new value v) now would leave a
\* published irreversible effect that only a revoke could correct.
TooLate(kind, p, v) ==
    Unsendable([ver EXCEPT ![p] = @ + 1],
               IF kind = "control" THEN [val EXCEPT ![p] = v] ELSE val) # {}
\* An irreversible effect may go out: its attempt committed, is still its
\* node's current output, and no stale work reaches its node (fenced).
Fenced(a) ==
    /\ att[a].st = "committed" /\ cur[att[a].node] = a
    /\ att[a].node \notin Downstream(Conflicts)
\* The nodes whose effect more than one attempt published (and did not revoke).
Repeated == {att[a].node : a \in {a \in Publishers : \E b \in Publishers \ {a} : att[b].node = att[a].node}}

-----------------------------------------------------------------------------
(* The runtime's moves.  Each is one event of a trace.                     *)

\* The move, as an event of the observed history.  `hist` is an auxiliary
\* variable: every move appends its event and none reads it, so the moves allow
\* the same with or without it.  The history predicates below read it; a
\* configuration that checks none of them replaces Observe with Unobserved (trace
\* validation does), so that the history stays empty and costs nothing.
Observe(e) == hist' = Append(hist, e)
Unobserved(e) == UNCHANGED hist

InitWith(w) ==
    /\ wf = w
    /\ ver = [p \in w.paths |-> 0]
    /\ val = w.init
    /\ att = [a \in {} |-> None]
    /\ cur = [n \in w.nodes |-> 0]
    /\ plan = None
    /\ due = FALSE
    /\ up = TRUE
    /\ final = None
    /\ hist = <<>>

Init == \E w \in Workflows : InitWith(w)

\* A revision of path p of the given kind, made against version `base`, with
\* new value v (kind "control"; other kinds change content, not routes).  It
\* is accepted only if `base` is the current version; it is refused when
\* `base` is not current, or when accepting it would need a published
\* irreversible effect revoked (TooLate: the runtime says it is too late).
Revise(kind, p, base, v, accepted) ==
    /\ p \in Paths
    /\ IF accepted
       THEN /\ base = ver[p]
            /\ ver' = [ver EXCEPT ![p] = @ + 1]
            /\ val' = IF kind = "control" THEN [val EXCEPT ![p] = v] ELSE val
            /\ due' = TRUE
            /\ final' = None
            /\ UNCHANGED <<wf, att, cur, plan, up>>
       ELSE /\ base # ver[p] \/ TooLate(kind, p, v)
            /\ UNCHANGED state
    /\ Observe([ev |-> "revise", kind |-> kind, path |-> p, base |-> base, value |-> v,
                accepted |-> accepted])

\* The runtime plans in `mode` ("selective", "suffix" or "full"): it cancels
\* the attempts `cancel` in flight and invalidates the committed outputs of
\* the nodes `invalidate`; everything else is kept (continued or reused).
Plan(mode, cancel, invalidate) ==
    /\ up
    /\ cancel \subseteq InFlight
    /\ invalidate \subseteq Committed
    /\ LET kept == ({att[a].node : a \in InFlight \ cancel} \cup (Committed \ invalidate))
                   \cap ActiveNodes
       IN plan' = [mode |-> mode, kept |-> kept, affected |-> Affected,
                   suffix |-> Suffix, unknown |-> Unknown]
    /\ att' = [a \in DOMAIN att |->
                 IF a \in cancel
                 THEN [att[a] EXCEPT !.st = "cancelled",
                                     !.fx = IF @ = "staged" THEN "dropped" ELSE @]
                 ELSE IF a \in Unsendable(ver, val)
                 THEN [att[a] EXCEPT !.fence = "owed"]
                 ELSE att[a]]
    /\ cur' = [n \in Nodes |-> IF n \in invalidate THEN 0 ELSE cur[n]]
    /\ due' = FALSE
    /\ UNCHANGED <<wf, ver, val, up, final>>
    /\ Observe([ev |-> "plan", mode |-> mode, cancel |-> cancel, invalidate |-> invalidate])

\* Attempt a of node n starts, consuming the outputs of attempts `parents`.
Start(a, n, parents) ==
    /\ up
    /\ a \notin DOMAIN att
    /\ n \in Nodes
    /\ parents \subseteq DOMAIN att
    /\ att' = att @@ (a :> [node |-> n, parents |-> parents, vers |-> ver, reads |-> {},
                            unknown |-> FALSE, st |-> "run", fx |-> "none",
                            irrev |-> FALSE, fence |-> "none",
                            commit |-> "none", basis |-> {},
                            chose |-> {},
                            lin |-> UNION {att[q].lin \cup {att[q].node} : q \in parents},
                            early |-> \E q \in parents : att[q].st = "run"])
    /\ UNCHANGED <<wf, ver, val, cur, plan, due, up, final>>
    /\ Observe([ev |-> "start", attempt |-> a, node |-> n, parents |-> parents])

\* Running attempt a reads version v of path p (a stale runtime may read an old one).
Read(a, p, v) ==
    /\ a \in DOMAIN att /\ att[a].st = "run"
    /\ p \in Paths /\ v \in 0..ver[p]
    /\ att' = [att EXCEPT ![a].reads = @ \cup {<<p, v>>}]
    /\ UNCHANGED <<wf, ver, val, cur, plan, due, up, final>>
    /\ Observe([ev |-> "read", attempt |-> a, unknown |-> FALSE, path |-> p, version |-> v])

\* Running attempt a read something tracking did not see.
ReadUnknown(a) ==
    /\ a \in DOMAIN att /\ att[a].st = "run"
    /\ att' = [att EXCEPT ![a].unknown = TRUE]
    /\ UNCHANGED <<wf, ver, val, cur, plan, due, up, final>>
    /\ Observe([ev |-> "read", attempt |-> a, unknown |-> TRUE])

\* Running attempt a stages its effect (it is not visible outside yet),
\* declaring whether it can be revoked once published.
Stage(a, revocable) ==
    /\ a \in DOMAIN att /\ att[a].st = "run" /\ att[a].fx = "none"
    /\ att' = [att EXCEPT ![a].fx = "staged", ![a].irrev = ~revocable]
    /\ UNCHANGED <<wf, ver, val, cur, plan, due, up, final>>
    /\ Observe([ev |-> "stage", attempt |-> a, revocable |-> revocable])

\* Running attempt a of a router chooses the branches `to` (the nodes its
\* conditional edge goes to).  The choice is part of its output: it routes
\* only once the attempt commits, and only while it is its node's current
\* output; what it read is recorded as any attempt's reads are, so a revision
\* of it makes the choice stale like any output.  A fresh choice is taken as
\* the one a full restart would make (the router is a function of its reads).
RouteTo(a, to) ==
    /\ a \in DOMAIN att /\ att[a].st = "run"
    /\ to \subseteq Nodes
    /\ att' = [att EXCEPT ![a].chose = to]
    /\ UNCHANGED <<wf, ver, val, cur, plan, due, up, final>>
    /\ Observe([ev |-> "route", attempt |-> a, to |-> to])

\* Attempt a finishes; its output is held, not yet committed.
End(a) ==
    /\ a \in DOMAIN att /\ att[a].st = "run"
    /\ att' = [att EXCEPT ![a].st = "done", ![a].basis = BasisOf(a)]
    /\ UNCHANGED <<wf, ver, val, cur, plan, due, up, final>>
    /\ Observe([ev |-> "end", attempt |-> a])

\* Finished attempt a commits: its output becomes its node's current output.
Commit(a) ==
    /\ a \in DOMAIN att /\ att[a].st = "done"
    /\ att' = [att EXCEPT ![a].st = "committed",
                          ![a].commit = IF Stale(a) THEN "stale" ELSE "fresh"]
    /\ cur' = [cur EXCEPT ![att[a].node] = a]
    /\ UNCHANGED <<wf, ver, val, plan, due, up, final>>
    /\ Observe([ev |-> "commit", attempt |-> a])

\* Finished attempt a is rejected (revalidation failed): its output and effect are dropped.
Reject(a) ==
    /\ a \in DOMAIN att /\ att[a].st = "done"
    /\ att' = [att EXCEPT ![a].st = "rejected",
                          ![a].fx = IF @ = "staged" THEN "dropped" ELSE @]
    /\ UNCHANGED <<wf, ver, val, cur, plan, due, up, final>>
    /\ Observe([ev |-> "reject", attempt |-> a])

\* The effect attempt a staged is published.
Publish(a) ==
    /\ a \in DOMAIN att /\ att[a].fx = "staged"
    /\ att' = [att EXCEPT ![a].fx = "published",
                          ![a].fence = IF att[a].irrev /\ ~Fenced(a) THEN "unfenced" ELSE @]
    /\ UNCHANGED <<wf, ver, val, cur, plan, due, up, final>>
    /\ Observe([ev |-> "publish", attempt |-> a])

\* The effect attempt a published is revoked (compensated).
Revoke(a) ==
    /\ a \in DOMAIN att /\ att[a].fx = "published"
    /\ att' = [att EXCEPT ![a].fx = "revoked"]
    /\ UNCHANGED <<wf, ver, val, cur, plan, due, up, final>>
    /\ Observe([ev |-> "revoke", attempt |-> a])

\* The runtime returns the outputs of the nodes `result` as the final result
\* (an output no current commit accounts for is `uncommitted`).
Finish(result) ==
    /\ up
    /\ result \subseteq Nodes
    /\ final' = [result |-> result, active |-> ActiveNodes,
                 uncommitted |-> result \ Committed,
                 outputs |-> {<<n, att[cur[n]].basis>> : n \in result \cap Committed},
                 lin |-> UNION {att[cur[n]].lin : n \in result \cap Committed},
                 effects |-> Published, repeated |-> Repeated,
                 oracle |-> {<<n, Oracle(n)>> : n \in ActiveNodes},
                 oracleEffects |-> {<<n, Oracle(n)>> : n \in ActiveNodes \cap wf.effects}]
    /\ UNCHANGED <<wf, ver, val, att, cur, plan, due, up>>
    /\ Observe([ev |-> "finish", result |-> result])

\* The runtime process is killed: attempts in flight, staged effects and what it
\* knew about pending recovery are lost.
Crash ==
    /\ up
    /\ up' = FALSE
    /\ att' = [a \in DOMAIN att |->
                 IF a \in InFlight
                 THEN [att[a] EXCEPT !.st = "lost",
                                     !.fx = IF @ = "staged" THEN "dropped" ELSE @]
                 ELSE att[a]]
    /\ due' = FALSE
    /\ UNCHANGED <<wf, ver, val, cur, plan, final>>
    /\ Observe([ev |-> "crash"])

\* A new process takes over from the durable commits; it must replan before
\* building on them, since revisions may have arrived while it was down.
Restart ==
    /\ ~up
    /\ up' = TRUE
    /\ due' = TRUE
    /\ UNCHANGED <<wf, ver, val, att, cur, plan, final>>
    /\ Observe([ev |-> "restart"])

-----------------------------------------------------------------------------
(* The reference runtimes: the correct choice at every move.              *)

NewId == Cardinality(DOMAIN att) + 1

InFlightOf(n) == {a \in InFlight : att[a].node = n}

\* What a plan must recompute besides affected work: the nodes off the route.
OffRoute == Nodes \ ActiveNodes

\* The nodes a plan of `mode` cancels and invalidates.
PlanSet(mode) ==
    CASE mode = "full" -> Nodes
      [] mode = "suffix" -> Suffix \cup OffRoute
      [] mode = "selective" -> Affected \cup OffRoute

PlanAs(mode) ==
    Plan(mode, {a \in InFlight : att[a].node \in PlanSet(mode)}, Committed \cap PlanSet(mode))

\* full restarts everything; suffix cuts the order at the earliest conflict;
\* validity recomputes the affected set, or the suffix when provenance is unknown.
RefPlan ==
    /\ due
    /\ CASE wf.policy = "full" -> PlanAs("full")
         [] wf.policy = "suffix" -> PlanAs("suffix")
         [] wf.policy = "validity" -> PlanAs(IF Unknown THEN "suffix" ELSE "selective")

Ready(n) ==
    /\ n \in ActiveNodes
    /\ cur[n] = 0
    /\ InFlightOf(n) = {}
    /\ \A m \in ActivePreds(n) : cur[m] # 0
    /\ \A m \in wf.pred[n] : Decided(m)

\* Ready nodes start in the workflow's order, up to Width at a time.
RefStart ==
    /\ ~due
    /\ Cardinality(InFlight) < Width
    /\ \E n \in Nodes :
         /\ Ready(n)
         /\ \A m \in Nodes : Ready(m) => Pos(n) <= Pos(m)
         /\ Start(NewId, n, {cur[m] : m \in ActivePreds(n)})

Unread(a) == wf.reads[att[a].node] \ {r[1] : r \in att[a].reads}

\* A tracked read records the current version; an untracked node's reads are unseen.
RefRead(a) ==
    IF att[a].node \in wf.untracked
    THEN ~att[a].unknown /\ ReadUnknown(a)
    ELSE \E p \in Unread(a) : Read(a, p, ver[p])

\* What router n may choose: one branch, or, if it fans out, its first k slots
\* in the workflow's order (k >= 1 tasks sent; the k-th task runs as slot k).
Choices(n) ==
    IF n \in Fanouts
    THEN {{t \in Targets(n) : Pos(t) <= Pos(s)} : s \in Targets(n)}
    ELSE {{t} : t \in Targets(n)}

\* A router chooses, once (any choice: which depends on content the contract
\* does not model).
RefRoute(a) ==
    /\ att[a].chose = {}
    /\ \E to \in Choices(att[a].node) : RouteTo(a, to)

RefEnd(a) ==
    /\ IF att[a].node \in wf.untracked THEN att[a].unknown ELSE Unread(a) = {}
    /\ Targets(att[a].node) # {} => att[a].chose # {}
    /\ att[a].node \in wf.effects => att[a].fx = "staged"
    /\ End(a)

\* Commit revalidates: a stale result is rejected.
RefCommit(a) == IF Stale(a) THEN Reject(a) ELSE Commit(a)

Publishable(a) ==
    /\ att[a].fx = "staged" /\ att[a].st = "committed"
    /\ cur[att[a].node] = a /\ Active(att[a].node)
    \* an irreversible effect is held until revalidated, and sent once: a
    \* re-run of its node (full or suffix) computes the same effect, already out
    /\ att[a].irrev => ~due /\ Fenced(a) /\ ~\E b \in Sent : att[b].node = att[a].node

Revocable(a) ==
    /\ att[a].fx = "published"
    /\ cur[att[a].node] # a \/ ~Active(att[a].node)
    /\ ~att[a].irrev

RefFinish ==
    /\ ~due /\ final = None /\ InFlight = {}
    /\ ActiveNodes \subseteq Committed
    /\ \A a \in DOMAIN att : ~Publishable(a) /\ ~Revocable(a)
    /\ Finish(ActiveNodes)

Run ==
    \/ up /\ RefPlan
    \/ up /\ RefStart
    \/ \E a \in DOMAIN att :
         \/ att[a].st = "run" /\ (RefRead(a) \/ RefRoute(a) \/ RefEnd(a))
         \/ att[a].st = "run" /\ att[a].node \in wf.effects
            /\ Stage(a, att[a].node \notin wf.irreversible)
         \/ att[a].st = "done" /\ up /\ RefCommit(a)
         \/ Publishable(a) /\ up /\ Publish(a)
         \/ Revocable(a) /\ up /\ Revoke(a)
    \/ up /\ RefFinish
    \/ Restart

ControlPaths == {r.path : r \in wf.routes}

\* A revision the user may send at any time: new content for a data path, or
\* another route for a control path, against the current version; the runtime
\* refuses it when it comes too late for an irreversible effect already out.
Revision(p) ==
    IF p \in ControlPaths
    THEN \E v \in {r.value : r \in {r \in wf.routes : r.path = p}} \ {val[p]} :
            Revise("control", p, ver[p], v, ~TooLate("control", p, v))
    ELSE Revise("replace", p, ver[p], val[p], ~TooLate("replace", p, val[p]))

Next == Run \/ Crash \/ \E p \in Paths : Revision(p)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* The contract.  Each property is a state invariant; Properties names    *)
(* them for resume-check, which checks every one on every trace.           *)

\* NoStaleCommit: an attempt commits only if nothing it read or routed on was
\* revised since it started and its parents, ended before it started, are still the current committed attempts.
NoStaleCommit == \A a \in DOMAIN att : att[a].commit # "stale"

\* PlanSoundness: a plan keeps (continues or reuses) only work outside the
\* affected set: the nodes whose work is stale, closed under dependents.
PlanSoundness == plan # None => plan.kept \cap plan.affected = {}

\* FailClosed: unknown provenance widens a plan to a suffix or full restart,
\* never the reverse; a suffix plan keeps nothing from the earliest conflict on,
\* a full restart keeps nothing.
FailClosed ==
    plan # None =>
        /\ plan.unknown => plan.mode # "selective"
        /\ plan.mode = "suffix" => plan.kept \cap plan.suffix = {}
        /\ plan.mode = "full" => plan.kept = {}

\* EffectsFollowCommit: an effect is published only by an attempt that committed.
EffectsFollowCommit ==
    \A a \in DOMAIN att : att[a].fx \in {"published", "revoked"} => att[a].commit # "none"

\* RouteValidity: no output of a node off the current route reaches the final
\* result, directly or through the nodes that consumed it.
RouteValidity ==
    final # None =>
        /\ final.result \subseteq final.active
        /\ final.lin \cap (Nodes \ final.active) = {}

\* OracleEquivalence: at finish, the outputs of the route's nodes and the
\* published effects equal those of a full restart on the latest inputs (which
\* publishes each effect once).
OracleEquivalence ==
    final # None =>
        /\ final.uncommitted \cap final.active = {}
        /\ {o \in final.outputs : o[1] \in final.active} = final.oracle
        /\ final.effects = final.oracleEffects
        /\ final.repeated = {}

\* IrreversibleEffects: an irreversible effect goes out only from committed,
\* current work no stale work reaches, is never revoked, and no plan is made
\* that would need it revoked (such a revision must be refused as too late).
IrreversibleEffects ==
    \A a \in DOMAIN att :
        att[a].irrev => att[a].fence \notin {"unfenced", "owed"} /\ att[a].fx # "revoked"

Properties ==
    [NoStaleCommit |-> NoStaleCommit, PlanSoundness |-> PlanSoundness,
     FailClosed |-> FailClosed, EffectsFollowCommit |-> EffectsFollowCommit,
     RouteValidity |-> RouteValidity, OracleEquivalence |-> OracleEquivalence,
     IrreversibleEffects |-> IrreversibleEffects]

-----------------------------------------------------------------------------
(* The contract over the observed history: each property stated again,     *)
(* declaratively, over `hist` alone -- what was observed, never the moves' *)
(* bookkeeping (ver, val, att, cur, plan, final).  Versions, routes, the   *)
(* attempts in flight, the current commits, what an output depends on and  *)
(* what a full restart would compute are all recomputed from the events.   *)
(* `resume-check spec` checks on bounded models that the two forms agree:  *)
(* the reference runtime satisfies both (no false alarm: MCDagRevision),   *)
(* and every behaviour after whose every move the properties above still   *)
(* hold satisfies every history predicate (soundness: MCDagRevisionSound). *)
(* A mutant that deletes the bookkeeping a property is computed from must  *)
(* be caught by that property's history predicate.                         *)

\* Each property over the history is "every event i is right given the events
\* before it" (XRightAt(i) reads only hist[1..i]).  Every event was the last
\* one once, and the history only grows, so checking the last event in every
\* state checks every event of every behaviour.
Last(RightAt(_)) == hist = <<>> \/ RightAt(Len(hist))
Before(i) == 1..(i - 1)
Between(i, j) == (i + 1)..(j - 1)
Is(i, kind) == hist[i].ev = kind
MaxOf(S) == CHOOSE x \in S : \A y \in S : y <= x
\* Event i is a move of kind `kind` by attempt a.
By(i, kind, a) == hist[i].ev = kind /\ hist[i].attempt = a

\* Event i is an accepted revision of path p.
Accepted(i, p) == Is(i, "revise") /\ hist[i].accepted /\ hist[i].path = p
\* Path p was revised after event j and before event i.
RevisedBetween(p, j, i) == \E k \in Between(j, i) : Accepted(k, p)
\* The version of path p when event i happens: how many revisions of it were accepted.
VerAt(p, i) == Cardinality({j \in Before(i) : Accepted(j, p)})
\* The value of path p when event i happens: the last accepted control revision's, else the initial one.
ValAt(p, i) ==
    LET cs == {j \in Before(i) : Accepted(j, p) /\ hist[j].kind = "control"}
    IN  IF cs = {} THEN wf.init[p] ELSE hist[MaxOf(cs)].value
\* The branches attempt a chose before event i (its last route event).
ChoseAt(a, i) ==
    LET rs == {j \in Before(i) : By(j, "route", a)}
    IN  IF rs = {} THEN {} ELSE hist[MaxOf(rs)].to

\* Attempt a's start event, its node and the attempts it consumed.
StartOf(a) == CHOOSE j \in DOMAIN hist : By(j, "start", a)
NodeOf(a) == hist[StartOf(a)].node
ParentsOf(a) == hist[StartOf(a)].parents
StartedAt(i) == {hist[j].attempt : j \in {j \in Before(i) : Is(j, "start")}}

\* Event j ends attempt a's flight (if it was in flight): it commits or is
\* rejected, a plan cancels it, or the process crashes.
Lands(j, a) ==
    \/ By(j, "commit", a) \/ By(j, "reject", a)
    \/ Is(j, "plan") /\ a \in hist[j].cancel
    \/ Is(j, "crash")
\* The attempts in flight when event i happens: started, not landed since.
InFlightAt(i) == {a \in StartedAt(i) : \A j \in Between(StartOf(a), i) : ~Lands(j, a)}
\* Attempt a consumed the output of a parent that was still running when it
\* started: in flight, not ended.
EarlyOf(a) ==
    \E q \in ParentsOf(a) :
        q \in InFlightAt(StartOf(a)) /\ ~\E j \in Between(StartOf(q), StartOf(a)) : By(j, "end", q)

\* Node n's current output when event i happens: the last commit of an attempt
\* of n, unless a plan invalidated n since (0: none).
CurAt(n, i) ==
    LET cs == {j \in Before(i) : Is(j, "commit") /\ NodeOf(hist[j].attempt) = n}
    IN  IF cs = {} THEN 0
        ELSE IF \E k \in Between(MaxOf(cs), i) : Is(k, "plan") /\ n \in hist[k].invalidate
             THEN 0 ELSE hist[MaxOf(cs)].attempt
CommittedAt(i) == {n \in Nodes : CurAt(n, i) # 0}
\* The nodes on the route when event i happens: every control path guarding
\* the node holds its value and every router guarding it chose its branch in
\* its current output.
RouteAt(i) ==
    {n \in Nodes :
        /\ \A r \in wf.routes : r.node = n => ValAt(r.path, i) = r.value
        /\ \A b \in Branches : b.node = n =>
              CurAt(b.by, i) # 0 /\ b.to \in ChoseAt(CurAt(b.by, i), i)}
\* The work a plan at event i decides about: attempts in flight and current outputs.
WorkAt(i) == InFlightAt(i) \cup {CurAt(n, i) : n \in CommittedAt(i)}

\* The versions attempt a's tracked reads before event i returned.
ReadsAt(a, i) == {<<hist[j].path, hist[j].version>> :
                    j \in {j \in Before(i) : By(j, "read", a) /\ ~hist[j].unknown}}
\* A read of attempt a before event i escaped tracking.
UnseenAt(a, i) == \E j \in Before(i) : By(j, "read", a) /\ hist[j].unknown

\* Attempt a's output, judged at event i, is not what the workflow computes
\* then: a version it read is no longer current, a read escaped tracking and
\* some path was revised since it started, a path its node routes on was
\* revised since it started, its node is off the route, the attempts it
\* consumed are not the current outputs of its node's inputs on the route, or
\* one of them had not ended when it started.
StaleAt(a, i) ==
    LET n == NodeOf(a) IN
    \/ \E r \in ReadsAt(a, i) : VerAt(r[1], i) # r[2]
    \/ UnseenAt(a, i) /\ \E p \in Paths : RevisedBetween(p, StartOf(a), i)
    \/ \E p \in RoutePaths(n) : RevisedBetween(p, StartOf(a), i)
    \/ n \notin RouteAt(i)
    \/ ParentsOf(a) # {CurAt(m, i) : m \in wf.pred[n] \cap RouteAt(i)}
    \/ EarlyOf(a)

\* The nodes whose work is stale at event i, and the affected set: those on
\* the route, with their dependents.
ConflictsAt(i) == {NodeOf(a) : a \in {a \in WorkAt(i) : StaleAt(a, i)}}
AffectedAt(i) == Downstream(ConflictsAt(i)) \cap RouteAt(i)
\* The route's nodes from the earliest conflict on (in the workflow's order).
SuffixAt(i) ==
    IF ConflictsAt(i) = {} THEN {}
    ELSE {n \in RouteAt(i) : Pos(n) >= Min({Pos(m) : m \in ConflictsAt(i)})}
\* Some work's provenance is unknown and something was revised since it started.
BlindAt(i) == \E a \in WorkAt(i) : UnseenAt(a, i) /\ \E p \in Paths : RevisedBetween(p, StartOf(a), i)

\* What plan event i keeps: the nodes of the attempts in flight it does not
\* cancel and of the current outputs it does not invalidate, on the route.
KeptAt(i) ==
    ({NodeOf(a) : a \in InFlightAt(i) \ hist[i].cancel}
     \cup (CommittedAt(i) \ hist[i].invalidate)) \cap RouteAt(i)

\* What attempt a's output depends on, as of event i (nothing before it
\* ended): the versions it read, the versions at its start of the paths its
\* node routes on (and, if a read escaped tracking, of those it reads), and
\* the outputs of the attempts it consumed that had ended before it did.
RECURSIVE OutputAt(_, _)
OutputAt(a, i) ==
    IF ~\E j \in Before(i) : By(j, "end", a) THEN {}
    ELSE LET e == CHOOSE j \in Before(i) : By(j, "end", a)
             s == StartOf(a)
             n == NodeOf(a)
             unseen == IF UnseenAt(a, e) THEN wf.reads[n] ELSE {}
         IN  ReadsAt(a, e)
             \cup {<<p, VerAt(p, s)>> : p \in RoutePaths(n) \cup unseen}
             \cup UNION {OutputAt(q, e) : q \in ParentsOf(a)}

\* What a full restart on the inputs of event i computes at node n.
RECURSIVE RestartAt(_, _)
RestartAt(n, i) ==
    {<<p, VerAt(p, i)>> : p \in wf.reads[n] \cup RoutePaths(n)}
    \cup UNION {RestartAt(m, i) : m \in wf.pred[n] \cap RouteAt(i)}

\* The nodes whose outputs reached attempt a through the attempts it consumed.
RECURSIVE Lineage(_)
Lineage(a) == UNION {Lineage(q) \cup {NodeOf(q)} : q \in ParentsOf(a)}

\* The attempts whose effects are published when event i happens.
PublishedAt(i) ==
    {hist[j].attempt : j \in {j \in Before(i) :
        Is(j, "publish") /\ ~\E k \in Between(j, i) : By(k, "revoke", hist[j].attempt)}}

\* HistNoStaleCommit: an attempt commits only if its output is not stale then.
CommitRightAt(i) == Is(i, "commit") => ~StaleAt(hist[i].attempt, i)
HistNoStaleCommit == Last(CommitRightAt)

\* HistPlanSoundness: a plan keeps no node of the affected set.
PlanSoundRightAt(i) == Is(i, "plan") => KeptAt(i) \cap AffectedAt(i) = {}
HistPlanSoundness == Last(PlanSoundRightAt)

\* HistFailClosed: a plan is selective only if no work's provenance is blind,
\* a suffix plan keeps nothing from the earliest conflict on, a full one nothing.
FailClosedRightAt(i) ==
    Is(i, "plan") =>
        /\ BlindAt(i) => hist[i].mode # "selective"
        /\ hist[i].mode = "suffix" => KeptAt(i) \cap SuffixAt(i) = {}
        /\ hist[i].mode = "full" => KeptAt(i) = {}
HistFailClosed == Last(FailClosedRightAt)

\* HistEffectsFollowCommit: an effect is published (or revoked) only after its attempt committed.
EffectRightAt(i) ==
    hist[i].ev \in {"publish", "revoke"} =>
        \E j \in Before(i) : By(j, "commit", hist[i].attempt)
HistEffectsFollowCommit == Last(EffectRightAt)

\* HistRouteValidity: a finish returns only nodes on the route, and no output
\* it returns consumed, directly or not, the output of a node off the route.
RouteRightAt(i) ==
    Is(i, "finish") =>
        /\ hist[i].result \subseteq RouteAt(i)
        /\ \A n \in hist[i].result :
              CurAt(n, i) # 0 => Lineage(CurAt(n, i)) \subseteq RouteAt(i)
HistRouteValidity == Last(RouteRightAt)

\* HistOracleEquivalence: a finish returns, for every node on the route, a
\* current output that depends on exactly what a full restart's would, and the
\* effects published are those of a full restart: one for each node on the
\* route that has an effect, by an attempt whose output is the restart's.
OracleRightAt(i) ==
    Is(i, "finish") =>
        /\ \A n \in RouteAt(i) :
              /\ n \in hist[i].result
              /\ CurAt(n, i) # 0
              /\ OutputAt(CurAt(n, i), i) = RestartAt(n, i)
        /\ {NodeOf(a) : a \in PublishedAt(i)} = RouteAt(i) \cap wf.effects
        /\ \A a \in PublishedAt(i) :
              /\ OutputAt(a, i) = RestartAt(NodeOf(a), i)
              /\ \A b \in PublishedAt(i) : NodeOf(b) = NodeOf(a) => b = a
HistOracleEquivalence == Last(OracleRightAt)

\* Attempt a staged, before event i, an effect it declared irreversible.
IrrevOf(a, i) == \E j \in Before(i) : By(j, "stage", a) /\ ~hist[j].revocable

\* HistIrreversibleEffects: an irreversible effect is published only while its
\* attempt is its node's current output and no stale work reaches that node,
\* it is never revoked, and a plan is made only while every irreversible
\* effect out is on the route and of the output a full restart computes.
IrreversibleRightAt(i) ==
    /\ Is(i, "publish") /\ IrrevOf(hist[i].attempt, i) =>
          /\ CurAt(NodeOf(hist[i].attempt), i) = hist[i].attempt
          /\ NodeOf(hist[i].attempt) \notin Downstream(ConflictsAt(i))
    /\ Is(i, "revoke") => ~IrrevOf(hist[i].attempt, i)
    /\ Is(i, "plan") =>
          \A a \in PublishedAt(i) :
              IrrevOf(a, i) => NodeOf(a) \in RouteAt(i) /\ OutputAt(a, i) = RestartAt(NodeOf(a), i)
HistIrreversibleEffects == Last(IrreversibleRightAt)

HistoryProperties ==
    [NoStaleCommit |-> HistNoStaleCommit, PlanSoundness |-> HistPlanSoundness,
     FailClosed |-> HistFailClosed, EffectsFollowCommit |-> HistEffectsFollowCommit,
     RouteValidity |-> HistRouteValidity, OracleEquivalence |-> HistOracleEquivalence,
     IrreversibleEffects |-> HistIrreversibleEffects]
=============================================================================
