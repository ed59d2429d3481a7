"""Where each registered fast solver meets the certified optimum, across C = 1e-12 .. 1e12.

Not a timing: a map of the supported range (:data:`cvxrank.tolerances.C_RANGE`) on the small
synthetic instance of ``tests/solvers/test_extreme_c.py``, with that test's run limits. Each cell is
the relative objective gap ``(P(w) - p*) / |p*|`` of a run that reported converged, ``nc``
for a run that stopped within its limits without meeting its tolerance (and said so), or
``c?`` where the solver converged but CVXPY (Clarabel) does not certify that C, so there is
nothing to compare with. The test asserts the same three outcomes on random C.

Usage::

    .venv/bin/python benchmarks/extreme_c.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cvxrank import tolerances  # noqa: E402
from cvxrank.certificates.reference import solve_reference  # noqa: E402
from cvxrank.errors import SolverError  # noqa: E402
from tests.solvers.test_extreme_c import DATA, ENTRIES, LIMITS  # noqa: E402

EXPONENTS = (-12, -8, -4, 0, 4, 8, 12)


def cell(entry, C: float) -> str:
    f = entry.build(DATA, {"C": C})
    run = entry.solve(f, **{**entry.limits, **LIMITS, "tol": entry.tol})
    if not run.converged:
        return "nc"
    try:
        ref = solve_reference(f, cache=False)
    except SolverError:
        return "c?"
    return f"{tolerances.relative_gap(f.primal_value(run.w), ref.p_star):.0e}"


def main() -> int:
    warnings.simplefilter("ignore")
    print(f"{'entry':36s}" + "".join(f"{'1e' + str(e):>7s}" for e in EXPONENTS))
    for entry in ENTRIES:
        print(f"{entry.name:36s}" + "".join(f"{cell(entry, 10.0 ** e):>7s}" for e in EXPONENTS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
