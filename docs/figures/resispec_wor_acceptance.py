"""Acceptance of rrs_wor and resispec_wor against the WOR optima (figures of docs/resispec_wor.md).

Run from the repository root: ``python3 docs/figures/resispec_wor_acceptance.py [--quick]``. Writes
``docs/figures/resispec_wor_acceptance.{json,png}`` and prints the tables in Markdown.

- Small V (exact): three synthetic families at V = 6 (``dirichlet-0.3`` and ``dirichlet-1``: p and q
  independent ``Dir(alpha 1_V)``; ``llm-like``: ``p = softmax(2.5 z)``, ``q = softmax(2.5 z + eps)``,
  z, eps standard normal), k = 2..5: exact acceptance by enumerating WOR tuples, the sequential WOR
  optimum (LP) and alpha*-WOR (transport LP).
- Realistic V (k = 2, 4, 8): the same families at V = 256 and the logged SmolLM2 rows (V = 2048 + one
  tail token, rows renormalised; drafts ``q`` and ``q_weak``). k = 2: exact for both verifiers;
  k = 4, 8: unbiased path estimates (``path_estimates``) with common random numbers. alpha*-WOR is
  the bound over ratio prefixes (``resispec.bounds_wor.wor_prefix_bound``, race integral).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.special import softmax

from resispec import get_verifier
from resispec.audit import exact_law
from resispec.bounds import optimal_acceptance, optimal_acceptance_lp
from resispec.bounds_wor import sequential_optimum_wor_lp, wor_prefix_bound
from resispec.sampling import inverse_cdf
from resispec.wor_shaping import latest_first_plan

HERE = Path(__file__).resolve().parent
LOGGED = Path("/work/shared/data/smollm2_pairs.npz")
FAMILIES = ("dirichlet-0.3", "dirichlet-1", "llm-like")


def synthetic_pair(family: str, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if family == "llm-like":
        logits = 2.5 * rng.standard_normal(size)
        return softmax(logits), softmax(logits + rng.standard_normal(size))
    alpha = {"dirichlet-0.3": 0.3, "dirichlet-1": 1.0}[family]
    return rng.dirichlet(np.full(size, alpha)), rng.dirichlet(np.full(size, alpha))


def logged_pairs(draft: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Rows of the logged file with the tail mass as one extra token (clipped at 0: float32 rounding
    leaves a few tails at -2e-7), renormalised (float64)."""
    data = np.load(LOGGED)
    pairs = []
    for row in range(data["p"].shape[0]):
        p = np.append(data["p"][row].astype(np.float64), max(data["p_tail"][row], 0.0))
        q = np.append(data[draft][row].astype(np.float64), max(data[f"{draft}_tail"][row], 0.0))
        pairs.append((p / p.sum(), q / q.sum()))
    return pairs


def small_v_table(pairs_per_family: int, ks: tuple[int, ...], seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows, exceptions = [], []
    for family in FAMILIES:
        pairs = [synthetic_pair(family, 6, rng) for _ in range(pairs_per_family)]
        for k in ks:
            laws = [exact_law("resispec_wor", p, q, k) for p, q in pairs]
            values = np.array([(exact_law("rrs_wor", p, q, k).acceptance, law.acceptance,
                                sequential_optimum_wor_lp(p, q, k), optimal_acceptance_lp(p, q, k, "wor"))
                               for (p, q), law in zip(pairs, laws)])
            for (p, q), (rrs_wor, resispec_wor, *_) in zip(pairs, values):
                if resispec_wor < rrs_wor - 1e-12:
                    exceptions.append({"family": family, "k": k, "p": p.tolist(), "q": q.tolist(),
                                       "rrs_wor": rrs_wor, "resispec_wor": resispec_wor})
            rrs_wor, resispec_wor, sequential, alpha = values.mean(axis=0)
            rows.append({"source": f"{family} (V=6)", "k": k, "pairs": len(pairs), "rrs_wor": rrs_wor,
                         "resispec_wor": resispec_wor, "sequential_optimum": sequential, "alpha_star_wor": alpha,
                         "share_of_sequential_gap": (resispec_wor - rrs_wor) / (sequential - rrs_wor),
                         "share_of_alpha_gap": (resispec_wor - rrs_wor) / (alpha - rrs_wor),
                         "pairs_below_rrs_wor": int(np.sum(values[:, 1] < values[:, 0] - 1e-12)),
                         "max_gap_to_sequential": float(np.max(values[:, 2] - values[:, 1])),
                         "max_exact_law_error": max(law.max_error for law in laws)})
            print(f"  small V {family} k={k} done", flush=True)
    return rows, exceptions


def rrs_wor_k2(p: np.ndarray, q: np.ndarray) -> float:
    """Exact rrs_wor acceptance at k = 2: ``sum min(p, q) + sum_x s_x sum_{y != x} min(r'(y), q_y/(1 - q_x))``
    with ``s = (q - p)+`` and ``r' = norm((p - q)+)`` (O(V^2), in blocks of first candidates)."""
    accepted = np.minimum(p, q)
    rejected = q - accepted
    residual = np.maximum(p - q, 0.0)
    if not residual.sum() > 0:
        return float(accepted.sum())
    residual /= residual.sum()
    rest = np.array([q.sum() - q[x] if q[x] <= 0.5 else np.delete(q, x).sum() for x in range(q.size)])
    total = float(accepted.sum())
    for start in range(0, q.size, 256):
        block = np.arange(start, min(start + 256, q.size))
        second = np.minimum(residual[None, :], q[None, :] / rest[block, None])
        second[np.arange(block.size), block] = 0.0
        total += float(rejected[block] @ second.sum(axis=1))
    return total


def path_estimates(p: np.ndarray, q: np.ndarray, k: int, uniforms: np.ndarray) -> tuple[float, float]:
    """One unbiased sample of (rrs_wor, resispec_wor) acceptance per row of ``uniforms`` (shape (n, k)).

    Both verifiers are recursions over states (target r, undrawn draft q', n left): a step accepts the
    mass ``A`` exactly and rejects candidate x with mass ``s_x``, leading to the state ``next(x)``; so
    ``acc(state) = sum A + sum s * E_{x ~ s / sum s}[acc(next(x))]``. Each path adds the exact accepted
    mass of every step and draws ONE rejected candidate per step (the same uniforms for both
    verifiers), far less variance than averaging the acceptance of drafted tuples.
    """
    samples = np.zeros((uniforms.shape[0], 2))
    for row, draws in enumerate(uniforms):
        samples[row] = _rrs_wor_path(p, q, k, draws), _resispec_wor_path(p, q, k, draws)
    return samples


def _rrs_wor_path(p: np.ndarray, q: np.ndarray, k: int, draws: np.ndarray) -> float:
    target, undrawn, weight, total = p, q.copy(), 1.0, 0.0
    for step in range(k):
        draft = undrawn / undrawn.sum()
        accepted = np.minimum(target, draft)
        total += weight * accepted.sum()
        rejected = draft - accepted
        if step == k - 1 or not rejected.sum() > 0:
            return total
        weight *= rejected.sum()
        residual = target - accepted
        target = residual / residual.sum()
        undrawn[inverse_cdf(rejected, draws[step])] = 0.0
    return total


def _resispec_wor_path(p: np.ndarray, q: np.ndarray, k: int, draws: np.ndarray) -> float:
    target, undrawn, weight, total = p, q.copy(), 1.0, 0.0
    for step in range(k - 1):
        plan = latest_first_plan(target, undrawn)
        total += weight * plan.accepted.sum()
        rejected = plan.draft - plan.accepted
        if not rejected.sum() > 0:
            return total
        weight *= rejected.sum()
        candidate = inverse_cdf(rejected, draws[step])
        target = plan.rejection_target(candidate)
        undrawn[candidate] = 0.0
    return total + weight * np.minimum(target, undrawn / undrawn.sum()).sum()


def large_v_rows(source: str, pairs: list[tuple[np.ndarray, np.ndarray]], ks: tuple[int, ...], samples: int,
                 seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for k in ks:
        if k == 2:  # exact for both
            exact = np.array([(rrs_wor_k2(p, q), get_verifier("resispec_wor").acceptance(p, q, 2)) for p, q in pairs])
            means, variances = exact, np.zeros_like(exact)
            differences = np.zeros(len(pairs))
        else:
            paths = [path_estimates(p, q, k, rng.random((samples, k))) for p, q in pairs]
            means = np.array([path.mean(axis=0) for path in paths])
            variances = np.array([path.var(axis=0, ddof=1) / samples for path in paths])
            differences = np.array([np.var(path[:, 1] - path[:, 0], ddof=1) / samples for path in paths])
        bounds = [wor_prefix_bound(p, q, k) for p, q in pairs]
        alpha = np.array([b.value for b in bounds])
        iid = np.array([optimal_acceptance(p, q, k) for p, q in pairs])
        rrs_wor, resispec_wor = means.mean(axis=0)
        size = len(pairs)
        rows.append({"source": source, "k": k, "pairs": size, "paths_per_pair": samples if k > 2 else 0,
                     "rrs_wor": rrs_wor, "rrs_wor_se": float(np.sqrt(variances[:, 0].sum()) / size),
                     "resispec_wor": resispec_wor, "resispec_wor_se": float(np.sqrt(variances[:, 1].sum()) / size),
                     "difference_se": float(np.sqrt(differences.sum()) / size),
                     "alpha_star_wor_prefix": float(alpha.mean()),
                     "alpha_star_wor_error": float(max(b.error for b in bounds)),
                     "alpha_star_iid": float(iid.mean()),
                     "share_of_alpha_gap": float((resispec_wor - rrs_wor) / (alpha.mean() - rrs_wor))})
        print(f"  {source} k={k} done", flush=True)
    return rows


def plot(small: list[dict], large: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sources = list(dict.fromkeys(row["source"] for row in small + large))
    columns = 4
    fig, axes = plt.subplots(-(-len(sources) // columns), columns, figsize=(16, 7.5), squeeze=False)
    for ax, source in zip(axes.flat, sources):
        rows = [row for row in small + large if row["source"] == source]
        ks = [row["k"] for row in rows]
        ax.plot(ks, [row["rrs_wor"] for row in rows], "o-", label="rrs_wor")
        ax.plot(ks, [row["resispec_wor"] for row in rows], "s-", label="resispec_wor")
        if "sequential_optimum" in rows[0]:
            ax.plot(ks, [row["sequential_optimum"] for row in rows], "^--", label="sequential WOR optimum (LP)")
            ax.plot(ks, [row["alpha_star_wor"] for row in rows], "k:", label="alpha*-WOR (transport LP)")
        else:
            ax.plot(ks, [row["alpha_star_wor_prefix"] for row in rows], "k:", label="alpha*-WOR (ratio prefixes)")
            ax.plot(ks, [row["alpha_star_iid"] for row in rows], color="grey", lw=1, label="alpha* i.i.d.")
        ax.set_title(source)
        ax.set_xlabel("k (candidates)")
        ax.set_ylabel("mean acceptance")
        ax.set_xticks(ks)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(sources):]:
        ax.axis("off")
    fig.suptitle("resispec_wor vs rrs_wor and the WOR optima (target p, draft q)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def markdown(rows: list[dict], keys: list[str]) -> str:
    def cell(value):
        if isinstance(value, float):
            return f"{value:.4f}" if value == 0 or abs(value) >= 1e-3 else f"{value:.1e}"
        return "-" if value is None else str(value)

    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(cell(row.get(key)) for key in keys) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few pairs and tuples (a smoke run)")
    args = parser.parse_args()
    small_pairs, large_pairs, samples, logged_rows = (4, 3, 20, 6) if args.quick else (40, 30, 200, None)
    small, exceptions = small_v_table(small_pairs, (2, 3, 4, 5), seed=1)
    large = []
    rng = np.random.default_rng(2)
    for family in FAMILIES:
        pairs = [synthetic_pair(family, 256, rng) for _ in range(large_pairs)]
        large += large_v_rows(f"{family} (V=256)", pairs, (2, 4, 8), samples, seed=3)
    for draft in ("q", "q_weak"):
        pairs = logged_pairs(draft)[:logged_rows]
        large += large_v_rows(f"SmolLM2 logged, draft {draft}", pairs, (2, 4, 8), samples, seed=4)
    result = {"small_v": small, "large_v": large, "exceptions_below_rrs_wor": exceptions}
    suffix = "_quick" if args.quick else ""
    (HERE / f"resispec_wor_acceptance{suffix}.json").write_text(json.dumps(result, indent=1))
    plot(small, large, HERE / f"resispec_wor_acceptance{suffix}.png")
    print(markdown(small, ["source", "k", "pairs", "rrs_wor", "resispec_wor", "sequential_optimum", "alpha_star_wor",
                           "share_of_sequential_gap", "share_of_alpha_gap", "pairs_below_rrs_wor",
                           "max_gap_to_sequential", "max_exact_law_error"]))
    print()
    print(markdown(large, ["source", "k", "pairs", "rrs_wor", "resispec_wor", "difference_se",
                           "alpha_star_wor_prefix", "alpha_star_wor_error", "alpha_star_iid", "share_of_alpha_gap"]))
    print(f"\npairs where resispec_wor < rrs_wor (exact, small V): {len(exceptions)}")


if __name__ == "__main__":
    main()
