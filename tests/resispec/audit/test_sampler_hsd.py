"""HSD's shipped chain verifier (arXiv 2601.05724; tests/resispec/audit/hsd_samplers.py loads it as shipped from
a cache path at a named commit and skips without it): biased, with ``approxi`` on or off.

The exact law of one round comes from running the shipped function once per random branch with its uniforms
forced (``hsd_round_law``); on HSD's own README example (V = 2, p = (1/3, 2/3), q = (2/3, 1/3)) it is sps at
gamma = 1 (the harness's control: TV 1e-17) and off the target by TV = 1/9 at gamma = 2, the smallest chain
where it can differ. ``resispec audit-sampler`` finds the bias by sampling too, at chain level and in its multi-draft
mode (two paths). docs/verifiers/hsd.md."""

import numpy as np
import pytest

pytest.importorskip("torch")

from resispec.audit.sampler import audit_sampler  # noqa: E402
from tests.resispec.audit.hsd_samplers import (  # noqa: E402
    hsd_branches,
    hsd_chain,
    hsd_chain_approxi,
    hsd_paths,
    hsd_round_law,
    hsd_source,
    load_hsd,
)

if load_hsd() is None:
    pytest.skip(f"HSD's utils.py is not at {hsd_source()} (tests/resispec/audit/hsd_samplers.py says how to put it "
                "there)", allow_module_level=True)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

P, Q = (1 / 3, 2 / 3), (2 / 3, 1 / 3)
"""HSD's README toy example: "p(A) = 1/3, p(B) = 2/3, q(A) = 2/3, q(B) = 1/3"."""


def target_law(p, length: int) -> np.ndarray:
    """``p`` at every one of ``length`` positions, independently: what an exact round continued by p gives."""
    law = np.ones(())
    for _ in range(length):
        law = np.multiply.outer(law, np.asarray(p))
    return law


@pytest.mark.parametrize("approxi", [False, True])
def test_one_draft_is_sps_and_exact(approxi):
    law = hsd_round_law(P, Q, 1, approxi)
    assert 0.5 * np.abs(law - target_law(P, 2)).sum() < 1e-12


@pytest.mark.parametrize("approxi", [False, True])
def test_two_drafts_on_its_own_example_are_off_by_a_ninth(approxi):
    law = hsd_round_law(P, Q, 2, approxi)
    assert law.sum() == pytest.approx(1, abs=1e-12)
    assert 0.5 * np.abs(law - target_law(P, 3)).sum() == pytest.approx(1 / 9, abs=1e-12)
    first_two = law.sum(axis=2)
    assert first_two[1, 0] == pytest.approx(1 / 3, abs=1e-12)  # the target gives 2/9
    assert first_two[1, 1] == pytest.approx(1 / 3, abs=1e-12)  # the target gives 4/9


def test_approxi_changes_nothing():
    """Its ``if approxi:`` branch is commented out in the shipped function: both settings have one law."""
    assert np.array_equal(hsd_round_law(P, Q, 3, False), hsd_round_law(P, Q, 3, True))


def test_the_block_is_accepted_on_the_uncapped_ratio():
    """Drafts (1, 0) have p/q = 2 then 1/2: the product is 1 and HSD emits both drafts every time, where block
    verification (which caps the running weight at 1 after each draft) accepts the block with probability 1/2."""
    emitted = {}
    for probability, tokens, _ in hsd_branches(P, Q, 2):
        emitted[tokens] = emitted.get(tokens, 0.0) + probability
    assert emitted[(1, 0)] == pytest.approx(Q[1] * Q[0], abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("sampler", [hsd_chain, hsd_chain_approxi])
def test_the_sampling_audit_rejects_it_at_chain_level(sampler):
    report = audit_sampler(sampler, "chain", gamma=4, samples=6000, families=["dirichlet"], arrays="torch",
                           dtype="float32", inputs="logits")
    assert report.verdict == "FAIL", report.format()
    assert any(test.dimension == "law" for test in report.rejected_tests)
    assert report.output.clean


@pytest.mark.slow
def test_the_sampling_audit_rejects_its_multi_draft_mode_on_two_paths():
    report = audit_sampler(hsd_paths, "tree", branching=(2, 1, 1), samples=2000, families=["suite"],
                           arrays="torch", dtype="float32", inputs="logits")
    assert report.verdict == "FAIL", report.format()
    assert any(test.dimension == "law" for test in report.rejected_tests)
    assert report.output.clean
