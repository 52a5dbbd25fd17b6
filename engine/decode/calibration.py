"""Calibration for ``--tree auto``: measured acceptance of the verifier and measured forward costs.

Once per (target, draft, verifier, sampling) and machine:

- **acceptance** ``A(k)``, k = 1..K: the target samples a continuation of each calibration prompt
  (``engine/data/prompts.json``, the draft-training prompts, never the benchmark's), both models score
  it teacher-forced, and A(k) is the mean over positions of the verifier's exact acceptance with k
  candidates at (p_t, q_t), from the core (`resispec` ``acceptance``). For a verifier whose
  one-candidate rule is sps, ``A(1) = sum_x min(p, q)`` over the whole vocabulary. For k >= 2 (and for
  top-k drafting) the pair is restricted to the tokens of largest ``p + q`` (32, or fewer where the
  verifier's exact acceptance enumerates tuples, as the WOR ones do) plus one merged tail token; merging
  the tail slightly overstates acceptance (docs/sim.md, ``tail=merge``), an approximation used only to
  choose the tree.
  Positions where the draft declines a round (``proposes``, `resispec.engine.decode.decoding.drafts_at`: the n-gram
  draft without a match) are left out: the loop makes them one-token rounds, whatever the tree, so A(k) and
  the tree are those of the rounds that draft. A draft that reads the target's states (the feature draft)
  is scored with the target's own state at every position, i.e. as a depth-1 node; its deeper nodes, fed
  its own predictions, accept less (docs/draft.md: 0.333 against 0.381 at depth 2), which A(k) does not
  see, so its deeper trees are predicted optimistically.
- **correlation** ``kappa_d``: consecutive positions are not independent, so the probability of
  accepting d positions in a row is measured too, from the one-candidate acceptances ``sum min(p, q)``
  along each continuation (`resispec.engine.decode.tree_search.survival_correlation`).
- **verification cost** ``u(k)``: mean seconds of one node's verification with k candidates.
- **costs**: median seconds of one target forward over n nodes (n = 1..32, sampled and interpolated)
  and of one draft forward over w rows, one level of w children below a grown root (w = 1..16: the widest
  level a tree of 32 nodes feeds the draft), on a cache of the calibration prompt.
- **what the loop adds**: timed in isolation, forwards find their weights in cache, and they leave out the
  probability processing, the drafting draws and the bookkeeping. So the calibration decodes the first
  calibration prompt for real (`LOOP_TOKENS` tokens, `resispec.engine.decode.decoding.Decoder`, the prompt's prefill
  not counted), plainly and with a chain of one, and charges the difference from the modelled cost: ``v_plain``
  per plain token (measured seconds per token minus ``t(1)``) and ``v`` per round (measured seconds per round
  minus ``c(1) + t(2) + u(1)``; one-token rounds of a draft that declines are charged as plain tokens), each at
  least 0. Both are constants of the round, whatever its shape: the processing of the extra rows of a wider
  tree (about 0.3 ms a row at V = 49,152) is left out.

The result is cached as JSON under the resispec cache folder (`resispec.engine.model.gguf.cache_root`), with what
it is (``made``): the date, the load average before and after, the CPU (model and vector extensions), torch's
version and the CPU capability its kernels dispatch to (``ATEN_CPU_CAPABILITY``), and the thread count. The CPU,
torch and capability are part of the key too, so an entry from another machine or torch is never used (one that
claims them falsely is discarded). The decoder measures its own rounds against it
(`resispec.engine.decode.adaptive`); one found far off there is refreshed with the costs it measured
(`refresh_calibration`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

import numpy as np
import torch

from resispec import get_verifier
from resispec.engine.data.prompts import encode_prompts, load_prompts
from resispec.engine.decode.decoding import AUTOREGRESSIVE, Decoder, drafts_at
from resispec.engine.decode.processing import Sampling, draft_probs, target_probs
from resispec.engine.decode.timing import median_seconds
from resispec.engine.decode.tree_search import MAX_CHILDREN, MAX_NODES, TreeChoice, best_tree, survival_correlation
from resispec.engine.drafts.base import Draft
from resispec.engine.model.block_kernels import block_kernels
from resispec.engine.model.compute import native_head_of, target_compute_of
from resispec.engine.model.gguf import cache_root
from resispec.engine.runtime.compact_lm import lm_for
from resispec.engine.runtime.machine import cpu_description
from resispec.formats.atomic import atomic_write_text
from resispec.progress import Progress

ACCEPTANCE_SUPPORTS = (32, 12, 6)
MULTI_CANDIDATE_POSITIONS = 16
ENUMERATION_BUDGET = 5000
ROUNDING = 1e-9
VERIFY_COST_ROWS = 5
COST_POINTS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
DRAFT_COST_POINTS = COST_POINTS[: bisect_left(COST_POINTS, (MAX_NODES - 1) // 2) + 1]
"""The draft's cost is needed only up to (MAX_NODES - 1) // 2 = 15 rows: the leaves are never fed, and every
fed level has at least as many nodes below it, so ``1 + 2 w <= MAX_NODES`` for the widest fed level w."""
CALIBRATION_PROMPT_COUNT = 4
LOOP_TOKENS = 64
"""Tokens decoded for real, plainly and with a chain of one, to measure what the loop adds (module docstring)."""
FORMAT = 10  # 10: what it is (``made``: date, load, CPU, torch, capability, threads);
# 6: forwards of integer-kernel models timed with the compiled row kernels (resispec.engine.model.row_glue);
# 7: a draft's forward timed as one level of n rows below a grown root (the feature draft needs its parents first);
# 8: u(k) timed after one untimed verification (the first call's costs had doubled u(1) in one calibration);
# 9: v and v_plain measured from real decoding (they were u(1): 0.8 ms against 3-10 ms a round measured)


@dataclass
class Calibration:
    """Measured inputs of `resispec.engine.decode.tree_search.best_tree` (seconds; ``acceptance[k - 1] = A(k)``)."""

    acceptance: list[float]
    target_seconds: dict[int, float]
    draft_seconds: dict[int, float]
    round_seconds: float
    positions: int
    correlation: list[float]
    verify_seconds: dict[int, float]
    plain_round_seconds: float
    """``v_plain``: seconds per plain token besides its forward (``round_seconds``: ``v``, per round)."""
    made: dict = field(default_factory=dict)
    """What it is (module docstring): ``date``, ``load`` (1-minute load average before and after), ``cpu``,
    ``torch``, ``capability``, ``threads``."""

    def target_cost(self, nodes: int) -> float:
        return interpolate(self.target_seconds, nodes)

    def draft_cost(self, rows: int) -> float:
        return interpolate(self.draft_seconds, rows)

    def choose(self, max_nodes: int = MAX_NODES, chains_only: bool = False, plain: bool = False) -> TreeChoice:
        """The best tree (``chains_only``: chain); with ``plain``, ``()`` where plain decoding is predicted faster."""
        acceptance = self.acceptance[:1] if chains_only else self.acceptance
        return best_tree(acceptance, self.target_cost, self.draft_cost, self.round_seconds, max_nodes,
                         correlation=self.correlation, verify_cost=self.verify_seconds.__getitem__, plain=plain,
                         plain_cost=self.plain_round_seconds)


def machine_identity() -> dict:
    """What measured costs depend on besides the configuration: the CPU (model and vector extensions), torch's
    version, the CPU capability its kernels dispatch to, and the kernel of the file's blocks
    (`resispec.engine.model.block_kernels`)."""
    return {"cpu": cpu_description(), "torch": torch.__version__,
            "capability": torch.backends.cpu.get_cpu_capability(), "block_kernels": block_kernels()}


def load_average() -> float | None:
    """The 1-minute load average (None where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def interpolate(points: dict[int, float], x: int) -> float:
    """A measured cost curve ``points`` (nodes or rows -> seconds) at ``x``, linear between its points."""
    keys = sorted(points)
    return float(np.interp(x, keys, [points[k] for k in keys]))


def truncated_pair(p: np.ndarray, q: np.ndarray,
                   support: int = ACCEPTANCE_SUPPORTS[0]) -> tuple[np.ndarray, np.ndarray]:
    """(p, q) on the ``support`` tokens of largest p + q, plus one token holding the rest of each's mass."""
    top = np.argsort(-(p + q), kind="stable")[:support]
    p_top, q_top = p[top], q[top]
    return (np.append(p_top, max(0.0, 1.0 - p_top.sum())), np.append(q_top, max(0.0, 1.0 - q_top.sum())))


def measure_acceptance(p_rows: np.ndarray, q_rows: np.ndarray, verifier: str, max_children: int) -> list[float]:
    """``A(1..K)``: mean exact acceptance over the rows (module docstring). For k >= 2 the first
    ``MULTI_CANDIDATE_POSITIONS`` rows are used on the largest of ``ACCEPTANCE_SUPPORTS`` that the
    verifier's exact acceptance can take (the enumerating ones refuse large tuple counts)."""
    rule = get_verifier(verifier)
    top = max_children if rule.max_k is None else min(max_children, rule.max_k)
    curve = []
    for k in range(1, top + 1):
        if k == 1 and rule.single_candidate_is_sps:
            curve.append(float(np.minimum(p_rows, q_rows).sum(axis=1).mean()))
            continue
        rows = slice(MULTI_CANDIDATE_POSITIONS)
        curve.append(_truncated_acceptance(rule, p_rows[rows], q_rows[rows], k))
    if any(not -ROUNDING <= a <= 1 + ROUNDING for a in curve):
        raise ValueError(f"acceptance: {verifier}'s measured A(k) left [0, 1] by more than rounding: {curve}")
    return [min(max(a, 0.0), 1.0) for a in curve]  # exact values summed in floating point: 1 + 4e-16 occurs


def _truncated_acceptance(rule, p_rows: np.ndarray, q_rows: np.ndarray, k: int) -> float:
    for support in ACCEPTANCE_SUPPORTS:
        if rule.drafting != "iid" and rule.scheme.tuple_count(np.ones(support + 1), k) > ENUMERATION_BUDGET:
            continue  # WOR and top-k acceptances enumerate tuples: keep the calibration quick
        try:
            values = [rule.acceptance(*(cut / cut.sum() for cut in truncated_pair(p, q, support)), k)
                      for p, q in zip(p_rows, q_rows)]
        except ValueError:  # too many candidate tuples to enumerate at this support
            continue
        return float(np.mean(values))
    raise ValueError(f"acceptance: {rule.name} cannot be evaluated exactly at k = {k} "
                     f"on {ACCEPTANCE_SUPPORTS[-1]} tokens")


def measure_costs(lm, prompt: torch.Tensor, points: Sequence[int], repeats: int,
                  level: bool = False) -> dict[int, float]:
    """Median seconds of one forward over n nodes on top of ``prompt``'s cache, per n in ``points``: a chain of
    n nodes from the root (the target's tree forward), or with ``level`` n children of a root grown untimed
    before (a draft's forward of one level of the tree: the feature draft feeds a row its parent's prediction,
    so a parent is grown before its children, as `resispec.engine.decode.expand.expand_tree` grows them)."""
    lm.prefill(prompt)
    root = torch.tensor([int(prompt[-1])])
    lm.grow(root, torch.tensor([-1]))
    lm.commit(root)

    def forward(n: int):
        if level:
            lm.grow(torch.full((n,), int(prompt[-1])), torch.zeros(n, dtype=torch.long))
        else:
            lm.grow(torch.full((n,), int(prompt[-1])), torch.arange(-1, n - 1))
        lm.commit(root)

    grow_root = (lambda: lm.grow(root, torch.tensor([-1]))) if level else None
    return {n: median_seconds(lambda: forward(n), repeats, setup=grow_root) for n in points}


def calibrate(model, draft: Draft, verifier: str, sampling: Sampling, prompts: Sequence[torch.Tensor],
              new_tokens: int = 32, max_children: int = MAX_CHILDREN, repeats: int = 5, seed: int = 0) -> Calibration:
    """Measure `Calibration` for this target, draft, verifier and sampling (module docstring)."""
    generator = torch.Generator().manual_seed(seed)
    target = lm_for(model)
    p_rows, q_rows = [], []
    load_before = load_average()
    with Progress(total=len(prompts) + 4, desc="calibrating --tree auto", unit="step") as bar:
        for prompt in prompts:
            bar.set_postfix_str("sampling and scoring a calibration text")
            sequence = sample_continuation(target, prompt, new_tokens, sampling, generator)
            chain = sequence[len(prompt) - 1:]
            parents = torch.arange(-1, len(chain) - 1)
            p = target_probs(lm_grow(target, prompt, chain, parents).float(), sampling)[:-1].numpy()
            q_logits = lm_grow(draft, prompt, chain, parents, getattr(target, "last_features", None))
            q = draft_probs(q_logits.float(), sampling)[:-1].numpy()
            drafting = [drafts_at(draft, sequence[: len(prompt) + t].tolist()) for t in range(len(chain) - 1)]
            for start, stop in _runs(drafting):  # rounds the draft declines are one-token rounds: not measured
                p_rows.append(p[start:stop])
                q_rows.append(q[start:stop])
            bar.update()
        if not p_rows:
            raise ValueError(f"calibration: the draft drafts at none of the {len(prompts)} calibration texts' "
                             f"positions; give the tree (--tree) instead of auto")
        p_all, q_all = np.concatenate(p_rows), np.concatenate(q_rows)
        bar.set_postfix_str(f"{verifier}'s acceptance and verification cost")
        acceptance = measure_acceptance(p_all, q_all, verifier, max_children)
        correlation = survival_correlation([np.minimum(p, q).sum(axis=1).clip(0.0, 1.0).tolist()
                                            for p, q in zip(p_rows, q_rows)])
        verify_seconds = verify_costs(p_all, q_all, verifier, len(acceptance))
        prompt = prompts[0]
        costs = {}
        for name, lm, points in (("target", target, COST_POINTS), ("draft", draft, DRAFT_COST_POINTS)):
            bar.update()
            bar.set_postfix_str(f"timing {name} forwards")
            costs[name] = measure_costs(lm, prompt, points, repeats, level=name == "draft")
        bar.update()
        bar.set_postfix_str("decoding for real: what the loop adds")
        target_seconds, draft_seconds = costs["target"], costs["draft"]
        plain_round, round_seconds = loop_overheads(
            model, draft, verifier, sampling, prompt,
            modelled_plain=interpolate(target_seconds, 1),
            modelled_round=interpolate(draft_seconds, 1) + interpolate(target_seconds, 2) + verify_seconds[1])
        bar.update()
    made = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "load": [load_before, load_average()], **machine_identity(), "threads": torch.get_num_threads()}
    return Calibration(acceptance, target_seconds, draft_seconds, round_seconds, len(p_all), correlation,
                       verify_seconds, plain_round, made)


def loop_overheads(model, draft: Draft, verifier: str, sampling: Sampling, prompt: torch.Tensor,
                   modelled_plain: float, modelled_round: float, tokens: int = LOOP_TOKENS,
                   seed: int = 0) -> tuple[float, float]:
    """``(v_plain, v)`` (module docstring): seconds per plain token and per round of a chain of one that real
    decoding of ``prompt`` spends beyond ``modelled_plain`` (``t(1)``) and ``modelled_round`` (``c(1) + t(2) +
    u(1)``), each at least 0. A draft that drafts no round of the text gets ``v = v_plain``."""
    def decode(decoder: Decoder):
        for _ in decoder.generate(prompt, tokens):
            pass
        stats = decoder.stats
        return stats, stats.seconds - stats.prefill_seconds

    stats, seconds = decode(Decoder(model, None, AUTOREGRESSIVE, sampling=sampling, seed=seed))
    per_token = seconds / stats.target_forwards
    plain = max(per_token - modelled_plain, 0.0)
    stats, seconds = decode(Decoder(model, draft, verifier, branching=(1,), sampling=sampling, seed=seed))
    rounds = stats.draft_forwards  # one draft level a round
    if not rounds:
        return plain, plain
    per_round = (seconds - (stats.target_forwards - rounds) * per_token) / rounds
    return plain, max(per_round - modelled_round, 0.0)


def lm_grow(lm, prompt: torch.Tensor, chain: torch.Tensor, parents: torch.Tensor,
            states: torch.Tensor | None = None) -> torch.Tensor:
    """``lm``'s logits along ``chain`` (long [n], the prompt's last token first) after prefilling ``prompt``.
    A draft that reads the target's states (``observe``: the feature draft) is teacher-forced on ``states``,
    the target's final-norm states along the chain (float [>= n - 1, H])."""
    lm.prefill(prompt)
    observe = getattr(lm, "observe", None)
    if observe is not None:
        if states is None:
            raise ValueError(f"{type(lm).__name__} reads the target's states: score the target along the chain first")
        observe(states[: len(chain) - 1])
    return lm.grow(chain, parents)


def _runs(flags: Sequence[bool]) -> list[tuple[int, int]]:
    """The maximal runs ``[start, stop)`` of consecutive true ``flags``."""
    runs, start = [], None
    for index, flag in enumerate([*flags, False]):
        if flag and start is None:
            start = index
        elif not flag and start is not None:
            runs.append((start, index))
            start = None
    return runs


def sample_continuation(target, prompt: torch.Tensor, new_tokens: int, sampling: Sampling,
                         generator: torch.Generator) -> torch.Tensor:
    """The prompt followed by ``new_tokens`` tokens sampled from the target (p processed by ``sampling``)."""
    target.prefill(prompt)
    tokens = prompt.tolist()
    for _ in range(new_tokens):
        root = torch.tensor(tokens[-1:])
        p = target_probs(target.grow(root, torch.tensor([-1])).float(), sampling)[0]
        target.commit(root)
        tokens.append(int(torch.multinomial(p, 1, generator=generator)))
    return torch.tensor(tokens)


def verify_costs(p_rows: np.ndarray, q_rows: np.ndarray, verifier: str, max_children: int,
                  rows: int = VERIFY_COST_ROWS) -> dict[int, float]:
    """``u(k)``, k = 1..max_children: mean seconds of one node's verification with k candidates drawn by
    the verifier's rule (on tensors, full vocabulary), over ``rows`` calibration rows spread along the
    text: a plan's cost depends on the row's shape (a peaked row builds fast). One candidate costs what sps
    costs where the verifier's one-candidate rule is sps (the decoder batches those nodes)."""
    from resispec.engine.verifiers.node_verification import NodeVerifier

    rng, generator = np.random.default_rng(0), torch.Generator().manual_seed(0)
    rule = get_verifier(verifier)
    picks = np.linspace(0, len(p_rows) - 1, min(rows, len(p_rows))).round().astype(int)
    costs = {}
    for k in range(1, max_children + 1):  # one candidate: sps where the decoder decides it so
        node = NodeVerifier(get_verifier("sps") if k == 1 and rule.single_candidate_is_sps else rule)
        warm = torch.from_numpy(p_rows[:1]), torch.from_numpy(q_rows[:1])
        node.verify_batch(*warm, node.draft(warm[1], k, generator), rng)  # untimed: first-call costs are not a node's
        seconds = []
        for i in picks:
            p, q = torch.from_numpy(p_rows[i: i + 1]), torch.from_numpy(q_rows[i: i + 1])
            candidates = node.draft(q, k, generator)
            start = time.perf_counter()
            node.verify_batch(p, q, candidates, rng)
            seconds.append(time.perf_counter() - start)
        costs[k] = float(np.mean(seconds))
    return costs


def calibration_key(model, draft_name: str, verifier: str, sampling: Sampling, threads: int) -> str:
    """Cache key: target (name, size, how it is computed, its head), draft, verifier, sampling settings, thread count,
    device, and the machine (`machine_identity`)."""
    identity = {"target": getattr(model.config, "_name_or_path", ""), "vocab": model.config.vocab_size,
                "compute": target_compute_of(model), "head": native_head_of(model),
                "layers": model.config.num_hidden_layers, "dtype": str(model.dtype), "device": str(model.device),
                "draft": draft_name, "verifier": verifier, "sampling": asdict(sampling), "threads": threads,
                "format": FORMAT, "machine": machine_identity()}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def _read_calibration(data: dict) -> Calibration:
    """A `Calibration` from its stored JSON object (``format`` = ``FORMAT``); KeyError / TypeError / ValueError
    when a field is missing or of the wrong kind."""
    if data["format"] != FORMAT:
        raise ValueError(f"format {data['format']!r}, expected {FORMAT}")
    seconds = {name: {int(k): float(v) for k, v in data[name].items()}
               for name in ("target_seconds", "draft_seconds", "verify_seconds")}
    return Calibration([float(a) for a in data["acceptance"]], seconds["target_seconds"], seconds["draft_seconds"],
                       float(data["round_seconds"]), int(data["positions"]),
                       [float(c) for c in data["correlation"]], seconds["verify_seconds"],
                       float(data["plain_round_seconds"]), dict(data["made"]))


def cached_calibration(key: str, compute) -> tuple[Calibration, bool]:
    """The calibration stored under ``key``, or ``compute()`` stored there (said on one line on stderr first:
    it takes about a minute on an idle 2-core machine, more under load, and `calibrate` reports its steps on
    stderr, on a terminal or not); second item: whether cached.

    A stored file that cannot be read (truncated JSON, a missing or mistyped field, another format) is named
    on one line on stderr, discarded and measured again."""
    path = calibration_path(key)
    if path.is_file():
        try:
            calibration = _read_calibration(json.loads(path.read_text()))
            here = machine_identity()
            other = {name: calibration.made.get(name) for name in here if calibration.made.get(name) != here[name]}
            if not other:
                return calibration, True
            print(f"resispec: the cached calibration {path} was made elsewhere ({other}, here {here}); "
                  "discarded, calibrating again", file=sys.stderr)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            print(f"resispec: the cached calibration {path} is unusable ({type(error).__name__}: {error}); "
                  "discarded, calibrating again", file=sys.stderr)
        path.unlink(missing_ok=True)
    load = load_average()
    now = "" if load is None else f": {load:.1f} now"
    print(f"resispec: calibrating --tree auto for this target, draft, verifier and sampling, once (about a minute "
          f"on an idle 2-core machine, longer under load{now}; cached in {path})", file=sys.stderr)
    calibration = compute()
    store_calibration(key, calibration)
    return calibration, False


def store_calibration(key: str, calibration: Calibration) -> None:
    """Write ``calibration`` as the cached one of ``key`` (atomically)."""
    path = calibration_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps({**asdict(calibration), "format": FORMAT}, indent=1))


def calibration_path(key: str):
    """Where the calibration of ``key`` is cached."""
    return cache_root() / "calibration" / f"{key}.json"


def refresh_calibration(key: str, calibration: Calibration, reason: str) -> None:
    """Replace the cached calibration of ``key``, found far off by the decoder (``reason``), with ``calibration``
    (the decoder's estimates), said on one line on stderr."""
    store_calibration(key, calibration)
    print(f"resispec: the cached calibration {calibration_path(key)} was far off this run ({reason}); refreshed "
          "with what this run measured", file=sys.stderr)


def describe(made: dict) -> str:
    """One line of what a calibration is: ``made 2026-12-07T20:00:00+00:00 at load 2.3-2.5, 1 thread(s), torch
    2.13.0 (avx512), block kernels torch``."""
    loads = [f"{x:.1f}" for x in made.get("load", []) if x is not None]
    refreshed = f", costs refreshed {made['refreshed']}" if "refreshed" in made else ""
    return (f"made {made.get('date', '?')} at load {'-'.join(loads) or '?'}, {made.get('threads', '?')} thread(s), "
            f"torch {made.get('torch', '?')} ({made.get('capability', '?')}), block kernels "
            f"{made.get('block_kernels', '?')}{refreshed}")


def calibration_prompts(tokenizer, count: int = CALIBRATION_PROMPT_COUNT) -> list[torch.Tensor]:
    """The first ``count`` draft-training prompts, chat-formatted (never the benchmark's held-out prompts)."""
    return encode_prompts(tokenizer, [p for p in load_prompts() if p.split == "train"][:count])


def choose_tree(model, tokenizer, draft: Callable[[], Draft], draft_name: str, verifier: str, sampling: Sampling,
                threads: int, chains_only: bool = False) -> tuple[TreeChoice, Calibration, bool]:
    """The best tree for this configuration (``chains_only``: among chains), calibrating once (cached); third
    item: whether the calibration came from the cache. ``Calibration.choose(plain=True)`` adds plain decoding.
    ``draft()`` builds the draft, called only to calibrate (a cached choice of plain decoding builds none)."""
    key = calibration_key(model, draft_name, verifier, sampling, threads)
    calibration, cached = cached_calibration(
        key, lambda: calibrate(model, draft(), verifier, sampling, calibration_prompts(tokenizer)))
    return calibration.choose(chains_only=chains_only), calibration, cached
