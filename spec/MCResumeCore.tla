---------------------------- MODULE MCResumeCore ----------------------------
(***************************************************************************)
(* Model-checking instance of ResumeCore: small workflows, a bounded       *)
(* number of faults (crashes and forks), checkpoint ids and resume values. *)
(***************************************************************************)
EXTENDS ResumeCore

CONSTANTS MaxFaults, MaxIds, MaxValues, Durabilities, Shapes, Guarantees

VARIABLE faults   \* crashes and forks so far

\* A -> {B, C}: B fires an effect and then asks for input, C asks for input.
Fan == [nodes |-> {1, 2, 3},
        pred  |-> (1 :> {} @@ 2 :> {1} @@ 3 :> {1}),
        body  |-> (1 :> <<>> @@ 2 :> <<1, 0>> @@ 3 :> <<0>>)]

\* A -> B -> C: B asks twice, then fires an effect.
Chain == [nodes |-> {1, 2, 3},
          pred  |-> (1 :> {} @@ 2 :> {1} @@ 3 :> {2}),
          body  |-> (1 :> <<1>> @@ 2 :> <<0, 0, 2>> @@ 3 :> <<>>)]

ShapeNamed == ("fan" :> Fan @@ "chain" :> Chain)

MCWorkflows ==
    {[nodes |-> ShapeNamed[s].nodes, pred |-> ShapeNamed[s].pred, body |-> ShapeNamed[s].body,
      durability |-> d, effects |-> g] : s \in Shapes, d \in Durabilities, g \in Guarantees}

MCInit == Init /\ faults = 0

MCNext ==
    \/ Run /\ UNCHANGED faults
    \/ faults < MaxFaults /\ Fault /\ faults' = faults + 1

MCSpec == MCInit /\ [][MCNext]_<<vars, faults>>

\* Bounds the model: few checkpoint ids and resume values.
MCBounds ==
    /\ Cardinality(IdsInUse) <= MaxIds
    /\ Cardinality(DOMAIN addr) <= MaxValues

MCSymmetry == Permutations(Procs)

TypeOK ==
    /\ \A p \in Procs : run[p].st \in {"down", "up", "ended"}
    /\ \A w \in pw : w.kind \in {"ok", "error", "interrupt", "resume"}
=============================================================================
