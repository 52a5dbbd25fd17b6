"""gbv, greedy multi-path block verification of i.i.d. paths over their prefix trie (resispec/sequence/gbv.py):
the exact round law on every small multi-path tree, block at K = 1, sampling against the law, the control
caught, and its acceptance against traversal and the round LP."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from resispec.audit.goodness_of_fit import merged_chi_square
from resispec.audit.round_law import exact_round_law
from resispec.sequence import get_round_verifier, round_tree
from resispec.sequence.enumeration import RoundModels, dirichlet_conditional
from resispec.sequence.gbv import prefix_trie


def pair(seed: int):
    return dirichlet_conditional(3, 2 * seed), dirichlet_conditional(3, 2 * seed + 1)


@pytest.mark.parametrize("branching", [(2, 1), (3, 1), (2, 1, 1), (2, 2)])
@pytest.mark.parametrize("seed", [300, 301])
def test_gbv_reproduces_the_target_on_multipath_trees(branching, seed):
    result = exact_round_law("gbv", *pair(seed), 3, branching)
    assert result.exact, result.max_error


@pytest.mark.parametrize("seed", range(4))
def test_one_path_is_block_verification(seed):
    models = pair(400 + seed)
    gbv, block = (exact_round_law(name, *models, 3, (1, 1, 1)) for name in ("gbv", "block"))
    assert np.abs(gbv.law - block.law).max() < 1e-14


def test_the_control_is_caught():
    result = exact_round_law("gbv_naive", *pair(301), 3, (2, 1))
    assert result.max_error > 1e-3


def test_the_prefix_trie_merges_shared_prefixes_in_draw_order():
    # three paths of two tokens: (2, 0), (1, 2), (2, 1); the first and third share the prefix (2,)
    tree = round_tree([-1, 0, 0, 0, 1, 2, 3], [0, 2, 1, 2, 0, 2, 1], 3)
    trie, rep = prefix_trie(tree)
    assert trie.parents.tolist() == [-1, 0, 0, 1, 2, 1]  # node 6 (path 3's second token) joins node 1's children
    assert trie.tokens.tolist() == [0, 2, 1, 0, 2, 1]
    assert rep.tolist() == [0, 1, 2, 4, 5, 6]
    assert trie.children[1] == (3, 5)


def shared_prefix_round(seed: int):
    """Three paths of two tokens, the first and third sharing their first token."""
    rng = np.random.default_rng(seed)
    parents, tokens = [-1, 0, 0, 0, 1, 2, 3], [0, 2, 1, 2, 0, 2, 1]
    p = rng.dirichlet(np.ones(3), size=7)
    p[3] = p[1]  # nodes 1 and 3 are the same prefix
    q = rng.dirichlet(np.ones(3), size=4)
    q[3] = q[1]
    return round_tree(parents, tokens, 3), p, q


def test_sampled_decisions_follow_the_conditional_law():
    tree, p, q = shared_prefix_round(9)
    verifier = get_round_verifier("gbv")
    law = verifier.law(tree, p, q).joint
    assert law.sum() == pytest.approx(1.0, abs=1e-12) and law[6].sum() > 0.05  # the merged path's leaf is used
    rng = np.random.default_rng(2)
    counts = np.zeros(law.size, dtype=np.int64)
    for _ in range(3000):
        node, token = verifier.verify(tree, p, q, rng.random(verifier.uniforms_needed(tree)))
        counts[node * 3 + token] += 1
    assert merged_chi_square(counts, law.ravel()).pvalue > 1e-3


def test_gbv_gains_over_traversal_on_average_and_stays_below_the_round_lp():
    from resispec.sequence.round_lp import optimal_round_acceptance

    gains = []
    for seed in (300, 302, 303, 304):
        models = pair(seed)
        gbv = exact_round_law("gbv", *models, 3, (2, 1)).expected_accepted
        gains.append(gbv - exact_round_law("traversal", *models, 3, (2, 1)).expected_accepted)
        assert gbv <= optimal_round_acceptance(*models, 3, (2, 1)) + 1e-7
    assert np.mean(gains) > 0.005


def test_gbv_is_exact_on_a_tree_with_leaves_at_two_depths():
    """Root children 1 (continued by node 3) and 2 (a leaf), all i.i.d.: every drafted tree enumerated by hand,
    the emitted sequence continued by the target to three tokens, against the target's law."""
    target, draft = pair(301)  # gbv_naive is off by 6e-3 here
    models = RoundModels(target, draft, 3, (1, 1))  # depth 2: the target's law of three tokens and its blocks
    gbv = get_round_verifier("gbv")
    parents = [-1, 0, 0, 1]
    law = np.zeros(27)
    for a, b in itertools.product(range(3), repeat=2):
        for c in range(3):
            chance = draft(())[a] * draft(())[b] * draft((a,))[c]
            prefixes = [(), (a,), (b,), (a, c)]
            tree = round_tree(parents, [0, a, b, c], 3)
            p = np.stack([target(prefix) for prefix in prefixes])
            outcome = gbv.law(tree, p, np.stack([draft(()), draft((a,))]))
            for node, prefix in enumerate(prefixes):
                branch = outcome.joint[node][:, None] * models.next_then_target(prefix)
                law[models.block(prefix)] += chance * branch.ravel()
    assert np.abs(law - models.target_law()).max() < 1e-12


def test_without_shared_prefixes_gbv_decides_like_traversal_wor():
    """On a tree whose siblings are distinct (root-WOR paths, the moonshot's trees) the trie is the tree, so the
    greedy construction is traversal_wor there: the same law and the same decisions."""
    rng = np.random.default_rng(4)
    tree = round_tree([-1, 0, 0, 0, 1, 2, 3], [0, 2, 0, 1, 1, 2, 2], 3)
    p, q = rng.dirichlet(np.ones(3), size=7), rng.dirichlet(np.ones(3), size=4)
    gbv, wor = get_round_verifier("gbv"), get_round_verifier("traversal_wor")
    assert np.abs(gbv.law(tree, p, q).joint - wor.law(tree, p, q).joint).max() < 1e-15
    for _ in range(200):
        u = rng.random(tree.num_nodes)
        assert gbv.verify(tree, p, q, u) == wor.verify(tree, p, q, u)
