"""The zoo in its own regime: predicted tokens per second of every exact node verifier, with its measured A(k),
under this CPU's measured cost curve and under a GPU-like flat one.

`--tree auto` predicts a tree's tokens per second from the verifier's acceptance ``A(k)`` and measured costs
(`resispec.engine.decode.tree_search`, ``E(b) / T(b)``). Here every exact verifier of the zoo that decides node by
node gets its own inputs, measured as a calibration measures them:

- ``A(1..K)``: its exact acceptance at k candidates, mean over real (p, q) rows (the caller's; the CLI takes them
  from the simulator's kernels over logged rows, `resispec.sim.explorer.acceptance_curves`);
- ``u(k)``: `calibration.verify_costs`, one node's verification with k candidates on the same rows padded with
  zeros to the target's vocabulary (a plan's sort is priced at the real width);

and shares the rest: the target's forward ``t(n)``, the draft's ``c(w)``, the per-round and per-plain-token
overheads ``v``, ``v_plain`` and the correlation ``kappa_d`` of one calibration. Two target cost curves:

- **cpu**: ``t(n)`` as measured here;
- **flat(W)**: ``t(n) = t(1)`` for ``n <= W`` and ``t(1) n / W`` beyond, the idealised memory-bound forward of
  a GPU (reading the weights costs the same for 1 row or W; past W the arithmetic dominates). Only ``t``
  changes: the draft, the verification and the overheads stay this machine's;
- **flat(W), u = sps**: the same with every node's verification at sps's one-candidate cost, whatever the
  verifier and k (a GPU verifies a node's V probabilities in parallel): the verifiers then differ by their
  acceptance alone.

``u(1)`` of every verifier whose one-candidate rule is sps is sps's own, timed once (the decoder verifies those
nodes as sps; timing it per verifier would only add noise).

For each verifier and curve: the best shape (plain decoding competing) and its speedup over plain decoding
``(t(1) + v_plain) E(b) / T(b)``; and the ratio of each verifier's speedup to rrs's on the same curve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from resispec import VERIFIERS
from resispec.engine.bench.headroom import plain_seconds
from resispec.engine.decode.calibration import Calibration, verify_costs
from resispec.engine.decode.tree_search import TreeChoice

BASELINE = "rrs"
"""The verifier every speedup is compared with (the multi-candidate rule of SpecInfer and the seed's baseline)."""


def node_verifiers() -> list[str]:
    """The zoo's exact verifiers, in the registry's order (sps, then the multi-candidate ones)."""
    return [name for name, rule in VERIFIERS.items() if rule.claims_exact]


def flat_curve(calibration: Calibration, width: int) -> dict[int, float]:
    """``t(n) = t(1) max(1, n / width)`` at the calibration's measured node counts and at ``width`` (module
    docstring), so `Calibration.target_cost` interpolates it exactly."""
    if width < 1:
        raise ValueError(f"width: expected at least 1 node, got {width}")
    one = calibration.target_cost(1)
    return {n: one * max(1.0, n / width) for n in sorted({*calibration.target_seconds, width})}


@dataclass(frozen=True)
class ZooPoint:
    """One verifier on one cost curve: its inputs and the predicted best shape."""

    verifier: str
    curve: str
    acceptance: list[float]
    verify_seconds: dict[int, float]
    choice: TreeChoice
    speedup: float
    over_baseline: float | None


def verification_costs(p_rows: np.ndarray, q_rows: np.ndarray, counts: dict[str, int], vocab: int,
                       progress: Callable[[str], None] | None = None) -> dict[str, dict[int, float]]:
    """``u(1..K)`` per verifier, ``K = counts[name]`` (module docstring), from rows ``(N, V')`` of p and q padded
    with zeros to ``vocab >= V'`` tokens; ``progress(name)`` is called after each verifier."""
    if p_rows.shape != q_rows.shape or p_rows.ndim != 2:
        raise ValueError(f"rows: expected p and q of one shape (N, V), got {p_rows.shape} and {q_rows.shape}")
    if p_rows.shape[1] > vocab:
        raise ValueError(f"vocab: the rows have {p_rows.shape[1]} tokens, more than the vocabulary {vocab}")
    padded = [np.pad(rows, ((0, 0), (0, vocab - rows.shape[1]))) for rows in (p_rows, q_rows)]
    sps = verify_costs(*padded, "sps", 1)[1]
    costs = {}
    for name, count in counts.items():
        rule = VERIFIERS[name]
        costs[name] = verify_costs(*padded, name, count) if count > 1 or not rule.single_candidate_is_sps else {}
        if rule.single_candidate_is_sps:
            costs[name][1] = sps
        if progress is not None:
            progress(name)
    return costs


def zoo_table(costs: Calibration, acceptance: dict[str, list[float]], verify_seconds: dict[str, dict[int, float]],
              widths: Sequence[int]) -> list[ZooPoint]:
    """Every verifier of ``acceptance`` (``A(1..K)``) with its ``verify_seconds`` (``u(1..K)``) on the ``cpu``
    curve of ``costs`` and on ``flat(W)`` and ``flat(W), u = sps`` for each W in ``widths`` (module docstring);
    ``u = sps`` is ``verify_seconds["sps"][1]`` (without sps, the cheapest one-candidate time given)."""
    sps = verify_seconds["sps"][1] if "sps" in verify_seconds else min(u[1] for u in verify_seconds.values())
    curves = {"cpu": (costs.target_seconds, None)}
    for width in widths:
        curves |= {f"flat({width})": (flat_curve(costs, width), None),
                   f"flat({width}), u = sps": (flat_curve(costs, width), sps)}
    points = []
    for curve, (target_seconds, uniform) in curves.items():
        found = {}
        for name, rates in acceptance.items():
            seconds = verify_seconds[name] if uniform is None else dict.fromkeys(verify_seconds[name], uniform)
            calibration = replace(costs, acceptance=rates, verify_seconds=seconds, target_seconds=target_seconds)
            choice = calibration.choose(plain=True)
            found[name] = choice, choice.tokens_per_second * plain_seconds(calibration)
        base = found[BASELINE][1] if BASELINE in found else None
        points += [ZooPoint(name, curve, acceptance[name], verify_seconds[name], choice, speedup,
                            None if base is None else speedup / base) for name, (choice, speedup) in found.items()]
    return points


def plot_zoo(points: Sequence[ZooPoint], path: Path, title: str) -> None:
    """One group of bars per cost curve, one bar per verifier: the predicted speedup over plain decoding, its
    best shape on the bar; a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from resispec.formats.atomic import atomic_path

    curves = list(dict.fromkeys(point.curve for point in points))
    names = list(dict.fromkeys(point.verifier for point in points))
    width = 0.8 / len(names)
    figure, axes = plt.subplots(figsize=(9, 4.8))
    for index, name in enumerate(names):
        mine = {point.curve: point for point in points if point.verifier == name}
        xs = [c + (index - (len(names) - 1) / 2) * width for c in range(len(curves))]
        axes.bar(xs, [mine[c].speedup for c in curves], width, label=name, color=f"C{index}")
        for x, curve in zip(xs, curves):
            shape = ",".join(map(str, mine[curve].choice.branching)) or "plain"
            axes.annotate(shape, (x, mine[curve].speedup), rotation=90, fontsize=6, ha="center", va="bottom",
                          textcoords="offset points", xytext=(0, 2))
    axes.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    axes.set_xticks(range(len(curves)), curves)
    axes.set_ylabel("predicted tokens/s over plain decoding")
    axes.set_title(title, fontsize=7)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as staged:
        figure.savefig(staged, dpi=120)
    plt.close(figure)
