(** * Optimality with one candidate: no exact single-draft verifier accepts more than sps.

    Any sequential verifier with one candidate, started in a state [s] whose draft [q] is non-negative,
    whose acceptances lie in [0, 1] and whose final laws after a rejection are non-negative, and which
    emits [p] exactly, accepts token [y] with mass [q(y) a(y) <= min(p(y), q(y))]: at most [q(y)] because
    [a <= 1], at most [p(y)] because the rejection branch adds non-negative mass. Summing, its
    acceptance is at most [sum_y min(p, q)], which sps attains ([sps_acceptance_TV]). Python:
    [theory/rejection/sps.py] (Theorem [sps.exact]: acceptance [1 - TV]). *)

From mathcomp Require Import all_ssreflect all_algebra.
From ResiSpec Require Import Sequential Sps.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory Num.Theory Order.TotalTheory Order.POrderTheory.
Local Open Scope ring_scope.

Section SingleDraft.
Variable R : realFieldType.
Variable T : finType.
Variable S : Type.
Variable ru : rule R T S.
Variables (p : T -> R) (s : S).
Hypotheses (q0 : forall x, 0 <= draft ru s x)
           (a01 : forall x, 0 <= accept ru s x <= 1)
           (f0 : forall x y, 0 <= final ru (next ru s x) y)
           (ex : forall y, law ru 1 s y = p y).

Lemma accepted_le_draft y : draft ru s y * accept ru s y <= draft ru s y.
Proof. by rewrite ler_pimulr ?q0 //; case/andP: (a01 y). Qed.

Lemma accepted_le_target y : draft ru s y * accept ru s y <= p y.
Proof.
rewrite -(ex y) /= ler_addl; apply: sumr_ge0 => x _.
by rewrite !mulr_ge0 ?q0 ?f0 // subr_ge0; case/andP: (a01 x).
Qed.

(** ** No exact single-draft verifier accepts more than [sum_y min(p, q)]. *)
Theorem single_draft_optimal :
  \sum_y draft ru s y * accept ru s y <= \sum_y Num.min (p y) (draft ru s y).
Proof.
by apply: ler_sum => y _; rewrite le_minr accepted_le_target accepted_le_draft.
Qed.

End SingleDraft.

Section SpsOptimal.
Variable R : realFieldType.
Variable T : finType.
Variables p q : T -> R.
Hypotheses (dp : dist p) (dq : dist q).

(** sps attains the bound: its acceptance is [sum_y min(p, q)]. *)
Lemma sps_attains :
  \sum_y draft (rrs q) p y * accept (rrs q) p y = \sum_y Num.min (p y) (q y).
Proof.
apply: eq_bigr => y _; rewrite /= (sps_accepted dp dq).
case: (lerP (p y) (q y)) => h.
  by rewrite (pos_0 (R := R)) ?subr0 ?subr_le0 // min_l.
by rewrite pos_id ?subr_ge0 ?ltW // opprB addrC subrK.
Qed.

(** ** sps is optimal: any exact single-draft verifier drafting from [q] accepts at most what sps
    accepts. *)
Theorem sps_optimal (S : Type) (ru : rule R T S) (s : S) :
  (forall x, draft ru s x = q x) -> (forall x, 0 <= accept ru s x <= 1) ->
  (forall x y, 0 <= final ru (next ru s x) y) -> (forall y, law ru 1 s y = p y) ->
  \sum_y draft ru s y * accept ru s y <= \sum_y draft (rrs q) p y * accept (rrs q) p y.
Proof.
move=> dr a01 f0 ex; rewrite sps_attains.
have q0 x : 0 <= draft ru s x by rewrite dr dq.1.
apply: le_trans (single_draft_optimal q0 a01 f0 ex) _.
by apply: ler_sum => y _; rewrite dr.
Qed.

End SpsOptimal.
