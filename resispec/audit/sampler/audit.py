"""``audit_sampler``: an exactness audit of any speculative sampler, a plain callable, at node, chain or tree level.

The audit drafts with the claimed drafting rule from the processed draft, hands the sampler the *unprocessed*
model in the contract's layout (``contract``), splits the rows into calls of varied composition (``batches``),
checks the output contract on every row (``checks``), tests the emitted tokens against the processed target
(``statistics``; the claimed rule's acceptance where a rule is named, ``acceptance``), optionally probes the
edges of its randomness (``edges``), and judges every test at one Bonferroni level (``resispec.audit.family``).
A pass states what it could see: each test's detectable TV and the branches the rows reached (``coverage``).

Randomness: every draft, seed, batch split, PIT uniform and continuation comes from
``numpy.random.default_rng(seed)``; the sampler's own randomness is its own (or the seeds it is handed), and a
sampler that draws from a global generator (Python's, NumPy's, torch's) draws from it seeded per call
(``global_generators``): an audit is reproducible from its seed either way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

import numpy as np

from resispec.audit.family import FAMILY_ALPHA, bonferroni_level
from resispec.audit.sampler.acceptance import candidate_share, depth_law
from resispec.audit.sampler.batches import (
    GROUPS,
    POSITION_GROUPS,
    REQUEST_GROUPS,
    SEED_GROUPS,
    RowPlacement,
    compose,
    concatenate,
    placements,
    subset,
)
from resispec.audit.sampler.checks import ContractLog, check_rows
from resispec.audit.sampler.contract import (
    DEFAULT_TIME_LIMIT,
    ENGINE_SCHEMES,
    SamplerContract,
    SamplerError,
    as_ids,
    as_inputs,
    call_sampler,
    check_extras,
    extra_arguments,
)
from resispec.audit.sampler.drafting import DraftedRows, level_rows, parent_rows, scheme_chooser
from resispec.audit.sampler.edges import EDGES, edge_likelihood, numpy_edge, torch_edge
from resispec.audit.sampler.engine_drafting import (
    DRAFT_VIOLATION,
    TREE_VIOLATION,
    RequestPool,
    drafts_in_support,
    engine_arguments,
    replay_chain,
    replay_tree,
)
from resispec.audit.sampler.global_generators import seeded_global_generators
from resispec.audit.sampler.models import (
    CHAIN_FAMILIES,
    LOGIT_SHIFT,
    MODEL_VOCAB,
    TIE_PAIRS,
    TREE_FAMILIES,
    ZERO_PAIRS,
    ChainModel,
    history_for,
    node_contexts,
    processed,
    variant_label,
)
from resispec.audit.sampler.parameters import Evidence, dropped, parameter_verdicts, row_parameter_verdicts
from resispec.audit.sampler.probe_rows import probe_rows
from resispec.audit.sampler.reach import swapped_generators
from resispec.audit.sampler.report import EdgeOutcome, SamplerReport, SamplerTest
from resispec.audit.sampler.row_parameters import (
    DEFAULT_VARY,
    combination_groups,
    law_or_none,
    misread_claims,
    row_claims,
)
from resispec.audit.sampler.statistics import (
    PendingTest,
    continue_sequences,
    counts_test,
    pit_test,
    prefix_chi_square,
    sequence_codes,
    sequence_pits,
    token_pits,
)
from resispec.audit.sampling import DEFAULT_SAMPLES
from resispec.drafting import DRAFTING_SCHEMES, DraftingScheme
from resispec.processing import Processing
from resispec.progress import progress
from resispec.sampling import inverse_cdf
from resispec.sequence import get_round_verifier
from resispec.suite import get_suite
from resispec.validation import as_count
from resispec.verifiers import get_verifier

Sampler = Callable[..., Any]

BONUS_VIOLATION = "bonus token differs from the one handed in"

PREFIX_LAWS = (2, 3)
"""Chain and tree audits also test the law of the first 2 and 3 tokens of the continued sequences (36 and 216
cells at V = 6): marginals of the sequence law with few cells, where a bias early in the round stays visible."""


def audit_sampler(fn: Sampler, level: str = "node", *, k: int = 2, gamma: int = 4,
                  branching: Sequence[int] = (2, 2), drafting: str = "iid", rule: str | None = None,
                  arrays: str = "numpy", dtype: str = "float64", inputs: str = "probs", temperature: float = 1.0,
                  top_k: int | None = None, top_p: float | None = None, processing: Processing | None = None,
                  extras: Sequence[str] = (), vary: Sequence[str] | None = None, q_layout: str = "paths",
                  samples: int = DEFAULT_SAMPLES, seed: int = 0, family_alpha: float = FAMILY_ALPHA,
                  probe_edges: bool = False, time_limit: float = DEFAULT_TIME_LIMIT,
                  pairs: Sequence[str] | None = None, families: Sequence[str] | None = None,
                  progress: bool | None = None) -> SamplerReport:
    """Audit the sampler ``fn`` (module doc; the contract per level: ``resispec.audit.sampler.contract``).

    ``drafting``: iid, wor or topk (the claimed drafting rule), or ``engine`` (the sampler drafts from q itself,
    a tree's siblings i.i.d.; ``engine-wor``: a tree's siblings without replacement; ``engine_drafting``); ``rule``:
    a zoo verifier name (node) or a round verifier name (chain, tree; zoo names verify node by node) whose exact
    acceptance is tested, with the same drafting; ``pairs`` (node) / ``families`` (chain, tree): the contexts, by
    default every suite pair / ``CHAIN_FAMILIES`` (a tree: ``TREE_FAMILIES``, with the tied ``ties``); ``samples``
    per context. ``processing``: every claim at once (``resispec.processing.Processing``,
    instead of ``temperature``, ``top_k``, ``top_p``). ``vary``: with the ``processing`` extra, the parameter groups
    rows of one call differ in (``row_parameters.VARY``; default ``sampling``). ``q_layout``: ``"paths"`` or
    ``"parent"`` (tree: one q row per parent). ``progress``: report the calls on stderr (``resispec.progress``;
    None: a bar on a terminal, a line every 10 s elsewhere).
    ``ValueError`` naming the argument on bad options; ``SamplerError`` (a ``ValueError``) when ``fn`` raises,
    hangs or returns outside the contract.
    """
    if processing is None:
        processing = Processing(temperature, top_k, top_p)
    elif (temperature, top_k, top_p) != (1.0, None, None):
        raise ValueError("processing: pass temperature, top_k and top_p inside processing=Processing(...), not "
                         "beside it")
    if vary is None:
        vary = DEFAULT_VARY if "processing" in extras else ()
    contract = SamplerContract(level=level, k=k, gamma=gamma, branching=tuple(branching), arrays=arrays, dtype=dtype,
                               inputs=inputs, processing=processing, extras=tuple(extras),
                               time_limit=time_limit, drafting=drafting, q_layout=q_layout,
                               vary=(vary,) if isinstance(vary, str) else tuple(vary))
    samples = as_count(samples, "samples", "samples")
    if drafting not in (*DRAFTING_SCHEMES, *ENGINE_SCHEMES):
        raise ValueError(f"drafting: expected one of {', '.join((*DRAFTING_SCHEMES, *ENGINE_SCHEMES))}, got "
                         f"{drafting!r}")
    scheme = DRAFTING_SCHEMES[ENGINE_SCHEMES.get(drafting, drafting)]
    if rule is not None:
        claimed = get_verifier(rule) if level == "node" else get_round_verifier(rule)
        if claimed.drafting != scheme.name:
            raise ValueError(f"rule: {rule} drafts by {claimed.drafting}, but the audit drafts by {drafting}; "
                             f"pass drafting={claimed.drafting!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed: expected an integer >= 0, got {seed!r}")
    check_extras(fn, contract.extras, 4 if contract.engine and level != "node" else 3)
    rng = np.random.default_rng(seed)
    runner = _Runner(fn, contract, rng, progress, scheme)
    if level == "node":
        report = _audit_nodes(runner, scheme, rule, samples, pairs)
    else:
        report = _audit_rounds(runner, scheme, rule, samples, families, seed)
    pending, coverage, skipped, evidence = report
    level_alpha = bonferroni_level(max(len(pending), 1), family_alpha)
    tests = [SamplerTest(t.name, t.context, t.dimension, t.evaluate(level_alpha)) for t in pending]
    broken = runner.log.counts["token with p = 0"] > 0
    parameters = parameter_verdicts(evidence, tests, broken)
    row_parameters = row_parameter_verdicts(evidence, tests, broken)
    coverage.update(runner.batch_coverage())
    edges = _probe(runner, scheme, seed) if probe_edges else []
    return SamplerReport(contract=contract.describe(), level=level, samples=samples, seed=seed,
                         family_alpha=family_alpha, level_alpha=level_alpha, tests=tests, output=runner.log,
                         coverage=coverage, edges=edges, rule=rule, skipped=skipped, parameters=parameters,
                         row_parameters=row_parameters)


class _Runner:
    """Calls the sampler over batches of rows and checks every output (with engine drafting, the drafts too)."""

    def __init__(self, fn: Sampler, contract: SamplerContract, rng: np.random.Generator, progress: bool | None,
                 scheme: DraftingScheme):
        self.fn, self.contract, self.rng, self.progress, self.scheme = fn, contract, rng, progress, scheme
        self.log = ContractLog()
        self.calls = 0
        self.sizes: Counter = Counter()
        self.seeded = bool({"seeds", "generators", "generator_map"} & set(contract.extras))
        step = contract.depth + 1
        self.requests = RequestPool(rng, step) if "positions" in contract.extras else None

    def output_shape(self, rows: int) -> tuple[int, ...]:
        return (rows,) if self.contract.level == "node" else (rows, self.contract.depth + 1)

    def call(self, rows: DraftedRows, seeds: list[int | None], log: ContractLog, contexts: list, label: str = "",
             positions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, DraftedRows]:
        """One call on ``rows``: ``(out, clean, path, rows)`` (``checks.check_rows``; with engine drafting the
        rows along the sampler's drafts, ``engine_drafting``); ``contexts`` by index: node ``Context``s or
        ``ChainModel``s (their histories and claims)."""
        contract, count = self.contract, rows.tokens.shape[0]
        shift = LOGIT_SHIFT if contract.needs_logits else None
        offsets = self.rng.normal(0.0, 3.0, size=count) if shift is None else np.full(count, shift)
        if contract.engine:
            arguments, expected = engine_arguments(rows, contract, offsets, contexts)
        else:
            raw_q = parent_rows(rows.raw_q, contract.branching) if contract.q_layout == "parent" else rows.raw_q
            arguments = (as_inputs(rows.raw_p, contract, offsets), as_inputs(raw_q, contract, offsets, "q"),
                         as_ids(rows.tokens, contract))
            expected = self.output_shape(count)
        call_seed = int(self.rng.integers(0, 2**31))
        if positions is None and "positions" in contract.extras:  # the probe's rows (no request pool)
            positions = self.rng.integers(0, 2**20, size=count)
        extras = extra_arguments(contract, seeds, rows.lengths, call_seed, positions,
                                 [contexts[c] for c in rows.context])
        if "bonus" in contract.extras:  # drawn from the processed bonus row, as engines draw it before verifying
            bonus = np.array([inverse_cdf(rows.p[b, rows.lengths[b]], u) for b, u in enumerate(self.rng.random(count))],
                             dtype=np.int64)
            extras["bonus"] = as_ids(bonus, contract)
        self.calls += 1
        with seeded_global_generators(call_seed):
            out = call_sampler(self.fn, contract, arguments, extras, expected,
                               f"call {self.calls}, {count} row(s){', ' + label if label else ''}")
        drafted = np.ones(count, dtype=bool)
        if contract.engine:
            out, drafts = out
            if contract.level == "node":
                rows = DraftedRows(rows.raw_p, rows.raw_q, rows.p, drafts, rows.context, rows.lengths)
                drafted = drafts_in_support(drafts, np.stack([contexts[c].q for c in rows.context]))  # per row
            elif contract.level == "chain":
                rows, drafted = replay_chain(rows, drafts, contexts, contract.gamma)
            else:
                rows, drafted, tree = replay_tree(rows, drafts, contexts, contract.branching, self.scheme)
            log.add(DRAFT_VIOLATION, ~drafted, lambda b: f"row {b}: drafts {drafts[b].tolist()}"
                    + (f" ({label})" if label else ""))
            if contract.level == "tree":
                log.add(TREE_VIOLATION, drafted & ~tree, lambda b: f"row {b}: paths {drafts[b].tolist()}"
                        + (f" ({label})" if label else ""))
                drafted = drafted & tree
        clean, path = check_rows(contract.level, out, rows.p, rows.tokens, rows.lengths, log, label)
        if "bonus" in contract.extras:
            full = clean & ((out != -1).sum(axis=1) == rows.lengths + 1)
            differs = full & (out[np.arange(count), np.minimum(rows.lengths, out.shape[1] - 1)] != bonus)
            log.add(BONUS_VIOLATION, differs, lambda b: f"row {b}: emitted {out[b].tolist()}, bonus handed in "
                    f"{int(bonus[b])}" + (f" ({label})" if label else ""))
            clean = clean & ~differs
        return out, clean & drafted, path, rows

    def run(self, rows: DraftedRows, contexts: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any, DraftedRows]:
        """Every row once, over composed batches: ``(out, clean, path, placement, rows)`` in row order (the rows
        along the sampler's drafts with engine drafting)."""
        count = rows.tokens.shape[0]
        batches = compose(count, self.seeded, self.rng)
        out = np.empty(self.output_shape(count), dtype=np.int64)
        clean, path = np.zeros(count, dtype=bool), np.zeros(count, dtype=np.int64)
        disable = {True: False, False: True}.get(self.progress)
        for batch in progress(batches, desc=f"audit-sampler {self.contract.level}", unit="call", disable=disable):
            positions = None
            if self.requests is not None:
                batch.seeds, positions, batch.rounds = self.requests.assign(batch.seeds)
            out[batch.rows], clean[batch.rows], path[batch.rows], called = self.call(
                rows.take(batch.rows), batch.seeds, self.log, contexts, positions=positions)
            if self.contract.engine:
                rows.put(batch.rows, called)
            self.sizes[batch.rows.size] += 1
        return out, clean, path, placements(batches, count), rows

    def batch_coverage(self) -> dict:
        seeded = "mixed with unseeded ones" if self.seeded else "none (no seeds declared)"
        if self.requests is not None and self.seeded:
            seeded += f", {self.requests.seeds.size} requests reused at advancing positions"
        return {"calls": self.calls, "batch sizes": dict(sorted(self.sizes.items())), "seeded rows": seeded}


def _group_tests(values: np.ndarray, placement: RowPlacement, seeded: bool, requests: bool,
                 combination: np.ndarray | None = None) -> list[PendingTest]:
    """PIT tests of every row and of each batch group; ``values`` (rows, m) PIT values per row; ``combination``
    (rows,): each row's parameter combination, with mixed rows (the groups per combination and batch position)."""
    groups = {"all rows": np.ones(values.shape[0], dtype=bool)}
    for name, select in {**GROUPS, **(SEED_GROUPS if seeded else {}),
                         **(REQUEST_GROUPS if seeded and requests else {})}.items():
        groups[name] = select(placement)
    if combination is not None:
        groups.update(combination_groups(combination, placement, POSITION_GROUPS))
    tests = [pit_test("randomized PIT", name, values[mask].ravel()) for name, mask in groups.items()]
    return [test for test in tests if test is not None]


def _audit_nodes(runner: _Runner, scheme, rule: str | None, samples: int, pairs: Sequence[str] | None):
    contract, rng = runner.contract, runner.rng
    mixed = "processing" in contract.extras
    contexts = node_contexts(contract.processing, pairs, contract.vary if mixed else None)
    unknown = set(pairs or ()) - {pair.name for pair in get_suite("standard")} - set(TIE_PAIRS)
    if unknown:
        raise ValueError(f"pairs: unknown pair name(s) {sorted(unknown)}")
    served = [c for c in contexts if (scheme.max_candidates(c.q) or contract.k) >= contract.k]
    skipped = [f"{c.name}: {scheme.name} drafting cannot draw k = {contract.k} candidates" for c in contexts
               if c not in served]
    if not served:
        raise ValueError(f"k: no pair serves k = {contract.k} candidates under {scheme.name} drafting")
    pending: list[PendingTest] = []
    evidence: list[Evidence] = []
    coverage: dict = {"candidate tokens": {}, "residual tokens": {}}
    pit_rows, placements_all, combination_all = [], [], []
    for vocab, ties in sorted({(c.p.size, c.name.split(" [")[0] in TIE_PAIRS) for c in served},
                              key=lambda key: (key[1], key[0])):  # the tie pairs' calls last
        group = [c for c in served if c.p.size == vocab and (c.name.split(" [")[0] in TIE_PAIRS) == ties]
        rows = DraftedRows(
            np.concatenate([np.tile(c.raw_p, (samples, 1)) for c in group]),
            np.concatenate([np.tile(c.raw_q, (samples, 1)) for c in group]),
            np.concatenate([np.tile(c.p, (samples, 1)) for c in group]),
            np.full((len(group) * samples, contract.k), -1, dtype=np.int64) if contract.engine else
            np.concatenate([scheme.draft_rows(c.q, contract.k, samples, 0, rng)[0] for c in group]),
            np.repeat(np.arange(len(group)), samples), np.zeros(len(group) * samples, dtype=np.int64))
        out, clean, _, placement, rows = runner.run(rows, group)
        for index, context in enumerate(group):
            mine = clean & (rows.context == index)
            tokens = out[mine]
            if tokens.size == 0:
                continue
            counts = np.bincount(tokens, minlength=vocab)
            pending.append(counts_test("token law", context.name, "law", counts, context.p))
            formed = out[(rows.context == index) & (out >= 0) & (out < vocab)]
            evidence.append(Evidence(f"token law, {context.name}", np.bincount(formed, minlength=vocab), context.p, {
                name: processed(context.raw_p, claims, context.history)
                for name, claims in dropped(context.processing).items()}, context.combination, {
                name: {other: law for other, (claims, history) in alternatives.items()
                       if (law := law_or_none(lambda c=claims, h=history: processed(context.raw_p, c, h))) is not None}
                for name, alternatives in misread_claims((context.processing, context.history), {
                    other.combination: (other.processing, other.history) for other in served
                    if other.raw_p is context.raw_p and other is not context}).items()} if mixed else {}))
            if contract.engine:
                pending.append(counts_test("draft law (first candidate)", context.name, "drafts",
                                           np.bincount(rows.tokens[mine, 0], minlength=vocab), context.q))
            is_candidate = (rows.tokens[mine] == tokens[:, None]).any(axis=1)
            coverage["candidate tokens"][context.name] = int(is_candidate.sum())
            coverage["residual tokens"][context.name] = int((~is_candidate).sum())
            share = candidate_share(rule, context.p, context.q, contract.k) if rule else None
            if share is not None:
                counts = np.array([int(is_candidate.sum()), int((~is_candidate).sum())])
                pending.append(counts_test("token is a candidate", context.name, "acceptance", counts,
                                           np.array([share, 1.0 - share])))
        values = np.full((out.shape[0], 1), np.nan)
        values[clean, 0] = token_pits(rows.p[clean], out[clean], rng.random(int(clean.sum())))
        pit_rows.append(values)
        placements_all.append(placement)
        combination_all.append(np.array([group[c].combination for c in rows.context]))
    placement = concatenate(placements_all)
    values = np.concatenate(pit_rows)
    keep = ~np.isnan(values[:, 0])
    pending.extend(_group_tests(values[keep], subset(placement, keep), runner.seeded, runner.requests is not None,
                                np.concatenate(combination_all)[keep] if mixed else None))
    return pending, coverage, skipped, evidence


def _audit_rounds(runner: _Runner, scheme, rule: str | None, samples: int, families: Sequence[str] | None,
                  seed: int):
    contract, rng = runner.contract, runner.rng
    families = list(families or (TREE_FAMILIES if contract.level == "tree" else CHAIN_FAMILIES))
    mixed = "processing" in contract.extras
    models = [ChainModel(family, claims, seed, variant_label(family, claims, mixed), history, combination.name)
              for combination, claims, history in row_claims(contract.processing, contract.vary,
                                                             history_for(MODEL_VOCAB), MODEL_VOCAB)
              for family in families]
    depth = contract.depth
    if "lengths" in contract.extras:
        lengths = [rng.integers(0, depth + 1, size=samples) for _ in models]
    else:
        lengths = [np.full(samples, depth) for _ in models]
    if contract.engine:
        rows = _undrafted(contract, samples, len(models))
    else:
        rows = level_rows(contract.level, models, contract.gamma, contract.branching, lengths,
                          scheme_chooser(scheme, rng))
    out, clean, _, placement, rows = runner.run(rows, models)
    pending: list[PendingTest] = []
    evidence: list[Evidence] = []
    accepted = (out != -1).sum(axis=1) - 1
    coverage: dict = {
        "accepted depth": dict(sorted(Counter(accepted[clean].tolist()).items())),
        "depth reached": int(accepted[clean].max()) if clean.any() else None,
        "rounds fully accepted (bonus token emitted)": int((clean & (accepted == rows.lengths)).sum()),
        "rounds ending in a residual draw": int((clean & (accepted < rows.lengths)).sum()),
    }
    values = np.full((out.shape[0], depth + 1), np.nan)
    skipped: list[str] = []
    for index, model in enumerate(models):
        mine = clean & (rows.context == index)
        if not mine.any():
            continue
        sequences = continue_sequences(out[mine], model.target, rng)
        branching = contract.branching if contract.level == "tree" else (1,) * depth
        round_models = model.round_models(branching)
        first = np.bincount(sequences[:, 0], minlength=MODEL_VOCAB)
        pending.append(counts_test("first token", model.name, "law", first, model.target(())))
        for length in PREFIX_LAWS:
            if length < depth + 1:
                codes = sequence_codes(sequences[:, :length], MODEL_VOCAB)
                pending.append(counts_test(f"first {length} tokens", model.name, "law",
                                           np.bincount(codes, minlength=MODEL_VOCAB ** length),
                                           round_models.continuation((), length)))
        pending.append(counts_test("sequence law (cells)", model.name, "law",
                                   np.bincount(sequence_codes(sequences, MODEL_VOCAB),
                                               minlength=MODEL_VOCAB ** (depth + 1)), round_models.target_law()))
        pending.append(PendingTest("sequence law (by prefix)", model.name, "law",
                                   lambda alpha, s=sequences, m=model: prefix_chi_square(
                                       s, m.target, alpha, f"sequence law (by prefix), {m.name}")))
        values[mine] = sequence_pits(sequences, model.target, rng)
        others = {other.combination: (other.processing, other.history) for other in models
                  if other.family == model.family and other is not model} if mixed else {}
        evidence.extend(_prefix_evidence(out[(rows.context == index) & _well_formed(out)], model, others))
        if contract.engine:
            drafts = rows.tokens[mine]
            if contract.level == "tree":  # its first path is a chain of first draws; the root's children a tuple
                if contract.branching[0] > 1:
                    pending.append(_siblings_test(drafts[:, ::contract.paths // contract.branching[0], 0], model,
                                                  runner.scheme))
                drafts = drafts[:, 0]
            pending.append(counts_test("first draft", model.name, "drafts",
                                       np.bincount(drafts[:, 0], minlength=MODEL_VOCAB), model.draft(())))
            pending.append(PendingTest("draft law (by prefix)", model.name, "drafts",
                                       lambda alpha, s=drafts, m=model: prefix_chi_square(
                                           s, m.draft, alpha, f"draft law (by prefix), {m.name}")))
        if rule:
            for length in np.unique(rows.lengths[mine]):
                shape = contract.branching if contract.level == "tree" else (1,) * int(length)
                if length == 0:
                    continue
                law = depth_law(rule, model, shape)
                if law is None:
                    skipped.append(f"accepted depth, {model.name}: more drafted trees than the enumeration visits "
                                   f"(resispec.sequence.enumeration.MAX_TREES); use a smaller branching")
                    continue
                picked = accepted[mine & (rows.lengths == length)]
                name = f"{model.name}" + (f", length {length}" if "lengths" in contract.extras else "")
                pending.append(counts_test("accepted depth", name, "acceptance",
                                           np.bincount(picked, minlength=law.size), law))
    keep = clean
    combination = np.array([models[c].combination for c in rows.context])[keep] if mixed else None
    pending.extend(_group_tests(values[keep], subset(placement, keep), runner.seeded, runner.requests is not None,
                                combination))
    return pending, coverage, skipped, evidence


def _siblings_test(siblings: np.ndarray, model: ChainModel, scheme: DraftingScheme) -> PendingTest:
    """The root's children ``siblings`` (n, k) as ordered tuples against the scheme's tuple law from the processed
    draft (i.i.d. or without replacement, as the sampler declares)."""
    q, k = model.draft(()), siblings.shape[1]
    law = np.zeros(MODEL_VOCAB ** k)
    for children, probability in scheme.tuples(q, k):
        law[sequence_codes(np.array([children]), MODEL_VOCAB)[0]] = probability
    return counts_test(f"root's {k} children ({scheme.name})", model.name, "drafts",
                       np.bincount(sequence_codes(siblings, MODEL_VOCAB), minlength=law.size), law)


def _well_formed(out: np.ndarray) -> np.ndarray:
    """(B,) rows of ``out`` (B, D + 1) whose tokens are ids in range, at least one, with no hole before -1."""
    valid = out != -1
    return valid[:, 0] & ~(~valid[:, :-1] & valid[:, 1:]).any(axis=1) & ((out >= -1) & (out < MODEL_VOCAB)).all(axis=1)


MISREAD_DEPTH = 2
"""Chain, tree: the laws with a parameter read from another row are compared at prefixes of up to this many tokens
(43 prefixes at V = 6, where most emitted tokens are; every prefix would cost a processed row per prefix reached)."""


def _prefix_evidence(out: np.ndarray, model: ChainModel,
                     others: dict[str, tuple[Processing, tuple[int, ...]]]) -> list[Evidence]:
    """Per prefix the rows emitted a token after, the counts of those tokens against the claimed law and the laws
    without each claimed parameter (``parameters``; a verified row emits its token from the law at its prefix)
    and, with mixed rows, with each parameter read from the other combinations ``others`` (claims, history by
    name; ``row_parameters.misread_claims``; at prefixes of up to ``MISREAD_DEPTH`` tokens)."""
    counts: dict[tuple[int, ...], np.ndarray] = {}
    for row in out:
        tokens = [int(x) for x in row if x >= 0]
        for t, token in enumerate(tokens):
            counts.setdefault(tuple(tokens[:t]), np.zeros(MODEL_VOCAB, dtype=np.int64))[token] += 1
    ablated = {name: model.with_processing(claims) for name, claims in dropped(model.processing).items()}
    misread = {name: {label: model.with_processing(claims, history)
                      for label, (claims, history) in alternatives.items()}
               for name, alternatives in misread_claims((model.processing, model.history), others).items()}
    return [Evidence(f"first token, {model.name}", seen, model.target(prefix),
                     {name: other.target(prefix) for name, other in ablated.items()}, model.combination,
                     {name: {label: law for label, other in alternatives.items()
                             if (law := law_or_none(lambda o=other: o.target(prefix))) is not None}
                      for name, alternatives in misread.items()} if len(prefix) <= MISREAD_DEPTH else {})
            for prefix, seen in counts.items()]


def _undrafted(contract: SamplerContract, samples: int, contexts: int) -> DraftedRows:
    """Engine drafting's chain or tree rows before the sampler drafts them: ``samples`` per context, filled by the
    calls."""
    count, depth = samples * contexts, contract.depth
    paths = (count,) if contract.level == "chain" else (count, contract.paths)
    return DraftedRows(np.zeros((*paths, depth + 1, MODEL_VOCAB)), np.zeros((*paths, depth, MODEL_VOCAB)),
                       np.zeros((*paths, depth + 1, MODEL_VOCAB)), np.full((*paths, depth), -1, dtype=np.int64),
                       np.repeat(np.arange(contexts), samples), np.full(count, depth, dtype=np.int64))


def _probe(runner: _Runner, scheme, seed: int) -> list[EdgeOutcome]:
    """Every edge of ``EDGES`` on the probe rows (``edges``, ``probe_rows``)."""
    contract = runner.contract
    rows = probe_rows(contract.level, contract.processing, contract.k, contract.gamma, contract.branching, scheme,
                      seed)
    count = rows.tokens.shape[0]
    contexts = ([ChainModel("zeros", contract.processing, seed)] if contract.level != "node" else
                [c for c in node_contexts(contract.processing, ZERO_PAIRS)
                 if (scheme.max_candidates(c.q) or contract.k) >= contract.k])
    seeds = [None] * count
    if runner.seeded and count > 1:
        seeds[0] = seed
    outcomes = []
    dtype = contract.dtype if contract.arrays == "torch" else "float64"
    for edge in EDGES:
        log = ContractLog()
        with ExitStack() as stack:
            if contract.arrays == "torch":
                record = stack.enter_context(torch_edge(edge))
            else:
                record, generator = stack.enter_context(numpy_edge(edge))
                stack.enter_context(swapped_generators(runner.fn, generator))
            try:
                runner.call(rows, seeds, log, contexts, label=f"edge u = {edge}")
            except SamplerError as error:
                log.rows += count
                log.counts["raised under the edge"] += count
                log.examples["raised under the edge"] = str(error)
        outcomes.append(EdgeOutcome(edge, dict(record.forced), dict(record.unforced), log,
                                    edge_likelihood(edge, dtype)))
    return outcomes
