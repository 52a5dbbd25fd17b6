"""ResiSpec: exact multi-candidate speculative sampling.

``p`` is always the target distribution and ``q`` the draft. ``VERIFIERS`` maps names to verifier
classes; ``get_verifier(name)`` returns an instance implementing the contract in
``resispec.verifiers.base``.
"""

from resispec.verifiers import VERIFIERS, BoundVerifier, Verifier, get_verifier

__all__ = ["VERIFIERS", "BoundVerifier", "Verifier", "get_verifier"]
__version__ = "0.1.0"
