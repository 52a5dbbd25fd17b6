"""The derivations of every exactness and optimality claim ResiSpec makes, and what checks them.

``python -m resispec.theory`` checks each theorem (symbolic identities, case analyses, LP certificates, exact
rational arithmetic), labels the kind of proof behind it (``resispec.theory.registry.LABELS``), compiles the
Coq development of ``theory/coq`` when ``coqc`` is present (``resispec.theory.formal``), prints one line per
theorem and regenerates ``docs/theory.md``.  One module per
verifier family; ``resispec.theory.registry.FAMILIES`` lists them.
"""

from resispec.theory.report import main, run_all

__all__ = ["main", "run_all"]
