--------------------------- MODULE TraceValidation ---------------------------
(***************************************************************************)
(* The harness every Trace<Area> module extends: validates a whole batch   *)
(* of recorded traces in one TLC run (the technique of Cirstea, Kuppe,     *)
(* Loillier, Merz and Rigaud, 2024).                                       *)
(*                                                                         *)
(* Init chooses the trace t; each step consumes event l of it through the  *)
(* area's action for that event.  A successor state that breaks a property *)
(* of the contract is printed and cut off, so a trace is accepted iff some *)
(* behaviour consumes all its events with every property kept throughout.  *)
(* TLC's registers keep the longest matched prefix of each trace.          *)
(*                                                                         *)
(* Lines printed for resume-check (one TLA+ value per line):               *)
(*   <<"rc-progress", t, n>>        a behaviour matched n events of t      *)
(*   <<"rc-violation", t, i, S>>    event i of t matched an action but the *)
(*                                  state it led to breaks properties S    *)
(*   <<"rc-accepted", t, summary>>  all of t matched; what it showed       *)
(***************************************************************************)
EXTENDS Naturals, Sequences, TLC

CONSTANTS
    Traces,   \* <<[header |-> ..., events |-> <<...>>], ...>>: identifiers as numbers
    IdCounts  \* [namespace |-> the most identifiers of it any trace uses], e.g. procs

VARIABLES t, l    \* the trace being validated and the cursor into its events

Events == Traces[t].events
Ev == Events[l]
Matched == l > Len(Events)

ASSUME \A i \in DOMAIN Traces : TLCSet(i, 0)

\* Keeps, per trace, the longest prefix some behaviour has matched.
Progress ==
    l - 1 > TLCGet(t) => (TLCSet(t, l - 1) /\ PrintT(<<"rc-progress", t, l - 1>>))

\* Consumes the current event.  `broken` is the set of properties the next
\* state breaks; a state that breaks any is reported and not explored.
Advance(broken, summary) ==
    /\ t' = t
    /\ l' = l + 1
    /\ IF broken = {} THEN TRUE
       ELSE PrintT(<<"rc-violation", t, l, broken>>) /\ FALSE
    /\ l' > Len(Events) => PrintT(<<"rc-accepted", t, summary>>)

\* Violated exactly when a behaviour has matched the whole trace, so that
\* TLC prints it (hidden variables included): the witness of conformance.
NotMatched == ~Matched
=============================================================================
