"""The smaller pieces: the processing law (NumPy and torch, equal to the engine's), ``audit_counts``, the
family-wise helper, the exports, and the sampler audit running where torch cannot be imported."""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import resispec.audit as audit
from resispec.audit import FAMILY_ALPHA, audit_counts, bonferroni_level, family_verdict
from resispec.processing import Processing, process_logits, process_probs

ROOT = Path(__file__).resolve().parents[3]
SETTINGS = [Processing(), Processing(0.7, 3), Processing(1.3, None, 0.8), Processing(0.5, 2, 0.9),
            Processing(2.0, 4, 0.5), Processing(0.0)]


def _reference_law(row: np.ndarray, processing: Processing) -> np.ndarray:
    """The processing law of one logit row, token by token in plain Python (the module doc's definition)."""
    if processing.temperature == 0:
        return np.eye(row.size)[int(np.argmax(row))]
    weights = np.exp((row - row.max()) / processing.temperature)
    probs = weights / weights.sum()
    if processing.top_k is not None:
        kth = sorted(probs, reverse=True)[min(processing.top_k, row.size) - 1]
        probs = np.where(probs >= kth, probs, 0.0)
    if processing.top_p is not None:
        order = sorted(range(row.size), key=lambda token: (-probs[token], token))
        kept, mass = set(), 0.0
        for token in order:
            if mass < processing.top_p * probs.sum():
                kept.add(token)
            mass += probs[token]
        probs = np.array([probs[t] if t in kept else 0.0 for t in range(row.size)])
    return probs / probs.sum()


@pytest.mark.parametrize("processing", SETTINGS, ids=str)
def test_the_processing_law_in_numpy_torch_and_the_engine(processing):
    """The core's law (NumPy and torch rows) equals the token-by-token definition, and the engine uses it."""
    torch = pytest.importorskip("torch")
    from resispec.engine.decode.processing import target_probs

    logits = np.random.default_rng(0).standard_normal((5, 9))
    logits[0, :3] = logits[0, 3]  # ties at the top-k / top-p cut
    expected = np.stack([_reference_law(row, processing) for row in logits])
    assert np.abs(process_logits(logits, processing) - expected).max() < 1e-12
    assert np.abs(process_logits(torch.tensor(logits), processing).numpy() - expected).max() < 1e-12
    rounded = logits.astype(np.float32).astype(np.float64)  # the engine's logits are float32
    engine_law = target_probs(torch.tensor(logits).float(), processing).numpy()
    assert np.abs(engine_law - np.stack([_reference_law(row, processing) for row in rounded])).max() < 1e-12


def test_processing_from_probabilities_keeps_zeros_and_applies_temperature():
    p = np.array([0.5, 0.3, 0.2, 0.0])
    cooled = process_probs(p, Processing(0.5))
    assert cooled[3] == 0 and np.allclose(cooled[:3], p[:3] ** 2 / (p[:3] ** 2).sum())
    assert np.array_equal(process_probs(p, Processing(top_k=1)), [1.0, 0, 0, 0])
    with pytest.raises(ValueError, match="top_k"):
        Processing(top_k=0)


def test_audit_counts_passes_the_right_law_and_rejects_a_wrong_one():
    p = np.array([0.5, 0.3, 0.2])
    counts = np.random.default_rng(0).multinomial(5000, p)
    assert audit_counts(counts, p, 0.01).passed
    assert not audit_counts(counts, np.array([0.45, 0.35, 0.2]), 0.01).passed
    impossible = audit_counts(np.array([10, 0, 1]), np.array([0.9, 0.1, 0.0]), 0.01)
    assert not impossible.passed and "1 token(s) emitted where p = 0" in impossible.note
    with pytest.raises(ValueError, match="counts"):
        audit_counts(np.array([1.5, 2.0]), np.array([0.5, 0.5]), 0.01)


def test_the_family_verdict_is_bonferroni_and_nothing_tested_is_no_pass():
    assert bonferroni_level(4) == FAMILY_ALPHA / 4
    verdict = family_verdict([0.5, 0.004, 0.2], family_alpha=0.03)
    assert verdict.level == 0.01 and verdict.rejected == (1,) and not verdict.passed
    assert family_verdict([0.5, 0.2], family_alpha=0.03).passed
    untested = family_verdict([1.0, 1.0], dfs=[0, 0])
    assert untested.untested == (0, 1) and not untested.tested and not untested.passed


def test_the_issue_asks_for_these_exports():
    for name in ("audit_sampler", "audit_counts", "family_verdict", "bonferroni_level", "merged_chi_square",
                 "total_variation", "tv_upper_bound", "min_detectable_tv", "zoo_sampler", "SamplerReport"):
        assert name in audit.__all__ and hasattr(audit, name)


SCRIPT = textwrap.dedent("""
    import sys

    class NoTorch:  # a meta path finder that refuses torch and its submodules
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] == "torch":
                raise ImportError("torch is blocked in this test")
    sys.meta_path.insert(0, NoTorch())
    from resispec.audit import audit_sampler, zoo_sampler

    for level in ("node", "chain"):
        report = audit_sampler(zoo_sampler("rrs", level), level, gamma=2, samples=100, probe_edges=True)
        assert report.verdict == "PASS", report.format()
    assert "torch" not in sys.modules
    print("ok")
""")


def test_the_sampler_audit_runs_without_torch():
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok"]
