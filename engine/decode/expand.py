"""Growing a `CandidateTree` with a draft q, level by level (one draft forward per level).

Identical prefixes share a row. Drafted i.i.d., siblings often repeat a token; two nodes whose
root-to-node token paths are equal have the same context, hence the same logits for p and for q, so
the models compute one *row* for them (the merge GSD makes of equal prefixes). Each logical node keeps
its own children, drawn independently, and verification still sees every candidate of every node:
only the forward passes are shared, never a random draw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from resispec.engine.drafts.base import Draft
from resispec.engine.runtime.tree import CandidateTree

ChooseChildren = Callable[[torch.Tensor, int], torch.Tensor]
"""``choose(q_logits, k)``: q_logits float [M, V] for M nodes of one level -> long [M, k], the token ids of
each node's k children (the drafting scheme: i.i.d., without replacement, top-k; it owns its randomness)."""


@dataclass
class DraftedTree:
    """A drafted tree: its logical nodes (``tree``'s numbering) and the distinct rows the models compute.

    Attributes:
        tokens: long [N], the token of every logical node (``tokens[0]`` = the root).
        q_logits: float [I, V], q's logits at every internal logical node (row i = node i).
        row: long [N], the row (distinct root-to-node path) of each logical node.
        row_tokens, row_parents: long [R], the rows as a tree for ``grow`` (parents are row indices).
    """

    tokens: torch.Tensor
    q_logits: torch.Tensor
    row: torch.Tensor
    row_tokens: torch.Tensor
    row_parents: torch.Tensor


def expand_tree(draft: Draft, tree: CandidateTree, root_token: int, choose: ChooseChildren) -> DraftedTree:
    """Draft the tokens of every node of `tree` below the root `root_token` (the last accepted token).

    For depth d = 0..D-1 the draft grows the level's new rows in one forward and `choose` picks
    ``tree.branching[d]`` children for every logical node of the level from q's logits there. Children
    whose (parent row, token) already exists reuse that row. The leaves are not fed to the draft.
    """
    if not tree.branching:
        raise ValueError("expand_tree needs a tree with at least one level below the root")
    tokens = torch.full((tree.num_nodes,), -1, dtype=torch.long)
    tokens[0] = root_token
    row = torch.zeros(tree.num_nodes, dtype=torch.long)
    row_tokens, row_parents, row_of_path = [root_token], [-1], {}
    fed, q_logits = 0, []
    for depth, children in enumerate(tree.branching):
        level = tree.level(depth)
        first, fed = fed, len(row_tokens)  # this level's rows: [first, fed)
        logits = draft.grow(torch.tensor(row_tokens[first:]), torch.tensor(row_parents[first:]))
        level_logits = logits[row[level] - first]
        chosen = choose(level_logits, children).reshape(-1).cpu()
        next_level = tree.level(depth + 1)
        tokens[next_level] = chosen
        parents = tree.parents[next_level]
        for node, (parent, token) in enumerate(zip(parents.tolist(), chosen.tolist()), start=next_level.start):
            key = (int(row[parent]), token)
            if key not in row_of_path:
                row_of_path[key] = len(row_tokens)
                row_tokens.append(token)
                row_parents.append(key[0])
            row[node] = row_of_path[key]
        q_logits.append(level_logits)
    return DraftedTree(tokens, torch.cat(q_logits), row, torch.tensor(row_tokens), torch.tensor(row_parents))
