---------------------------- MODULE MCSandboxCR -----------------------------
(***************************************************************************)
(* Model-checking instance of SandboxCR: one small agent workload whose    *)
(* turns have every kind of net effect, a bounded number of crashes and a  *)
(* bounded number of rewinds (rollbacks and forks) to any published point.  *)
(***************************************************************************)
EXTENDS SandboxCR

CONSTANTS MaxCrashes, MaxRewinds

VARIABLES
    crashes,   \* crashes so far
    rewinds    \* rewinds so far

\* Turn 1 installs a package (two commands, files), turn 2 starts a server
\* (processes), turn 3 only reads (no effect), turn 4 restarts the server with
\* a new configuration (files and processes), turn 5 appends to a file and
\* creates and deletes a temp file (files).  Digests are numbers.
Agent == [cmds |-> <<2, 1, 1, 1, 2>>,
          state |-> (0 :> [files |-> 1, procs |-> 1]
                     @@ 1 :> [files |-> 2, procs |-> 1]
                     @@ 2 :> [files |-> 2, procs |-> 2]
                     @@ 3 :> [files |-> 2, procs |-> 2]
                     @@ 4 :> [files |-> 3, procs |-> 3]
                     @@ 5 :> [files |-> 4, procs |-> 3])]

MCWorkloads == {Agent}

MCInit == Init /\ crashes = 0 /\ rewinds = 0

MCNext ==
    \/ Run /\ UNCHANGED <<crashes, rewinds>>
    \/ crashes < MaxCrashes /\ Fault /\ crashes' = crashes + 1 /\ UNCHANGED rewinds
    \/ rewinds < MaxRewinds /\ Rollout /\ rewinds' = rewinds + 1 /\ UNCHANGED crashes

MCSpec == MCInit /\ [][MCNext]_<<vars, crashes, rewinds>>

\* States told apart by everything but the history: each state is explored
\* once, and the history forms are checked on the history of the first
\* behaviour that reached it (a shortest one).  Without it every behaviour is a
\* state of its own and the rewinds' configuration would not end.
MCView == <<wl, at, imgs, last, decided, head, points, resp, stale, agent, runs, outs, insp,
            missing, diverged, rest, rew, crashes, rewinds>>

TypeOK ==
    /\ agent.up \in BOOLEAN /\ agent.got \in BOOLEAN
    /\ \A c \in DOMAIN imgs : c[1] \in Kinds /\ imgs[c].done \in BOOLEAN
    /\ head # None => head.turn \in 0..Len(wl.cmds)
=============================================================================
