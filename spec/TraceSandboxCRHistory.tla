----------------------- MODULE TraceSandboxCRHistory -----------------------
(***************************************************************************)
(* The history oracle of SandboxCR: a trace judged by the history forms of *)
(* the properties alone.  The events go through the same moves as in       *)
(* TraceSandboxCR -- a move that does not admit an event does not match it *)
(* here either -- but a state is cut only when a history form              *)
(* (HistoryProperties) fails on it, never for the operational properties.  *)
(* Soundness (MCSandboxCRSound) says on small models that a trace the      *)
(* checker accepts is accepted here too; `resume-check agree` asks both of *)
(* many mutated real traces and reports every trace they disagree on.      *)
(***************************************************************************)
EXTENDS TraceSandboxCR

\* The properties whose history form the state fails.
HistoryBroken == {name \in DOMAIN HistoryProperties : ~HistoryProperties[name]}

OracleNext ==
    /\ ~Matched
    /\ Apply(Ev)
    /\ Advance(HistoryBroken', Summary')
=============================================================================
