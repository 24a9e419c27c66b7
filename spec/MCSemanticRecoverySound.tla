---------------------- MODULE MCSemanticRecoverySound ----------------------
(***************************************************************************)
(* Soundness of SemanticRecovery's properties against their history        *)
(* predicates.                                                             *)
(*                                                                         *)
(* AnyMove is the trace-validation relation on a small universe: every     *)
(* move, with every parameter a recorded trace could give it (which        *)
(* instance, which value, which live output a consume reads, which tool    *)
(* and intent, replayed or not, whom the controller blames, which          *)
(* checkpoint it restores to and which instances it rolls back with it).   *)
(* A move after which some property fails is never taken (SoundNext), so   *)
(* every state TLC checks ends a behaviour the properties call conforming  *)
(* so far, and each history predicate must hold there.  A history          *)
(* predicate violated here is a hole in the properties -- a move that      *)
(* admits a wrong choice nothing catches -- or a history form stated too   *)
(* strongly.                                                               *)
(***************************************************************************)
EXTENDS SemanticRecovery

CONSTANTS
    Instances,   \* the instance ids
    Vals,        \* the values an output may carry
    Intents,     \* the intents an effect may name
    Points,      \* the names a restore point may have
    Policies,    \* the tools' policies: one tool of each, named after it
    MaxEvents    \* the longest history explored

Tools == [p \in Policies |-> p]

SoundInit ==
    InitWith([insts |-> Instances, tools |-> Tools,
              body |-> [i \in Instances |-> <<>>], vals |-> Vals])

AnyMove ==
    \/ \E i \in Insts :
          \/ Begin(i) \/ Exit(i) \/ Fail(i)
          \/ \E with \in {{}} \cup {{j} : j \in Insts \ {i}} : Localize(i, with)
          \/ \E v \in Vals : Emit(i, v) \/ Commit(i, v)
          \/ \E o \in outs : Consume(i, o)
          \/ \E t \in DOMAIN Tools, k \in Intents, r \in BOOLEAN : Effect(i, t, k, r)
          \/ \E p \in Points : Checkpoint(i, p)
          \/ \E b \in Boundaries, p \in {0} \cup Points,
                also \in {{}} \cup {{j} : j \in Insts \ {i}} : Restore(i, b, p, also)
    \/ Block
    \/ Rerun

\* Every property of the contract holds.
Conforms == \A name \in DOMAIN Properties : Properties[name]

\* The moves after which every property still holds: every state TLC reaches
\* ends a behaviour the properties call conforming so far.
SoundNext == AnyMove /\ Conforms'

\* Bounds the model.
SoundBounds == Len(hist) <= MaxEvents

SoundSymmetry == Permutations(Instances)

\* States told apart by everything but the history (and the last decision and the tally, which no move
\* reads): each state is reached once, by a shortest behaviour, whose history the
\* predicates judge.  Without it every behaviour is a state of its own and only
\* the shortest histories could be explored.
SoundView == <<st, pos, ck, pt, outs, dep, fx, issued, ctl>>
=============================================================================
