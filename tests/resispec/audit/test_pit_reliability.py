"""The randomized PIT stays in [0, 1] whatever the magnitudes, and an audit with no power is never a pass
(issue 31: "nothing tested is never PASS")."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from resispec.audit import NothingTested, Verdict, pit_audit, randomized_pit


def _float32_row(tiny: float, size: int = 49152, seed: int = 0) -> np.ndarray:
    """A softmax-like row whose sum is above 1 by float32 rounding (3e-7) and whose last entry is ``tiny``."""
    rng = np.random.default_rng(seed)
    row = rng.dirichlet(np.full(size, 0.3))
    row[-1] = 0.0
    row *= (1 + 3e-7) / row.sum()
    row[-1] = tiny
    return row


@pytest.mark.parametrize("tiny", [1e-41, 4e-41, 1e-49, 1e-100, 1e-300, 0.0])
def test_a_token_of_tiny_p_at_the_end_of_the_order_stays_in_the_unit_interval(tiny):
    row = _float32_row(tiny)
    for u in (0.0, 0.5, np.nextafter(1.0, 0.0)):
        value = randomized_pit(row, row.size - 1, float(u))
        assert 0.0 <= value <= 1.0, (tiny, u, value)


@given(st.lists(st.floats(1e-300, 1.0), min_size=2, max_size=40), st.floats(0.0, 0.999999), st.data())
def test_randomized_pit_is_a_fraction_for_any_unnormalised_row(weights, u, data):
    p = np.array(weights) / np.sum(weights) * data.draw(st.floats(1 - 1e-6, 1 + 1e-6))
    token = data.draw(st.integers(0, p.size - 1))
    value = randomized_pit(p, token, u)
    assert 0.0 <= value <= 1.0
    below = p[:token].sum() / p.sum()
    assert below - 1e-12 <= value <= below + p[token] / p.sum() + 1e-12


def test_a_stream_of_tokens_down_to_1e_300_is_audited_not_refused():
    """Exact sampling from rows with tiny tails: every PIT value is valid and the audit passes; a stream
    that emits the tiny tokens is rejected."""
    rng = np.random.default_rng(1)
    honest, biased = [], []
    for n in range(400):
        row = _float32_row(10.0 ** -rng.integers(40, 301), size=512, seed=n)
        token = int(rng.choice(row.size, p=row / row.sum()))
        honest.append(randomized_pit(row, token, float(rng.random())))
        biased.append(randomized_pit(row, row.size - 1, float(rng.random())))
    assert pit_audit(honest).verdict is Verdict.PASS
    result = pit_audit(biased)
    assert result.verdict is Verdict.FAIL and not result.passed


@pytest.mark.parametrize("values", [[0.3, 0.3], [0.1, 0.9], list(np.linspace(0.05, 0.95, 9))])
def test_too_few_values_are_untested_never_passed(values):
    result = pit_audit(values)
    assert result.verdict is Verdict.UNTESTED
    assert not result.passed
    assert result.to_dict()["verdict"] == "UNTESTED"
    assert "untested" in result.note and "10" in result.note
    with pytest.raises(NothingTested, match="untested"):
        result.require_tested()


def test_ten_values_are_tested_and_state_the_detectable_tv():
    result = pit_audit(np.linspace(0.05, 0.95, 10))
    assert result.verdict is Verdict.PASS and result.passed
    assert 0 < result.min_detectable_tv <= 1
    result.require_tested()


@pytest.mark.parametrize("values", [["0.1", "0.5", "0.9"], [0.1 + 1j, 0.5, 0.9], np.array([0.1, 0.5, 0.9]) * 1j,
                                    [True, False, True]])
def test_strings_complex_numbers_and_booleans_are_a_value_error_naming_values(values):
    with pytest.raises(ValueError, match="^values: expected real numbers"):
        pit_audit(values)
