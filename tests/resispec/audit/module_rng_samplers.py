"""Samplers that draw from a NumPy generator made before the call, in the places ``resispec.audit.sampler.reach``
looks (a module global, the most common NumPy style; a default argument) and in one it does not (an object's
attribute). Each is sps at one node; ``accept_at_equality=True`` accepts iff ``u <= ratio`` (at u = 0 a candidate
with p = 0 is accepted)."""

import numpy as np

from tests.resispec.audit.toy_samplers import rng_node

RNG = np.random.default_rng(3)


def module_rng_node(p, q, candidates, accept_at_equality=False):
    return rng_node(p, q, candidates, RNG, accept_at_equality)


def default_rng_node(p, q, candidates, rng=np.random.default_rng(4), accept_at_equality=False):  # noqa: B008 (the style reached)
    return rng_node(p, q, candidates, rng, accept_at_equality)


class ObjectRngNode:
    """The generator as an attribute: out of the probe's reach."""

    def __init__(self, accept_at_equality=False):
        self.rng, self.accept_at_equality = np.random.default_rng(5), accept_at_equality

    def __call__(self, p, q, candidates):
        return rng_node(p, q, candidates, self.rng, self.accept_at_equality)
