"""Round logs (``resispec.formats.pairs`` round fields) and their replay (``resispec.sim.rounds``, ``resispec sim
rounds``):
round trips with parent links, bad links rejected with the field named, replay = direct scoring,
the sparse union vocabulary and tail bucket, and the CLI's output."""

from __future__ import annotations

import json

import numpy as np
import pytest

from resispec.cli import main
from resispec.formats.pairs import FORMAT, logged_pairs, read_logged, shrink, write_logged
from resispec.sequence import get_round_verifier
from resispec.sequence.tree import round_tree
from resispec.sim.batch import PairBatch
from resispec.sim.rounds import log_kind, logged_rounds, score_log, summarise, table

VOCAB = 7
# Two rounds in the tree numbering (internal nodes first): a 2,1 tree and a 1,1 chain.
PARENTS = [[-1, 0, 1, 0, 2], [-1, 0, 1]]


def round_fields(seed: int = 0, drafting: str = "iid") -> tuple[dict, list[tuple]]:
    """Dense round-log fields and, per round, ``(parents, tokens, p, q)`` as a verifier takes them."""
    rng = np.random.default_rng(seed)
    fields = {"round": [], "parent": [], "token": [], "p": [], "q": []}
    rounds = []
    for index, parents in enumerate(PARENTS):
        parents = np.array(parents)
        internal = sum(1 for node in range(parents.size) if (parents == node).any())
        p, q = rng.dirichlet(np.ones(VOCAB), size=parents.size), rng.dirichlet(np.ones(VOCAB), size=internal)
        tokens = np.array([-1] + [rng.choice(VOCAB, p=q[parent]) for parent in parents[1:]])
        fields["round"] += [10 + index] * parents.size
        fields["parent"] += parents.tolist()
        fields["token"] += tokens.tolist()
        fields["p"].append(p)
        fields["q"].append(np.vstack([q, np.zeros((parents.size - internal, VOCAB))]))
        rounds.append((parents, np.maximum(tokens, 0), p, q))
    arrays = {name: np.array(values, dtype=np.int64) for name, values in fields.items() if name not in ("p", "q")}
    arrays.update(format=np.array(FORMAT), p=np.vstack(fields["p"]), q=np.vstack(fields["q"]),
                  drafting=np.array(drafting))
    return arrays, rounds


def sparse_from(fields: dict, keep: int) -> dict:
    """The dense fields cut to ``keep`` ids per row (every child's token kept), the rest as tails."""
    p, q, parents, tokens = fields["p"], fields["q"], fields["parent"], fields["token"]
    starts = np.flatnonzero(parents == -1)
    first = starts[np.searchsorted(starts, np.arange(parents.size), side="right") - 1]
    ids = []
    for row in range(parents.size):
        score = p[row] + q[row]
        score[tokens[(first == first[row]) & (first + parents == row) & (parents >= 0)]] = np.inf
        ids.append(np.sort(np.argsort(-score, kind="stable")[:keep]))
    ids = np.array(ids)
    cut = {name: np.take_along_axis(fields[name], ids, axis=1) for name in ("p", "q")}
    tails = {f"{name}_tail": fields[name].sum(axis=1) - cut[name].sum(axis=1) for name in ("p", "q")}
    return {**fields, **cut, **tails, "token_ids": ids, "vocab_size": np.array(VOCAB)}


def direct(rounds: list[tuple], name: str) -> list[float]:
    verifier = get_round_verifier(name)
    values = []
    for parents, tokens, p, q in rounds:
        tree = round_tree(parents, tokens, VOCAB)
        values.append(verifier.law(tree, p, q).expected_accepted(tree))
    return values


def test_round_trip_with_parent_links_and_replay_equals_direct_scoring(tmp_path):
    fields, rounds = round_fields()
    write_logged(tmp_path / "rounds.npz", logged_pairs(**fields))
    back = read_logged(tmp_path / "rounds.npz")
    for name in ("round", "parent", "token"):
        assert np.array_equal(back.rounds[name], fields[name])
    assert back.metadata["drafting"] == "iid" and log_kind(back) == "iid"
    replayed = list(logged_rounds(back))
    assert [r.tree.parents.tolist() for r in replayed] == PARENTS
    kind, accepted = score_log(back, ["rrs", "resispec", "pooled", "traversal", "traversal_resispec"], progress=False)
    for name, values in accepted.items():
        assert np.allclose(values, direct(rounds, name), rtol=0, atol=1e-12), name
    # leaves carry no draft: the node-level view of the log has the internal rows only
    assert len(PairBatch.from_logged(back)) == sum(len(q) for *_, q in rounds)


def test_sparse_rounds_share_a_union_vocabulary_with_the_tail_bucket():
    fields, rounds = round_fields(seed=3)
    full = logged_pairs(**sparse_from(fields, keep=VOCAB))  # every id kept: equal to the dense log
    _, dense = score_log(logged_pairs(**fields), ["rrs", "traversal"], progress=False)
    _, sparse = score_log(full, ["rrs", "traversal"], progress=False)
    for name in dense:
        assert np.allclose(sparse[name], dense[name], rtol=0, atol=1e-12)
    cut = logged_pairs(**sparse_from(fields, keep=3))
    for mode, buckets in (("merge", 1), ("split", 2)):
        first = next(logged_rounds(cut, mode))
        ids = cut.token_ids[:5]
        union = np.unique(ids)
        assert first.p.shape == (5, union.size + buckets)
        for node in range(5):  # kept ids in their union column, the tail mass in the bucket(s)
            columns = np.searchsorted(union, ids[node])
            assert np.allclose(first.p[node, columns], cut.p[node])
            assert np.isclose(first.p[node, union.size:].sum(), cut.p_tail[node])
        assert [int(union[t]) for t in first.tree.tokens[1:]] == fields["token"][1:5].tolist()


def mutated(change) -> dict:
    fields, _ = round_fields()
    fields = {name: value.copy() for name, value in fields.items()}
    change(fields)
    return fields


def set_entry(name: str, row: int, value):
    def change(fields: dict) -> None:
        fields[name][row] = value
    return change


@pytest.mark.parametrize("change, match", [
    (set_entry("parent", 2, 3), r"field 'parent' row 2: 3 is not an earlier node .*cycle"),
    (set_entry("parent", 1, 1), r"field 'parent' row 1: 1 is not an earlier node"),
    (set_entry("parent", 6, 9), r"field 'parent' row 6: 9 is not an earlier node"),
    (set_entry("parent", 3, -1), r"field 'parent' row 3: -1 is not an earlier node"),
    (set_entry("parent", 5, 0), r"field 'parent' row 5: a round's first row is its root"),
    (set_entry("token", 0, 2), r"field 'token' row 0: -1 at a round's root"),
    (set_entry("token", 3, VOCAB), r"field 'token' row 3: -1 at a round's root, else an id in \[0, 7\)"),
    (set_entry("round", 6, 10), r"field 'round' row 6: round 10's rows are not contiguous"),
    (lambda f: f.pop("parent"), r"field 'parent': round, parent, token come together"),
    (lambda f: f.pop("drafting"), r"field 'drafting': a round log names its drafting rule"),
    (lambda f: f.__setitem__("drafting", np.array("topk")), r"field 'drafting'"),
    (set_entry("q", 4, np.full(VOCAB, 1 / VOCAB)), r"field 'q' row 4: a round's leaf was not drafted from"),
    (set_entry("q", 1, np.zeros(VOCAB)), r"field 'q' row 1: sums to 0"),
    (lambda f: f["parent"].__setitem__(slice(1, 5), [0, 0, 2, 2]),
     r"field 'parent' row 2: a round numbers its internal nodes .* before its leaves"),
])
def test_bad_round_fields_are_rejected_naming_the_field(change, match):
    with pytest.raises(ValueError, match=match):
        logged_pairs(**mutated(change))


def test_a_drafted_token_must_be_possible_and_kept_at_its_parent():
    fields, _ = round_fields()
    fields["q"][0, fields["token"][1]] = 0.0
    fields["q"][0] /= fields["q"][0].sum()
    with pytest.raises(ValueError, match=r"field 'token' row 1: \d has q = 0 at its parent \(row 0\)"):
        logged_pairs(**fields)
    fields, _ = round_fields()
    sparse = sparse_from(fields, keep=3)
    child = int(fields["token"][1])
    other = next(i for i in range(VOCAB) if i not in sparse["token_ids"][0])
    sparse["token_ids"][0][sparse["token_ids"][0] == child] = other
    sparse["token_ids"][0].sort()
    with pytest.raises(ValueError, match=rf"field 'token' row 1: {child} is not among its parent's \(row 0\) kept"):
        logged_pairs(**sparse)
    with pytest.raises(ValueError, match="shrink: a round log"):
        shrink(logged_pairs(**sparse_from(fields, keep=3)), 2, 2)


def test_verifiers_must_match_the_logs_drafting():
    fields, _ = round_fields(drafting="wor")
    pairs = logged_pairs(**fields)
    with pytest.raises(ValueError, match="verifiers: rrs verifies iid-drafted trees; this log's trees are wor"):
        score_log(pairs, ["rrs"], progress=False)
    kind, accepted = score_log(pairs, progress=False)
    assert kind == "wor" and list(accepted) == ["rrs_wor", "resispec_wor", "traversal_wor", "traversal_resispec_wor"]
    with pytest.raises(ValueError, match="no round fields"):
        score_log(logged_pairs(format=np.array(FORMAT), p=fields["p"][:2], q=fields["p"][:2]), progress=False)


def test_summary_pairs_the_differences():
    accepted = {"rrs": np.array([1.0, 2.0, 3.0]), "traversal": np.array([1.5, 2.0, 3.5])}
    base, other = summarise(accepted, "rrs")
    assert (base.difference, base.difference_se, base.resolved) == (0.0, 0.0, False)
    assert other.difference == pytest.approx(1 / 3) and other.difference_se == pytest.approx(np.std([.5, 0, .5], ddof=1)
                                                                                             / np.sqrt(3))
    assert not other.resolved  # 0.333 < 2 x 0.167
    lines = table("iid", [base, other]).splitlines()
    assert lines[0].startswith("iid rounds: 3") and "- rrs (paired)" in lines[1]
    assert lines[3].split()[:2] == ["traversal", "2.3333"] and lines[3].endswith("no")


def test_cli_rounds_json_table_files_and_errors(tmp_path, capsys):
    fields, rounds = round_fields()
    path = tmp_path / "rounds.npz"
    write_logged(path, logged_pairs(**fields))
    assert main(["sim", "rounds", str(path), "--verifiers", "rrs", "traversal", "--out", str(tmp_path / "o"),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["command"] == "rounds" and report["kind"] == "iid" and report["tail"] == "merge"
    assert [r["name"] for r in report["records"]] == ["rrs", "traversal"]
    assert set(report["records"][1]) == {"name", "baseline", "mean", "se", "difference", "difference_se", "rounds",
                                         "resolved_at_2se"}
    assert report["records"][1]["mean"] == pytest.approx(np.mean(direct(rounds, "traversal")), abs=1e-12)
    assert (tmp_path / "o" / "rounds.png").stat().st_size > 0
    lines = (tmp_path / "o" / "rounds.csv").read_text().splitlines()
    assert lines[0] == "round,rrs,traversal" and len(lines) == 1 + len(PARENTS)
    assert main(["sim", "rounds", str(path), "--out", str(tmp_path / "o")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"iid rounds: {len(PARENTS)}; E[accepted draft tokens | tree], " \
                                                     "mean +- SE over rounds"
    for argv, message in (([str(path), "--verifiers", "rrs_wor"], "verifiers: rrs_wor verifies wor-drafted"),
                          ([str(tmp_path / "missing.npz")], "cannot read")):
        assert main(["sim", "rounds", *argv, "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("resispec sim rounds: ") and message in err and len(err.splitlines()) == 1
