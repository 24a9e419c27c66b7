-------------------------- MODULE SimSemanticRecovery --------------------------
(***************************************************************************)
(* SemanticRecovery's reference walked at random: every workload shape, a  *)
(* model choosing either of two values, more failures (during re-runs and  *)
(* after restores) than any bounded model affords.  Not a model-checking   *)
(* instance (no MC prefix): `resume-check spec` walks it (manifest.json's  *)
(* "walks"), and no walk may break a property or its history form.         *)
(***************************************************************************)
EXTENDS MCSemanticRecovery
=============================================================================
