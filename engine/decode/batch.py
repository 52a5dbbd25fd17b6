"""Many independent generations in lock step: each round's forwards and verifications batched over sequences.

`BatchDecoder` runs S generations from one prompt with the decoding loop's rule (`resispec.engine.decode.decoding`,
whose module docstring states it): the same resolved verification (`resispec.engine.verifiers.strategy.Verification`:
drafting by the verifier's rule, the chain part decided by batched sps, node-by-node verification, or a
sequence-level round verifier), the same trees (`resispec.engine.runtime.tree.CandidateTree`, equal root-to-node paths
sharing one row), the same processing of p and q, and the models' own forwards (`resispec.engine.runtime.forest`).
Per round of every unfinished sequence: one draft forward per level and one target forward for all of
them; drafting of a level, the chain part and each depth's verifications are one call for all of them.

Randomness is the loop's, in the loop's order: drafting from a ``torch.Generator`` seeded with ``seed``,
verification and sampling uniforms from ``numpy.random.default_rng(seed)``, each call drawing its rows
sequence by sequence. So a batch of one sequence decodes, token for token, what ``Decoder(..., seed)``
decodes (a test pins it); a sequence whose draft declines the round (``proposes``,
`resispec.engine.decode.decoding.drafts_at`) makes a one-token step, those sequences first; with S > 1 the
sequences are independent draws of the same process. It exists to audit the loop's law over tens of
thousands of generations (tests/engine/decode); no hooks (audit,
log, parity), no end-of-sequence token.
"""

from __future__ import annotations

import numpy as np
import torch

from resispec.engine.decode.decoding import AUTOREGRESSIVE, drafts_at
from resispec.engine.decode.processing import Sampling, draft_probs, target_probs
from resispec.engine.decode.walk import sample_rows, walk
from resispec.engine.runtime.compact_lm import lm_for
from resispec.engine.runtime.forest import ForestLM
from resispec.engine.runtime.tree import CandidateTree
from resispec.engine.runtime.tree_lm import TreeCacheLM
from resispec.engine.verifiers.strategy import Verification


class BatchDecoder:
    """S generations at a time from ``target_model`` with ``draft`` (a `TreeCacheLM`: `TreeLM` or a self-draft),
    ``verifier`` (a name, ``"ar"``, or a `Verification`), ``branching``, ``sampling`` and ``seed``, as `Decoder`."""

    def __init__(self, target_model: torch.nn.Module, draft: TreeCacheLM | None, verifier: str | Verification,
                 branching: tuple[int, ...] = (4, 2, 2, 1), sampling: Sampling = Sampling(), seed: int = 0) -> None:
        self.target_model = target_model
        self.sampling = sampling
        self.rng = np.random.default_rng(seed)
        self.generator = torch.Generator(device=target_model.device).manual_seed(seed)
        self.speculative = verifier != AUTOREGRESSIVE
        if self.speculative:
            if not isinstance(draft, TreeCacheLM):
                raise ValueError(f"draft: a batch needs a TreeCacheLM draft (TreeLM or a self-draft), got "
                                 f"{type(draft).__name__}")
            if hasattr(draft, "observe"):
                raise ValueError(f"draft: {type(draft).__name__} reads one sequence's target states; a batch does "
                                 "not hand them over (decode it with resispec.engine.decode.decoding.Decoder)")
            verification = verifier if isinstance(verifier, Verification) else Verification.of(verifier)
            self.tree = CandidateTree.from_branching(branching)
            verification.check_branching(self.tree.branching)
            self.round_verifier = verification.round
            self.node_verifier = verification.node_verifier()
            self.chain_length = next((d for d, b in enumerate(self.tree.branching) if b > 1), self.tree.depth)
            self.chain_verifier = verification.chain_verifier() if self.chain_length else None
        self.draft = draft

    def generate(self, prompt_ids: torch.Tensor, max_new_tokens: int, sequences: int) -> np.ndarray:
        """``sequences`` generations of ``max_new_tokens`` tokens after ``prompt_ids`` (long [T]): int64
        [sequences, max_new_tokens], row s = sequence s."""
        if max_new_tokens < 1 or sequences < 1:
            raise ValueError(f"max_new_tokens, sequences: must be >= 1, got {max_new_tokens}, {sequences}")
        target = ForestLM(lm_for(self.target_model), prompt_ids, sequences)
        draft = ForestLM(self.draft, prompt_ids, sequences) if self.speculative else None
        output: list[list[int]] = [[] for _ in range(sequences)]
        roots = [int(prompt_ids[-1])] * sequences
        active = list(range(sequences))
        prompt = prompt_ids.tolist()
        while active:
            if self.speculative:
                drafting = [s for s in active if drafts_at(self.draft, prompt + output[s])]
                stepping = [s for s in active if s not in drafting]
                step = self._step(target, stepping, roots) if stepping else []
                for s in stepping:  # a one-token step: the draft only learns the root
                    draft.commit(s, [], [roots[s]])
                active = stepping + drafting
                step += self._round(target, draft, drafting, roots) if drafting else []
            else:
                step = self._step(target, active, roots)
            for sequence, tokens in zip(active, step):
                output[sequence] += tokens[: max_new_tokens - len(output[sequence])]
                roots[sequence] = tokens[-1]
            active = [sequence for sequence in active if len(output[sequence]) < max_new_tokens]
        return np.array(output, dtype=np.int64)

    def _step(self, target: ForestLM, active: list[int], roots: list[int]) -> list[list[int]]:
        """Plain sampling: one token per active sequence."""
        logits = target.grow({s: ([roots[s]], [-1]) for s in active})
        for s in active:
            target.commit(s, [0], [])
        return [[token] for token in sample_rows(target_probs(logits, self.sampling), self.rng)]

    def _round(self, target: ForestLM, draft: ForestLM, active: list[int], roots: list[int]) -> list[list[int]]:
        """One speculative round of every active sequence: their emitted tokens, in ``active``'s order.

        Tensors: tokens (A, N) long (logical nodes, breadth first), p_all (A, N, V) at every node, q_all
        (A, I, V) at the I internal nodes; per sequence, ``rows`` maps a logical node to its model tree index.
        """
        tree, count = self.tree, len(active)
        tokens = torch.full((count, tree.num_nodes), -1, dtype=torch.long)
        tokens[:, 0] = torch.tensor([roots[s] for s in active])
        draft_rows, draft_seen = [{0: 0} for _ in active], [{} for _ in active]
        q_levels = [draft.grow({s: ([roots[s]], [-1]) for s in active})]  # level d: (A * nodes at d, V)
        for depth, children in enumerate(tree.branching):
            chosen = self.node_verifier.draft(draft_probs(q_levels[-1], self.sampling), children, self.generator)
            level = tree.level(depth + 1)
            tokens[:, level] = chosen.reshape(count, -1).cpu()
            if depth + 1 == tree.depth:  # the leaves are not fed to the draft
                break
            sizes = [len(seen) + 1 for seen in draft_seen]
            grown = {s: self._add_rows(tokens[a].tolist(), draft_rows[a], draft_seen[a], level)
                     for a, s in enumerate(active)}
            logits, offset, picks = draft.grow(grown), 0, []
            for a, s in enumerate(active):
                picks += [offset + draft_rows[a][node] - sizes[a] for node in range(level.start, level.stop)]
                offset += len(grown[s][0])
            q_levels.append(logits[picks])
        q_all = draft_probs(torch.cat([q.reshape(count, -1, q.shape[-1]) for q in q_levels], dim=1), self.sampling)
        target_rows, target_seen, grown = [{0: 0} for _ in active], [{} for _ in active], {}
        for a, s in enumerate(active):
            row_tokens, row_parents = self._add_rows(tokens[a].tolist(), target_rows[a], target_seen[a],
                                                     slice(1, tree.num_nodes))
            grown[s] = ([roots[s], *row_tokens], [-1, *row_parents])
        p_rows = target_probs(target.grow(grown), self.sampling)
        offsets = np.cumsum([0] + [len(grown[s][0]) for s in active])
        p_all = p_rows[torch.tensor([[offsets[a] + target_rows[a][node] for node in range(tree.num_nodes)]
                                     for a in range(count)])]
        ends, emitted = self._walk(tokens, p_all, q_all)
        for a, s in enumerate(active):
            path = tree.path(ends[a])
            target.commit(s, [target_rows[a][node] for node in path], [])
            fed = [node for node in path if node in draft_rows[a]]
            draft.commit(s, [draft_rows[a][node] for node in fed], tokens[a, path[len(fed):]].tolist())
        return emitted

    def _add_rows(self, tokens: list[int], rows: dict[int, int], seen: dict[tuple[int, int], int],
                  nodes: slice) -> tuple[list[int], list[int]]:
        """Give one sequence's logical ``nodes`` their tree indices in ``rows``: a node whose (parent's index,
        token) is already in ``seen`` shares that row (equal root-to-node paths, `resispec.engine.decode.expand`).
        Returns the new rows' tokens and parents (tree indices)."""
        new_tokens, new_parents = [], []
        for node in range(nodes.start, nodes.stop):
            key = (rows[int(self.tree.parents[node])], tokens[node])
            if key not in seen:
                seen[key] = len(seen) + 1  # index 0 is the root
                new_tokens.append(key[1])
                new_parents.append(key[0])
            rows[node] = seen[key]
        return new_tokens, new_parents

    def _walk(self, tokens: torch.Tensor, p_all: torch.Tensor,
              q_all: torch.Tensor) -> tuple[list[int], list[list[int]]]:
        """Verification from the roots down: per sequence the deepest accepted node and the emitted tokens
        (`resispec.engine.decode.walk`; a sequence-level verifier: one decision per round, sequence by sequence)."""
        tree, count = self.tree, tokens.shape[0]
        if self.round_verifier is None:
            return walk(tree, self.chain_length, self.chain_verifier, self.node_verifier, tokens, p_all, q_all,
                        self.rng)
        ends, emitted = [0] * count, [[] for _ in range(count)]
        for a in range(count):
            node, token = self.round_verifier(tree, tokens[a], p_all[a], q_all[a], self.rng)
            path = tree.path(node)
            ends[a], emitted[a] = node, [*tokens[a, path[1:]].tolist(), token]
        return ends, emitted
