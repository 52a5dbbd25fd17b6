"""The bounds on acceptance: the i.i.d. optimum alpha*."""
