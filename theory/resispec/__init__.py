"""resispec: exact residual shaping, its schedule and its sequential-LP optimality."""
