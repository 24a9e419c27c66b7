----------------------------- MODULE SimSandboxCR -----------------------------
(***************************************************************************)
(* SandboxCR's reference walked at random: the agent workload under the    *)
(* effect-aware policy, with more crashes and rewinds (rollouts) than any  *)
(* bounded model affords.  Not a model-checking instance (no MC prefix):   *)
(* `resume-check spec` walks it (manifest.json's "walks"), and no walk may *)
(* break a property or its history form.                                   *)
(***************************************************************************)
EXTENDS MCSandboxCR
=============================================================================
