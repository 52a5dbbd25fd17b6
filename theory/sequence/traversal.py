"""Traversal verification and its generalisation, the lift of a sequential node rule with a fail
token (``resispec/sequence/lifted.py``): exact for every exact sequential node rule."""

from __future__ import annotations

import sympy as sp

from resispec.theory.common.symbolic import display_eq, vanishes
from resispec.theory.registry import Outcome, Theorem, tally
from resispec.theory.sequence.rounds import lifted_law
from resispec.theory.sequence.tree import BIASED_RULE, NODE_RULES, Model

SHAPES = ((3, 2, 2), (2, 3, 2), (3, 1, 3), (2, 2, 1), (3, 2, 1))  # (V, depth, k)
TREES = SHAPES * 3


def check_lift() -> Outcome:
    a, w, p, L, T = sp.symbols("a_y w p_y L T")
    # node rule exact on p' = (w p, 1 - w): accepted a_y plus residual b_y = w p_y on each real token
    step_ok = vanishes((a * L + (w * p - a) * T).subs(L, T) - w * p * T)
    runs, bad, caught = 0, [], 0
    for n, (V, depth, k) in enumerate(TREES):
        model = Model(V, depth, seed=2500 + n)
        target = model.target((), depth + 1)
        for name, rule in NODE_RULES.items():
            runs += 1
            law = lifted_law(model, rule, k)
            if law != target:
                bad.append(f"V={V}, depth={depth}, k={k}, lift of {name}: sequence law differs from the target's")
        caught += lifted_law(model, BIASED_RULE, k) != target
    derivation = f"""
**The lift.** A node v entered with weight `w` runs a sequential node rule on
`p' = (w p(. | v), 1 - w)`, `q' = (q(. | v), 0)`: one extra token, *fail*, that is never drafted.
Where the rule would accept child x with probability `a(x)`, the lift enters x's subtree with weight
`a(x)`; the subtree's success plays the rule's acceptance, its failure the rule's rejection. After
every child failed, a token is drawn from the rule's residual: *fail* means v fails, a real token y
ends the round at v emitting y. A leaf entered with weight `w` succeeds with probability `w` (then
the bonus token from `p`). Traversal verification is the lift of rrs (i.i.d. children) or rrs_wor;
block verification the lift of sps on a chain (the residual `(p' - q')+` keeps the fail mass `1 - w`,
and its normalisation gives block's `h_i = r_i / (1 - s_i)`).

**Exactness.** Claim, by induction from the leaves: a subtree entered with weight `w` at prefix v,
averaged over its drafting, succeeds with probability `w`, and its output, continued by the target,
has law `w T(. | v)` (`T` the target's sequential law). A leaf: success `w`, bonus token from `p`.
An internal node: the node rule sees its children drawn exactly by its drafting, and a child x's
acceptance coin is replaced by x's subtree, which succeeds with probability `a(x)` on average and is
independent of every later sibling and its subtree; a sequential rule's law depends on its coins only
through these probabilities, so it still emits `p'` exactly. Real token y then carries accepted mass
`a_y` (continued, by induction, with law `T(. | vy)`) and residual mass `b_y` (continued by the
target), with `a_y + b_y = w p(y | v)`:
{display_eq((a * L + (w * p - a) * T).subs(L, T), w * p * T)}
and the fail token carries `1 - w`, the node's failure. At the root `w = 1`, so the round is exact.
Nothing constrains the node rule beyond exactness for `(p', q')` with an undraftable token of positive
target mass: **residual shaping composes with sequence-level acceptance** (``traversal_resispec``).
General proof (every `V`, tree shape and exact sequential rule; the rule must not depend on how its
coins are tossed, which holds for the sequential rules of ``resispec.theory.common.sequential``).
"""
    checked = f"""
- Symbolic (SymPy): the inductive step `a L + (w p - a) T = w p T` under `L = T`:
  {"holds" if step_ok else "FAILS"}.
- Exact rationals (drafting and verification integrated out together, ``resispec.theory.sequence.rounds.lifted_law``):
  {len(TREES)} seeded model pairs, `(V, depth, k)` in {", ".join(map(str, SHAPES))} (each three times),
  lifts of {", ".join(NODE_RULES)} ({runs} runs; the lift of rrs is traversal verification, of rrs_wor
  traversal_wor, of resispec traversal_resispec): the round's sequence law equals the target's;
  {tally(bad)}.
- Negative control: the lift of the reconstructed published rule differs from the target on {caught}
  of the {len(TREES)} pairs.
"""
    return Outcome(step_ok and not bad and caught > 0, derivation, checked)


THEOREMS = [
    Theorem(
        name="traversal.lift_exact",
        statement=(
            "Lifting any exact sequential node rule to a tree with a fail token of mass 1 - w (traversal verification "
            "= lift of rrs, block = lift of sps, traversal_resispec = lift of resispec) is exact at the sequence level."
        ),
        method="general proof (induction over subtrees) + SymPy identity + exact rational arithmetic",
        check=check_lift,
    )
]
