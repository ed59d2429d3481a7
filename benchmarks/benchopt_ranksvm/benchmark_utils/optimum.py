"""The certified optimum every solver of the benchmark is measured against.

For a RankSVM ``f`` (one dataset, loss and C) :func:`certified_optimum` runs cvxrank's own
certified solvers to tight tolerances on ``f`` (PRSVM+ for the squared hinge, the 1-slack
cutting plane for the hinge, a short ladder of tolerances) and keeps the run of smallest
certified gap:

* ``w_ref``, its point, and ``value = f.primal_value(w_ref)``, evaluated by the same numpy
  evaluator as every solver's iterate, with ``value_error``, the bound on that evaluation's
  rounding (:meth:`~cvxrank.formulations.ranksvm.RankSVM.primal_bounds`);
* ``gap``, the run's certified bound on ``P(w_ref) - p*`` (its own rounding included: the
  squared hinge's dual point at w, the cutting plane's master dual and exact finish), and
  ``radius``, its certified bound on ``||w_ref - w*||`` (P is 1-strongly convex).

So for any w whose computed objective is ``P(w)`` with rounding bound ``e(w)``, ``P(w) -
value >= -(gap + value_error + e(w))``: a solver's suboptimality can fall below 0 only by
that much. On problems of at most :data:`CLARABEL_CHECK_MAX_PAIRS` pairs the optimum is also
checked against CVXPY's certified reference
(:func:`cvxrank.certificates.reference.solve_reference`: Clarabel on the primal and the dual,
their agreement checked): its point must not beat the certified lower bound on p* and its p*
must agree with ``value``. The optimum is computed once per (data, loss, C) and process and
cached in memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from cvxrank.certificates.reference import solve_reference
from cvxrank.errors import SolverError
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.tolerances import reference_agreement

#: Per loss: the certified solver and the tolerances tried (the tightest certificate wins;
#: the cutting plane's exact finish certifies more from a looser tolerance than a tight one
#: reaches, hence several).
LADDER: dict[str, tuple[str, tuple[float, ...]]] = {
    "squared_hinge": ("prsvm+", (1e-13,)),
    "hinge": ("1-slack", (1e-8, 1e-9, 1e-10)),
}

#: Largest number of preference pairs at which the Clarabel cross-check runs.
CLARABEL_CHECK_MAX_PAIRS = 20_000

#: Largest relative certified gap accepted for a reference.
MAX_RELATIVE_GAP = 1e-9

#: Model radius the tight runs go on to (a fraction of ``||w||``).
MODEL_RADIUS = 1e-10


@dataclass(frozen=True)
class CertifiedOptimum:
    """A certified reference point of one RankSVM problem.

    Attributes
    ----------
    w : ndarray of shape (d,)
        The reference point ``w_ref``.
    value : float
        ``P(w_ref)`` by the formulation's ``primal_value``.
    value_error : float
        A bound on the rounding of ``value``.
    gap : float
        A certified bound on ``P(w_ref) - p*`` (exact arithmetic).
    radius : float
        A certified bound on ``||w_ref - w*||``.
    solver : str
        The cvxrank solver whose run gave ``w_ref``, with its tolerance.
    check : str
        What the Clarabel cross-check found, or why it did not run.
    """

    w: np.ndarray
    value: float
    value_error: float
    gap: float
    radius: float
    solver: str
    check: str

    @property
    def lower(self) -> float:
        """A certified lower bound on p*: ``value - value_error - gap``."""
        return self.value - self.value_error - self.gap

    def describe(self) -> str:
        """One line: the value, its certificate and how it was obtained."""
        return (f"P(w_ref) = {self.value!r} (rounding <= {self.value_error:.1e}), certified "
                f"P(w_ref) - p* <= {self.gap:.2e} (relative {self.gap / abs(self.value):.1e}), "
                f"||w_ref - w*|| <= {self.radius:.2e}; {self.solver}; {self.check}")


_CACHE: dict[str, CertifiedOptimum] = {}


def certified_optimum(formulation: RankSVM) -> CertifiedOptimum:
    """The certified optimum of ``formulation`` (cached by its ``cache_key``).

    Parameters
    ----------
    formulation : RankSVM
        A hinge or squared-hinge RankSVM.

    Returns
    -------
    CertifiedOptimum

    Raises
    ------
    ValueError
        For a loss without a certified solver here.
    SolverError
        When no run certifies a relative gap of :data:`MAX_RELATIVE_GAP`, or the Clarabel
        cross-check contradicts the certificate.
    """
    key = formulation.cache_key()
    if key not in _CACHE:
        _CACHE[key] = _solve(formulation)
    return _CACHE[key]


def is_cached(formulation: RankSVM) -> bool:
    """Whether :func:`certified_optimum` has the optimum of ``formulation`` already."""
    return formulation.cache_key() in _CACHE


def _solve(f: RankSVM) -> CertifiedOptimum:
    loss = f.loss.name
    if loss not in LADDER:
        raise ValueError(f"no certified reference solver for the loss {loss!r}")
    solver, tolerances = LADDER[loss]
    runs = [(tol, fit_formulation(f, solver, tol=tol, max_iter=100_000,
                                  model_radius=MODEL_RADIUS)) for tol in tolerances]
    certified = [(tol, run) for tol, run in runs if math.isfinite(run.gap) and run.gap >= 0]
    if not certified:
        raise SolverError(f"{f.name}: no {solver} run certified a gap "
                          f"({'; '.join(run.message for _, run in runs)})")
    tol, best = min(certified, key=lambda item: item[1].gap)
    w = np.array(best.w, dtype=float)
    value, value_error = f.primal_bounds(w)
    if not best.gap <= MAX_RELATIVE_GAP * abs(value):
        raise SolverError(f"{f.name}: the best certified relative gap is "
                          f"{best.gap / abs(value):.1e}, above {MAX_RELATIVE_GAP:g}")
    optimum = CertifiedOptimum(w=w, value=value, value_error=value_error, gap=best.gap,
                               radius=best.w_radius,
                               solver=f"{solver} at tol {tol:g} ({best.n_iter} iterations)",
                               check="")
    return replace(optimum, check=_clarabel_check(f, optimum))


def _clarabel_check(f: RankSVM, optimum: CertifiedOptimum) -> str:
    """Clarabel's certified reference against the fast solver's certificate (small
    problems): its point's objective must not fall below the certified lower bound on p*
    (beyond its rounding) and its p* must agree with ``value`` to Clarabel's agreement."""
    if f.n_dual > CLARABEL_CHECK_MAX_PAIRS:
        return (f"Clarabel cross-check not run ({f.n_dual:,} pairs > "
                f"{CLARABEL_CHECK_MAX_PAIRS:,})")
    ref = solve_reference(f, "CLARABEL")
    p_clarabel, error = f.primal_bounds(ref.w)
    value = optimum.value
    agreement = (reference_agreement("CLARABEL") * abs(value) + optimum.gap
                 + optimum.value_error)
    if p_clarabel < optimum.lower - error or abs(ref.p_star - value) > agreement:
        raise SolverError(
            f"{f.name}: Clarabel's reference contradicts the certificate: P(w_clarabel) = "
            f"{p_clarabel!r}, p*_clarabel = {ref.p_star!r}, certified p* in "
            f"[{optimum.lower!r}, {value + optimum.value_error!r}]")
    return (f"Clarabel agrees: |p*_clarabel - P(w_ref)| = {abs(ref.p_star - value):.1e}, "
            f"P(w_clarabel) - P(w_ref) = {p_clarabel - value:.1e}")
