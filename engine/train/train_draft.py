"""The trained draft's pipeline (``resispec train-draft``): distil the default draft from SmolLM2-135M.

Steps (each resumable): (1) the target continues the train and held-out prompts of
``engine/data/prompts.json`` at T = 1 (`resispec.engine.train.draft_data`, shards under ``<work>/draft_data``);
(2) the draft's own layers, copied from target layers, learn KL(p || q) against the target's full
distribution (`resispec.engine.train.distill`, checkpoint under ``<work>/draft_train/<preset>``); (3) final held-out
overlap, the curve (CSV + PNG) and the weights (float16 safetensors, layers and norm only).

``--preset tiny`` runs the same pipeline on `resispec.engine.model.tiny` random models and random prompts in seconds
(smoke test). Progress goes to stdout and ``<run folder>/train.log``.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from transformers import PreTrainedModel

from resispec.engine.data.prompts import encode_prompts, load_prompts
from resispec.engine.drafts.trained import WEIGHTS_PATH, DraftLayers, save_draft
from resispec.engine.train.distill import CURVE_FIELDS, TrainConfig, evaluate, train
from resispec.engine.train.draft_data import GenerationConfig, Sequences, data_folder, generate_shards
from resispec.formats.atomic import atomic_path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Preset:
    """A full pipeline configuration: data generation, training, and where results go."""

    generation: GenerationConfig
    training: TrainConfig
    export: Path | None
    figures: Path | None
    baseline_layers: tuple[int, ...]
    """Early-exit depths whose held-out overlap is measured for comparison (drawn in the figure)."""


PRESETS = {
    "smollm2": Preset(
        generation=GenerationConfig(samples=2, max_new_tokens=192, batch_size=30, seed=0),
        training=TrainConfig(
            init_from=(0, 1, 29), steps=700, sequences_per_step=6, lr=1.5e-3, warmup_steps=30, eval_every=70,
            seed=0, bf16=True,
        ),
        export=WEIGHTS_PATH,
        figures=REPO / "docs" / "figures",
        baseline_layers=(3, 6),
    ),
    "tiny": Preset(
        generation=GenerationConfig(samples=2, max_new_tokens=6, batch_size=4, seed=0),
        training=TrainConfig(
            init_from=(0,), steps=4, sequences_per_step=2, lr=1e-2, warmup_steps=1, eval_every=2, seed=0, bf16=False
        ),
        export=None,
        figures=None,
        baseline_layers=(1,),
    ),
}


Setup = tuple[PreTrainedModel, list[torch.Tensor], list[torch.Tensor], str, "int | None"]
"""(target, train prompts, held-out prompts, model tag, end-of-turn token id or None)."""


def tiny_setup(seed: int = 0) -> Setup:
    """Tiny random target (`resispec.engine.model.tiny`, 3 layers, no end token) and seeded random prompts."""
    from resispec.engine.model.tiny import tiny_llama

    generator = torch.Generator().manual_seed(seed)
    target = tiny_llama(seed, num_layers=3).requires_grad_(False)
    prompts = [torch.randint(0, target.config.vocab_size, (int(n),), generator=generator) for n in range(3, 11)]
    return target, prompts[:6], prompts[6:], f"tiny-{seed}", None


def smollm2_setup() -> Setup:
    """The real target, its chat-templated prompts (split as in the prompt set) and its end-of-turn token."""
    from resispec.engine.model.gguf import target_gguf_path
    from resispec.engine.model.models import load_target

    target, tokenizer = load_target()
    prompts = load_prompts()
    train_ids = encode_prompts(tokenizer, [p for p in prompts if p.split == "train"])
    heldout_ids = encode_prompts(tokenizer, [p for p in prompts if p.split == "heldout"])
    return target, train_ids, heldout_ids, target_gguf_path().name, tokenizer.eos_token_id


def load_data(
    preset_name: str, work: Path, splits: Sequence[str], log: Callable[[str], None] = print,
    generation: GenerationConfig | None = None,
) -> tuple[PreTrainedModel, dict[str, Sequences], str]:
    """The preset's target, its generated data for `splits` ('heldout', 'train'; generated into
    ``work/draft_data`` where missing; by ``generation``, default the preset's), and the model tag."""
    preset = PRESETS[preset_name]
    generation = generation or preset.generation
    target, train_prompts, heldout_prompts, tag, eos = tiny_setup() if preset_name == "tiny" else smollm2_setup()
    prompts = {"train": train_prompts, "heldout": heldout_prompts}
    data = {}
    for split in splits:
        folder = data_folder(work / "draft_data", prompts[split], generation, tag)
        data[split] = generate_shards(target, prompts[split], generation, folder, eos, log)
        log(f"data: {split}: {len(data[split].lengths)} sequences, {data[split].num_targets} target positions")
    return target, data, tag


def first_samples(data: Sequences) -> Sequences:
    """Sample 0 of every prompt (the first sequence of each prompt index): the subset the curve tracks."""
    seen, keep = set(), []
    for s, prompt in enumerate(data.prompts.tolist()):
        if prompt not in seen:
            seen.add(prompt)
            keep.append(s)
    return Sequences.concat([subset(data, [s]) for s in keep])


def subset(data: Sequences, indices: Sequence[int]) -> Sequences:
    """The sequences `indices` of `data`, in that order."""
    parts = []
    for s in indices:
        tokens, prompt_len, hidden = data.sequence(s)
        parts.append(Sequences(tokens, torch.tensor([len(tokens)]), torch.tensor([prompt_len]),
                               data.prompts[s : s + 1], hidden))
    return Sequences.concat(parts)


def write_curve(curve: list[dict], path: Path, fields: Sequence[str] = CURVE_FIELDS) -> None:
    """The training curve as CSV (columns ``fields``), through ``resispec.formats.atomic.atomic_path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as staged, staged.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(fields))
        writer.writeheader()
        writer.writerows({k: row[k] for k in fields} for row in curve)


@contextmanager
def overlap_figure(path: Path, xlabel: str, title: str) -> Iterator:
    """The axes of a held-out overlap curve (y: ``sum_x min(p, q)`` at T = 1, 0 to 1) for the caller to draw
    on; saved as a PNG at ``path`` when the block ends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    yield axes
    axes.set_xlabel(xlabel)
    axes.set_ylabel(r"mean overlap $\sum_x \min(p(x), q(x))$ at T = 1")
    axes.set_title(title)
    axes.set_ylim(0, 1)
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as staged:
        figure.savefig(staged, dpi=120)
    plt.close(figure)


def plot_curve(curve: list[dict], baselines: dict[int, float], path: Path) -> None:
    """Overlap vs training tokens (held-out, and running train average), early-exit baselines as gray lines."""
    with overlap_figure(path, "training tokens (target-generated positions)",
                        "Draft distilled from SmolLM2-135M-Instruct: overlap with the target") as axes:
        tokens = [row["train_tokens"] for row in curve]
        axes.plot(tokens, [row["heldout_overlap"] for row in curve], "o-", label="trained draft, held-out prompts")
        axes.plot(tokens[1:], [row["train_overlap"] for row in curve[1:]], ".--", alpha=0.6,
                  label="trained draft, training batches (running mean)")
        for (layers, overlap), style in zip(baselines.items(), (":", "-.", "--")):
            axes.axhline(overlap, linestyle=style, color="gray",
                         label=f"early exit after {layers} layers, held-out prompts")


def run(preset_name: str, work: Path, steps: int | None = None) -> dict:
    """The whole pipeline for `preset_name` under `work`; returns the final figures (see `main`)."""
    preset = PRESETS[preset_name]
    config = preset.training if steps is None else replace(preset.training, steps=steps)
    run_dir = work / "draft_train" / preset_name
    run_dir.mkdir(parents=True, exist_ok=True)
    start = time.time()

    def log(message: str) -> None:
        line = f"[{time.time() - start:8.1f} s] {message}"
        print(line, flush=True)
        with (run_dir / "train.log").open("a") as handle:
            handle.write(line + "\n")

    target, data, tag = load_data(preset_name, work, ("heldout", "train"), log)
    own = DraftLayers(target, config.init_from)
    curve = train(target, own, data["train"], first_samples(data["heldout"]), config, run_dir / "checkpoint.pt", log)
    overlap, kl = evaluate(target, own, data["heldout"])
    baselines = {n: evaluate(target, DraftLayers(target, tuple(range(n))), first_samples(data["heldout"]))[0]
                 for n in preset.baseline_layers}
    log(f"final: held-out overlap {overlap:.4f}, KL {kl:.4f} ({data['heldout'].num_targets} positions); "
        f"early exit (curve subset): {baselines}")
    results = dict(heldout_overlap=overlap, heldout_kl=kl, heldout_positions=data["heldout"].num_targets,
                   train_tokens=curve[-1]["train_tokens"], steps=config.steps, train_s=curve[-1]["elapsed_s"],
                   early_exit_overlap=baselines)
    figures = preset.figures or run_dir
    write_curve(curve, figures / "draft_overlap.csv")
    plot_curve(curve, baselines, figures / "draft_overlap.png")
    export = preset.export or run_dir / "draft.safetensors"
    meta = dict(model_type=target.config.model_type, hidden_size=target.config.hidden_size,
                vocab_size=target.config.vocab_size, target=tag, init_from=list(config.init_from),
                heldout_overlap=round(overlap, 4), train_tokens=results["train_tokens"], steps=config.steps)
    save_draft(own, meta, export)
    log(f"weights: {export} ({export.stat().st_size / 2**20:.1f} MiB)")
    return results
