---------------------------- MODULE MCDagRevision ----------------------------
(***************************************************************************)
(* Model-checking instance of DagRevision: the workflows of the REVISE     *)
(* scenario, a bounded number of revisions (at every point of the run) and *)
(* crashes, each reference policy.                                         *)
(***************************************************************************)
EXTENDS DagRevision

CONSTANTS Shapes, Policies, MaxRevisions, MaxCrashes

VARIABLES
    revs,     \* revisions so far
    crashes   \* crashes so far

\* A -> {B, C} -> D plus an independent E (the REVISE scenario); y is read only
\* by C, x by A; D has an effect.  Order A, B, C, E, D.
Dag == [nodes |-> {"A", "B", "C", "D", "E"},
        order |-> <<"A", "B", "C", "E", "D">>,
        pred |-> ("A" :> {} @@ "B" :> {"A"} @@ "C" :> {"A"} @@ "D" :> {"B", "C"} @@ "E" :> {}),
        paths |-> {"x", "y", "z"},
        reads |-> ("A" :> {"x"} @@ "B" :> {} @@ "C" :> {"y"} @@ "D" :> {} @@ "E" :> {"z"}),
        routes |-> {},
        effects |-> {"D"},
        revisable |-> {"x", "y"}]

\* R -> {B1 | B2} -> J: the control path c selects B1 (0) or B2 (1); J has an effect.
Route == [nodes |-> {"R", "B1", "B2", "J"},
          order |-> <<"R", "B1", "B2", "J">>,
          pred |-> ("R" :> {} @@ "B1" :> {"R"} @@ "B2" :> {"R"} @@ "J" :> {"B1", "B2"}),
          paths |-> {"q", "c"},
          reads |-> ("R" :> {"q"} @@ "B1" :> {} @@ "B2" :> {} @@ "J" :> {}),
          routes |-> {[node |-> "B1", path |-> "c", value |-> 0],
                      [node |-> "B2", path |-> "c", value |-> 1]},
          effects |-> {"J"},
          revisable |-> {"c"}]

\* C -> {B1 | B2} -> J where C is a router: its conditional edge chooses B1 or
\* B2 from what it read (q, revisable), so a revision of q can flip the route
\* when C runs again; J has an effect.
Decide == [nodes |-> {"C", "B1", "B2", "J"},
           order |-> <<"C", "B1", "B2", "J">>,
           pred |-> ("C" :> {} @@ "B1" :> {"C"} @@ "B2" :> {"C"} @@ "J" :> {"B1", "B2"}),
           paths |-> {"q"},
           reads |-> ("C" :> {"q"} @@ "B1" :> {} @@ "B2" :> {} @@ "J" :> {}),
           routes |-> {},
           branches |-> {[node |-> "B1", by |-> "C", to |-> "B1"],
                         [node |-> "B2", by |-> "C", to |-> "B2"]},
           effects |-> {"J"},
           revisable |-> {"q"}]

\* A fan-out with Send in bounded slots: P (reading q) sends one task per item it
\* lists, one or two, to slots S1 and S2 (its branches); J joins whichever ran.
\* A revision of q re-runs P, whose new list may grow, shrink or keep its length.
Send == [nodes |-> {"P", "S1", "S2", "J"},
         order |-> <<"P", "S1", "S2", "J">>,
         pred |-> ("P" :> {} @@ "S1" :> {"P"} @@ "S2" :> {"P"} @@ "J" :> {"S1", "S2"}),
         paths |-> {"q"},
         reads |-> ("P" :> {"q"} @@ "S1" :> {} @@ "S2" :> {} @@ "J" :> {}),
         routes |-> {},
         branches |-> {[node |-> "S1", by |-> "P", to |-> "S1"],
                       [node |-> "S2", by |-> "P", to |-> "S2"]},
         fanout |-> {"P"},
         effects |-> {"J"},
         revisable |-> {"q"}]

\* The REVISE scenario with D's effect irreversible (an e-mail sent) and z (read
\* only by E, which D does not consume) revisable too: a revision of x or y
\* after D's e-mail went out comes too late, one of z does not, yet a full or
\* suffix plan re-runs D, whose e-mail must not go out twice.
DagSent == [Dag EXCEPT !.revisable = {"x", "y", "z"}]

\* shape name -> [workflow, nodes whose reads escape tracking, irreversible effects]
ShapeNamed ==
    ("dag" :> [w |-> Dag, untracked |-> {}, irreversible |-> {}]
     @@ "dag-untracked" :> [w |-> Dag, untracked |-> {"E"}, irreversible |-> {}]
     @@ "dag-irreversible" :> [w |-> DagSent, untracked |-> {}, irreversible |-> {"D"}]
     @@ "route" :> [w |-> Route, untracked |-> {}, irreversible |-> {}]
     @@ "decide" :> [w |-> Decide, untracked |-> {}, irreversible |-> {}]
     @@ "send" :> [w |-> Send, untracked |-> {}, irreversible |-> {}])

MCWorkflows ==
    {LET w == ShapeNamed[s].w IN
       [nodes |-> w.nodes, order |-> w.order, pred |-> w.pred, paths |-> w.paths,
        reads |-> w.reads, routes |-> w.routes, effects |-> w.effects,
        branches |-> IF "branches" \in DOMAIN w THEN w.branches ELSE {},
        fanout |-> IF "fanout" \in DOMAIN w THEN w.fanout ELSE {},
        init |-> [p \in w.paths |-> 0], revisable |-> w.revisable,
        untracked |-> ShapeNamed[s].untracked, policy |-> pol,
        irreversible |-> ShapeNamed[s].irreversible]
     : s \in Shapes, pol \in Policies}

MCInit == Init /\ revs = 0 /\ crashes = 0

MCNext ==
    \/ Run /\ UNCHANGED <<revs, crashes>>
    \/ revs < MaxRevisions /\ (\E p \in wf.revisable : Revision(p))
       /\ revs' = revs + 1 /\ UNCHANGED crashes
    \/ crashes < MaxCrashes /\ Crash /\ crashes' = crashes + 1 /\ UNCHANGED revs

MCSpec == MCInit /\ [][MCNext]_<<vars, revs, crashes>>

\* States told apart by everything but the history: each state of the reference is
\* explored once, and the history predicates are checked on the history of the
\* first behaviour that reached it (a shortest one).  Without it every behaviour
\* is a state of its own.
MCView == <<state, revs, crashes>>

TypeOK ==
    /\ \A a \in DOMAIN att :
         /\ att[a].st \in {"run", "done", "committed", "rejected", "cancelled", "lost"}
         /\ att[a].fx \in {"none", "staged", "published", "revoked", "dropped"}
    /\ \A n \in Nodes : cur[n] \in {0} \cup DOMAIN att
    /\ \A a \in DOMAIN att : att[a].fence \in {"none", "unfenced", "owed"}
=============================================================================
