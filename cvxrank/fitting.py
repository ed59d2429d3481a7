"""One entry point to fit a formulation with any solver, CVXPY or hand-written.

Used by the scikit-learn style estimators and by ``cvxrank fit``. A CVXPY solver name
(``clarabel``, ``ecos``, ``osqp``, ``scs``) gives the certified reference
(:func:`cvxrank.reference.solve_reference`: primal and dual solved, agreement checked); any
other name is a hand-written solver from :mod:`cvxrank.registry`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cvxrank.errors import CvxrankError, SolverError
from cvxrank.formulations.base import Formulation
from cvxrank.reference import solve_reference

#: CVXPY solvers that ``fit`` accepts by (lower-case) name.
CVXPY_SOLVERS = ("clarabel", "ecos", "osqp", "scs")

#: Largest number of dual variables (pairs) the CVXPY reference is asked to handle from
#: ``fit``; above it the command refuses with a message instead of exhausting memory.
REFERENCE_MAX_VARIABLES = 300_000


@dataclass
class FitResult:
    """Outcome of :func:`fit_formulation`.

    Attributes
    ----------
    w : ndarray
        Fitted weights.
    objective : float
        Primal objective at ``w`` (numpy evaluator of the formulation).
    n_iter : int
        Solver iterations (interior-point iterations for CVXPY solvers).
    time : float
        Solver time in seconds (both primal and dual solves for a CVXPY reference).
    solver : str
        The solver's name.
    converged : bool
        Certified (CVXPY) or tolerance met (hand-written).
    message : str
        Why the solver stopped.
    info : dict
        Extras: reference p*, d*, gap, or the hand-written solver's info.
    """

    w: np.ndarray
    objective: float
    n_iter: int
    time: float
    solver: str
    converged: bool
    message: str
    info: dict[str, Any] = field(default_factory=dict)


def available_solvers() -> list[str]:
    """Names accepted by :func:`fit_formulation` (besides ``"auto"``)."""
    from cvxrank.registry import solver_names

    return sorted(set(CVXPY_SOLVERS) | set(solver_names()))


def default_solver(formulation: Formulation) -> str:
    """The solver ``"auto"`` picks: the fastest hand-written one for the formulation.

    PRSVM+ (truncated Newton with O(n log n) gradients) for a differentiable loss with
    structured weights, PRSVM for explicit per-pair weights, else accelerated projected
    gradient on the dual (``apg``); a formulation without a hand-written solver gets its
    certified CVXPY reference (:attr:`~cvxrank.formulations.base.Formulation.reference_solver`).
    """
    from cvxrank.registry import REGISTRY

    registered = {e.solver for e in REGISTRY if e.formulation == formulation.name}
    for name in ("prsvm+", "prsvm", "apg"):
        usable = name != "prsvm+" or getattr(formulation, "structured", True)
        if name in registered and usable:
            return name
    if not registered:
        return formulation.reference_solver.lower()
    return sorted(registered)[0]


def fit_formulation(
    formulation: Formulation,
    solver: str,
    *,
    tol: float | None = None,
    max_iter: int | None = None,
    time_budget: float | None = None,
    seed: int | None = None,
) -> FitResult:
    """Solve ``formulation`` with ``solver`` (``"auto"``: :func:`default_solver`).

    Raises
    ------
    ValueError
        For an unknown solver name, or a solver that does not handle this formulation.
    CvxrankError
        When the problem is too large for the CVXPY reference.
    SolverError
        When a CVXPY solve is not certified optimal, or a hand-written solver stops before
        its tolerance (the message says why).
    """
    name = solver.lower()
    if name == "auto":
        name = default_solver(formulation)
    if name in CVXPY_SOLVERS:
        if formulation.n_dual > REFERENCE_MAX_VARIABLES:
            raise CvxrankError(
                f"{formulation.n_dual:,} dual variables is too large for the CVXPY reference "
                f"solver {name} (limit {REFERENCE_MAX_VARIABLES:,}); choose a hand-written "
                f"solver ({', '.join(sorted(set(available_solvers()) - set(CVXPY_SOLVERS)))})"
            )
        start = time.perf_counter()
        ref = solve_reference(formulation, solver=name.upper(), cache=False)
        elapsed = time.perf_counter() - start
        stats = formulation.primal().solver_stats
        return FitResult(
            w=ref.w,
            objective=formulation.primal_value(ref.w),
            n_iter=int(stats.num_iters or 0),
            time=elapsed,
            solver=name,
            converged=True,
            message=f"certified optimal (primal-dual relative gap {ref.rel_gap:.2e})",
            info={"p_star": ref.p_star, "d_star": ref.d_star, "rel_gap": ref.rel_gap},
        )
    from cvxrank.registry import find_solver

    solve = find_solver(formulation.name, name)
    options: dict[str, Any] = {"seed": seed, "time_budget": time_budget}
    if tol is not None:
        options["tol"] = tol
    if max_iter is not None:
        options["max_iter"] = max_iter
    result = solve(formulation, **options)
    if not result.converged:
        raise SolverError(
            f"{name} on {formulation.name} did not reach its tolerance: {result.message} "
            f"(relative duality gap {_last_rel_gap(result):.2e})"
        )
    return FitResult(
        w=result.w,
        objective=formulation.primal_value(result.w),
        n_iter=result.n_iter,
        time=result.time,
        solver=name,
        converged=result.converged,
        message=result.message,
        info=dict(result.info),
    )


def _last_rel_gap(result: Any) -> float:
    tr = result.trace
    if not len(tr):
        return float("nan")
    return float(tr.gap[-1] / max(1.0, abs(tr.primal[-1])))
