------------------------- MODULE MCResumeCoreDelete -------------------------
(***************************************************************************)
(* The reference runtime with deletes: besides its faults, the store may   *)
(* be asked to forget the thread while no process runs it (LangGraph's     *)
(* `delete_thread`), and the thread then starts again from nothing.  Kept  *)
(* apart from MCResumeCore so that its configurations' state counts stay   *)
(* as they are.  A delete needs a stored checkpoint since the last one, so *)
(* MaxCheckpoints bounds them, beside the MaxFaults faults.  Every check and*)
(* every history form must hold: the fresh run's load of nothing, its      *)
(* fresh checkpoints and its second fire of the same effect are no alarm.  *)
(***************************************************************************)
EXTENDS MCResumeCore

\* The store forgets the reference's chain, once something of it is stored.
RefDelete(p) == Fenced /\ Latest(Chain) # 0 /\ Delete(p, Chain)

MCDeleteNext ==
    \/ MCNext
    \/ (\E p \in Procs : RefDelete(p)) /\ UNCHANGED faults

MCDeleteSpec == MCInit /\ [][MCDeleteNext]_<<vars, faults>>
=============================================================================
