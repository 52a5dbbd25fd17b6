"""sim: residual-drift explorer over synthetic and logged (p, q) pairs (``p`` target, ``q`` draft).

Notebook use::

    from resispec.sim import run_compare, run_drift, parse_source, step_stats
    result = run_compare(["llm:sigma=1,V=256", "logged:sample"], ["rrs", "rrs_wor", "resispec"], [2, 4, 8])
    result.records()          # mean acceptance, every optimum and the ratios, per source/verifier/k
    result.tree_records()     # accepted tokens per target forward for the tree shape
    batch = parse_source("zipf:s=1.1,V=512,mode=perturb").sample(100, np.random.default_rng(0))
    stats = step_stats("rrs", batch, 8)          # per pair and step: accepted, reached, drift
    stats.drift_curve(), stats.residual_curve()  # pooled over pairs, with 95 % intervals

Modules: ``sources`` (families, ``parse_source``), ``batch`` (``PairBatch``, ``PairBatch.from_logged``
over the core's ``resispec.formats.pairs``, the shipped sample), ``kernels`` (batched step statistics per
verifier), ``steps``, ``optima``, ``tree``, ``explorer`` (``run_drift``, ``run_compare``), ``report`` and
``plots`` (files), ``bench``.
"""

from resispec.formats.pairs import LoggedPairs, logged_pairs, read_logged, write_logged
from resispec.sim.batch import PairBatch
from resispec.sim.explorer import CompareResult, DriftResult, Settings, run_compare, run_drift
from resispec.sim.kernels import SUPPORTED, MonteCarlo, step_stats
from resispec.sim.optima import WorSettings, optima
from resispec.sim.sources import FAMILIES, parse_source
from resispec.sim.steps import StepStats

__all__ = [
    "FAMILIES", "SUPPORTED", "CompareResult", "DriftResult", "LoggedPairs", "MonteCarlo", "PairBatch", "Settings",
    "StepStats", "WorSettings", "logged_pairs", "optima", "parse_source", "read_logged", "run_compare", "run_drift",
    "step_stats", "write_logged",
]
