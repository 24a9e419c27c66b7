------------------------ MODULE TraceResumeCoreHistory ------------------------
(***************************************************************************)
(* The history oracle: a trace judged by the history forms of the          *)
(* properties alone.  The events go through the same moves as in           *)
(* TraceResumeCore -- a move that does not admit an event does not match   *)
(* it here either -- but the moves' named checks are ignored: a state is   *)
(* cut only when a history predicate (HistoryProperties) fails on it.      *)
(*                                                                         *)
(* So a trace conforms here iff some behaviour consumes all of it with     *)
(* every history predicate kept, and conforms in TraceResumeCore iff some  *)
(* behaviour consumes all of it with no named check firing.  Soundness     *)
(* (MCResumeCoreSound) says the second implies the first on small models;  *)
(* `resume-check agree` asks both of many mutated real traces and reports  *)
(* every trace on which they disagree.                                     *)
(***************************************************************************)
EXTENDS TraceResumeCore, ResumeCoreHistory

VARIABLE judged   \* the history up to the cursor has been judged

OracleView == <<t, l, keeps, judged>>

\* The properties whose history form the state fails.
HistoryBroken == {name \in DOMAIN HistoryProperties : ~HistoryProperties[name]}

OracleInit == TraceInit /\ judged = TRUE

(* Two steps per event: the move consumes it, then the history is judged.  *)
(* The history predicates are read in a state, not in a successor: TLC     *)
(* keeps an operator's evaluated arguments only outside a prime, and the   *)
(* predicates recurse through the history.                                 *)
Take == judged /\ Consume /\ t' = t /\ l' = l + 1 /\ judged' = FALSE

Judge ==
    /\ ~judged
    /\ Judged(l - 1, HistoryBroken, Summary, Matched)
    /\ judged' = TRUE
    /\ UNCHANGED <<vars, keeps, past, allowed, settled, hosts, t, l>>

OracleNext == Take \/ Judge

\* A behaviour's progress counts only events whose history was judged.
OracleProgress == TraceProgress(t, IF judged THEN l - 1 ELSE l - 2)
=============================================================================
