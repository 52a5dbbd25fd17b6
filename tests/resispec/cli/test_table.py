"""The CLI's tables and paragraphs stay within ~100 columns, and no figure prints as ``-0.0000`` (issue 46: a
547-character footer in ``audit``, 416-column ``sim`` tables, ``-0.0000`` gains in ``sim compare``)."""

from __future__ import annotations

from resispec.cli import main
from resispec.cli.table import WIDTH, fixed, format_table, wrap


def test_a_wide_table_is_split_into_blocks_that_repeat_the_key_columns():
    headers = ["source", "verifier", *(f"column {i}" for i in range(12))]
    rows = [["logged:sample", name, *(f"{i / 7:.6f}" for i in range(12))] for name in ("rrs", "resispec")]
    text = format_table(headers, rows, width=60, keys=2)
    blocks = text.split("\n\n")
    assert len(blocks) > 1 and all(block.startswith("source") for block in blocks)
    assert max(map(len, text.splitlines())) <= 60
    assert sum(block.splitlines()[0].count("column") for block in blocks) == 12
    assert format_table(headers[:3], [row[:3] for row in rows], width=60) == format_table(headers[:3],
                                                                                       [row[:3] for row in rows])


def test_fixed_never_prints_a_negative_zero():
    assert fixed(-0.00001) == "0.0000" and fixed(-0.00001, sign=True) == "+0.0000"
    assert fixed(-0.5, sign=True) == "-0.5000" and fixed(float("nan")) == "-"


def test_wrap_keeps_words_whole():
    text = "word " * 60
    assert all(len(line) <= WIDTH for line in wrap(text).splitlines())


def test_sim_compare_prints_within_the_width(capsys, tmp_path):
    status = main(["sim", "compare", "--source", "dirichlet:alpha=1,V=16", "--verifiers", "rrs", "resispec",
                   "--k", "1", "2", "--pairs", "20", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0 and "-0.0000" not in out
    assert max(len(line) for line in out.splitlines() if not line.startswith("wrote: ")) <= WIDTH + 10
