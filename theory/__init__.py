"""Machine-checked derivations of every exactness and optimality claim ResiSpec makes.

``python -m theory`` checks each theorem (symbolic identities, case analyses, LP certificates, exact
rational arithmetic), prints one line per theorem and regenerates ``docs/theory.md``.  One module per
verifier family; ``theory.registry.FAMILIES`` lists them.
"""

from theory.report import main, run_all

__all__ = ["main", "run_all"]
