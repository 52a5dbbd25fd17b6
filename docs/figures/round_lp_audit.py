"""The sampling audit of round_lp_wor (docs/verifiers/round_lp.md): on the nine root-WOR instances of the
multipath gap table (V = 3, trees 2,1 / 3,1 / 2,1,1, model pairs of seeds 300-302), 20,000 drafted and verified
rounds each, the emitted tokens continued by the target and tested against its sequence law
(``resispec.audit.round_sampling``: cells and per prefix, family level 0.01 Bonferroni over the 9 instances);
the control round_lp_iid_plan_on_wor on the same instances. About 3 minutes on one core. Run from the
repository root: ``python3 docs/figures/round_lp_audit.py``.
"""

from __future__ import annotations

from resispec.audit.round_sampling import round_sampling_audit
from resispec.sequence.enumeration import dirichlet_conditional
from resispec.sequence.round_lp_verifier import RoundLPIIDPlanOnWOR, RoundLPWOR

TREES, SEEDS, SAMPLES, LEVEL = ((2, 1), (3, 1), (2, 1, 1)), (300, 301, 302), 20_000, 0.01

if __name__ == "__main__":
    instances = [(branching, seed) for branching in TREES for seed in SEEDS]
    for cls in (RoundLPWOR, RoundLPIIDPlanOnWOR):
        worst = []
        for branching, seed in instances:
            models = (dirichlet_conditional(3, 2 * seed), dirichlet_conditional(3, 2 * seed + 1), 3, branching)
            results = round_sampling_audit(cls.solve(*models), *models, SAMPLES, seed=seed,
                                           alpha=LEVEL / len(instances))
            worst.append(min(r.pvalue for r in results))
            print(f"{cls.name} tree {','.join(map(str, branching))} s = {seed}: "
                  + "; ".join(f"{r.test.split(': ')[1]} p = {r.pvalue:.3g}, TV {r.tv:.4f}" for r in results)
                  + f" -> {'PASS' if all(r.passed for r in results) else 'FAIL'}", flush=True)
        print(f"{cls.name}: smallest p {min(worst):.3g} over {len(instances)} instances", flush=True)
