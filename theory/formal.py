"""The Coq/MathComp development in ``theory/coq``: what each formal theorem states, and compiling it.

The development (Debian's ``coq`` 8.16 and ``libcoq-mathcomp-*`` 1.15) works over any finite token type
and any real field (the rationals are one). ``Sequential.v`` defines a sequential verifier as a step
function and proves the generic exactness theorem; ``Sps.v``, ``RrsWor.v``, ``ResispecWor.v`` and
``Resispec.v`` instantiate it; ``Paper.v`` computes the published rule's counterexample in the rationals;
``Optimal.v`` proves that no exact single-draft verifier accepts more than sps; ``Assumptions.v`` prints
the axioms each main theorem rests on. ``ASSUMPTIONS_RECORD`` keeps that output for the docs (so they
do not depend on whether ``coqc`` is installed); ``tests/theory/test_coq.py`` checks it against a fresh compile.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

COQ_DIR = Path(__file__).resolve().parent / "coq"
PROJECT = COQ_DIR / "_CoqProject"
LOGICAL_ROOT = "ResiSpec"
# MathComp's notations override Coq's nat ones and add ambiguous coercion paths: harmless, noisy
# (the same flags as _CoqProject's -arg lines).
WARNINGS = "-notation-overridden,-ambiguous-paths"
ASSUMPTIONS_RECORD = COQ_DIR / "assumptions.txt"
CLOSED = "Closed under the global context"
INSTALL_HINT = "install Debian's coq and libcoq-mathcomp-ssreflect/-algebra/-algebra-tactics (.ci/install)"


@dataclass(frozen=True)
class FormalTheorem:
    """One main theorem of the development: its Coq name and file, what it says, and the ``theory``
    claims and Python verifier code it covers."""

    name: str
    file: str
    statement: str
    covers: tuple[str, ...]
    python: str


FORMAL: tuple[FormalTheorem, ...] = (
    FormalTheorem(
        "sequential_exact", "Sequential.v",
        "A sequential verifier (state, draft law, acceptance, next state, final law) emits the target of "
        "its start state if every state reachable with m candidates left satisfies the kernel identity "
        "sum_x draft(x) (1 - accept(x)) target(next x) = target - draft * accept, and every final state "
        "emits its target.",
        ("resispec_wor.recursion_exact",), "theory/common/sequential.py (emit)",
    ),
    FormalTheorem(
        "law_defect", "Sequential.v",
        "At a state whose continuations are exact, the emitted law minus the target equals the kernel "
        "identity's defect (the state-by-state converse).",
        ("resispec_wor.recursion_exact", "resispec_paper.condition"), "theory/common/sequential.py (emit)",
    ),
    FormalTheorem(
        "sps_exact", "Sps.v",
        "sps emits p, for every finite token type.",
        ("sps.exact",), "theory/rejection/sps.py (SPSChain, k = 1); resispec/verifiers/sps.py (SPS)",
    ),
    FormalTheorem(
        "sps_acceptance_TV", "Sps.v",
        "sps accepts with probability 1 - sum_x (p - q)+(x) = 1 - TV(p, q).",
        ("sps.exact",), "theory/rejection/sps.py (SPSChain, k = 1); resispec/verifiers/sps.py (SPS)",
    ),
    FormalTheorem(
        "sps_accept_range", "Sps.v",
        "The sps acceptance min(1, r(x)/q(x)) lies in [0, 1] (so rrs and rrs_wor are valid rules).",
        ("sps.exact", "rrs.exact", "rrs_wor.exact"),
        "theory/rejection/sps.py (accept_probability); resispec/verifiers/rrs.py, rrs_wor.py",
    ),
    FormalTheorem(
        "rrs_exact", "Sps.v",
        "rrs with k i.i.d. candidates emits p, for every token type and every k.",
        ("rrs.exact",), "theory/rejection/sps.py (SPSChain); resispec/verifiers/rrs.py (RRS)",
    ),
    FormalTheorem(
        "rrs_wor_exact", "RrsWor.v",
        "rrs_wor (candidates without replacement) emits p for every token type and every k <= |supp q|.",
        ("rrs_wor.exact",),
        "theory/rejection/rrs_wor.py (SPSChainWOR); resispec/verifiers/rrs_wor.py (RRSWithoutReplacement)",
    ),
    FormalTheorem(
        "resispec_wor_exact", "ResispecWor.v",
        "resispec_wor emits p for every token type, every k <= |supp q| and every admissible planner "
        "(any step mass 0 <= A <= min(r, q') at every state): its targets r_x = Pi(x, .) a_2 + "
        "(1 - <Pi(x, .), a_2>) norm(f) satisfy the kernel identity and are distributions.",
        ("resispec_wor.recursion_exact", "resispec_wor.exact_law"),
        "theory/resispec_wor/wor_shaping.py (ResiSpecWOR, any planner); "
        "resispec/verifiers/resispec_wor/rule.py (ResiSpecWithoutReplacement)",
    ),
    FormalTheorem(
        "resispec_exact", "Resispec.v",
        "resispec's threshold schedule emits p for every token type, every k and any thresholds "
        "T_1 >= ... >= T_k >= 0 (exactness does not need the tight schedule).",
        ("resispec.telescoping",),
        "theory/resispec/resispec.py (ResiSpec); resispec/verifiers/resispec/rule.py (ResiSpec)",
    ),
    FormalTheorem(
        "rs_accept_range", "Resispec.v",
        "With feasible thresholds (T_j - T_{j+1} <= R_j) every acceptance a_j(x) of resispec lies in [0, 1].",
        ("resispec.acceptance_bounds",),
        "theory/resispec/resispec.py (ResiSpec.accept); resispec/verifiers/resispec/rule.py (ResiSpec)",
    ),
    FormalTheorem(
        "paper_counterexample", "Paper.v",
        "The published rule (reconstructed reserve) on p = (2/5, 3/10, 3/10), q = (3/5, 3/10, 1/10), "
        "k = 1 emits token 1 with probability 12/25, not p(1) = 3/10 (computed in the rationals).",
        ("resispec_paper.counterexample",),
        "theory/controls/resispec_paper.py (PaperRule, reconstruction, CE); "
        "resispec/verifiers/resispec_paper.py (ResiSpecPaper)",
    ),
    FormalTheorem(
        "paper_not_exact", "Paper.v",
        "Hence some token's output probability differs from p: the published rule is not exact.",
        ("resispec_paper.counterexample",),
        "theory/controls/resispec_paper.py (PaperRule, reconstruction, CE); "
        "resispec/verifiers/resispec_paper.py (ResiSpecPaper)",
    ),
    FormalTheorem(
        "single_draft_optimal", "Optimal.v",
        "Any exact verifier of one candidate (acceptance in [0, 1], non-negative laws after a rejection, "
        "which may depend on the candidate) accepts at most sum_y min(p(y), q(y)): the k = 1 case of the "
        "i.i.d. optimum alpha*.",
        ("iid_optimum.min_cut", "sps.exact"), "theory/common/sequential.py (any rule with k = 1)",
    ),
    FormalTheorem(
        "sps_optimal", "Optimal.v",
        "sps attains it: no exact single-draft verifier drafting from q accepts more than sps.",
        ("sps.exact",), "theory/rejection/sps.py (SPSChain, k = 1); resispec/verifiers/sps.py (SPS)",
    ),
)


@dataclass(frozen=True)
class Compilation:
    """The outcome of compiling the development: ``ran`` is false when ``coqc`` is absent (``message``
    says so); ``assumptions`` maps each theorem printed by ``Assumptions.v`` to Coq's answer."""

    ran: bool
    passed: bool
    seconds: float
    message: str
    assumptions: dict[str, str]
    version: str = ""


def source_files() -> list[str]:
    """The ``.v`` files of the development in dependency order, as ``_CoqProject`` lists them."""
    return [line.strip() for line in PROJECT.read_text().splitlines() if line.strip().endswith(".v")]


def coqc() -> str | None:
    """The ``coqc`` on the PATH, or None."""
    return shutil.which("coqc")


def parse_assumptions(names: list[str], output: str) -> dict[str, str]:
    """Split the output of ``Assumptions.v`` (one ``Print Assumptions`` per name, in order) by theorem."""
    blocks = [b.strip() for b in re.split(rf"(?m)^(?={CLOSED}|Axioms:)", output) if b.strip()]
    blocks = [b for b in blocks if b.startswith((CLOSED, "Axioms:"))]
    if len(blocks) != len(names):
        raise ValueError(f"expected {len(names)} Print Assumptions answers, got {len(blocks)}")
    return dict(zip(names, blocks))


def printed_names() -> list[str]:
    """The theorems ``Assumptions.v`` prints, in order."""
    return re.findall(r"Print Assumptions (\w+)\.", (COQ_DIR / "Assumptions.v").read_text())


def compile_development(timeout_s: float = 600) -> Compilation:
    """Compile every file of ``theory/coq`` in a scratch copy (the tree gets no build products) and
    collect the ``Print Assumptions`` answers. Never raises for a missing ``coqc``: ``ran`` is false."""
    exe = coqc()
    if exe is None:
        return Compilation(False, False, 0.0, f"coqc absent: formal proofs not checked in this run; {INSTALL_HINT}", {})
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="resispec-coq-") as tmp:
        files = source_files()
        for name in files:
            shutil.copy(COQ_DIR / name, tmp)
        output = ""
        for name in files:
            try:
                proc = subprocess.run(
                    [exe, "-w", WARNINGS, "-Q", ".", LOGICAL_ROOT, name],
                    cwd=tmp, capture_output=True, text=True, timeout=timeout_s,
                )
            except subprocess.TimeoutExpired:
                return Compilation(True, False, time.perf_counter() - start, f"{name}: timed out", {}, version)
            if proc.returncode != 0:
                tail = (proc.stdout + proc.stderr).strip().splitlines()[-12:]
                failure = f"{name} failed:\n" + "\n".join(tail)
                return Compilation(True, False, time.perf_counter() - start, failure, {}, version)
            output = proc.stdout
    assumptions = parse_assumptions(printed_names(), output)
    axioms = [n for n, a in assumptions.items() if a != CLOSED]
    message = ("every main theorem is closed under the global context" if not axioms
               else f"axioms used by: {', '.join(axioms)}")
    return Compilation(True, not axioms, time.perf_counter() - start, message, assumptions, version)


def record_text(assumptions: dict[str, str]) -> str:
    """The text of ``ASSUMPTIONS_RECORD``: one ``name: answer`` block per theorem."""
    return "".join(f"{name}: {answer}\n" for name, answer in assumptions.items())


def recorded_assumptions() -> dict[str, str]:
    """The committed ``Print Assumptions`` answers (the docs quote these)."""
    out: dict[str, str] = {}
    for block in re.split(r"(?m)^(?=\w+: )", ASSUMPTIONS_RECORD.read_text()):
        if block.strip():
            name, answer = block.split(": ", 1)
            out[name] = answer.strip()
    return out


def unproven_markers() -> list[str]:
    """``file: line`` for every ``Admitted``/``admit``/``Axiom``/``Parameter`` in the development."""
    marks = re.compile(r"\b(Admitted|admit|Axiom|Parameter|Conjecture)\b")
    return [
        f"{path.name}: {line.strip()}"
        for path in sorted(COQ_DIR.glob("*.v"))
        for line in path.read_text().splitlines()
        if marks.search(re.sub(r"\(\*.*?\*\)", "", line))
    ]
