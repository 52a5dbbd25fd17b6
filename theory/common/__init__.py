"""Building blocks every derivation shares: exact arithmetic backends, rational instances, SymPy helpers, sequential
rules and their exact law."""
