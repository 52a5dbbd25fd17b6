(** * sps and rrs (i.i.d. candidates): exact for every finite token type and every [k].

    Step: candidate [x ~ q] accepted with [min(1, r(x)/q(x))]; on rejection the target becomes
    [norm((r - q)+)]; after [k] rejections emit the target.  Python: [theory/rejection/sps.py] ([SPSChain]),
    verifier [resispec.verifiers] [sps] / [rrs]. *)

From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import ring.
From ResiSpec Require Import Sequential.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory Num.Theory Order.POrderTheory.
Local Open Scope ring_scope.

Section Pos.
Variable R : realFieldType.

(** The positive part [(v)+]. *)
Definition pos (v : R) : R := Num.max v 0.

Lemma pos_ge0 v : 0 <= pos v.
Proof. by rewrite /pos; case: (lerP v 0) => // /ltW. Qed.

Lemma pos_id v : 0 <= v -> pos v = v.
Proof. by rewrite /pos; case: (lerP v 0) => // h h0; apply/eqP; rewrite eq_le h h0. Qed.

Lemma pos_0 v : v <= 0 -> pos v = 0.
Proof. by rewrite /pos; case: (lerP v 0) => // /lt_le_trans h /h; rewrite ltxx. Qed.

Lemma pos_split v : pos v - pos (- v) = v.
Proof.
case: (lerP v 0) => h.
  by rewrite (pos_0 h) pos_id ?oppr_ge0 // sub0r opprK.
by rewrite (pos_id (ltW h)) pos_0 ?subr0 // oppr_le0 ltW.
Qed.

Lemma pos_le a b : a <= b -> pos a <= pos b.
Proof.
move=> ab; case: (lerP a 0) => ha; first by rewrite (pos_0 ha) pos_ge0.
by rewrite !pos_id ?(ltW ha) // (le_trans (ltW ha)).
Qed.

Lemma pos_lip a b : b <= a -> pos a - pos b <= a - b.
Proof.
move=> ba; case: (lerP 0 b) => hb.
  by rewrite !pos_id // (le_trans hb ba).
rewrite (pos_0 (ltW hb)) subr0; case: (lerP 0 a) => ha.
  by rewrite pos_id // ler_subr_addr ger_addl ltW.
by rewrite pos_0 ?subr_ge0 // ltW.
Qed.

Lemma pos_gt0 v : 0 < pos v -> 0 < v.
Proof. by case: (lerP v 0) => // /pos_0 ->; rewrite ltxx. Qed.

End Pos.

Section SpsStep.
Variable R : realFieldType.
Variable T : finType.

Definition norm (d : T -> R) : T -> R := fun y => d y / \sum_z d z.

(** [min(1, r(x)/q(x))]; tokens off the draft ([q(x) = 0]) are never drawn. *)
Definition sps_accept (r q : T -> R) x := if q x == 0 then 1 else Num.min 1 (r x / q x).

Definition sps_next (r q : T -> R) : T -> R := norm (fun y => pos (r y - q y)).

Variables r q : T -> R.
Hypotheses (dr : dist r) (dq : dist q).

(** The accepted mass is [min(r, q) = r - (r - q)+]. *)
Lemma sps_accepted x : q x * sps_accept r q x = r x - pos (r x - q x).
Proof.
rewrite /sps_accept; have [q0|qn0] := eqVneq (q x) 0.
  by rewrite q0 mul0r subr0 pos_id ?subrr // dr.1.
have qp : 0 < q x by rewrite lt_def qn0 dq.1.
case: (lerP 1 (r x / q x)) => h.
  rewrite mulr1 pos_id; first by rewrite opprB addrC subrK.
  by rewrite subr_ge0 -(mul1r (q x)) -ler_pdivl_mulr.
rewrite pos_0; last by rewrite subr_le0 -(mul1r (q x)) -ler_pdivr_mulr // ltW.
by rewrite subr0 mulrC divfK.
Qed.

(** The rejected mass is [(q - r)+]. *)
Lemma sps_rejected x : q x * (1 - sps_accept r q x) = pos (q x - r x).
Proof.
rewrite mulrBr mulr1 sps_accepted; have := pos_split (r x - q x); rewrite opprB => h.
move: (pos (r x - q x)) (pos (q x - r x)) h => A B h.
have -> : B = A - (r x - q x) by rewrite -h; ring.
ring.
Qed.

(** Both parts have the same total: the rejection probability normalises the residual. *)
Lemma sps_balance : \sum_x pos (q x - r x) = \sum_x pos (r x - q x).
Proof.
apply/eqP; rewrite -subr_eq0 -sumrB.
rewrite (eq_bigr (fun x => q x - r x)) ?sumrB ?dr.2 ?dq.2 ?subrr //.
by move=> x _; have := pos_split (q x - r x); rewrite opprB.
Qed.

(** The kernel identity of one sps step (target: [r]; after a rejection: [norm((r - q)+)]). *)
Lemma sps_kernel y :
  \sum_x q x * (1 - sps_accept r q x) * sps_next r q y = r y - q y * sps_accept r q y.
Proof.
rewrite sps_accepted opprB addrC subrK -mulr_suml.
rewrite (eq_bigr (fun x => pos (q x - r x))); last by move=> x _; rewrite sps_rejected.
rewrite sps_balance /sps_next /norm; have [Z0|Zn0] := eqVneq (\sum_z pos (r z - q z)) 0.
  rewrite Z0 mul0r; symmetry; apply: (psumr_eq0P _ Z0) => // z _.
  exact: pos_ge0.
by rewrite mulrC divfK.
Qed.

(** After a rejection that can happen, the next target is a distribution. *)
Lemma sps_next_dist x : q x * (1 - sps_accept r q x) != 0 -> dist (sps_next r q).
Proof.
rewrite sps_rejected => nz; have Zn0 : \sum_z pos (r z - q z) != 0.
  rewrite -sps_balance; apply: contra nz => /eqP Z0; apply/eqP.
  by apply: (psumr_eq0P _ Z0) => // z _; exact: pos_ge0.
split=> [y|]; first by rewrite /sps_next /norm divr_ge0 // ?sumr_ge0 // => *; exact: pos_ge0.
by rewrite /sps_next /norm -mulr_suml divff.
Qed.

(** The acceptance is a probability. *)
Lemma sps_accept_range x : 0 <= sps_accept r q x <= 1.
Proof.
rewrite /sps_accept; case: eqP => _; first by rewrite ler01 lexx.
have rq : 0 <= r x / q x by rewrite divr_ge0 ?dr.1 ?dq.1.
by case: (lerP 1 (r x / q x)) => h; rewrite ?ler01 ?lexx ?rq // ltW.
Qed.

(** Acceptance of sps: [sum_x min(r, q) = 1 - sum_x (r - q)+ = 1 - TV(r, q)]. *)
Lemma sps_acceptance : \sum_x q x * sps_accept r q x = 1 - \sum_x pos (r x - q x).
Proof. by rewrite (eq_bigr _ (fun x _ => sps_accepted x)) sumrB dr.2. Qed.

End SpsStep.

Section Rrs.
Variable R : realFieldType.
Variable T : finType.
Variables p q : T -> R.
Hypotheses (dp : dist p) (dq : dist q).

(** rrs: the state is the current target [r]. *)
Definition rrs := Rule (fun _ => q) (fun r => sps_accept r q) (fun r _ => sps_next r q) (fun r => r).

Theorem rrs_exact k y : law rrs k p y = p y.
Proof.
apply: (@sequential_exact _ _ _ rrs (fun r => r) (fun _ r => dist r)) => //.
split=> [//|]; split=> [m r dr y'|m r x dr nz].
  exact: (sps_kernel dr dq y').
exact: (sps_next_dist dr dq nz).
Qed.

(** sps is rrs with one candidate; its acceptance is [1 - TV(p, q)]. *)
Theorem sps_exact y : law rrs 1 p y = p y.
Proof. exact: rrs_exact. Qed.

Theorem sps_acceptance_TV :
  \sum_y draft rrs p y * accept rrs p y = 1 - \sum_x pos (p x - q x).
Proof. exact: sps_acceptance. Qed.

End Rrs.
