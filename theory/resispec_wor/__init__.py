"""resispec_wor: residual shaping without replacement, the k = 2 plan, its LP and lemmas."""
