"""Audit any speculative sampler through a plain callable, at node, chain or tree level (docs/audit_sampler.md).

``audit_sampler(fn, level, ...)`` -> ``SamplerReport``, run in a process of its own (``isolation``; ``fn`` a
callable or a ``FILE.py:FUNCTION`` spec); the contract per level: ``contract``; the zoo as samplers:
``zoo_sampler``; a stand-in model for verifiers that call one: ``fake_model``.
"""

from resispec.audit.sampler.contract import LEVELS, SamplerContract, SamplerError
from resispec.audit.sampler.edges import EDGES
from resispec.audit.sampler.fake_model import FakeModel, fake_model
from resispec.audit.sampler.isolation import audit_sampler
from resispec.audit.sampler.report import SamplerReport, SamplerTest
from resispec.audit.sampler.zoo import zoo_sampler

__all__ = ["EDGES", "LEVELS", "FakeModel", "SamplerContract", "SamplerError", "SamplerReport", "SamplerTest",
           "audit_sampler", "fake_model", "zoo_sampler"]
