"""pooled: the plan in exact rationals and its exact law, reaching alpha*."""
