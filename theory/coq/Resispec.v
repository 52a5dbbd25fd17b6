(** * resispec's threshold schedule (i.i.d. candidates): exact for any thresholds
    [T_1 >= ... >= T_k >= 0].

    With [m_j = min(p, T_j q)] ([T_{k+1} = 0]), [g_j = sum m_j], [z = sum (p - T_1 q)+] and the reach
    probability [R_j = z + g_j], step [j] accepts candidate [x ~ q] with
    [a_j(x) = (m_j(x) - m_{j+1}(x)) / (R_j q(x))]; after [k] rejections it emits [norm((p - T_1 q)+)].
    The state is the step index.  Python: [theory/resispec/resispec.py] ([ResiSpec]), verifier [resispec].
    Indices here are 0-based: [th 0] is [T_1]. *)

From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import ring.
From ResiSpec Require Import Sequential Sps.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory Num.Theory Order.POrderTheory.
Local Open Scope ring_scope.

Section Resispec.
Variable R : realFieldType.
Variable T : finType.
Variables p q : T -> R.
Hypotheses (dp : dist p) (dq : dist q).
Variable k : nat.
Variable thr : nat -> R.
Hypothesis thr_ge0 : forall j, 0 <= thr j.
Hypothesis thr_mono : forall j, (j.+1 < k)%N -> thr j.+1 <= thr j.

(** The thresholds, with [T_{k+1} = 0] (0-based: [th k = 0]). *)
Definition th j := if (j < k)%N then thr j else 0.

(** [m_j(y) = min(p(y), T_j q(y)) = p(y) - (p(y) - T_j q(y))+]. *)
Definition mass j y := p y - pos (p y - th j * q y).
Definition g j := \sum_y mass j y.
(** What the residual keeps: [(p - T_1 q)+], of total [z = 1 - g_1]. *)
Definition left y := pos (p y - th 0 * q y).
Definition z := \sum_y left y.
Definition reach j := z + g j.

Definition rs_accept (j : nat) x :=
  if q x == 0 then 1 else (mass j x - mass j.+1 x) / (reach j * q x).

Definition resispec := Rule (fun _ : nat => q) rs_accept (fun j _ => j.+1) (fun _ => norm left).

(** The law a run emits from step [j] on, given that it reaches step [j]. *)
Definition target j y := (mass j y + left y) / reach j.

Lemma th_ge0 j : 0 <= th j.
Proof. by rewrite /th; case: ifP. Qed.

Lemma th_mono j : th j.+1 <= th j.
Proof.
rewrite /th; case: ltnP => [jk|]; first by rewrite (ltn_trans _ jk) // thr_mono.
by case: ifP => // _ _; exact: thr_ge0.
Qed.

Lemma mass_ge0 j y : 0 <= mass j y.
Proof.
rewrite /mass; case: (lerP (p y - th j * q y) 0) => h.
  by rewrite pos_0 // subr0; exact: dp.1.
by rewrite pos_id ?(ltW h) // opprB addrC subrK mulr_ge0 ?th_ge0 ?dq.1.
Qed.

Lemma mass_mono j y : mass j.+1 y <= mass j y.
Proof.
rewrite /mass ler_add2l ler_opp2; apply: pos_le; rewrite ler_add2l ler_opp2.
by rewrite ler_wpmul2r ?dq.1 ?th_mono.
Qed.

Lemma mass_k y : mass k y = 0.
Proof. by rewrite /mass /th ltnn mul0r subr0 pos_id ?subrr //; exact: dp.1. Qed.

Lemma mass_q0 j y : q y = 0 -> mass j y = 0.
Proof. by move=> q0; rewrite /mass q0 mulr0 subr0 pos_id ?subrr //; exact: dp.1. Qed.

Lemma left_ge0 y : 0 <= left y.
Proof. exact: pos_ge0. Qed.

Lemma reach0 : reach 0 = 1.
Proof.
rewrite /reach /z /g -big_split -dp.2 /=; apply: eq_bigr => y _.
by rewrite /left /mass addrC subrK.
Qed.

Lemma target0 y : target 0 y = p y.
Proof. by rewrite /target reach0 divr1 /left /mass subrK. Qed.

Lemma reach_ge0 j : 0 <= reach j.
Proof. by rewrite addr_ge0 // sumr_ge0 // => y _; [exact: left_ge0 | exact: mass_ge0]. Qed.

(** An unreachable step is followed by an unreachable step. *)
Lemma reach_succ0 j : reach j = 0 -> reach j.+1 = 0.
Proof.
move=> /eqP; rewrite paddr_eq0 ?sumr_ge0 // => [/andP [/eqP z0 /eqP g0]||]; last 2 first.
- by move=> y _; exact: left_ge0.
- by move=> y _; exact: mass_ge0.
apply/eqP; rewrite /reach z0 add0r eq_le sumr_ge0 ?andbT => [|y _]; last exact: mass_ge0.
by rewrite -g0 /g ler_sum // => y _; exact: mass_mono.
Qed.

Lemma rs_accepted j x : q x * rs_accept j x = (mass j x - mass j.+1 x) / reach j.
Proof.
rewrite /rs_accept; have [q0|qn0] := eqVneq (q x) 0.
  by rewrite (mass_q0 _ q0) (mass_q0 _ q0) q0 subrr !mul0r.
have [->|Rn0] := eqVneq (reach j) 0; first by rewrite mul0r !invr0 !mulr0.
by field; rewrite Rn0 qn0.
Qed.

(** The kernel identity of step [j]: the rejections average back to what step [j] must emit. *)
Lemma rs_kernel j y :
  \sum_x q x * (1 - rs_accept j x) * target j.+1 y = target j y - q y * rs_accept j y.
Proof.
rewrite -mulr_suml rs_accepted /target.
have -> : (mass j y + left y) / reach j - (mass j y - mass j.+1 y) / reach j
          = (mass j.+1 y + left y) / reach j by ring.
have [R0|Rn0] := eqVneq (reach j) 0.
  by rewrite R0 (reach_succ0 R0) !invr0 !mulr0.
have sum_rej : \sum_x q x * (1 - rs_accept j x) = reach j.+1 / reach j.
  rewrite (eq_bigr (fun x => q x - (mass j x - mass j.+1 x) / reach j)); last first.
    by move=> x _; rewrite mulrBr mulr1 rs_accepted.
  rewrite sumrB dq.2 -mulr_suml sumrB -/(g j) -/(g j.+1) /reach.
  by move: Rn0; rewrite /reach => Rn0; field.
rewrite sum_rej; have [R1|R1n0] := eqVneq (reach j.+1) 0.
  have X0 : mass j.+1 y + left y = 0.
    move: R1; rewrite /reach /z /g -big_split /= => /psumr_eq0P h.
    by rewrite addrC; apply: h => // x _; rewrite addr_ge0 ?left_ge0 ?mass_ge0.
  by rewrite R1 X0 !mul0r.
by field; rewrite Rn0 R1n0.
Qed.

(** Feasible thresholds ([T_j - T_{j+1} <= R_j]) make every acceptance a probability. *)
Lemma rs_accept_range j x : th j - th j.+1 <= reach j -> 0 <= rs_accept j x <= 1.
Proof.
move=> feas; rewrite /rs_accept; case: eqP => [_|/eqP qn0]; first by rewrite ler01 lexx.
have qp : 0 < q x by rewrite lt_def qn0 dq.1.
have num0 : 0 <= mass j x - mass j.+1 x by rewrite subr_ge0 mass_mono.
have [R0|Rn0] := eqVneq (reach j) 0; first by rewrite R0 mul0r invr0 mulr0 lexx ler01.
have Rp : 0 < reach j by rewrite lt_def Rn0 reach_ge0.
rewrite divr_ge0 ?mulr_ge0 ?(ltW Rp) ?(ltW qp) //= ler_pdivr_mulr ?mulr_gt0 // mul1r.
apply: (le_trans _ (ler_wpmul2r (ltW qp) feas)).
have -> : mass j x - mass j.+1 x = pos (p x - th j.+1 * q x) - pos (p x - th j * q x).
  by rewrite /mass; ring.
have -> : (th j - th j.+1) * q x = (p x - th j.+1 * q x) - (p x - th j * q x) by ring.
apply: pos_lip.
by rewrite ler_add2l ler_opp2 ler_wpmul2r ?dq.1 ?th_mono.
Qed.

(** ** resispec is exact, for any non-increasing non-negative thresholds. *)
Theorem resispec_exact y : law resispec k 0%N y = p y.
Proof.
rewrite -target0; apply: (@sequential_exact _ _ _ resispec target (fun m j => j + m = k)%N).
- split=> [j|]; first by rewrite addn0 => -> y'; rewrite /= /norm /target mass_k add0r /reach /g
    (eq_bigr _ (fun y _ => mass_k y)) big1_eq addr0.
  split=> [m j _ y'|m j x <- _]; first exact: (rs_kernel j y').
  by rewrite /= addSnnS.
- by rewrite add0n.
Qed.

End Resispec.
