r"""The compiled active-set iterations of the 1-slack cutting plane's one-block master QP.

The 1-slack cutting plane (:mod:`cvxrank.solvers.one_slack`) solves its restricted master
(:func:`~cvxrank.solvers.simplex_product_qp.simplex_qp`), :math:`\min \tfrac12 x^\top Q x -
b^\top x` over :math:`\{x \ge 0, 1^\top x = \kappa\}`, once per cut, warm-started: a few
KKT systems of the support's size (some tens) each time. In
numpy every one of them is a dozen small array calls and a LAPACK solve, whose fixed costs
are most of the master's time (a third of a 1-slack fit on LETOR 4.0 MQ2008 at c = 100);
:func:`_to_optimum` runs the same iterations as
:func:`~cvxrank.solvers.simplex_product_qp._simplex_active_set` (the same entering,
ratio-test and dropping rules, in the same order) in compiled loops, the KKT systems solved
by Gaussian elimination with partial pivoting, as LAPACK's ``dgesv`` does, unblocked and in
one fixed order (so its results do not depend on a BLAS's kernels). It returns to Python at
each optimum on a support (a few per master), where the caller keeps the cycle guard and the
time budget. A KKT system with an exactly zero pivot or a solution that is not finite (which
the ridge leaves to ill-conditioned cuts only) ends it: the caller raises
:class:`~cvxrank.errors.SolverError`, and the cutting plane's master falls back to CVXPY, as
it does when the numpy iterations fail.

The kernel runs when the kernels are built ahead of time (``make install``) or loaded in the
process, or after the numpy iterations have spent :data:`NUMPY_BUDGET` seconds in it (the rule
of :mod:`cvxrank.formulations.sorted_kernels`). The two add in different orders, so their
iterates differ by rounding only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cvxrank.compiled.kernels import KernelFile, inline_helpers

#: Seconds the numpy iterations may spend in a process before the kernel is loaded (about
#: the fixed cost of importing numba and loading the kernel from its cache).
NUMPY_BUDGET = 0.25

#: :func:`_to_optimum`'s outcomes.
KKT_HOLD, ON_SUPPORT, CAPPED, SINGULAR = 0, 1, 2, 3


def _gepp_solve(A: np.ndarray, r: np.ndarray, n: int) -> bool:
    """Solve ``A[:n, :n] z = r[:n]`` in place (z in ``r``) by Gaussian elimination with
    partial pivoting; False when a pivot is exactly 0 (singular)."""
    for c in range(n):
        p, big = c, abs(A[c, c])
        for i in range(c + 1, n):
            if abs(A[i, c]) > big:
                p, big = i, abs(A[i, c])
        if big == 0.0:
            return False
        if p != c:
            for j in range(c, n):
                A[c, j], A[p, j] = A[p, j], A[c, j]
            r[c], r[p] = r[p], r[c]
        for i in range(c + 1, n):
            f = A[i, c] / A[c, c]
            if f != 0.0:
                for j in range(c + 1, n):
                    A[i, j] -= f * A[c, j]
                r[i] -= f * r[c]
    for c in range(n - 1, -1, -1):
        s = r[c]
        for j in range(c + 1, n):
            s -= A[c, j] * r[j]
        r[c] = s / A[c, c]
    return True


def _gradient(Q: np.ndarray, b: np.ndarray, x: np.ndarray, idx: np.ndarray, k: int,
              ridge: float, g: np.ndarray) -> bool:
    """``g = Q[:, S] x_S + ridge x - b`` (S the first k of ``idx``) in place; False when an
    entry is not finite."""
    for i in range(b.size):
        acc = 0.0
        for j in range(k):
            acc += Q[i, idx[j]] * x[idx[j]]
        g[i] = acc + ridge * x[i] - b[i]
        if not np.isfinite(g[i]):
            return False
    return True


def _support_kkt(Q: np.ndarray, b: np.ndarray, total: float, idx: np.ndarray, k: int,
                 ridge: float, kkt: np.ndarray, rhs: np.ndarray) -> bool:
    r"""The solution of the KKT system on the support S (the first k of ``idx``) in
    ``rhs``: :math:`(Q_S + \rho I) y + \mu 1 = b_S`, :math:`1^\top y = \text{total}`,
    y first, then :math:`\mu`; False when it is singular or not finite."""
    for i in range(k):
        for j in range(k):
            kkt[i, j] = Q[idx[i], idx[j]]
        kkt[i, i] += ridge
        kkt[i, k] = kkt[k, i] = 1.0
        rhs[i] = b[idx[i]]
    kkt[k, k] = 0.0
    rhs[k] = total
    if not _gepp_solve(kkt, rhs, k + 1):
        return False
    for i in range(k + 1):
        if not np.isfinite(rhs[i]):
            return False
    return True


def _step_towards(x: np.ndarray, support: np.ndarray, idx: np.ndarray, k: int,
                  y: np.ndarray, b: np.ndarray, total: float, drop: float) -> None:
    """The longest feasible step from x towards the support's optimum y (some coordinates
    negative), the coordinates at most ``drop * total`` dropped (the largest b's entering
    when none is left); x and support in place."""
    step = 1.0
    for i in range(k):
        d = y[i] - x[idx[i]]
        if d < 0:
            step = min(step, x[idx[i]] / -d)
    left = 0
    for i in range(k):
        j = idx[i]
        x[j] += step * (y[i] - x[j])
        if x[j] <= drop * total:
            x[j] = 0.0
            support[j] = False
        else:
            left += 1
    if left == 0:
        support[np.argmax(b)] = True


def _to_optimum(Q: np.ndarray, b: np.ndarray, total: float, x: np.ndarray,
                support: np.ndarray, at_optimum: bool, solved: bool, nu: float, ridge: float,
                tol: float, iterations_left: int, drop: float
                ) -> tuple[int, int, float]:
    r"""The active-set iterations of ``simplex_qp`` from ``x`` on ``support`` (both updated
    in place), until the next optimum on a support or the end.

    Parameters
    ----------
    Q : ndarray of shape (t, t)
    b : ndarray of shape (t,)
    total : float
    x : ndarray of shape (t,)
        Feasible.
    support : ndarray of bool, shape (t,)
    at_optimum : bool
        x is the optimum on its support, with the sum constraint's multiplier ``nu``: go
        on from its KKT check (after :data:`ON_SUPPORT`).
    solved : bool
        Check by its gradient whether x already solves the QP on its support (a warm start).
    nu : float
    ridge, tol : float
    iterations_left : int
        Iterations allowed (one per KKT system solved or checked).
    drop : float
        Coordinates at most ``drop * total`` after a step leave the support.

    Returns
    -------
    status : int
        :data:`KKT_HOLD` (x is optimal), :data:`ON_SUPPORT` (x is the optimum on its
        support, not yet checked), :data:`CAPPED` (no iteration left) or :data:`SINGULAR`
        (the support's KKT system has a zero pivot or a solution that is not finite, or the
        gradient at its solution is not finite).
    iterations : int
        Iterations done.
    nu : float
        The multiplier at an optimum on a support.
    """
    t = b.size
    idx = np.empty(t, dtype=np.int64)
    g = np.empty(t)
    kkt = np.empty((t + 1, t + 1))
    rhs = np.empty(t + 1)
    done = 0
    while True:
        k = 0
        for i in range(t):
            if support[i]:
                idx[k] = i
                k += 1
        if not at_optimum:
            if done == iterations_left:
                return CAPPED, done, nu
            done += 1
            if solved:  # is x, a warm start, the optimum on its support?
                solved = False
                finite = _gradient(Q, b, x, idx, k, ridge, g)
                low, high, mean = np.inf, -np.inf, 0.0
                for j in range(k):
                    mean += g[idx[j]]
                    low, high = min(low, g[idx[j]]), max(high, g[idx[j]])
                nu = mean / k
                if not (finite and high - low <= tol * (1.0 + abs(nu))):
                    continue
            else:
                if not _support_kkt(Q, b, total, idx, k, ridge, kkt, rhs):
                    return SINGULAR, done, nu
                if rhs[:k].min() < 0:
                    _step_towards(x, support, idx, k, rhs, b, total, drop)
                    continue
                x[:] = 0.0
                for i in range(k):
                    x[idx[i]] = rhs[i]
                return ON_SUPPORT, done, -rhs[k]
        at_optimum = False
        if not _gradient(Q, b, x, idx, k, ridge, g):  # at the support's optimum
            return SINGULAR, done, nu
        best, worst = -1, -np.inf
        for i in range(t):
            if not support[i] and nu - g[i] > worst:
                best, worst = i, nu - g[i]
        if best < 0 or worst <= tol * (1.0 + abs(nu)):
            return KKT_HOLD, done, nu
        support[best] = True


#: The kernel's argument types, for the ahead-of-time module (Q of any layout: a view of the
#: working set's Gram matrix).
_SIGNATURE = ("Tuple((i8, i8, f8))(f8[:, :], f8[::1], f8, f8[::1], b1[::1], b1, b1, f8, f8, "
              "f8, i8, f8)")


#: The kernel's helpers, made numba functions before it is compiled (:func:`_prepare`).
_HELPERS = ("_gepp_solve", "_gradient", "_support_kkt", "_step_towards")


def _prepare() -> None:
    """Make the kernel's helpers numba functions, inlined into it
    (:func:`~cvxrank.compiled.kernels.inline_helpers`)."""
    inline_helpers(globals(), _HELPERS)


def _warm(kernels: dict[str, Any]) -> None:
    """Call the kernel once, for the argument types ``simplex_qp`` passes."""
    kernels["to_optimum"](np.eye(2), np.array([1.0, 0.0]), 1.0, np.array([1.0, 0.0]),
                          np.array([True, False]), False, True, 0.0, 1e-12, 1e-12, 10, 1e-15)


#: The kernel file (:class:`~cvxrank.compiled.kernels.KernelFile`): ahead of time, numba or
#: the numpy iterations, with the process's account of the numpy iterations' time.
KERNELS = KernelFile(__file__, {"to_optimum": (_to_optimum, _SIGNATURE)}, _warm,
                     numpy_budget=NUMPY_BUDGET, prepare=_prepare)
