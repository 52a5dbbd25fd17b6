"""Training the feature draft (``resispec train-draft --draft feature``; `resispec.engine.drafts.feature_draft`).

Data: the trained draft's target-sampled text (`resispec.engine.train.draft_data`, the same shards): per sequence the
tokens and the target's final-norm state ``f`` at every position that drew a token. Pair j of a sequence is
``(f_(j-1), x_(P-1+j))`` (P the prompt's length, f_(-1) = 0) and its target is ``f_j``'s distribution p_j.

Token set S: the ``head_tokens`` tokens of most target mass ``sum_t p_t(x)`` over the training positions (one
pass of the target's head over the stored states, which also gives each position's ``log Z_t``, so that
``p_t(x) = exp(E_x . f_t - log Z_t)`` on S costs a product with the K rows of S only).

Loss per pair, two passes (EAGLE's draft tree, as EAGLE-3's training-time test unrolls it):

- pass 1, teacher-forced: inputs ``f_(j-1)``; outputs ``g_j``;
- pass 2, one step ahead: inputs ``g_(j-1)`` (pass 1's), attending to pass 1's keys before j and its own at
  j: exactly what a depth-2 node of the draft tree computes;

each with ``-sum_(x in S) p_j(x) log q_j(x)`` (q over S: the mass of p outside S is lost to every draft
with this head) plus ``regression`` x SmoothL1(g_j, f_j) (EAGLE's feature loss: g is fed back as f).
Held-out overlap ``sum_(x in S) min(p, q)`` is reported per pass (pass 2 = a depth-2 node's) every
``eval_every`` steps; the weights kept are those of the evaluation with the largest sum of the two (the
held-out prompts choose the stopping step only; the speed benchmarks use other prompts).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from torch.nn import functional
from transformers import PreTrainedModel

from resispec.engine.drafts.feature_draft import FEATURE_WEIGHTS_PATH, FeatureHead, feature_layer
from resispec.engine.drafts.trained import read_draft_meta, save_draft
from resispec.engine.runtime.compact_lm import signed_sin
from resispec.engine.train.distill import Schedule, learning_rate, step_sequences
from resispec.engine.train.draft_data import Sequences
from resispec.engine.train.train_draft import PRESETS as DATA_PRESETS
from resispec.engine.train.train_draft import REPO, load_data, overlap_figure, write_curve
from resispec.progress import progress


@dataclass(frozen=True, kw_only=True)
class FeatureTrainConfig(Schedule):
    """The feature draft's training settings (module docstring): the `Schedule`, the size of S, the target
    layer the draft's layer starts from, the weight of the state regression and more training text."""

    head_tokens: int
    init_layer: int
    regression: float = 1.0
    more_text: tuple[int, ...] = ()
    """Seeds of further target-sampled training text, each as much as the preset's (its generation settings
    with that seed), added to the training split; the held-out split is the preset's."""


PRESETS = {
    "smollm2": FeatureTrainConfig(head_tokens=16384, init_layer=29, steps=1200, sequences_per_step=6, lr=1e-3,
                                  warmup_steps=30, eval_every=100, seed=0, more_text=(1, 2)),
    "tiny": FeatureTrainConfig(head_tokens=40, init_layer=2, steps=4, sequences_per_step=2, lr=1e-2,
                               warmup_steps=1, eval_every=2, seed=0),
}


@torch.no_grad()
def head_statistics(head: torch.Tensor, states: torch.Tensor, chunk: int = 2048) -> tuple[torch.Tensor, torch.Tensor]:
    """(log Z float [n], mass float64 [V]): each state's log partition ``logsumexp(head f)`` and the summed
    target distribution over all states; head float [V, H], states float [n, H]."""
    log_z, mass = [], torch.zeros(head.shape[0], dtype=torch.float64)
    for start in range(0, len(states), chunk):
        logits = states[start: start + chunk] @ head.T
        z = torch.logsumexp(logits, dim=-1)
        log_z.append(z)
        mass += torch.exp(logits - z[:, None]).sum(0).double()
    return torch.cat(log_z), mass


@dataclass
class PairBatch:
    """Right-padded pairs of B sequences, n the longest: token ids long [B, n], input states f_(j-1) float
    [B, n, H], target states f_j float [B, n, H], their log Z float [B, n], and which entries are real
    bool [B, n]."""

    tokens: torch.Tensor
    inputs: torch.Tensor
    targets: torch.Tensor
    log_z: torch.Tensor
    valid: torch.Tensor


def pair_batch(data: Sequences, log_z: torch.Tensor, indices: list[int]) -> PairBatch:
    """The pairs of ``data``'s sequences ``indices`` (module docstring); ``log_z`` per stored state."""
    generated = data.lengths - data.prompt_lengths
    offsets = torch.cumsum(generated, 0) - generated
    parts = [data.sequence(s) for s in indices]
    n, hidden = max(len(states) for _, _, states in parts), parts[0][2].shape[1]
    batch = PairBatch(torch.zeros(len(parts), n, dtype=torch.long), torch.zeros(len(parts), n, hidden),
                      torch.zeros(len(parts), n, hidden), torch.zeros(len(parts), n),
                      torch.zeros(len(parts), n, dtype=torch.bool))
    for row, (s, (tokens, prompt_len, states)) in enumerate(zip(indices, parts)):
        m = len(states)
        batch.tokens[row, :m] = tokens[prompt_len - 1: prompt_len - 1 + m]
        batch.inputs[row, 1:m] = states[: m - 1]
        batch.targets[row, :m] = states
        batch.log_z[row, :m] = log_z[int(offsets[s]): int(offsets[s]) + m]
        batch.valid[row, :m] = True
    return batch


def pass_losses(model: FeatureHead, target: PreTrainedModel, batch: PairBatch,
                regression: float) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Per pass (1: teacher-forced, 2: one step ahead; module docstring): the mean loss and the overlaps
    ``sum_(x in S) min(p, q)`` of the valid pairs (pass 2: from the second pair of each sequence on)."""
    embed = target.model.embed_tokens.weight
    head = embed[model.tokens]
    embedded = embed[batch.tokens]
    n = batch.tokens.shape[1]
    positions = torch.arange(n)
    cos, sin = (t[0] for t in target.model.rotary_emb(embedded, positions[None]))
    sin = signed_sin(sin)
    with torch.no_grad():
        p = torch.exp(batch.targets @ head.T - batch.log_z[..., None])
    first_keys = {}

    def causal(queries, keys, values):
        first_keys["keys"], first_keys["values"] = keys, values
        return functional.scaled_dot_product_attention(queries, keys, values, is_causal=True, enable_gqa=True)

    def ahead(queries, keys, values):  # pass 1's keys before j, its own at j
        allowed = torch.cat([torch.ones(n, n, dtype=torch.bool).tril(-1), torch.eye(n, dtype=torch.bool)], dim=1)
        return functional.scaled_dot_product_attention(
            queries, torch.cat([first_keys["keys"], keys], dim=2), torch.cat([first_keys["values"], values], dim=2),
            attn_mask=allowed, enable_gqa=True)

    products = model.products()
    losses, overlaps = [], []
    inputs = batch.inputs
    for attend, valid in ((causal, batch.valid), (ahead, batch.valid & (positions > 0))):  # pass 2 from j = 1
        g = feature_layer(torch.cat([embedded, inputs], dim=-1), products, model.norms(), cos, sin, attend,
                          model.heads, model.kv_heads)
        log_q = torch.log_softmax(g @ head.T, dim=-1)
        cross_entropy = -(p * log_q).sum(-1)
        feature_error = functional.smooth_l1_loss(g, batch.targets, reduction="none").mean(-1)
        losses.append(((cross_entropy + regression * feature_error) * valid).sum() / valid.sum())
        overlaps.append(torch.minimum(p, log_q.detach().exp()).sum(-1)[valid])
        inputs = torch.cat([torch.zeros_like(g[:, :1]), g[:, :-1]], dim=1)
    return losses, overlaps


@torch.no_grad()
def evaluate(model: FeatureHead, target: PreTrainedModel, data: Sequences, log_z: torch.Tensor,
             chunk: int = 6) -> tuple[float, float]:
    """Mean held-out overlap of pass 1 (a depth-1 node) and pass 2 (a depth-2 node) over ``data``."""
    sums, counts = [0.0, 0.0], [0, 0]
    for start in range(0, len(data.lengths), chunk):
        indices = list(range(start, min(start + chunk, len(data.lengths))))
        _, overlaps = pass_losses(model, target, pair_batch(data, log_z, indices), 0.0)
        for i, overlap in enumerate(overlaps):
            sums[i] += float(overlap.sum())
            counts[i] += len(overlap)
    return sums[0] / counts[0], sums[1] / counts[1]


def train_feature_draft(target: PreTrainedModel, data: dict[str, Sequences], config: FeatureTrainConfig,
                        tag: str, export: Path, log: Callable[[str], None] = print) -> dict:
    """Choose S, train the draft (module docstring), evaluate it on the held-out split and save it at
    ``export`` (float16 safetensors with its metadata); returns the figures."""
    torch.manual_seed(config.seed)
    start = time.time()
    head = target.model.embed_tokens.weight.detach().float()
    train, heldout = data["train"], data["heldout"]
    log_z, mass = head_statistics(head, train.hidden)
    heldout_log_z, _ = head_statistics(head, heldout.hidden)
    tokens = torch.argsort(mass, descending=True)[: config.head_tokens].sort().values
    coverage = float(mass[tokens].sum() / mass.sum())
    log(f"feature draft: S = {len(tokens)} tokens carry {coverage:.4f} of the training text's target mass")
    model = FeatureHead(target, tokens, config.init_layer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=(0.9, 0.98), weight_decay=0.0)
    curve, best = [], None
    for step in progress(range(config.steps + 1), desc="training the feature draft", unit="step"):
        if step % config.eval_every == 0 or step == config.steps:
            depth1, depth2 = evaluate(model, target, heldout, heldout_log_z)
            curve.append(dict(step=step, heldout_depth1=depth1, heldout_depth2=depth2,
                              elapsed_s=round(time.time() - start, 1)))
            log(f"step {step}: held-out overlap depth 1 {depth1:.4f}, depth 2 {depth2:.4f}")
            if best is None or depth1 + depth2 > best[0]:
                best = (depth1 + depth2, step, {k: v.clone() for k, v in model.state_dict().items()})
        if step == config.steps:
            break
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step)
        batch = pair_batch(train, log_z, step_sequences(config, len(train.lengths), step))
        losses, _ = pass_losses(model, target, batch, config.regression)
        optimizer.zero_grad()
        sum(losses).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    model.load_state_dict(best[2])  # the evaluation with the best held-out overlaps (the text is small)
    kept = next(row for row in curve if row["step"] == best[1])
    results = dict(head_tokens=len(tokens), coverage=round(coverage, 4), step=best[1],
                   depth1=round(kept["heldout_depth1"], 4), depth2=round(kept["heldout_depth2"], 4),
                   heldout_positions=heldout.num_targets, train_positions=train.num_targets,
                   seconds=round(time.time() - start, 1))
    meta = dict(model_type=target.config.model_type, hidden_size=target.config.hidden_size,
                vocab_size=target.config.vocab_size, target=tag, config=asdict(config), results=results,
                curve=curve)
    save_draft(model, meta, export)
    log(f"feature draft: {json.dumps(results)} -> {export}")
    return results


def run_feature_preset(preset: str, work: Path, steps: int | None = None) -> dict:
    """The preset's data (`resispec.engine.train.train_draft.load_data`: generated under ``work`` where missing) and
    training; the ``smollm2`` weights go to the committed `FEATURE_WEIGHTS_PATH`, others under ``work``."""
    config = PRESETS[preset] if steps is None else replace(PRESETS[preset], steps=steps)
    target, data, tag = load_data(preset, work, ("heldout", "train"))
    for seed in config.more_text:
        more = load_data(preset, work, ("train",), generation=replace(DATA_PRESETS[preset].generation, seed=seed))[1]
        data["train"] = Sequences.concat([data["train"], more["train"]])
    folder = FEATURE_WEIGHTS_PATH.parent if preset == "smollm2" else work / "draft_train" / preset
    results = train_feature_draft(target, data, config, tag, folder / FEATURE_WEIGHTS_PATH.name)
    figures = REPO / "docs" / "figures" if preset == "smollm2" else folder
    plot_curve(read_draft_meta(folder / FEATURE_WEIGHTS_PATH.name)["curve"], figures / "feature_draft_overlap.png")
    return results


def plot_curve(curve: list[dict], path: Path) -> None:
    """Held-out overlap of a depth-1 and a depth-2 node against the training step (PNG at ``path``, the rows as
    CSV beside it)."""
    write_curve(curve, path.with_suffix(".csv"), list(curve[0]))
    with overlap_figure(path, "training step (6 target-sampled answers each)",
                        "Feature draft on SmolLM2-135M-Instruct's states") as axes:
        steps = [row["step"] for row in curve]
        axes.plot(steps, [row["heldout_depth1"] for row in curve], "o-", label="depth 1 (the target's own state)")
        axes.plot(steps, [row["heldout_depth2"] for row in curve], "s--",
                  label="depth 2 (the draft's predicted state)")
