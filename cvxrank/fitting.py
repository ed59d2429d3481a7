"""One entry point to fit a formulation with any solver, CVXPY or hand-written.

Used by the scikit-learn style estimators, ``cvxrank fit`` and ``cvxrank grid``. A CVXPY
solver name (``clarabel``, ``ecos``, ``osqp``, ``scs``) gives the certified reference
(:func:`cvxrank.certificates.reference.solve_reference`: primal and dual solved, agreement checked);
any other name is a hand-written solver (:mod:`cvxrank.solvers`, with the options its
:mod:`cvxrank.registry` entry binds). Either way the result is one
:class:`~cvxrank.core.trace.Run`, returned whatever its status; a fit stops only where the
measures it reports (or, without an evaluation set, its model) are certified
(:mod:`cvxrank.certificates.certify`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.certificates.certify import EvaluationTarget, radius_rule
from cvxrank.core.capabilities import missing_capabilities, require
from cvxrank.core.interrupts import interruptible, raise_if_stopped
from cvxrank.core.trace import (
    Callback,
    Run,
    SolverOptions,
    Status,
    Trace,
    certified_radius,
)
from cvxrank.data.scales import scale_note
from cvxrank.errors import CvxrankError
from cvxrank.formulations.base import Formulation, Objective

#: CVXPY solvers that ``fit`` accepts by (lower-case) name.
CVXPY_SOLVERS = ("clarabel", "ecos", "osqp", "scs")

#: Largest number of dual variables (pairs) the CVXPY reference is asked to handle from
#: ``fit``; above it the command refuses with a message instead of exhausting memory.
REFERENCE_MAX_VARIABLES = 300_000


def available_solvers() -> list[str]:
    """Names accepted by :func:`fit_formulation` (besides ``"auto"``)."""
    from cvxrank.solvers import solver_names

    return sorted(set(CVXPY_SOLVERS) | set(solver_names()))


def default_solver(formulation: Objective, method: str | None = None) -> str:
    """The solver ``"auto"`` picks for ``formulation``.

    The first solver of the method's row in :data:`cvxrank.methods.METHODS` (PRSVM+, then
    PRSVM, then the 1-slack and ``apg`` for RankSVM and IR SVM) whose needs it meets (e.g.
    PRSVM+ needs structured weights and a differentiable loss); a convex formulation
    without any gets its certified CVXPY reference
    (:attr:`~cvxrank.formulations.base.Formulation.reference_solver`).

    Parameters
    ----------
    formulation : Objective
    method : str or None
        The method's name; default: the formulation's
        (:attr:`~cvxrank.formulations.base.Objective.method`).
    """
    from cvxrank.methods import METHODS
    from cvxrank.solvers import get_solver

    row = METHODS.get(method or formulation.method or "")
    for name in (row.solvers if row is not None else ()):
        if not missing_capabilities(formulation, get_solver(name).needs):
            return name
    if not isinstance(formulation, Formulation):
        raise ValueError(f"no solver applies to {formulation.name} (it has no CVXPY reference)")
    return formulation.reference_solver.lower()


def find_solve(formulation: Objective, name: str) -> Callable[..., Run]:
    """The hand-written solver ``name`` for ``formulation``: its :mod:`cvxrank.registry`
    entry when there is one (with the algorithm options verify checked bound), else the
    solver itself (:func:`cvxrank.solvers.get_solver`), its needs checked.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the solvers that apply).
    CapabilityError
        For a solver whose needs the formulation does not meet.
    """
    from cvxrank.registry import entries
    from cvxrank.solvers import get_solver, solver_names

    for entry in entries():
        if entry.formulation == formulation.name and entry.solver == name:
            return entry.solve
    try:
        solve = get_solver(name)
    except KeyError:
        usable = [s for s in solver_names()
                  if not missing_capabilities(formulation, get_solver(s).needs)]
        raise ValueError(f"unknown solver {name!r}; for {formulation.name}: "
                         f"{', '.join(usable + list(CVXPY_SOLVERS))}") from None
    require(formulation, name, solve.needs)
    return solve


def fit_formulation(
    formulation: Objective,
    solver: str = "auto",
    *,
    tol: float | None = None,
    max_iter: int | None = None,
    time_budget: float | None = None,
    seed: int | None = None,
    callback: Callback | None = None,
    certify: EvaluationTarget | None = None,
    model_radius: float | None = tolerances.MODEL_RADIUS,
    **solver_options: Any,
) -> Run:
    """Solve ``formulation`` with ``solver`` (``"auto"``: :func:`default_solver`) and return
    the run, whatever its status.

    A run that stops before its tolerance (iteration limit, ``time_budget``, Ctrl-C, a
    numerical failure) still returns its last certified iterate: check
    :attr:`~cvxrank.core.trace.Run.status` (``cvxrank fit`` turns it into its exit code, the
    estimators into a ``ConvergenceWarning``). Ctrl-C (SIGINT) during the fit stops it at
    the solver's next iteration (:func:`cvxrank.core.interrupts.interruptible`).

    Parameters
    ----------
    formulation : Objective
    solver : str
        ``"auto"``, a CVXPY solver name or a hand-written solver.
    tol, max_iter, time_budget, seed, callback
        The hand-written solver's :class:`~cvxrank.core.trace.SolverOptions` (its defaults when
        None; ``time_budget`` in wall-clock seconds).
    certify : EvaluationTarget or None
        Evaluation sets whose reported measures must be the optimum's: once its tolerance is
        met, the solver goes on until every measure of every set is certified
        (:mod:`cvxrank.certificates.certify`) or its certificate is at rounding level.
    model_radius : float or None
        Without ``certify``: go on until the model radius is at most this fraction of
        ``||w||`` (:data:`cvxrank.tolerances.MODEL_RADIUS`); None stops at the tolerance.
    **solver_options
        The solver's own options (``mu`` of ConeRank's stochastic solver, ``master`` of a
        cutting plane, ...).

    Returns
    -------
    Run
        ``info["zero_model"]`` is True, and the message says why, when the fit returned
        ``w = 0`` or C is below :func:`meaningful_C`. For a CVXPY solver: ``w`` and
        ``alpha`` of the certified reference, a one-row trace (interior-point iterations,
        primal and dual optimum), ``setup_time`` the CVXPY compilation of both problems and
        ``time`` both solves; ``info`` has ``p_star``, ``d_star`` and ``rel_gap``.

    Raises
    ------
    ValueError
        For an unknown solver name.
    CapabilityError
        For a solver whose needs the formulation does not meet.
    CvxrankError
        When the problem is too large for the CVXPY reference.
    SolverError
        When a CVXPY solve is not certified optimal.
    """
    name = solver.lower()
    if name == "auto":
        name = default_solver(formulation)
    if name in CVXPY_SOLVERS:
        if not isinstance(formulation, Formulation):
            raise ValueError(f"{formulation.name} is not convex: it has no CVXPY reference")
        run = _fit_reference(formulation, name)
    else:
        solve = find_solve(formulation, name)
        until = None
        if certify is not None:
            until = certify.until(formulation)
        elif model_radius is not None and formulation.strong_convexity > 0:
            until = radius_rule(formulation, model_radius)
        options = SolverOptions(tol=tol, max_iter=max_iter, time_budget=time_budget, seed=seed,
                                callback=callback, until=until)
        with interruptible():
            run = solve(formulation, options, **solver_options)
            raise_if_stopped()  # a command of many fits stops as a whole
        run = exact_zero(formulation, run)
    if not isinstance(formulation, Formulation):
        return run
    note = zero_model_note(formulation, run.w, tol if tol is not None else
                           tolerances.FAST_SOLVER_GAP,
                           explain=run.status not in (Status.TIME_BUDGET, Status.INTERRUPTED),
                           at_zero=run.info.get("loss_at_zero"))
    scales = "" if run.converged or run.status is Status.INTERRUPTED else scale_note(
        formulation.data, newton=run.solver in ("prsvm", "prsvm+"))
    message = "; ".join(part for part in (run.message, scales, note) if part)
    return run.replace(message=message, info={"zero_model": bool(note)})


def exact_zero(formulation: Objective, run: Run) -> Run:
    """``run`` with model radius 0 when it returned w = 0 and the formulation's structure
    (:meth:`~cvxrank.formulations.base.Objective.zero_is_exact`) or
    :func:`cvxrank.certificates.zero_certificate.certify_zero` proves 0 the exact optimum
    (formulations with a separation oracle; a cutting plane's pieces, ``info["cuts"]``, seed it):
    then every measure of the zero model is the optimum's. A run that stopped short of its
    tolerance at w = 0 (status ``numerical``: a gap the cutting plane could not close,
    e.g. RankMM-2/3 whose optimum is exactly 0) is then converged with gap 0. Otherwise
    ``run`` unchanged."""
    if (np.any(run.w) or run.w_radius == 0.0
            or run.status not in (Status.CONVERGED, Status.NUMERICAL)):
        return run
    reason, info = formulation.zero_is_exact(), {}
    if not reason:
        if "separation_oracle" not in formulation.capabilities:
            return run
        from cvxrank.certificates.zero_certificate import (
            certify_zero,  # CVXPY's LP: imported when needed
        )

        zero = certify_zero(formulation, cuts=run.info.get("cuts"))
        if not zero.proven:
            return run
        reason, info = zero.reason, {"zero_certificate": zero}
    # the proof makes w = 0 the exact optimum: its gap is 0, whatever the solver computed
    if run.converged:
        return run.replace(gap=0.0, gap_error=0.0, w_radius=0.0,
                           message=f"{run.message}; {reason}", info=info)
    return run.replace(status=Status.CONVERGED, gap=0.0, gap_error=0.0, w_radius=0.0,
                       message=f"converged: {reason}", info=info)


def meaningful_C(formulation: Formulation, tol: float,
                 at_zero: tuple[float, float] | None = None) -> float | None:
    r"""The smallest C at which the optimum differs from the zero model by ``tol``, or None.

    For a loss term :math:`C L(Xw)` the optimal value is :math:`p^*(C) = C L(0) - \tfrac12
    C^2 \|g\|^2 + O(C^3)` with :math:`g = X^\top \partial L / \partial s` at w = 0, so the
    zero model's relative suboptimality is about :math:`C \|g\|^2 / (2 L(0))`: below
    :math:`C_{lo} = 2\,\mathrm{tol}\, L(0) / \|g\|^2` the optimum is within ``tol`` of
    w = 0 in objective (it is then about :math:`-C g`, the gradient's ranking). Needs a
    formulation that evaluates its pairwise loss (``evaluate_loss``); None otherwise.
    ``at_zero`` is :math:`(L(0), \|g\|^2)` when a solver already computed them (a Newton
    run starts at w = 0: ``Run.info["loss_at_zero"]``), which saves a loss evaluation.
    """
    if "loss_subgradient" not in formulation.capabilities:
        return None
    if at_zero is None:
        ev = formulation.evaluate_loss(np.zeros(formulation.data.n_features))
        g = np.asarray(formulation.X.T @ ev.grad).ravel()
        at_zero = (float(ev.value), float(g @ g))
    value, g2 = at_zero
    return 2.0 * tol * value / g2 if g2 > 0 and value > 0 else None


def zero_model_note(formulation: Formulation, w: np.ndarray, tol: float, *,
                    explain: bool = True, at_zero: tuple[float, float] | None = None) -> str:
    """A sentence for a fit that returned w = 0, or whose C is below :func:`meaningful_C`
    (where the loss term's effect is below the tolerance); empty otherwise. Without
    ``explain`` (a run stopped by its time budget or an interrupt) :func:`meaningful_C`,
    a loss evaluation that costs a structured oracle call, is left out (``at_zero``: see
    :func:`meaningful_C`)."""
    weights = np.asarray(w)[: formulation.data.n_features]
    low = meaningful_C(formulation, tol, at_zero) if explain else None
    C = formulation.params().get("C")
    where = "" if low is None else (
        f"; for this data C >= {low:.2g} gives an optimum that differs from w = 0 by more "
        f"than the tolerance {tol:g} (C accepted up to {tolerances.C_RANGE[1]:g})")
    if not np.any(weights):
        return "the fit returned the zero model w = 0 (every document ties)" + where
    if low is not None and C is not None and C < low:
        return (f"C = {C:g} is so small that the loss term moves the objective by less than "
                f"the tolerance: w is about C times the loss gradient at 0" + where)
    return ""


def _fit_reference(formulation: Formulation, name: str) -> Run:
    """The certified CVXPY reference as a :class:`Run`."""
    from cvxrank.certificates.reference import solve_reference

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
    compilation = sum(float(problem.compilation_time or 0.0)
                      for problem in (formulation.primal(), formulation.dual()))
    objective = formulation.primal_value(ref.w)
    # an interior point's dual value is within its accuracy of p*, from above or below
    gap = abs(objective - ref.d_star)
    gap_error = formulation.rounding_error(ref.w, objective, ref.d_star)
    trace = Trace()
    trace.append(int(stats.num_iters or 0), elapsed, objective, ref.d_star, float("nan"),
                 gap=gap, gap_error=gap_error)
    return Run(
        w=np.asarray(ref.w, dtype=float), alpha=np.asarray(ref.alpha, dtype=float),
        trace=trace, status=Status.CONVERGED,
        message=f"certified optimal (primal-dual relative gap {ref.rel_gap:.2e})",
        n_iter=int(stats.num_iters or 0), solver=name, formulation=formulation.name,
        setup_time=min(compilation, elapsed), objective=objective, gap=gap + gap_error,
        gap_error=gap_error,
        w_radius=certified_radius(gap, formulation.strong_convexity, gap_error),
        info={"p_star": ref.p_star, "d_star": ref.d_star, "rel_gap": ref.rel_gap},
    )
