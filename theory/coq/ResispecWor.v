(** * resispec_wor (residual shaping for candidates without replacement): exact for every [k] and
    every admissible step mass [0 <= A <= min(r, q')].

    State [(r, d, n)]: target [r], draft [d] over the undrawn tokens, [n] candidates left.  With
    [n >= 2] the rule plans as if two candidates were left: candidate [x ~ d] is accepted with
    [A(x)/d(x)]; on rejection the run continues from [(r_x, d_{-x}, n - 1)] with
    [r_x = Pi(x, .) a_2 + (1 - <Pi(x, .), a_2>) f / Z], where [s = d - A], [Pi(x, y) = d_{-x}(y)],
    [C(y) = sum_x s(x) Pi(x, y)], [a_2 = min(1, (r - A)/C)] (1 where [C = 0]), [f = r - A - a_2 C],
    [Z = sum f].  With [n = 1] it is the sps step of rrs_wor.  Python: [theory/resispec_wor/wor_shaping.py]
    ([ResiSpecWOR], any planner), verifier [resispec_wor]; the latest-first plan is one admissible
    [A] ([theory/resispec_wor/resispec_wor.py], [resispec_wor.k2_plan]). *)

From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import ring.
From ResiSpec Require Import Sequential Sps RrsWor.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory Num.Theory Order.POrderTheory.
Local Open Scope ring_scope.

Section Plan.
Variable R : realFieldType.
Variable T : finType.
Variables (r d A : T -> R).
Hypotheses (dr : dist r) (dd : dist d).
Hypothesis A_ge0 : forall x, 0 <= A x.
Hypothesis A_le_r : forall x, A x <= r x.
Hypothesis A_le_d : forall x, A x <= d x.
(** At least two drafted tokens: every [1 - d x] is positive. *)
Hypothesis d_lt1 : forall x, d x < 1.

Definition s x := d x - A x.
Definition C y := \sum_x s x * mask d x y.
Definition a2 y := if C y == 0 then 1 else Num.min 1 ((r y - A y) / C y).
Definition f y := r y - A y - a2 y * C y.
Definition Z := \sum_y f y.
Definition next_target x y :=
  mask d x y * a2 y + (1 - \sum_z mask d x z * a2 z) * (f y / Z).

Lemma s_ge0 x : 0 <= s x.
Proof. by rewrite subr_ge0. Qed.

Lemma mask_ge0 x y : 0 <= mask d x y.
Proof. exact: RrsWor.mask_ge0. Qed.

Lemma mask_sum x : \sum_y mask d x y = 1.
Proof. exact: RrsWor.mask_sum. Qed.

Lemma C_ge0 y : 0 <= C y.
Proof. by rewrite sumr_ge0 // => x _; rewrite mulr_ge0 ?s_ge0 ?mask_ge0. Qed.

Lemma a2_range y : 0 <= a2 y <= 1.
Proof.
rewrite /a2; case: eqP => [_|/eqP Cn0]; first by rewrite ler01 lexx.
have ra : 0 <= (r y - A y) / C y by rewrite divr_ge0 ?C_ge0 // subr_ge0.
by case: (lerP 1 ((r y - A y) / C y)) => h; rewrite ?ler01 ?lexx ?ra // ltW.
Qed.

Lemma f_ge0 y : 0 <= f y.
Proof.
rewrite /f /a2; case: eqP => [->|/eqP Cn0]; first by rewrite mulr0 subr0 subr_ge0.
have Cp : 0 < C y by rewrite lt_def Cn0 C_ge0.
case: (lerP 1 ((r y - A y) / C y)) => h.
  by rewrite mul1r subr_ge0 -(mul1r (C y)) -ler_pdivl_mulr.
by rewrite divfK // subrr.
Qed.

Lemma pi_a2_le1 x : \sum_z mask d x z * a2 z <= 1.
Proof.
rewrite -(mask_sum x) ler_sum // => z _.
by rewrite ler_pimulr ?mask_ge0 //; case/andP: (a2_range z).
Qed.

(** Exchanging the sums: the rejected mass [sum_x s(x) (1 - <Pi(x, .), a_2>)] is [Z]. *)
Lemma rejected_total : \sum_x s x * (1 - \sum_z mask d x z * a2 z) = Z.
Proof.
have -> : \sum_x s x * (1 - \sum_z mask d x z * a2 z)
          = \sum_x s x - \sum_z a2 z * C z.
  rewrite [LHS](eq_bigr (fun x => s x - \sum_z s x * (mask d x z * a2 z))); last first.
    by move=> x _; rewrite mulrBr mulr1 mulr_sumr.
  rewrite sumrB exchange_big /=; congr (_ - _); apply: eq_bigr => z _.
  by rewrite /C mulr_sumr; apply: eq_bigr => x _; ring.
by rewrite /Z /f /s !sumrB dd.2 dr.2.
Qed.

(** The kernel identity: the rejected branches average back to what the step must emit. *)
Lemma plan_kernel y : \sum_x s x * next_target x y = r y - A y.
Proof.
rewrite /next_target.
rewrite (eq_bigr (fun x => s x * mask d x y * a2 y
                        + s x * (1 - \sum_z mask d x z * a2 z) * (f y / Z))); last first.
  by move=> x _; ring.
rewrite big_split /= -!mulr_suml rejected_total -/(C y).
have [Z0|Zn0] := eqVneq Z 0.
  have fy0 : f y = 0 by apply: (psumr_eq0P _ Z0) => // z _; exact: f_ge0.
  by move: fy0; rewrite Z0 mul0r addr0 /f => /eqP; rewrite subr_eq0 => /eqP ->; ring.
by rewrite mulrCA divff // mulr1 /f; ring.
Qed.

(** Each target after a rejection that can happen is a distribution. *)
Lemma next_target_dist x : s x != 0 -> dist (next_target x).
Proof.
move=> sn0; have [Z0|Zn0] := eqVneq Z 0.
  have one : \sum_z mask d x z * a2 z = 1.
    have nonneg : forall z, true -> 0 <= s z * (1 - \sum_w mask d z w * a2 w).
      by move=> z _; rewrite mulr_ge0 ?s_ge0 // subr_ge0 pi_a2_le1.
    have hx : s x * (1 - \sum_w mask d x w * a2 w) = 0.
      by apply: (psumr_eq0P nonneg (etrans rejected_total Z0)).
    by move/eqP: hx; rewrite mulf_eq0 (negbTE sn0) subr_eq0 => /eqP <-.
  split=> [y|]; first by rewrite /next_target one subrr mul0r addr0 mulr_ge0 ?mask_ge0 //; case/andP: (a2_range y).
  rewrite /next_target one subrr -[RHS]one; apply: eq_bigr => y _; by rewrite mul0r addr0.
have Zp : 0 < Z by rewrite lt_def Zn0 sumr_ge0 // => y _; exact: f_ge0.
split=> [y|].
  have /andP [a0 _] := a2_range y.
  have fZ : 0 <= f y / Z by rewrite divr_ge0 ?f_ge0 // ltW.
  have w0 : 0 <= 1 - \sum_z mask d x z * a2 z by rewrite subr_ge0 pi_a2_le1.
  by apply: addr_ge0; apply: mulr_ge0; rewrite ?mask_ge0.
by rewrite /next_target big_split /= -mulr_sumr -mulr_suml divff // mulr1 addrC subrK.
Qed.

End Plan.

Section ResispecWor.
Variable R : realFieldType.
Variable T : finType.
Variables p q : T -> R.
Hypotheses (dp : dist p) (dq : dist q).
(** The planner: any step mass [A = plan r d], admissible at every state. *)
Variable plan : (T -> R) -> (T -> R) -> T -> R.
Hypothesis plan_ge0 : forall r d x, 0 <= plan r d x.
Hypothesis plan_le_r : forall r d x, plan r d x <= r x.
Hypothesis plan_le_d : forall r d x, plan r d x <= d x.

Definition rw_state := ((T -> R) * (T -> R) * nat)%type.

Definition rw_accept (st : rw_state) x :=
  let: (r, d, n) := st in
  if (n <= 1)%N then sps_accept r d x else if d x == 0 then 1 else plan r d x / d x.

Definition rw_next (st : rw_state) x : rw_state :=
  let: (r, d, n) := st in
  ((if (n <= 1)%N then sps_next r d else next_target r d (plan r d) x), mask d x, n.-1).

Definition resispec_wor :=
  Rule (fun st : rw_state => st.1.2) rw_accept rw_next (fun st => st.1.1).

Definition rw_inv (m : nat) (st : rw_state) :=
  st.2 = m /\ dist st.1.1 /\ ((0 < m)%N -> dist st.1.2 /\ (m <= #|supp st.1.2|)%N).

Lemma rw_rejected r d n x : (1 < n)%N ->
  rejected resispec_wor (r, d, n) x = s d (plan r d) x.
Proof.
move=> n1; rewrite /rejected /= leqNgt n1 /s; case: eqP => [d0|/eqP dn0].
  have A0 : plan r d x = 0 by apply/eqP; rewrite eq_le plan_ge0 andbT -d0 plan_le_d.
  by rewrite d0 A0 subrr mul0r.
by rewrite mulrBr mulr1 mulrC divfK.
Qed.

(** ** resispec_wor is exact for every [k <= |supp q|] and every admissible plan. *)
Theorem resispec_wor_exact k : (k <= #|supp q|)%N -> forall y, law resispec_wor k (p, q, k) y = p y.
Proof.
move=> hk; apply: (@sequential_exact _ _ _ resispec_wor (fun st => st.1.1) rw_inv); last first.
  by split=> //; split=> // _.
split; first by move=> [[r d] n] _ y'.
split=> [m [[r d] n] [/= -> [dr /(_ isT) [dd hm]]] y'|m [[r d] n] x [/= -> [dr /(_ isT) [dd hm]]] nz].
  case: m hm => [|m] hm; first exact: (sps_kernel dr dd y').
  have lt1 : forall z, d z < 1 by move=> z; apply: draft_lt1 => //; apply: leq_trans hm.
  rewrite /kernel (eq_bigr (fun x => s d (plan r d) x * next_target r d (plan r d) x y')); last first.
    by move=> x _; rewrite rw_rejected.
  rewrite plan_kernel //; congr (_ - _); rewrite /=; case: eqP => [d0|/eqP dn0].
    by rewrite d0 mul0r; apply/eqP; rewrite eq_le plan_ge0 andbT -d0 plan_le_d.
  by rewrite mulrCA divff // mulr1.
case: m hm nz => [|m] hm nz.
  by rewrite /rw_inv /=; split=> //; split; [exact: (sps_next_dist dr dd nz) | rewrite ltnn].
rewrite rw_rejected // in nz.
have dx : 0 < d x.
  have : 0 < d x - plan r d x by rewrite lt_def nz subr_ge0 plan_le_d.
  by rewrite subr_gt0; apply: le_lt_trans; exact: plan_ge0.
have lt1 : forall z, d z < 1 by move=> z; apply: draft_lt1 => //; apply: leq_trans hm.
have [dm cm] := mask_dist dd dx (leq_trans (isT : (2 <= m.+2)%N) hm).
rewrite /rw_inv /=; split=> //; split; first exact: next_target_dist.
by move=> _; split=> //; rewrite cm -ltnS prednK // (leq_ltn_trans _ hm).
Qed.

End ResispecWor.
