"""HSD's shipped ``_speculative_sampling`` (hierarchical speculative decoding, arXiv 2601.05724) as chain samplers
of the audit contract, loaded as shipped from a cache path and never copied into this repository.

The verifier lives in HSD's patched copy of transformers, ``transformers/generation/utils.py`` of
https://github.com/ZhouYuxuanYX/Hierarchical-Speculative-Decoding, at ``COMMIT`` (the last commit of that file
that imports: the two later ones, 3b1ae00 and 747d259 = HEAD, fail with ``TabError`` at the tab-indented
"eliminate for loop" block; docs/verifiers/hsd.md). Put the file at ``hsd_source()`` (``RESISPEC_HSD_CACHE`` or
``~/.cache/resispec/hsd``, then ``<COMMIT>/utils.py``), e.g.

    curl -L -o ~/.cache/resispec/hsd/<COMMIT>/utils.py \\
        https://raw.githubusercontent.com/ZhouYuxuanYX/Hierarchical-Speculative-Decoding/<COMMIT>/transformers/generation/utils.py

The whole file imports transformers' package internals (relative imports), so only its ``_speculative_sampling``
definition is taken out of it (by ``ast``, unchanged) and executed with ``torch`` and ``torch.nn.functional`` in
scope. HSD's own runs call it with ``backward=True, clever=True`` (the scripts ``*_backward_clever*.sh``, the
method the paper calls HSD), one sequence at a time, on the processed logits: so does ``hsd_chain`` here.
"""

from __future__ import annotations

import ast
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

COMMIT = "f3adf7f13e43011d49c29a9ce9d7ad79a1296343"
"""HSD's commit of 2025-10-15, the last at which its ``transformers/generation/utils.py`` imports."""


def hsd_source() -> Path:
    """Where the shipped ``utils.py`` at ``COMMIT`` is expected."""
    root = Path(os.environ.get("RESISPEC_HSD_CACHE", Path.home() / ".cache" / "resispec" / "hsd"))
    return root / COMMIT / "utils.py"


def load_hsd():
    """HSD's ``_speculative_sampling`` from ``hsd_source()``, executed as shipped; ``None`` if the file is absent."""
    path = hsd_source()
    if not path.is_file():
        return None
    text = path.read_text()
    tree = ast.parse(text)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_speculative_sampling")
    namespace = {"torch": torch, "F": F}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), namespace)  # noqa: S102
    return namespace["_speculative_sampling"]


def _never_stop(ids, scores=None):
    return False


def hsd_chain(p, q, drafts, approxi=False):  # p (B, gamma + 1, V), q (B, gamma, V) logits; drafts (B, gamma)
    verify = load_hsd()
    gamma = drafts.shape[1]
    out = torch.full((drafts.shape[0], gamma + 1), -1)
    for b in range(drafts.shape[0]):
        tokens, _, _ = verify(drafts[b:b + 1], q[b:b + 1], gamma, p[b:b + 1], torch.tensor([False]), backward=True,
                              clever=True, approxi=approxi, multidraft=1, parallel=False, stop=_never_stop)
        out[b, :tokens.shape[1]] = tokens[0]
    return out


def hsd_chain_approxi(p, q, drafts):
    return hsd_chain(p, q, drafts, approxi=True)


def _forced_call(verify, drafts, q_logits, p_logits, u_step, u_accept, approxi):
    """One call of the shipped function with its randomness forced: the first ``torch.rand_like`` (the step-back
    uniforms, one per position) returns ``u_step``, the second (the block acceptance) ``u_accept``, and
    ``torch.multinomial`` records the weights it is handed and returns token 0. Returns the tokens emitted before
    that draw, the draw's weights (normalised) and the step-back probabilities (``return_probs=True``)."""
    state = {"calls": 0, "weights": None}
    rand_like, multinomial = torch.rand_like, torch.multinomial

    def forced_rand_like(x, *args, **kwargs):
        state["calls"] += 1
        u = u_step if state["calls"] == 1 else u_accept
        return torch.full_like(x, 0.0) + torch.as_tensor(u, dtype=x.dtype).reshape(-1, *([1] * (x.dim() - 2)))

    def recording_multinomial(weights, num_samples=1, *args, **kwargs):
        state["weights"] = weights.detach().double().reshape(-1).numpy().copy()
        return torch.zeros(weights.shape[:-1] + (1,), dtype=torch.long)

    torch.rand_like, torch.multinomial = forced_rand_like, recording_multinomial
    try:
        tokens, _, step_back, *_ = verify(drafts, q_logits, drafts.shape[1], p_logits, torch.tensor([False]),
                                          backward=True, clever=True, approxi=approxi, multidraft=1, parallel=False,
                                          stop=_never_stop, return_probs=True)
    finally:
        torch.rand_like, torch.multinomial = rand_like, multinomial
    emitted = tuple(tokens[0].tolist())[:-1]
    return emitted, state["weights"] / state["weights"].sum(), np.asarray(step_back, dtype=float).reshape(-1)


def hsd_branches(p, q, gamma: int, approxi: bool = False) -> Iterator[tuple[float, tuple, np.ndarray]]:
    """Every random branch of one HSD round on the context-independent chain (``p``, ``q`` the same law at every
    position), as ``(probability, tokens emitted before the final draw, the final draw's law)``.

    A round's randomness is the drafts (i.i.d. ``q``), one step-back Bernoulli per position (probabilities read back
    from the function), the block acceptance (``u <= prod_i p(x_i)/q(x_i)``, the ratio HSD compares with) and one
    final draw; each branch is run once with uniforms forced inside it (the middle of its interval)."""
    verify = load_hsd()
    p64, q64 = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    p_logits = torch.log(torch.tensor(p64)).expand(1, gamma + 1, len(p64)).clone()
    q_logits = torch.log(torch.tensor(q64)).expand(1, gamma, len(q64)).clone()
    for tokens in itertools.product(np.flatnonzero(q64 > 0).tolist(), repeat=gamma):
        drafts = torch.tensor([tokens])
        halves = np.full(gamma, 0.5)
        _, _, step_back = _forced_call(verify, drafts, q_logits, p_logits, halves, 0.5, approxi)
        ratio = float(np.prod(p64[list(tokens)] / q64[list(tokens)]))
        draft_probability = float(np.prod(q64[list(tokens)]))
        for pattern in itertools.product((True, False), repeat=gamma):
            steps = np.where(pattern, step_back, 1 - step_back)
            u_step = np.where(pattern, step_back / 2, (1 + step_back) / 2)
            accepted = min(1.0, ratio)
            for chance, u in ((accepted, ratio / 2), (1 - accepted, (1 + accepted) / 2)):  # accept, reject
                probability = draft_probability * float(np.prod(steps)) * chance
                if probability > 0:
                    emitted, law, _ = _forced_call(verify, drafts, q_logits, p_logits, u_step, u, approxi)
                    yield probability, emitted, law


def hsd_round_law(p, q, gamma: int, approxi: bool = False) -> np.ndarray:
    """Exact law, shape ``(V,) * (gamma + 1)``, of one HSD round's tokens continued by target sampling to
    ``gamma + 1`` tokens (an exact round gives ``p`` at every position, independently: the audit's identity)."""
    p64 = np.asarray(p, dtype=float)
    size = len(p64)
    law = np.zeros((size,) * (gamma + 1))
    for probability, emitted, final in hsd_branches(p, q, gamma, approxi):
        for token in np.flatnonzero(final > 0):
            head = emitted + (int(token),)
            tail = np.ones(())
            for _ in range(gamma + 1 - len(head)):
                tail = np.multiply.outer(tail, p64)
            law[head] += probability * final[token] * tail
    return law


def hsd_paths(p, q, paths):  # p (B, L, D + 1, V), q (B, L, D, V) logits; paths (B, L, D): L drafted paths
    """HSD's multi-draft mode as its multi-draft script runs it (``--multidraft K --parallel``: K drafted sequences,
    verified path after path against the previous path's residual), on a tree of L paths that share only the
    root (branching ``(L, 1, ..., 1)``: L i.i.d. draft sequences)."""
    verify = load_hsd()
    count, depth = paths.shape[1], paths.shape[2]
    out = torch.full((paths.shape[0], depth + 1), -1)
    for b in range(paths.shape[0]):
        tokens, _, _ = verify(paths[b], q[b], depth, p[b], torch.tensor([False] * count), backward=True,
                              clever=True, approxi=False, multidraft=count, parallel=True, stop=_never_stop)
        out[b, :tokens.shape[1]] = tokens[0]
    return out
