---------------------------- MODULE SimDagRevision ----------------------------
(***************************************************************************)
(* DagRevision's reference runtime walked at random: every workflow shape  *)
(* of MCDagRevision, every reference policy, two attempts at once, and     *)
(* more revisions and crashes than any bounded model affords.  Not a       *)
(* model-checking instance (no MC prefix): `resume-check spec` walks it    *)
(* (manifest.json's "walks"), and no walk may break a property or its      *)
(* history form.                                                           *)
(***************************************************************************)
EXTENDS MCDagRevision
=============================================================================
