"""Growing a `CandidateTree` with a draft q, level by level (one draft forward per level)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from engine.drafts.base import Draft
from engine.tree import CandidateTree

ChooseChildren = Callable[[torch.Tensor, int], torch.Tensor]
"""``choose(q_logits, k)``: q_logits float [M, V] for M nodes of one level -> long [M, k], the token ids of
each node's k children (the drafting scheme: i.i.d., without replacement, top-k; it owns its randomness)."""


def expand_tree(
    draft: Draft, tree: CandidateTree, root_token: int, choose: ChooseChildren
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draft the tokens of every node of `tree` below the root `root_token` (the last accepted token).

    For depth d = 0..D-1 the draft grows that level's nodes in one forward and `choose` picks
    ``tree.branching[d]`` children per node from q's logits there. The leaves are not fed to the draft.

    Returns:
        tokens: long [N], the token of every node (``tokens[0] = root_token``), ready for the target's
            ``grow(tokens, tree.parents)``.
        q_logits: float [N - num_leaves, V], q's logits at every internal node; row i belongs to node i
            (internal nodes come first in the breadth-first numbering).
    """
    tokens = torch.full((tree.num_nodes,), -1, dtype=torch.long)
    tokens[0] = root_token
    q_logits = []
    for depth, children in enumerate(tree.branching):
        level = tree.level(depth)
        logits = draft.grow(tokens[level], tree.parents[level])
        tokens[tree.level(depth + 1)] = choose(logits, children).reshape(-1).cpu()
        q_logits.append(logits)
    if not q_logits:
        raise ValueError("expand_tree needs a tree with at least one level below the root")
    return tokens, torch.cat(q_logits)
