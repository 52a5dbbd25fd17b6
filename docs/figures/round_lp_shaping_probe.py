"""Depth-aware residual shaping at the root, a probe (docs/verifiers/round_lp.md): tree 2,1 drafted without
replacement, V = 3, the model pairs of seeds 300-302.

The lift of a node rule over the root's two WOR children is exact for *every* admissible k = 2 plan (the
step-1 accepted mass ``0 <= A_x <= min(p_x, q_x)``; ``resispec.verifiers.resispec_wor.plan``'s doc): step 1
enters child x with weight ``A_x / q_x``, step 2 reaches y with mass ``C(y) = q_y (S - t_y)``
(``t_x = (q_x - A_x) / (1 - q_x)``, ``S = sum t``) and enters it with weight ``min(1, (p_y - A_y) / C(y))``.
A child x entered with weight w and verified by block verification over its one drafted child adds
``D_x(w) = w + sum_z min(q(z | x), w p(z | x))`` accepted tokens on average, so the round's value is
``sum_x q_x D_x(A_x / q_x) + sum_y C(y) D_y(min(1, (p_y - A_y) / C(y)))``. traversal_wor is ``A = min(p, q)``
(checked below to 1e-12), traversal_resispec_wor the latest-first A (node-level shaping); the probe maximises the
*sequence* value over A (Nelder-Mead from 22 starts), then enumerates the rule's round law at the best A (every
WOR root pair and both drafted grandchildren; the emitted tokens continued by the target) against the target's.
Not a shipped verifier: it needs ``p(. | x)`` and ``q(. | x)`` for every token x, drafted or not, and this
enumeration is its only exactness check (no theorem, no sampling audit). Seconds.
``python3 docs/figures/round_lp_shaping_probe.py``.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import minimize

from resispec.audit.round_law import exact_round_law
from resispec.sequence.enumeration import Conditional, RoundModels, dirichlet_conditional

VOCAB, SEEDS = 3, (300, 301, 302)


def round_value(accepted: np.ndarray, p: np.ndarray, q: np.ndarray, depth_gain) -> float:
    """Expected accepted draft tokens of the lifted k = 2 plan with step-1 mass ``accepted`` (module doc)."""
    t = (q - accepted) / (1 - q)
    reach = q * (t.sum() - t)
    value = sum(q[x] * depth_gain[x](accepted[x] / q[x]) for x in range(p.size))
    return value + sum(reach[y] * depth_gain[y](min(1.0, (p[y] - accepted[y]) / reach[y]))
                       for y in range(p.size) if reach[y] > 0)


def child_step(target: Conditional, draft: Conditional, x: int, z: int, weight: float) -> tuple[float, np.ndarray]:
    """Child x entered with ``weight``, its drafted child z: block verification's acceptance of z, and the law
    (V + 1 entries, the last one "x fails") drawn after a rejection, ``norm(((w p - q)+, 1 - w))``."""
    p, q = target((x,)), draft((x,))
    residual = np.append(np.maximum(weight * p - q, 0.0), 1.0 - weight)
    return min(1.0, weight * p[z] / q[z]), residual / residual.sum() if residual.sum() > 0 else residual


def enumerated_error(accepted: np.ndarray, target: Conditional, draft: Conditional, naive: bool = False
                     ) -> tuple[float, float]:
    """The rule's exact round law (emitted tokens continued by the target to 3) against the target's: the
    largest error, and the expected accepted draft tokens. ``naive``: the control, step 2's reach computed as if
    the second child were drawn from q again (``t = q - A``, the i.i.d. reach), which the enumeration must flag."""
    p, q = target(()), draft(())
    t = (q - accepted) / (1 - q) if not naive else q - accepted
    reach_at = q * (t.sum() - t)
    final = np.maximum(p - accepted - reach_at, 0.0)
    final = final / final.sum() if final.sum() > 0 else final
    law, mean = np.zeros((VOCAB,) * 3), 0.0
    for x1, x2 in itertools.permutations(range(VOCAB), 2):
        for z1, z2 in itertools.product(range(VOCAB), repeat=2):
            mass = q[x1] * q[x2] / (1 - q[x1]) * draft((x1,))[z1] * draft((x2,))[z2]
            step2 = min(1.0, (p[x2] - accepted[x2]) / reach_at[x2]) if reach_at[x2] > 0 else 0.0
            for x, z, weight in ((x1, z1, accepted[x1] / q[x1]), (x2, z2, step2)):
                accept, residual = child_step(target, draft, x, z, weight)
                law[x, z] += mass * accept * target((x, z))
                mean += 2 * mass * accept
                for y in range(VOCAB):
                    law[x, y] += mass * (1 - accept) * residual[y] * target((x, y))
                    mean += mass * (1 - accept) * residual[y]
                mass *= (1 - accept) * residual[VOCAB]
            law += mass * final[:, None, None] * np.stack([target((y,))[:, None] * np.stack(
                [target((y, z)) for z in range(VOCAB)]) for y in range(VOCAB)])
    reference = RoundModels(target, draft, VOCAB, (2, 1)).target_law().reshape(law.shape)
    return float(np.abs(law - reference).max()), mean


if __name__ == "__main__":
    print("| seed | traversal_wor | traversal_resispec_wor | depth-aware A (probe) | its law, max error | control |")
    print("| --- | --- | --- | --- | --- | --- |")
    for seed in SEEDS:
        target, draft = dirichlet_conditional(VOCAB, 2 * seed), dirichlet_conditional(VOCAB, 2 * seed + 1)
        p, q = target(()), draft(())
        gain = [lambda w, x=x: w + np.minimum(draft((x,)), w * target((x,))).sum() for x in range(VOCAB)]
        ceiling = np.minimum(p, q)
        rules = {name: exact_round_law(name, target, draft, VOCAB, (2, 1)).expected_accepted
                 for name in ("traversal_wor", "traversal_resispec_wor")}
        assert abs(round_value(ceiling, p, q, gain) - rules["traversal_wor"]) < 1e-12  # the formula is traversal's
        rng = np.random.default_rng(0)
        best, best_plan = rules["traversal_wor"], ceiling
        for start in [ceiling, 0.5 * ceiling, *(rng.random(VOCAB) * ceiling for _ in range(20))]:
            result = minimize(lambda a: -round_value(np.clip(a, 0, ceiling), p, q, gain), start,
                              method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
            if -result.fun > best:
                best, best_plan = -result.fun, np.clip(result.x, 0, ceiling)
        error, mean = enumerated_error(best_plan, target, draft)
        assert abs(mean - best) < 1e-12  # the enumeration's acceptance is the formula's
        print(f"| {seed} | {rules['traversal_wor']:.4f} | {rules['traversal_resispec_wor']:.4f} | {best:.4f} | "
              f"{error:.1e} | {enumerated_error(best_plan, target, draft, naive=True)[0]:.1e} |")
