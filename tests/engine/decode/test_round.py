"""The pieces composed as the README's round: greedy tree speculation must reproduce greedy decoding by p."""

from __future__ import annotations

import pytest
import torch

from resispec.engine.decode.expand import expand_tree
from resispec.engine.drafts import EarlyExitDraft
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.runtime.tree import CandidateTree
from resispec.engine.runtime.tree_lm import TreeLM
from tests.engine.reference import last_logits


def greedy_accept(tree: CandidateTree, tokens: torch.Tensor, p_logits: torch.Tensor) -> tuple[int, int]:
    """Walk down while p's argmax is among the children: (deepest accepted node, p's argmax there)."""
    node = 0
    while True:
        best = int(p_logits[node].argmax())
        children = tree.children(node)
        matches = (tokens[children] == best).nonzero().flatten()
        if len(matches) == 0:
            return node, best
        node = children.start + int(matches[0])


def top_k(q_logits: torch.Tensor, k: int) -> torch.Tensor:
    return q_logits.topk(k, dim=-1).indices


@pytest.mark.parametrize("branching", [(4, 2, 2, 1), (2,), (1, 1, 1, 1)])
def test_greedy_tree_decoding_reproduces_greedy_p(tiny_models, branching):
    p_model, q_model = tiny_models
    prompt, new_tokens = torch.tensor([1, 5, 2]), 24
    expected = prompt.clone()
    while len(expected) < len(prompt) + new_tokens:
        expected = torch.cat([expected, last_logits(p_model, expected).argmax()[None]])

    tree = CandidateTree.from_branching(branching)
    for draft in (TreeLM(q_model), EarlyExitDraft(tiny_llama(seed=0), num_layers=1)):
        target = TreeLM(p_model)
        target.prefill(prompt)
        draft.prefill(prompt)
        emitted, root, deepest = prompt.tolist(), int(prompt[-1]), 0
        while len(emitted) < len(expected):
            tokens = expand_tree(draft, tree, root, top_k).tokens
            node, root = greedy_accept(tree, tokens, target.grow(tokens, tree.parents))
            accepted = tokens[tree.path(node)]
            target.commit(accepted)
            draft.commit(accepted)
            emitted += accepted[1:].tolist() + [root]
            deepest = max(deepest, len(accepted) - 1)
        assert emitted[: len(expected)] == expected.tolist()
        if isinstance(draft, EarlyExitDraft):  # coverage: leaves (never fed to the draft) get accepted
            assert deepest == tree.depth
