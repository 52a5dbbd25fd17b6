"""The processing law's logit rules and min-p (``resispec.processing``), each against a token-by-token reference in
plain Python written from the module doc, in NumPy and torch; the rules' bad inputs are one-line errors."""

import math

import numpy as np
import pytest

from resispec.processing import Processing, process_logits, process_probs

LOGITS = [2.0, 1.0, -0.5, 0.3, -2.0, 0.0]
HISTORY = (0, 0, 2, 4)


def reference(logits, processing: Processing, history=()) -> list[float]:
    """The law of one row, token by token (module doc of resispec.processing)."""
    z = list(logits)
    for t in range(len(z)):
        count = history.count(t)
        if count:
            r = processing.repetition_penalty
            z[t] = z[t] / r if z[t] > 0 else z[t] * r
        z[t] -= processing.frequency_penalty * count + processing.presence_penalty * (count > 0)
        z[t] += sum(bias for token, bias in processing.logit_bias if token == t)
        excluded = t in processing.banned or (processing.allowed is not None and t not in processing.allowed) or (
            t == processing.eos and len(history) < processing.min_tokens)
        if excluded:
            z[t] = -math.inf
    weights = [math.exp((v - max(z)) / processing.temperature) if v > -math.inf else 0.0 for v in z]
    probs = [w / sum(weights) for w in weights]
    if processing.min_p is not None:
        probs = [v if v >= processing.min_p * max(probs) else 0.0 for v in probs]
    return [v / sum(probs) for v in probs]


RULES = {
    "repetition": Processing(repetition_penalty=1.7),
    "repetition below 1": Processing(repetition_penalty=0.6),
    "frequency": Processing(frequency_penalty=0.4),
    "presence": Processing(presence_penalty=0.8),
    "logit_bias": Processing(logit_bias=((1, 1.5), (4, -3.0))),
    "banned": Processing(banned=(0, 3)),
    "allowed": Processing(allowed=(1, 2, 5)),
    "min_tokens held": Processing(min_tokens=5, eos=1),
    "min_tokens reached": Processing(min_tokens=4, eos=1),
    "min_p": Processing(min_p=0.3),
    "all with temperature": Processing(temperature=0.7, min_p=0.05, logit_bias=((2, 0.5),),
                                       repetition_penalty=1.3, presence_penalty=0.2, frequency_penalty=0.1, banned=(4,),
                                       allowed=(0, 1, 2, 3, 5), min_tokens=9, eos=5),
}


@pytest.mark.parametrize("name", list(RULES))
def test_each_rule_equals_its_token_by_token_reference(name):
    processing = RULES[name]
    expected = reference(LOGITS, processing, HISTORY)
    got = process_logits(np.array([LOGITS]), processing, HISTORY)[0]
    assert np.allclose(got, expected, rtol=0, atol=1e-12)
    torch = pytest.importorskip("torch")
    assert np.allclose(process_logits(torch.tensor([LOGITS], dtype=torch.float64), processing, HISTORY)[0].numpy(),
                       expected, rtol=0, atol=1e-12)


def test_the_repetition_penalty_depends_on_the_logits_sign_the_others_on_differences_only():
    probs = np.exp(LOGITS) / np.exp(LOGITS).sum()
    for name, processing in RULES.items():
        shifted = process_probs(probs, processing, HISTORY, shift=3.0)
        plain = process_probs(probs, processing, HISTORY)
        assert np.allclose(shifted, plain, atol=1e-12) != processing.needs_logits, name


def test_a_rule_changes_the_law_only_where_its_history_says():
    assert np.allclose(process_logits(np.array(LOGITS), RULES["frequency"], ()),
                       process_logits(np.array(LOGITS), Processing(), ()))
    assert RULES["frequency"].uses_history and not RULES["logit_bias"].uses_history
    assert RULES["min_p"].claims() == {"min_p": 0.3}


@pytest.mark.parametrize("options, message", [
    (dict(min_p=0), "min_p: must be a number in"), (dict(repetition_penalty=0), "repetition_penalty: must be"),
    (dict(presence_penalty=float("nan")), "presence_penalty"), (dict(banned=(-1,)), "banned: token ids"),
    (dict(logit_bias=((1, float("inf")),)), "logit_bias: biases"), (dict(min_tokens=2), "needs the eos id"),
    (dict(min_tokens=True, eos=1), "min_tokens: must be"),
])
def test_bad_claims_are_one_line_errors_naming_the_parameter(options, message):
    with pytest.raises(ValueError, match=message):
        Processing(**options)


@pytest.mark.parametrize("processing, history, message", [
    (Processing(banned=(9,)), (), "banned: token id 9 is outside the vocabulary of 6"),
    (Processing(frequency_penalty=0.1), (7,), "history: token id 7"),
    (Processing(allowed=(4,), banned=(4,)), (), "exclude every token"),
])
def test_rules_that_do_not_fit_the_row_are_one_line_errors(processing, history, message):
    with pytest.raises(ValueError, match=message):
        process_logits(np.array([LOGITS]), processing, history)
