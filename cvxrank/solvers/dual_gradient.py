"""Projected gradient ascent on a box- or orthant-constrained dual (PG and FISTA/APG).

The RankSVM duals (Hang Li 2011, Sect. 4.1; Chapelle & Keerthi 2010, eq. (1)) are smooth
concave quadratics over simple sets,

.. math::

    \\text{hinge:}\\quad \\max_{0 \\le \\alpha \\le C c}\\; m^\\top \\alpha
        - \\tfrac12 \\|X^\\top A^\\top \\alpha\\|^2, \\qquad
    \\text{squared hinge:}\\quad \\max_{\\alpha \\ge 0}\\; m^\\top \\alpha
        - \\tfrac12 \\|X^\\top A^\\top \\alpha\\|^2 - \\sum_k \\frac{\\alpha_k^2}{4 C c_k},

with ``w(alpha) = X^T A^T alpha``. Projection onto the feasible set is a clip, so projected
gradient methods are the natural first fast solvers. The solvers here need from the
formulation only its ``dual_gradient`` capability (:mod:`cvxrank.core.capabilities`):
``neg_dual_grad`` (gradient of ``-D``), ``dual_lipschitz`` (``L``), ``dual_strong_convexity``
(``mu``, 0 when ``-D`` is merely convex), ``project_dual`` (from its ``dual_set``) and
``dual_start``; any formulation that offers them can be solved.

Proven rates on the dual suboptimality ``d* - D(alpha_k)``:

==============  ====================================  ====================================
method          ``mu = 0`` (hinge)                    ``mu > 0`` (squared hinge)
==============  ====================================  ====================================
PG (``pg``)     ``O(1/k)``: ``L R^2 / (2k)``          ``(1 - mu/L)^k``
APG (``apg``)   ``O(1/k^2)``: ``2 L R^2 / (k+1)^2``   ``(1 - sqrt(mu/L))^k``
==============  ====================================  ====================================

These are worst-case bounds. On the RankSVM dual the feasible set is polyhedral and the
objective a quadratic, so an error bound holds and PG often converges linearly even for the
hinge loss (Luo & Tseng 1993); the verification therefore asks that the measured rate be *at
least as fast* as the proven one.

References
----------
.. [1] A. Beck and M. Teboulle, "A fast iterative shrinkage-thresholding algorithm for linear
   inverse problems", SIAM J. Imaging Sciences 2(1), 2009 (FISTA, Thm. 4.4; PG, Thm. 3.1).
.. [2] Y. Nesterov, *Introductory Lectures on Convex Optimization*, Kluwer, 2004
   (Sect. 2.2: constant-momentum scheme for strongly convex functions, Thm. 2.2.3; gradient
   mapping for simple sets, Sect. 2.2.4).
.. [3] H. Li, "A Short Introduction to Learning to Rank", IEICE Trans. 2011, Sect. 4.1
   (Ranking SVM QP).
.. [4] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010, eq. (1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.core.capabilities import solver, takes_options
from cvxrank.core.trace import Run, SolverOptions, TraceRecorder
from cvxrank.formulations.base import Formulation

#: Default iteration limit of the dual gradient methods.
MAX_ITER = 100_000


@solver("pg", needs=("dual_gradient",), max_iter=MAX_ITER)
def solve_projected_gradient(formulation: Formulation, options: SolverOptions,
                             **own: Any) -> Run:
    """Projected gradient ascent on the dual (``pg``), rate ``O(1/k)`` or ``(1 - mu/L)^k``.

    See :func:`projected_gradient` for the parameters, rates and references
    (Beck & Teboulle 2009, Thm. 3.1; Nesterov 2004, Sect. 2.2).
    """
    return projected_gradient(formulation, options, accelerated=False, **own)


@solver("apg", needs=("dual_gradient",), max_iter=MAX_ITER)
def solve_accelerated_gradient(formulation: Formulation, options: SolverOptions,
                               **own: Any) -> Run:
    """FISTA / Nesterov's accelerated projected gradient on the dual (``apg``).

    See :func:`projected_gradient` for the parameters, rates and references
    (Beck & Teboulle 2009, Thm. 4.4; Nesterov 2004, Thm. 2.2.3).
    """
    return projected_gradient(formulation, options, accelerated=True, **own)


@takes_options(tol=tolerances.FAST_SOLVER_GAP, max_iter=MAX_ITER)
def projected_gradient(
    formulation: Formulation,
    options: SolverOptions,
    *,
    accelerated: bool,
    record_every: int = 1,
) -> Run:
    """Projected gradient ascent on the dual, plain (``pg``) or accelerated (``apg``).

    Plain PG iterates

    .. math::

        \\alpha_{k+1} = \\Pi\\big(\\alpha_k + \\tfrac1L \\nabla D(\\alpha_k)\\big),

    where :math:`\\Pi` is the Euclidean projection onto the dual feasible set and ``L`` the
    Lipschitz constant of :math:`\\nabla D`. The accelerated variant takes the gradient step
    at an extrapolated point :math:`y_k = \\alpha_k + \\beta_k (\\alpha_k - \\alpha_{k-1})`:
    with ``mu = dual_strong_convexity() > 0`` the momentum is the constant
    :math:`\\beta = (\\sqrt L - \\sqrt\\mu)/(\\sqrt L + \\sqrt\\mu)` (Nesterov 2004, scheme
    2.2.19, linear rate :math:`(1 - \\sqrt{\\mu/L})^k`); with ``mu = 0`` it is FISTA's
    :math:`\\beta_k = (t_k - 1)/t_{k+1}`, :math:`t_{k+1} = (1 + \\sqrt{1 + 4 t_k^2})/2`
    (Beck & Teboulle 2009, rate :math:`O(1/k^2)`).

    Every iteration is recorded through :class:`~cvxrank.core.trace.TraceRecorder` with
    ``w = primal_from_dual(alpha)``; the run stops when the relative duality gap
    ``(P(w) - D(alpha)) / |P(w)|`` is at most ``tol``. The time spent evaluating the
    objectives for the trace is not charged to the solver; computing ``L`` is.

    Parameters
    ----------
    formulation : Formulation
        With the ``dual_gradient`` capability (:mod:`cvxrank.core.capabilities`): gradient,
        Lipschitz constant, strong-convexity modulus, projection and a start.
    options : SolverOptions
        ``tol`` (relative duality gap), ``max_iter``, ``time_budget``, ``callback``,
        ``until`` (:class:`~cvxrank.core.trace.SolverOptions`); the method is deterministic.
    accelerated : bool
        FISTA / Nesterov momentum instead of plain projected gradient.
    record_every : int
        Record every this many iterations (convergence is still checked every iteration).

    Returns
    -------
    Run
        ``w``, ``alpha``, the trace, and ``info`` with ``L``, ``mu`` and ``momentum``
        (the constant momentum, or ``"fista"``).

    References
    ----------
    .. [1] A. Beck and M. Teboulle, SIAM J. Imaging Sci. 2(1), 2009 (FISTA).
    .. [2] Y. Nesterov, Introductory Lectures on Convex Optimization, 2004, Sect. 2.2.
    .. [3] H. Li, A Short Introduction to Learning to Rank, 2011, Sect. 4.1.
    .. [4] O. Chapelle and S. S. Keerthi, Inf. Retrieval 13, 2010, eq. (1).
    """
    name = "apg" if accelerated else "pg"
    f = formulation
    rec = TraceRecorder(f, options, record_every=record_every)
    L, mu = _constants(f)
    step = 1.0 / L
    alpha = np.asarray(f.project_dual(np.asarray(f.dual_start(), dtype=float)), dtype=float)
    momentum: float | str
    if not accelerated:
        alpha, k = _plain_ascent(f, rec, alpha, step)
        momentum = 0.0
    elif mu > 0:
        momentum = (math.sqrt(L) - math.sqrt(mu)) / (math.sqrt(L) + math.sqrt(mu))
        alpha, k = _constant_momentum(f, rec, alpha, step, momentum)
    else:
        alpha, k = _fista(f, rec, alpha, step)
        momentum = "fista"
    return rec.result(f.primal_from_dual(alpha), alpha, k, name, L=L, mu=mu, momentum=momentum)


def _constants(f: Formulation) -> tuple[float, float]:
    """The dual's Lipschitz constant ``L`` and strong-convexity modulus ``mu`` (capped at
    ``L``); ValueError unless ``L > 0`` and ``mu >= 0`` are finite."""
    L = float(f.dual_lipschitz())
    mu = float(f.dual_strong_convexity())
    if not (np.isfinite(L) and L > 0):
        raise ValueError(f"{f.name}: dual Lipschitz constant must be positive, got {L}")
    if not (np.isfinite(mu) and mu >= 0):
        raise ValueError(f"{f.name}: dual strong convexity must be >= 0, got {mu}")
    return L, min(mu, L)


def _plain_ascent(f: Formulation, rec: TraceRecorder, alpha: np.ndarray,
                  step: float) -> tuple[np.ndarray, int]:
    """Plain projected gradient steps from ``alpha`` until the recorder stops the run: the
    last iterate and the iterations taken."""
    k = 0
    while rec.record(k, alpha=alpha, step=step):
        alpha = f.project_dual(alpha - step * f.neg_dual_grad(alpha))
        k += 1
    return alpha, k


def _constant_momentum(f: Formulation, rec: TraceRecorder, alpha: np.ndarray, step: float,
                       beta: float) -> tuple[np.ndarray, int]:
    """Nesterov's steps with the constant momentum ``beta`` (``mu > 0``, scheme 2.2.19) from
    ``alpha`` until the recorder stops the run: the last iterate and the iterations taken."""
    k = 0
    y = alpha
    while rec.record(k, alpha=alpha, step=step):
        new = f.project_dual(y - step * f.neg_dual_grad(y))
        y = new + beta * (new - alpha)
        alpha = new
        k += 1
    return alpha, k


def _fista(f: Formulation, rec: TraceRecorder, alpha: np.ndarray,
           step: float) -> tuple[np.ndarray, int]:
    """FISTA's steps (``mu = 0``, momentum ``(t_k - 1) / t_{k+1}``) from ``alpha`` until the
    recorder stops the run: the last iterate and the iterations taken."""
    k = 0
    t = 1.0
    y = alpha
    while rec.record(k, alpha=alpha, step=step):
        new = f.project_dual(y - step * f.neg_dual_grad(y))
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        y = new + ((t - 1.0) / t_next) * (new - alpha)
        alpha, t = new, t_next
        k += 1
    return alpha, k
