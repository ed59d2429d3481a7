"""One entry point to fit a formulation with any solver, CVXPY or hand-written.

Used by the scikit-learn style estimators, ``cvxrank fit`` and ``cvxrank grid``. A CVXPY
solver name (``clarabel``, ``ecos``, ``osqp``, ``scs``) gives the certified reference
(:func:`cvxrank.reference.solve_reference`: primal and dual solved, agreement checked); any
other name is a hand-written solver from :mod:`cvxrank.registry`. Either way the result is
one :class:`~cvxrank.trace.Run`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.capabilities import missing_capabilities
from cvxrank.errors import CvxrankError, SolverError
from cvxrank.formulations.base import Formulation
from cvxrank.trace import Callback, Run, Trace

#: CVXPY solvers that ``fit`` accepts by (lower-case) name.
CVXPY_SOLVERS = ("clarabel", "ecos", "osqp", "scs")

#: Largest number of dual variables (pairs) the CVXPY reference is asked to handle from
#: ``fit``; above it the command refuses with a message instead of exhausting memory.
REFERENCE_MAX_VARIABLES = 300_000


def available_solvers() -> list[str]:
    """Names accepted by :func:`fit_formulation` (besides ``"auto"``)."""
    from cvxrank.registry import solver_names

    return sorted(set(CVXPY_SOLVERS) | set(solver_names()))


def default_solver(formulation: Formulation, method: str | None = None) -> str:
    """The solver ``"auto"`` picks for ``formulation``.

    The first solver of the method's row in :data:`cvxrank.methods.METHODS` (PRSVM+, then
    PRSVM, then ``apg`` for RankSVM and IR SVM) that is registered for the formulation and
    whose needs it meets (e.g. PRSVM+ needs structured weights and a differentiable loss);
    a formulation without any gets its certified CVXPY reference
    (:attr:`~cvxrank.formulations.base.Formulation.reference_solver`).

    Parameters
    ----------
    formulation : Formulation
    method : str or None
        The method's name; default: the formulation name's first word (``"ranksvm"``).
    """
    from cvxrank.methods import METHODS
    from cvxrank.registry import entries

    row = METHODS.get(method or formulation.name.split("-")[0])
    registered = {e.solver: e for e in entries() if e.formulation == formulation.name}
    for name in (row.solvers if row is not None else ()):
        entry = registered.get(name)
        if entry is not None and not missing_capabilities(formulation, entry.solve.needs):
            return name
    return formulation.reference_solver.lower()


def fit_formulation(
    formulation: Formulation,
    solver: str = "auto",
    *,
    tol: float | None = None,
    max_iter: int | None = None,
    time_budget: float | None = None,
    seed: int | None = None,
    callback: Callback | None = None,
) -> Run:
    """Solve ``formulation`` with ``solver`` (``"auto"``: :func:`default_solver`).

    Parameters
    ----------
    formulation : Formulation
    solver : str
        ``"auto"``, a CVXPY solver name or a registered hand-written solver.
    tol, max_iter, time_budget, seed
        Passed to a hand-written solver (its defaults when None).
    callback : callable, optional
        ``callback(k, w, alpha, trace)`` after each iteration of a hand-written solver
        (e.g. :func:`cvxrank.trace.progress_printer`).

    Returns
    -------
    Run
        ``info["zero_model"]`` is True, and the message says why, when the fit returned
        ``w = 0`` or C is below :func:`meaningful_C`. For a CVXPY solver: ``w`` and
        ``alpha`` of the certified reference, a one-row trace
        (interior-point iterations, primal and dual optimum), ``setup_time`` the CVXPY
        compilation of both problems and ``time`` both solves; ``info`` has ``p_star``,
        ``d_star`` and ``rel_gap``.

    Raises
    ------
    ValueError
        For an unknown solver name, or a solver that does not handle this formulation.
    CapabilityError
        For a solver whose needs the formulation does not meet.
    CvxrankError
        When the problem is too large for the CVXPY reference.
    SolverError
        When a CVXPY solve is not certified optimal, or a hand-written solver stops before
        its tolerance (the message says why).
    ValueError
        For ConeRank (a ``cone_blocks`` formulation): its point is not a weight vector, so
        it is fitted by :func:`fit_conerank`.
    """
    if "cone_blocks" in formulation.capabilities:
        raise ValueError(
            f"{formulation.name}'s model is a cone basis U (N x K) with per-pair coefficients, "
            "scored by Tran & Pham's Alg. 2, not a weight vector w; fit it with "
            "cvxrank.fitting.fit_conerank, ConeRankRanker or `cvxrank fit --method conerank` "
            "(cvxrank grid and the other weight-vector paths do not take it)")
    name = solver.lower()
    if name == "auto":
        name = default_solver(formulation)
    if name in CVXPY_SOLVERS:
        run = _fit_reference(formulation, name)
    else:
        from cvxrank.registry import find_entry

        solve = find_entry(formulation.name, name).solve
        options: dict[str, Any] = {"seed": seed, "time_budget": time_budget,
                                   "callback": callback}
        if tol is not None:
            options["tol"] = tol
        if max_iter is not None:
            options["max_iter"] = max_iter
        run = solve(formulation, **options)
    note = zero_model_note(formulation, run.w, tol if tol is not None else
                           tolerances.FAST_SOLVER_GAP)
    if not run.converged:
        raise SolverError(
            f"{name} on {formulation.name} did not reach its tolerance: {run.message} "
            f"(relative duality gap {run.relative_gap:.2e})" + (f"; {note}" if note else "")
        )
    if note:
        run.message = f"{run.message}; {note}"
    run.info["zero_model"] = bool(note)
    return run


def meaningful_C(formulation: Formulation, tol: float) -> float | None:
    r"""The smallest C at which the optimum differs from the zero model by ``tol``, or None.

    For a loss term :math:`C L(Xw)` the optimal value is :math:`p^*(C) = C L(0) - \tfrac12
    C^2 \|g\|^2 + O(C^3)` with :math:`g = X^\top \partial L / \partial s` at w = 0, so the
    zero model's relative suboptimality is about :math:`C \|g\|^2 / (2 L(0))`: below
    :math:`C_{lo} = 2\,\mathrm{tol}\, L(0) / \|g\|^2` the optimum is within ``tol`` of
    w = 0 in objective (it is then about :math:`-C g`, the gradient's ranking). Needs a
    formulation that evaluates its pairwise loss (``evaluate_loss``); None otherwise.
    """
    evaluate = getattr(formulation, "evaluate_loss", None)
    if evaluate is None:
        return None
    ev = evaluate(np.zeros(formulation.data.n_features))
    g = np.asarray(formulation.X.T @ ev.grad).ravel()
    g2 = float(g @ g)
    return 2.0 * tol * float(ev.value) / g2 if g2 > 0 and ev.value > 0 else None


def zero_model_note(formulation: Formulation, w: np.ndarray, tol: float) -> str:
    """A sentence for a fit that returned w = 0, or whose C is below :func:`meaningful_C`
    (where the loss term's effect is below the tolerance); empty otherwise."""
    weights = np.asarray(w)[: formulation.data.n_features]
    low = meaningful_C(formulation, tol)
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
    from cvxrank.reference import solve_reference

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
    trace = Trace()
    trace.append(int(stats.num_iters or 0), elapsed, formulation.primal_value(ref.w),
                 ref.d_star, float("nan"))
    return Run(
        w=np.asarray(ref.w, dtype=float), alpha=np.asarray(ref.alpha, dtype=float),
        trace=trace, converged=True,
        message=f"certified optimal (primal-dual relative gap {ref.rel_gap:.2e})",
        n_iter=int(stats.num_iters or 0), solver=name, formulation=formulation.name,
        setup_time=min(compilation, elapsed),
        info={"p_star": ref.p_star, "d_star": ref.d_star, "rel_gap": ref.rel_gap},
    )


#: ConeRank's solvers by the names ``fit_conerank``, ``ConeRankRanker`` and ``cvxrank fit``
#: take: Sect. 4.1's stochastic Alg. 1 and the certified block alternation.
CONERANK_SOLVERS = ("stochastic", "alternation")

#: ConeRank's folding-in variants (Tran & Pham Sects. 4.1, 4.2).
CONERANK_VARIANTS = ("sg", "eg")

#: Default passes over the queries of the stochastic ConeRank solver, per variant at the
#: paper's steps: where the validation MAP of MQ2008 Fold1 peaks (the notes of
#: :class:`cvxrank.estimators.ConeRankRanker`; both at mu x passes of about 0.02).
CONERANK_PASSES = {"sg": 20, "eg": 5}

#: Default most outer iterations of the ConeRank alternation (it stops earlier, when an
#: iteration lowers (18) by less than its ``tol``).
CONERANK_ALTERNATION_MAX_ITER = 200


def fit_conerank(
    formulation: Formulation,
    solver: str = "stochastic",
    *,
    variant: str = "sg",
    mu: float | None = None,
    n_passes: int | None = None,
    tol: float | None = None,
    seed: int | None = 0,
    time_budget: float | None = None,
    callback: Callback | None = None,
) -> Run:
    """Fit ConeRank (:class:`cvxrank.formulations.conerank.ConeRank`) with one of its solvers.

    Parameters
    ----------
    formulation : ConeRank
    solver : {"stochastic", "alternation"}
        ``"stochastic"``: Tran & Pham's Alg. 1 one query at a time with the paper's fixed
        steps (Sect. 4.1, :func:`cvxrank.solvers.conerank.solve_stochastic`);
        ``"alternation"``: Alg. 1 with both blocks solved to a certified gap, the objective
        never increasing (:func:`cvxrank.solvers.conerank.solve_alternation`).
    variant : {"sg", "eg"}
        The folding-in step: projected (stochastic) gradient or exponentiated gradient
        (Sects. 4.1, 4.2).
    mu : float or None
        The stochastic solver's step (None: the paper's 0.001 for SG, 0.005 for EG); the
        alternation takes none.
    n_passes : int or None
        Passes over the queries (stochastic) or most outer iterations (alternation); None
        is :data:`CONERANK_PASSES` of the variant (stochastic) or
        :data:`CONERANK_ALTERNATION_MAX_ITER`.
    tol : float or None
        The alternation's relative decrease per outer iteration below which it stops (its
        default when None); the stochastic solver takes none (it runs ``n_passes``).
    seed : int or None
        Random start (Sect. 6.1) and, for the stochastic solver, the query order.
    time_budget : float or None
    callback : callable, optional

    Returns
    -------
    Run
        ``w`` is the stacked ``(U, W)`` (:meth:`ConeRank.split`); ``solver`` is
        ``"stochastic-sg"``, ``"alternation-eg"``, ...; the trace records the objective
        (18); ``info["n_passes"]`` the passes (or most outer iterations) it was given.
        ``converged`` is False when the run stopped at ``n_passes`` (always, for the
        stochastic solver, which has no stopping test).

    Raises
    ------
    ValueError
        For an unknown solver or variant, a formulation that is not ConeRank, a ``mu`` given
        to the alternation, a ``tol`` given to the stochastic solver, or ``n_passes`` < 1.
    """
    if "cone_blocks" not in formulation.capabilities:
        raise ValueError(f"fit_conerank fits ConeRank; got {formulation.name} (fit it with "
                         "fit_formulation)")
    if solver not in CONERANK_SOLVERS:
        raise ValueError(f"ConeRank's solver must be one of {', '.join(CONERANK_SOLVERS)}; "
                         f"got {solver!r}")
    if variant not in CONERANK_VARIANTS:
        raise ValueError(f"ConeRank's variant must be one of {', '.join(CONERANK_VARIANTS)}; "
                         f"got {variant!r}")
    if n_passes is None:
        n_passes = (CONERANK_PASSES[variant] if solver == "stochastic"
                    else CONERANK_ALTERNATION_MAX_ITER)
    if isinstance(n_passes, bool) or not isinstance(n_passes, int | np.integer) or n_passes < 1:
        raise ValueError(f"n_passes must be a positive integer, got {n_passes!r}")
    from cvxrank.solvers.conerank import solve_alternation, solve_stochastic

    if solver == "stochastic":
        if tol is not None:
            raise ValueError("tol is the alternation's stopping test; the stochastic solver "
                             "runs n_passes passes over the queries")
        run = solve_stochastic(formulation, variant=variant, mu=mu,  # type: ignore[arg-type]
                               n_passes=int(n_passes), seed=seed, time_budget=time_budget,
                               callback=callback)
    else:
        if mu is not None:
            raise ValueError("mu is the stochastic solver's step; the alternation solves "
                             "each block to a certified gap and takes no step")
        options: dict[str, Any] = {} if tol is None else {"tol": tol}
        run = solve_alternation(formulation, variant=variant,  # type: ignore[arg-type]
                                max_iter=int(n_passes), seed=seed, time_budget=time_budget,
                                callback=callback, **options)
    run.solver = f"{solver}-{variant}"
    run.info["n_passes"] = int(n_passes)
    if solver == "stochastic" and run.message.startswith("stopped: max_iter"):
        run.message = (f"stopped after {run.n_iter} passes (the stochastic solver has no "
                       "stopping test)")
    return run
