(** * rrs_wor (candidates drawn without replacement): exact for every [k <= |supp q|].

    State: (current target [r_i], current draft [q_i]); step [i] is sps of [x_i ~ q_i] against [r_i];
    on rejection [r_{i+1} = norm((r_i - q_i)+)] and [q_{i+1}] is [q_i] with [x_i] removed and
    renormalised.  Python: [theory/rejection/rrs_wor.py] ([SPSChainWOR]), verifier [rrs_wor]. *)

From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import ring.
From ResiSpec Require Import Sequential Sps.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory Num.Theory Order.POrderTheory.
Local Open Scope ring_scope.

Section Mask.
Variable R : realFieldType.
Variable T : finType.

(** [d] with token [x] removed and renormalised: the law of the next draw without replacement. *)
Definition mask (d : T -> R) (x : T) : T -> R := fun y => if y == x then 0 else d y / (1 - d x).

Definition supp (d : T -> R) := [pred y | 0 < d y].

(** With two drafted tokens or more, no token carries all the draft mass. *)
Lemma draft_lt1 d x : dist d -> (2 <= #|supp d|)%N -> d x < 1.
Proof.
move=> [d0 d1] two; case: (lerP (d x) 0) => [/le_lt_trans -> //|dx]; first exact: ltr01.
have card := cardD1 x (supp d); rewrite inE dx /= add1n in card.
have /card_gt0P [y hy] : (0 < #|[predD1 supp d & x]|)%N by move: two; rewrite card ltnS.
move: hy; rewrite !inE => /andP [yx dy].
rewrite -subr_gt0 -d1 [X in X - _](bigD1 x) //= addrAC subrr add0r (bigD1 y) //=.
by rewrite ltr_paddr // sumr_ge0.
Qed.

Lemma mask_ge0 d x y : dist d -> d x < 1 -> 0 <= mask d x y.
Proof. by move=> dd lt1; rewrite /mask; case: eqP => // _; rewrite divr_ge0 ?dd.1 // subr_ge0 ltW. Qed.

Lemma mask_sum d x : dist d -> d x < 1 -> \sum_y mask d x y = 1.
Proof.
move=> [_ d1] lt1; have n0 : 1 - d x != 0 by rewrite subr_eq0 eq_sym lt_eqF.
have rest : \sum_(z | z != x) d z = 1 - d x.
  by rewrite -d1 [in RHS](bigD1 x) //= addrAC subrr add0r.
rewrite (bigD1 x) //= /mask eqxx add0r -[RHS](divff n0) -rest mulr_suml.
by apply: eq_bigr => z /negbTE ->.
Qed.

Lemma mask_dist d x :
  dist d -> 0 < d x -> (2 <= #|supp d|)%N ->
  dist (mask d x) /\ #|supp (mask d x)| = #|supp d|.-1.
Proof.
move=> dd dx two; have lt1 := draft_lt1 x dd two.
have card := cardD1 x (supp d); rewrite inE dx /= add1n in card.
split; first by split=> [y|]; [exact: mask_ge0 | exact: mask_sum].
rewrite card /=; apply: eq_card => z; rewrite !inE /mask.
by case: eqP => //= _; rewrite ?ltxx // pmulr_lgt0 // invr_gt0 subr_gt0.
Qed.

End Mask.

Section RrsWor.
Variable R : realFieldType.
Variable T : finType.
Variables p q : T -> R.
Hypotheses (dp : dist p) (dq : dist q).

Definition wor_state := ((T -> R) * (T -> R))%type.

Definition rrs_wor := Rule (fun s : wor_state => s.2) (fun s => sps_accept s.1 s.2)
  (fun s x => (sps_next s.1 s.2, mask s.2 x)) (fun s => s.1).

(** Reachable with [m] candidates to come: the target is a distribution and, while candidates are
    still to be drawn, so is the draft, with at least [m] tokens in its support. *)
Definition wor_inv (m : nat) (s : wor_state) :=
  dist s.1 /\ ((0 < m)%N -> dist s.2 /\ (m <= #|supp s.2|)%N).

Theorem rrs_wor_exact k : (k <= #|supp q|)%N -> forall y, law rrs_wor k (p, q) y = p y.
Proof.
move=> hk; apply: (@sequential_exact _ _ _ rrs_wor (fun s => s.1) wor_inv); last first.
  by split=> // [] [].
split=> //; split=> [m [r d] [dr /(_ isT) [dd _]] y|m [r d] x [dr /(_ isT) [dd hm]] nz].
  exact: (sps_kernel dr dd y).
split; first exact: (sps_next_dist dr dd nz).
move=> m0; move: nz; rewrite /rejected /= (sps_rejected dr dd) => nz.
have dx : 0 < d x.
  have : 0 < pos (d x - r x) by rewrite lt_def nz pos_ge0.
  by move/pos_gt0; rewrite subr_gt0; apply: le_lt_trans; exact: dr.1.
have [dm cm] := mask_dist dd dx (leq_ltn_trans m0 hm).
by split=> //; rewrite cm -ltnS prednK // (leq_ltn_trans _ hm).
Qed.

End RrsWor.
