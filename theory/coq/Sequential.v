(** * Sequential verification and its generic exactness theorem.

    Tokens form a finite type [T]; probabilities live in a real field [R] (an ordered field: the
    rationals are one).  A sequential verifier with [n] candidates left in state [s] draws a candidate
    [x] from [draft s], accepts (emits) it with probability [accept s x], and on rejection continues
    from state [next s x] with [n - 1] candidates; with none left it emits from [final s].  A fresh
    candidate is drawn at every step, so given the state it is independent of the verification
    randomness of the earlier steps: the output law from a state is the recursion [law] below
    (the same recursion as [theory.sequential.emit] in Python).

    The generic theorem: if every state a run can reach satisfies the kernel identity
    [sum_x draft(x) (1 - accept(x)) target(next x) = target - draft * accept] (and the final states
    emit their target), the verifier emits its target.  The converse holds state by state when the
    continuations are exact ([law_defect]), but not globally (see [theory/resispec_wor/resispec_wor.py]). *)

From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import ring.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Section Sequential.

Variable R : realFieldType.
Variable T : finType.

(** A law over tokens is any function [T -> R]; a distribution is non-negative and sums to one. *)
Definition dist (d : T -> R) := (forall x, 0 <= d x) /\ \sum_x d x = 1.

Variable S : Type.

Record rule := Rule {
  draft : S -> T -> R;
  accept : S -> T -> R;
  next : S -> T -> S;
  final : S -> T -> R
}.

Variable ru : rule.

(** The law of the token emitted from state [s] with [n] candidates left. *)
Fixpoint law (n : nat) (s : S) (y : T) : R :=
  match n with
  | 0 => final ru s y
  | m.+1 => draft ru s y * accept ru s y
            + \sum_x draft ru s x * (1 - accept ru s x) * law m (next ru s x) y
  end.

(** The probability that a run from [s] rejects [x] (the weight of the continuation [next s x]). *)
Definition rejected (s : S) (x : T) : R := draft ru s x * (1 - accept ru s x).

(** The kernel identity at a state, relative to a target assigned to every state. *)
Definition kernel (target : S -> T -> R) (s : S) :=
  forall y, \sum_x rejected s x * target (next ru s x) y
            = target s y - draft ru s y * accept ru s y.

(** An invariant [Inv m s] ("state [s] can be reached with [m] candidates left") that is closed under
    the rejections a run can make, and on which final states emit their target and every other state
    satisfies the kernel identity. *)
Definition sound (target : S -> T -> R) (Inv : nat -> S -> Prop) :=
  (forall s, Inv 0%N s -> forall y, final ru s y = target s y)
  /\ (forall m s, Inv m.+1 s -> kernel target s)
  /\ (forall m s x, Inv m.+1 s -> rejected s x != 0 -> Inv m (next ru s x)).

(** ** The generic exactness theorem of sequential verification. *)
Theorem sequential_exact target Inv :
  sound target Inv -> forall n s, Inv n s -> forall y, law n s y = target s y.
Proof.
case=> [fin [ker clo]]; elim=> [|m IH] s hs y /=; first exact: fin.
rewrite -[RHS](subrK (draft ru s y * accept ru s y)) addrC; congr (_ + _).
rewrite -(ker m s hs y); apply: eq_bigr => x _.
rewrite -[draft ru s x * _]/(rejected s x).
have [->|nz] := eqVneq (rejected s x) 0; first by rewrite !mul0r.
by rewrite (IH _ (clo _ _ _ hs nz)).
Qed.

(** ** State by state: with exact continuations, a state's defect is its kernel defect. *)
Lemma law_defect target m s :
  (forall x, rejected s x != 0 -> forall y, law m (next ru s x) y = target (next ru s x) y) ->
  forall y, law m.+1 s y - target s y
            = \sum_x rejected s x * target (next ru s x) y
              - (target s y - draft ru s y * accept ru s y).
Proof.
move=> cont y /=.
have -> : \sum_x draft ru s x * (1 - accept ru s x) * law m (next ru s x) y
          = \sum_x rejected s x * target (next ru s x) y.
  apply: eq_bigr => x _; rewrite -[draft ru s x * _]/(rejected s x).
  have [->|nz] := eqVneq (rejected s x) 0; first by rewrite !mul0r.
  by rewrite cont.
by rewrite opprB addrA; congr (_ - _); rewrite addrC.
Qed.

End Sequential.
