"""The core stands without torch: numpy, scipy and array-api-compat are enough to verify with every rule.

A fresh interpreter whose import of torch fails (a meta path finder refuses it) imports the core,
binds every verifier and verifies (k = 3 where allowed) and takes an exact law; the row helpers and the plans
written over rows (``resispec.verifiers.resispec.plan``, ``resispec_wor.plan``) are among the modules it ran.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys

    class NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ImportError("torch is blocked in this test")
            return None

    sys.meta_path.insert(0, NoTorch())
    import numpy as np

    import resispec
    from resispec.verifiers import VERIFIERS, get_verifier

    p, q = np.array([0.5, 0.3, 0.2, 0.0]), np.array([0.1, 0.2, 0.3, 0.4])
    rng = np.random.default_rng(0)
    for name in VERIFIERS:
        verifier = get_verifier(name)
        k = min(3, verifier.max_k or 3)  # resispec_wor: a plan after a rejection too
        candidates = verifier.draft(q, k, rng)
        verifier.verify_rng(p, q, candidates, rng)
        assert abs(verifier.conditional_law(p, q, candidates).sum() - 1.0) < 1e-12
    for module in ("resispec.rows", "resispec.row_ratio_profile", "resispec.verifiers.resispec.plan",
                   "resispec.verifiers.resispec_wor.plan"):
        assert module in sys.modules, module
    assert "torch" not in sys.modules
    for module in ("resispec.rows", "resispec.verifiers.select_then_verify", "resispec.verifiers.pooled.plan",
                   "resispec.verifiers.pooled_wor.plan"):  # the rules written once over rows ran
        assert module in sys.modules, module
    print("ok", len(VERIFIERS))
""")


def test_the_core_verifies_with_every_rule_when_torch_cannot_be_imported():
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    from resispec.verifiers import VERIFIERS

    assert result.stdout.split() == ["ok", str(len(VERIFIERS))]  # every rule ran
