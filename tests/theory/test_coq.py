"""The Coq/MathComp development compiles, proves its main theorems from no axioms, and matches the record
the docs quote. Needs ``coqc`` (Debian's ``coq`` and ``libcoq-mathcomp-*``, installed by ``.ci/install``);
without it the compile test is skipped with that reason."""

from __future__ import annotations

import pytest

from resispec.theory import formal
from resispec.theory.registry import FORMAL, all_theorems


def test_no_admitted_or_axiom_in_the_sources():
    assert formal.unproven_markers() == []


def test_every_formal_theorem_is_printed_and_recorded():
    names = [f.name for f in formal.FORMAL]
    assert formal.printed_names() == names
    assert list(formal.recorded_assumptions()) == names
    assert set(formal.recorded_assumptions().values()) == {formal.CLOSED}


def test_formal_links_point_at_real_claims():
    claims = {t.name: t for t in all_theorems()}
    coq = {f.name for f in formal.FORMAL}
    for f in formal.FORMAL:
        assert set(f.covers) <= set(claims), f.name
    for t in claims.values():
        assert set(t.formal) <= coq, t.name
        if t.label == FORMAL:
            assert t.formal, f"{t.name} is labelled formal but names no Coq theorem"


def test_parse_assumptions_rejects_a_short_answer():
    with pytest.raises(ValueError, match="expected 2"):
        formal.parse_assumptions(["a", "b"], formal.CLOSED + "\n")
    axioms = "Axioms:\nclassic : forall P : Prop, P \\/ ~ P\n"
    assert formal.parse_assumptions(["a", "b"], formal.CLOSED + "\n" + axioms)["b"].startswith("Axioms:")


def test_without_coqc_the_run_says_why(monkeypatch):
    monkeypatch.setattr(formal, "coqc", lambda: None)
    compiled = formal.compile_development()
    assert not compiled.ran and "coqc absent" in compiled.message and ".ci/install" in compiled.message


@pytest.mark.slow
@pytest.mark.skipif(formal.coqc() is None, reason="coqc absent: " + formal.INSTALL_HINT)
def test_the_development_compiles_with_no_axioms():
    compiled = formal.compile_development(timeout_s=300)
    assert compiled.passed, compiled.message
    assert compiled.assumptions == formal.recorded_assumptions(), \
        "run `python -m resispec.theory` and commit theory/coq/assumptions.txt"


def test_the_project_lists_every_source_file():
    assert sorted(formal.source_files()) == sorted(p.name for p in formal.COQ_DIR.glob("*.v"))
    assert formal.source_files()[-1] == "Assumptions.v"
