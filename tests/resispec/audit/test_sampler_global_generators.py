"""A sampler that draws from a global generator (as transformers' does) is audited reproducibly from the
audit's seed, and the caller's random streams are left where they were."""

import json
import random

import numpy as np
import pytest

from resispec.audit.sampler.audit import audit_sampler  # in process: the test records the sampler's calls
from tests.resispec.audit import toy_samplers as toy

torch = pytest.importorskip("torch")

NODE = dict(k=1, samples=300, pairs=["dirichlet-1", "llm-like"])


def python_global_node(p, q, candidates):  # sps at one node on Python's global generator
    return toy.sps_node(p, q, candidates, rng=_PythonUniforms())


class _PythonUniforms:
    @staticmethod
    def random() -> float:
        return random.random()


SAMPLERS = {
    "numpy global": (toy.sps_node, dict(arrays="numpy")),
    "python global": (python_global_node, dict(arrays="numpy")),
    "torch global": (toy.race_node, dict(arrays="torch", dtype="float32")),
}


def _tokens_seen(sampler, options, seed):
    seen = []

    def recording(p, q, candidates):
        out = sampler(p, q, candidates)
        seen.append(np.asarray(out).copy())
        return out

    report = audit_sampler(recording, "node", seed=seed, **NODE, **options)
    return np.concatenate(seen), json.dumps(report.to_dict(), sort_keys=True)  # NaN detectable TVs compare as text


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_the_same_seed_gives_the_same_tokens_and_report_and_the_callers_streams_are_restored(name):
    sampler, options = SAMPLERS[name]
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    first, first_report = _tokens_seen(sampler, options, seed=3)
    assert random.getstate() == states[0]
    assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state()[1:3], states[1][1:3]))
    assert torch.equal(torch.get_rng_state(), states[2])
    random.seed(2), np.random.seed(2), torch.manual_seed(2)  # another caller state: the audit does not see it
    again, again_report = _tokens_seen(sampler, options, seed=3)
    assert np.array_equal(first, again) and first_report == again_report
    other, _ = _tokens_seen(sampler, options, seed=4)
    assert not np.array_equal(first, other)
    assert json.loads(first_report)["verdict"] == "PASS"
