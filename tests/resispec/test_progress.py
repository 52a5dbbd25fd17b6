"""``resispec.progress``: long work reports on stderr also when it is not a terminal, and never needs tqdm."""

from __future__ import annotations

import io
import sys

import pytest

from resispec.progress import Progress, duration, interval, progress


def test_off_a_terminal_it_prints_lines_with_the_share_and_an_estimate(monkeypatch):
    monkeypatch.setenv("RESISPEC_PROGRESS_SECONDS", "0")
    out = io.StringIO()
    with Progress(total=4, desc="synth", unit="rows", file=out) as bar:
        bar.update()
        bar.set_postfix_str("stage two")
        bar.update(3)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("synth: 1/4 rows (25 %), 0 s, about 0 s left")
    assert "[stage two]" in lines[1] and lines[-1].startswith("synth: 4/4 rows (100 %)") and "[done]" in lines[-1]


def test_short_work_prints_nothing_and_disable_silences_it(monkeypatch):
    monkeypatch.delenv("RESISPEC_PROGRESS_SECONDS", raising=False)
    out = io.StringIO()
    with Progress(total=3, desc="quick", file=out) as bar:
        bar.update(3)
    monkeypatch.setenv("RESISPEC_PROGRESS_SECONDS", "0")
    with Progress(total=3, desc="off", file=out, disable=True) as bar:
        bar.update(3)
    assert out.getvalue() == "" and interval() == 0


def test_a_terminal_without_tqdm_gets_lines(monkeypatch):
    """tqdm is optional: with its import refused, a terminal gets the plain lines."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setenv("RESISPEC_PROGRESS_SECONDS", "0")
    out = Terminal()
    with Progress(desc="scan", unit="files", file=out) as bar:
        bar.update(2)
    assert out.getvalue().splitlines()[0] == "scan: 2 files, 0 s"


def test_progress_yields_every_item_and_counts_them(monkeypatch, capsys):
    monkeypatch.setenv("RESISPEC_PROGRESS_SECONDS", "0")
    assert list(progress(range(3), desc="items")) == [0, 1, 2]
    assert capsys.readouterr().err.splitlines()[2].startswith("items: 3/3 it (100 %)")


def test_a_bad_interval_is_named(monkeypatch):
    monkeypatch.setenv("RESISPEC_PROGRESS_SECONDS", "soon")
    with pytest.raises(ValueError, match="RESISPEC_PROGRESS_SECONDS"):
        Progress()


@pytest.mark.parametrize(("seconds", "text"), [(4.4, "4 s"), (185, "3 min 5 s"), (3720, "1 h 2 min")])
def test_durations_read_as_a_person_would(seconds, text):
    assert duration(seconds) == text
