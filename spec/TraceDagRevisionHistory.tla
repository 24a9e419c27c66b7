------------------------ MODULE TraceDagRevisionHistory ---------------------
(***************************************************************************)
(* The history oracle of DagRevision: a trace judged by the history        *)
(* forms of the properties alone.  The events go through the same actions  *)
(* as in TraceDagRevision, but a state is cut only when a history          *)
(* predicate (HistoryProperties) fails on it, never for the operational    *)
(* properties.  `resume-check agree` asks both of many mutated recorded    *)
(* traces and reports every trace on which they disagree.                  *)
(***************************************************************************)
EXTENDS TraceDagRevision

\* The properties whose history form the state fails.
HistoryBroken == {name \in DOMAIN HistoryProperties : ~HistoryProperties[name]}

OracleNext ==
    /\ ~Matched
    /\ Apply(Ev)
    /\ Advance(HistoryBroken', Summary')
=============================================================================
