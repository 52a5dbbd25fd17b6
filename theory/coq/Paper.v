(** * The published ResiSpec rule (as reconstructed in docs/verifiers.md) is not exact: a computed
    counterexample.

    Step: sps acceptance [min(1, r(x)/q(x))]; after rejecting [x0] the rule sets the budget
    [Z = q(x0) - r(x0)], reserves [res(x0) = 0], [res(i) = min(Z q(i), r(i))], pours the deficit
    [Z - sum res] onto [i <> x0] in descending [q(i)] up to [r(i) - res(i)], and continues from
    [norm(res)].  Python: [theory/controls/resispec_paper.py] ([reconstruction], [PaperRule], [CE]). *)

From mathcomp Require Import all_ssreflect all_algebra.
From ResiSpec Require Import Sequential Sps.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory Num.Theory Order.POrderTheory.
Local Open Scope ring_scope.

Section Paper.
Variable R : realFieldType.
Variable T : finType.

(** The reserve, given the tokens [ts] in a fixed order ([enum T]; a parameter so that an instance
    over an explicit list computes). *)
Definition reserve_on (ts : seq T) (r q : T -> R) (x0 : T) : T -> R :=
  let Z := q x0 - r x0 in
  let base i := if i == x0 then 0 else Num.min (Z * q i) (r i) in
  let order := sort (fun i j => q j <= q i) [seq i <- ts | i != x0] in
  let pour acc i :=
    let: (res, d) := acc in
    let add := Num.min d (r i - res i) in
    ((fun j => if j == i then res j + add else res j), d - add) in
  (foldl pour (base, Z - foldr (fun i acc => base i + acc) 0 ts) order).1.

Definition reserve := reserve_on (enum T).

Variable q : T -> R.

Definition paper := Rule (fun _ : T -> R => q) (fun r => sps_accept r q)
  (fun r x0 => norm (reserve r q x0)) (fun r => r).

End Paper.

(** The counterexample of [theory/controls/resispec_paper.py]: [p = (2/5, 3/10, 3/10)], [q = (3/5, 3/10, 1/10)],
    one candidate.  Only token 0 can be rejected; the rule's residual after that is
    [norm(0, 9/50, 1/50)], and token 1 is emitted with probability [12/25], not [3/10]. *)
Definition ce_p (i : 'I_3) : rat := nth 0 [:: 2%:R / 5%:R; 3%:R / 10%:R; 3%:R / 10%:R] i.
Definition ce_q (i : 'I_3) : rat := nth 0 [:: 3%:R / 5%:R; 3%:R / 10%:R; 1%:R / 10%:R] i.

Lemma ce_dist : dist ce_p /\ dist ce_q.
Proof.
by split; split=> [[[|[|[|]]] ?]|]; rewrite ?big_ord_recl ?big_ord0 //; apply/eqP; vm_compute.
Qed.

(** Tokens 1 and 2, built so that they compute ([inord] goes through an opaque proof). *)
Definition tok1 : 'I_3 := @Ordinal 3 1 isT.
Definition tok2 : 'I_3 := @Ordinal 3 2 isT.

Lemma enum3 : enum 'I_3 = [:: ord0; tok1; tok2].
Proof. by apply: (inj_map val_inj); rewrite val_enum_ord. Qed.

Lemma ce_reserve : reserve ce_p ce_q ord0 =1 (fun i => nth 0 [:: 0; 9%:R / 50%:R; 1%:R / 50%:R] i).
Proof. by rewrite /reserve enum3; case=> [[|[|[|]]] ?] //; apply/eqP; vm_compute. Qed.

Theorem paper_counterexample :
  law (paper ce_q) 1 ce_p tok1 = 12%:R / 25%:R /\ ce_p tok1 = 3%:R / 10%:R.
Proof.
split; last by apply/eqP; vm_compute.
by rewrite /= /norm !big_ord_recl !big_ord0 /reserve enum3; apply/eqP; vm_compute.
Qed.

Theorem paper_not_exact : exists y, law (paper ce_q) 1 ce_p y != ce_p y.
Proof. by exists tok1; case: paper_counterexample => -> ->. Qed.
