"""``fake_model(rows)``: a stand-in model for verifiers that call one (docs/audit_sampler.md, the contract).

Some verifiers take a model and compute the target's rows themselves (MCSD's ``verify`` runs the target's
``lm_head`` on hidden states). To audit such a verifier, hand it ``fake_model(p)``: whatever it is called with
(``model(...)``, ``model.forward(...)``, ``model.lm_head(...)``), it returns the rows the audit handed over, so
the verifier's own code runs on the audit's target; ``model.calls`` counts the calls.
"""

from __future__ import annotations

from typing import Any


class FakeModel:
    """Returns ``rows`` from every call (module doc); ``logits`` is ``rows`` too, for code that reads an output
    object's ``.logits``."""

    def __init__(self, rows: Any) -> None:
        self.rows, self.calls = rows, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.rows

    forward = __call__
    lm_head = property(lambda self: self)

    @property
    def logits(self) -> Any:
        return self.rows


def fake_model(rows: Any) -> FakeModel:
    """A model whose every call returns ``rows`` (the audit's target rows, e.g. ``p`` of the call)."""
    return FakeModel(rows)
