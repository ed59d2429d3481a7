r"""The cutting planes' restricted masters: a QP over one simplex (:func:`simplex_qp`) or over a
product of capped simplices with a low-rank Hessian (:func:`simplex_product_qp`).

The restricted master of :mod:`cvxrank.solvers.cutting_plane` has the dual

.. math::

    \min_\lambda \; \tfrac12 \|G^\top \lambda\|^2 - c^\top \lambda \quad \text{s.t.} \quad
    \lambda \ge 0, \quad \sum_{t \in W_i} \lambda_t \le \kappa \;\; (i = 1, \dots, B),

with G the cuts' gradients (m rows, few columns d) and :math:`W_i` the cuts of block i.

**One block** (the 1-slack cutting plane): with the zero cut (:math:`c = 0, g = 0`) as a
coordinate of its own the cap becomes :math:`1^\top \lambda = \kappa` and the master is a
QP over one simplex, :math:`\min \tfrac12 \lambda^\top Q \lambda - c^\top\lambda`, whose
Gram matrix :math:`Q = G G^\top` the working set keeps up to date (one row per new cut).
:func:`simplex_qp` solves it by a primal active-set method warm-started from the last
master's multipliers: a few KKT solves per new cut, in compiled loops where the kernels are
built or loaded (:mod:`cvxrank.numerics.simplex_kernels`), else in numpy.

**Several blocks** (the n-slack cutting plane): a
slack coordinate :math:`s_i \ge 0` per block (a zero cut) turns each cap into
:math:`\sum_{t \in W_i} \lambda_t + s_i = \kappa`. :func:`simplex_product_qp` solves it
exactly in two phases, never forming :math:`Q = G G^\top`:

* **start** (without a warm start): a primal-dual interior-point method, Mehrotra's
  predictor-corrector (Nocedal & Wright, Alg. 16.4, for convex QP), to a relative accuracy
  of ``1e-8``. Its Newton system :math:`(D + G G^\top)\Delta\lambda - E^\top\Delta\nu = r`,
  :math:`E \Delta\lambda = r'` (D diagonal, E the blocks' sums) is solved by the
  Sherman-Morrison-Woodbury formula in :math:`O(md^2 + d^3 + B^3)` (as Ferris & Munson do
  for SVMs); the coordinates larger than their dual slack are its support guess;
* **finish**: the primal active-set method for convex QP (Nocedal & Wright, Alg. 16.3), the
  block version of :func:`simplex_qp`: on the support S the
  equality-constrained QP is one KKT system of size :math:`|S| + B` whose block multipliers
  :math:`\nu_i` are the master's slacks :math:`\xi_i` (:math:`c_t - g_t^\top w = \xi_i` on
  the support, :math:`w = G^\top \lambda`), with a ridge of :math:`10^{-12} \max_t
  \|g_t\|^2` (:data:`~cvxrank.tolerances.MASTER_RIDGE`) that keeps it nonsingular when
  cuts are collinear, as in ``simplex_qp``. The
  support grows by the coordinate that violates the KKT conditions most in every block at
  once, and shrinks by the ratio test or, when it does better, by a projected search along
  the Newton step (Bertsekas 1982) that drops several coordinates at once.

At the optimum :math:`|S| \le d + B` for cuts in general position, so an active-set iteration
costs :math:`O(md + (d + B)^3)` whatever m, and the interior point's support guess leaves it
a few.

References
----------
.. [1] J. Nocedal and S. J. Wright, "Numerical Optimization", 2nd ed., Springer 2006,
   Alg. 16.3 (active set for convex QP) and Alg. 16.4 (predictor-corrector for QP).
.. [2] D. P. Bertsekas, "Projected Newton methods for optimization problems with simple
   constraints", SIAM J. Control Optim. 20(2), 1982.
.. [3] M. C. Ferris and T. S. Munson, "Interior-point methods for massive support vector
   machines", SIAM J. Optim. 13(3), 2002 (the Sherman-Morrison-Woodbury solve).
.. [4] I. Tsochantaridis, T. Joachims, T. Hofmann and Y. Altun, "Large margin methods for
   structured and interdependent output variables", JMLR 6, 2005 (the n-slack master).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from cvxrank.errors import SolverError
from cvxrank.numerics import simplex_kernels
from cvxrank.tolerances import (
    INTERIOR_STEP_FRACTION,
    MASTER_CYCLE_REPEATS,
    MASTER_DROP,
    MASTER_RIDGE,
    MASTER_START_SLACK,
)

#: Warm-start entries below this fraction of the cap are set to 0 (their weight goes to the
#: block's slack): an interior-point solver's multipliers of inactive cuts are tiny but
#: positive, and a support that large would only be dropped again one coordinate at a time.
WARM_FLOOR = 1e-9

#: Projected steps tried (lengths 1, 1/4, 1/16, ... of the Newton step) before the
#: ratio test's step.
PROJECTED_TRIALS = 6


def simplex_qp(Q: np.ndarray, b: np.ndarray, total: float, x0: np.ndarray | None = None,
               *, tol: float = 1e-12, max_iter: int = 10_000,
               out_of_time: Callable[[], bool] | None = None
               ) -> tuple[np.ndarray, int]:
    r"""Minimize :math:`\tfrac12 x^\top Q x - b^\top x` over :math:`\{x \ge 0, 1^\top x =
    \text{total}\}` by a primal active-set method.

    The support S is grown by the coordinate that violates the KKT conditions most
    (:math:`g_i < \nu`, :math:`g = Qx - b`, :math:`\nu` the sum constraint's multiplier) and
    the equality-constrained QP on S is solved exactly (a :math:`(|S|+1)`-square KKT system;
    Q gets a ridge of :math:`10^{-12} \max_i Q_{ii}` so that it is never singular when cuts
    are collinear); a negative coordinate is met by the longest feasible step towards that
    solution and dropped. Warm-started from ``x0`` (feasible), it takes a few steps per new
    cut; a start that already solves the QP on its support (the last master's solution with
    a new cut at 0) is checked by its gradient instead of a solve.

    Parameters
    ----------
    Q : ndarray of shape (t, t)
        Positive semidefinite.
    b : ndarray of shape (t,)
    total : float
        > 0.
    x0 : ndarray of shape (t,) or None
        A feasible start (else the vertex at the largest b).
    tol : float
        KKT violation allowed, relative to :math:`1 + |\nu|`.
    max_iter : int
    out_of_time : callable or None
        ``out_of_time()`` True: the time budget is spent; the current (feasible) point is
        returned.

    Returns
    -------
    x : ndarray of shape (t,)
        Feasible (to rounding), optimal for ``Q`` plus the ridge (unless the time budget
        ran out).
    n_iter : int

    Raises
    ------
    SolverError
        When the method does not terminate: a support it solved comes back (cycling, which
        exact arithmetic excludes: rounding on an ill-conditioned Q), ``max_iter`` KKT
        solves, or a non-finite Q or step.
    """
    t = b.size
    if x0 is None or abs(x0.sum() - total) > MASTER_START_SLACK * total or np.any(x0 < 0):
        x = np.zeros(t)
        x[int(np.argmax(b))] = total
        solved = False
    else:
        x = x0.astype(np.float64, copy=True)
        solved = True  # if x0 solves the QP on its support (checked below), skip that solve
    support = x > 0
    largest = float(np.max(np.diag(Q), initial=0.0))
    if not (math.isfinite(largest) and np.all(np.isfinite(b))):
        raise SolverError("the master QP has non-finite data (the cuts overflow)")
    if largest == 0.0:  # Q = 0 (every cut's gradient is 0): an LP, solved at a vertex
        x = np.zeros(t)
        x[int(np.argmax(b))] = total
        return x, 0
    ridge = MASTER_RIDGE * largest
    guard = _CycleGuard("the one-block master QP", max_iter, out_of_time)
    if simplex_kernels.KERNELS.use_compiled():
        return _compiled_active_set(np.asarray(Q, dtype=np.float64),
                                    np.ascontiguousarray(b, dtype=np.float64), total, x,
                                    support, solved, ridge, tol, guard)
    start = time.perf_counter()
    try:
        return _simplex_active_set(Q, b, total, x, support, solved, ridge, tol, guard)
    finally:
        simplex_kernels.KERNELS.charge_numpy(time.perf_counter() - start)


def _compiled_active_set(Q: np.ndarray, b: np.ndarray, total: float, x: np.ndarray,
                         support: np.ndarray, solved: bool, ridge: float, tol: float,
                         guard: _CycleGuard) -> tuple[np.ndarray, int]:
    """:func:`_simplex_active_set`'s iterations in the compiled kernel
    (:func:`cvxrank.numerics.simplex_kernels._to_optimum`), which returns at each optimum on
    a support: the guard notes it and checks the time budget there (not at every KKT
    solve)."""
    to_optimum = simplex_kernels.KERNELS.dispatchers()["to_optimum"]
    at_optimum, nu = False, 0.0
    while True:
        if guard.out_of_time is not None and guard.out_of_time():
            return x, guard.iterations
        status, done, nu = to_optimum(Q, b, total, x, support, at_optimum, solved, nu, ridge,
                                      tol, guard.max_iter - guard.iterations, MASTER_DROP)
        guard.iterations += done
        solved = False
        if status == simplex_kernels.KKT_HOLD:
            return x, guard.iterations - 1
        if status == simplex_kernels.ON_SUPPORT:
            guard.optimal_on(np.flatnonzero(support))
            at_optimum = True
        elif status == simplex_kernels.CAPPED:
            raise SolverError(f"{guard.what} did not terminate in {guard.max_iter} iterations")
        else:
            raise SolverError("the one-block master QP's KKT system is singular or gave a "
                              "non-finite solution (ill-conditioned cuts)")


def _simplex_active_set(Q: np.ndarray, b: np.ndarray, total: float, x: np.ndarray,
                        support: np.ndarray, solved: bool, ridge: float, tol: float,
                        guard: _CycleGuard) -> tuple[np.ndarray, int]:
    """:func:`simplex_qp`'s active-set iterations from the feasible ``x`` on ``support``
    (``solved``: check by its gradient whether x already solves the QP on its support),
    with Q's ``ridge``, until the KKT conditions hold to ``tol`` or the guard stops them:
    ``(x, n_iter)``. ``x`` and ``support`` are updated in place (x until the first optimum
    on a support)."""
    t = b.size
    while True:  # the guard ends it: cap, cycling, time budget
        idx = np.flatnonzero(support)
        k = idx.size
        if guard.stop():
            return x, guard.iterations
        if solved:
            solved = False
            g = Q[:, idx] @ x[idx] + ridge * x - b
            nu = float(np.mean(g[idx]))
            if np.ptp(g[idx]) > tol * (1.0 + abs(nu)):
                continue  # not the support's optimum: solve it
        else:
            sol = _simplex_kkt_solution(Q, b, total, idx, ridge)
            y = sol[:k]
            if np.any(y < 0):
                _simplex_step_towards(x, support, idx, y, b, total)
                continue
            guard.optimal_on(idx)
            x = np.zeros(t)
            x[idx] = y
            nu = -float(sol[k])  # g = nu on the support
            g = Q[:, idx] @ y + ridge * x - b
        violation = nu - g
        violation[idx] = -np.inf
        j = int(np.argmax(violation))
        if violation[j] <= tol * (1.0 + abs(nu)):
            return x, guard.iterations - 1
        support[j] = True


def _simplex_kkt_solution(Q: np.ndarray, b: np.ndarray, total: float, idx: np.ndarray,
                          ridge: float) -> np.ndarray:
    r"""The solution of :func:`simplex_qp`'s KKT system on the support ``idx``: the
    coordinates (the first ``idx.size``), then the negated multiplier of the sum
    constraint; :math:`(Q_S + \rho I) y + \mu 1 = b_S`, :math:`1^\top y = \text{total}`
    (least squares when singular)."""
    k = idx.size
    kkt = np.empty((k + 1, k + 1))
    kkt[:k, :k] = Q[idx[:, None], idx]
    kkt.flat[0:k * (k + 2):k + 2] += ridge  # the diagonal of the Q block
    kkt[:k, k] = kkt[k, :k] = 1.0
    kkt[k, k] = 0.0
    rhs = np.empty(k + 1)
    rhs[:k], rhs[k] = b[idx], total
    return _solve_kkt(kkt, rhs, "one-block")


def _simplex_step_towards(x: np.ndarray, support: np.ndarray, idx: np.ndarray,
                          y: np.ndarray, b: np.ndarray, total: float) -> None:
    """The longest feasible step from ``x`` towards the support's optimum ``y`` (some of
    whose coordinates are negative), the coordinates it zeroes dropped from ``support``
    (the largest b's entering when none is left); ``x`` and ``support`` in place."""
    d = y - x[idx]
    shrinking = d < 0
    ratio = np.where(shrinking, x[idx] / np.where(shrinking, -d, 1.0), np.inf)
    x[idx] += min(1.0, float(ratio.min())) * d
    drop = idx[x[idx] <= MASTER_DROP * total]
    x[drop] = 0.0
    support[drop] = False
    if not support.any():
        support[int(np.argmax(b))] = True


class _CycleGuard:
    """Termination of an active-set loop: the supports whose KKT system it solved (one
    that comes back is cycling, which only rounding causes), the iteration cap and the
    time budget."""

    def __init__(self, what: str, max_iter: int,
                 out_of_time: Callable[[], bool] | None) -> None:
        self.what, self.max_iter, self.out_of_time = what, max_iter, out_of_time
        self.seen: dict[bytes, int] = {}
        self.iterations = 0

    def stop(self) -> bool:
        """True when the time budget is spent (return the current feasible point); raises
        :class:`~cvxrank.errors.SolverError` past the cap."""
        if self.out_of_time is not None and self.out_of_time():
            return True
        self.iterations += 1
        if self.iterations > self.max_iter:
            raise SolverError(f"{self.what} did not terminate in {self.max_iter} iterations")
        return False

    def optimal_on(self, support: np.ndarray) -> None:
        """Note that the iterate is the optimum of the QP restricted to ``support``. The
        objective decreases strictly after it, so in exact arithmetic such a support comes
        back at most once (a coordinate that entered at 0 and must leave again at once);
        a third time is cycling (SolverError; :data:`~cvxrank.tolerances.MASTER_CYCLE_REPEATS`
        solves allowed)."""
        key = support.tobytes()
        self.seen[key] = self.seen.get(key, 0) + 1
        if self.seen[key] > MASTER_CYCLE_REPEATS:
            raise SolverError(f"{self.what} cycled (a support came back: rounding on "
                              f"ill-conditioned cuts)")


def master_gap(G: np.ndarray, c: np.ndarray, block: np.ndarray, n_blocks: int,
               total: float, lam: np.ndarray) -> tuple[float, float]:
    r"""The master's primal value at :math:`w = G^\top\lambda` and the dual value.

    Parameters
    ----------
    G : ndarray of shape (m, d)
    c : ndarray of shape (m,)
    block : ndarray of shape (m,)
        Each cut's block, in ``0 ... n_blocks - 1``.
    n_blocks : int
    total : float
        The cap :math:`\kappa`.
    lam : ndarray of shape (m,)
        Feasible.

    Returns
    -------
    primal, dual : float
        :math:`\tfrac12\|w\|^2 + \kappa \sum_i \max(0, \max_{t \in W_i} c_t - g_t^\top w)`
        and :math:`c^\top\lambda - \tfrac12\|w\|^2`.
    """
    w = G.T @ lam
    xi = np.zeros(n_blocks)
    np.maximum.at(xi, block, c - G @ w)
    half = 0.5 * float(w @ w)
    return half + total * float(xi.sum()), float(c @ lam) - half


def _warm(lam0: np.ndarray, block: np.ndarray, n_blocks: int, total: float,
          largest: int) -> np.ndarray:
    """A feasible point from a warm start, the slacks appended: its ``largest`` largest
    entries above ``WARM_FLOOR * total`` (a block over its cap scaled down to it, a slack
    below the floor given to its block's cuts)."""
    lam = np.where(np.isfinite(lam0) & (lam0 > WARM_FLOOR * total), lam0, 0.0)
    if np.count_nonzero(lam) > largest:
        lam[np.argsort(lam)[:-largest]] = 0.0
    sums = np.bincount(block, weights=lam, minlength=n_blocks)
    full = sums >= (1.0 - WARM_FLOOR) * total
    lam = lam * np.where(full, total / np.where(full, sums, 1.0), 1.0)[block]
    return np.r_[lam, np.where(full, 0.0, total - sums)]


def _interior_point(H: np.ndarray, b: np.ndarray, block: np.ndarray, starts: np.ndarray,
                    total: float, *, rtol: float = 1e-8, max_iter: int = 50
                    ) -> tuple[np.ndarray, np.ndarray, bool]:
    r"""Mehrotra's predictor-corrector for :math:`\min \tfrac12\|H^\top x\|^2 - b^\top x`,
    :math:`x \ge 0`, every block's sum equal to ``total`` (blocks contiguous, starting at
    ``starts``), with Sherman-Morrison-Woodbury solves (module docstring): the last
    iterate's x (> 0) and dual slacks z, and whether it met ``rtol``."""
    n, d = H.shape
    x = total / np.diff(np.r_[starts, n])[block]  # each block's barycentre
    z = np.ones(n)
    nu = np.zeros(starts.size)
    for _ in range(max_iter):
        w = H.T @ x
        dual_res = H @ w - b - nu[block] - z
        primal_res = np.add.reduceat(x, starts) - total
        mu = float(x @ z) / n
        if (n * mu <= rtol * (1.0 + abs(float(b @ x) - 0.5 * float(w @ w)))
                and np.abs(dual_res).max() <= rtol * (1.0 + np.abs(b).max())
                and np.abs(primal_res).max() <= rtol * total):
            return x, z, True
        dinv = x / z
        totals = np.add.reduceat(dinv, starts)  # each block's 1' D^-1 1
        SH = _block_projected(dinv, totals, H, starts, block)
        try:
            K = np.linalg.cholesky(np.eye(d) + H.T @ SH)  # I + H' S H
        except np.linalg.LinAlgError:  # lost to rounding near the end: a start all the same
            break
        factors = (x, z, dinv, totals, H, SH, K, dual_res, primal_res, block, starts)
        dx, dnu, dz = _newton(-x * z, *factors)  # predictor (affine scaling)
        mu_aff = float((x + _longest(x, dx) * dx) @ (z + _longest(z, dz) * dz)) / n
        dx, dnu, dz = _newton(-x * z - dx * dz + (mu_aff / mu) ** 3 * mu, *factors)
        if not (np.all(np.isfinite(dx)) and np.all(np.isfinite(dz))):
            break
        primal_step = INTERIOR_STEP_FRACTION * _longest(x, dx)
        dual_step = INTERIOR_STEP_FRACTION * _longest(z, dz)
        x = x + primal_step * dx
        nu, z = nu + dual_step * dnu, z + dual_step * dz
    return x, z, False


def _support_guess(x: np.ndarray, z: np.ndarray, starts: np.ndarray, block: np.ndarray,
                   total: float) -> np.ndarray:
    """The interior point's ``x`` with the coordinates not larger than their dual slack set
    to 0, each block rescaled to ``total`` (the active set's start)."""
    x = np.where(x > z, x, 0.0)
    empty = np.add.reduceat(x, starts) <= 0
    x[(np.r_[starts[1:], x.size] - 1)[empty]] = total  # all on the block's slack (its last)
    return x * (total / np.add.reduceat(x, starts))[block]


def _block_projected(dinv: np.ndarray, totals: np.ndarray, V: np.ndarray,
                     starts: np.ndarray, block: np.ndarray) -> np.ndarray:
    r""":math:`S V` for the upper-left block S of the inverse of :math:`\begin{pmatrix} D &
    -E^\top \\ E & 0 \end{pmatrix}` (:math:`D^{-1}` = ``dinv``, E the blocks' sums,
    ``totals`` each block's sum of ``dinv``): in each block, :math:`S_i = D_i^{-1} - D_i^{-1}
    1 1^\top D_i^{-1} / 1^\top D_i^{-1} 1`, O(n) per column of the (n, k) array V."""
    weighted = dinv[:, None] * V
    means = np.add.reduceat(weighted, starts, axis=0) / totals[:, None]
    return weighted - dinv[:, None] * means[block]


def _block_solve(dinv: np.ndarray, totals: np.ndarray, r1: np.ndarray, r2: np.ndarray,
                 starts: np.ndarray, block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The solution of :math:`D y - E^\top \nu = r_1`, :math:`E y = r_2` (block by block,
    O(n); ``totals`` each block's sum of ``dinv``)."""
    nu = (r2 - np.add.reduceat(dinv * r1, starts)) / totals
    return dinv * (r1 + nu[block]), nu


def _newton(rc: np.ndarray, x: np.ndarray, z: np.ndarray, dinv: np.ndarray,
            totals: np.ndarray, H: np.ndarray, SH: np.ndarray, K: np.ndarray, dual_res: np.ndarray,
            primal_res: np.ndarray, block: np.ndarray,
            starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The interior point's Newton step for the complementarity right-hand side ``rc``:
    :math:`(D + HH^\top)\Delta x - E^\top\Delta\nu = rc/x - r_d`, :math:`E\Delta x =
    -r_p`, :math:`\Delta z = (rc - z\Delta x)/x`, by Sherman-Morrison-Woodbury on the
    block-separable system of D and E (:func:`_block_solve`) with the rank-d term
    :math:`HH^\top` (``SH`` = :func:`_block_projected` of H, ``K`` the Cholesky factor of
    :math:`I + H^\top S H`): :math:`O(nd)` a solve, :math:`O(nd^2 + d^3)` the factors."""
    r = rc / x - dual_res
    y, nu = _block_solve(dinv, totals, r, -primal_res, starts, block)
    t = _cho_solve(K, H.T @ y)
    correction, correction_nu = _block_solve(dinv, totals, H @ t, np.zeros_like(nu), starts,
                                             block)
    dx, dnu = y - correction, nu - correction_nu
    return dx, dnu, (rc - z * dx) / x


def _cho_solve(L: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``(L L')^-1 v`` for a lower-triangular L."""
    from scipy.linalg import solve_triangular

    return solve_triangular(L.T, solve_triangular(L, v, lower=True), lower=False)


def _longest(v: np.ndarray, dv: np.ndarray) -> float:
    """The largest step in [0, 1] with ``v + step * dv >= 0`` (v > 0)."""
    neg = dv < 0
    return min(1.0, float(np.min(-v[neg] / dv[neg]))) if neg.any() else 1.0


def _value(G: np.ndarray, c: np.ndarray, lam: np.ndarray) -> float:
    r""":math:`\tfrac12\|G^\top\lambda\|^2 - c^\top\lambda`."""
    w = G.T @ lam
    return 0.5 * float(w @ w) - float(c @ lam)


def _project(y: np.ndarray, block: np.ndarray, n_blocks: int, total: float) -> np.ndarray:
    """The Euclidean projection of y onto the simplices ``{z >= 0, sum of block i = total}``
    (every block present in ``block``), by sorting (Held, Wolfe & Crowder 1974)."""
    order = np.lexsort((-y, block))  # by block, the largest first
    ys, bs = y[order], block[order]
    starts = np.searchsorted(bs, np.arange(n_blocks))
    cum = np.cumsum(ys)
    before = np.r_[0.0, cum][starts][bs]  # the sum before each block
    rank = np.arange(ys.size) - starts[bs] + 1.0
    theta = (cum - before - total) / rank
    last = np.zeros(n_blocks, dtype=np.int64)  # the last position where ys > theta
    np.maximum.at(last, bs, np.where(ys > theta, np.arange(ys.size), 0))
    return np.maximum(y - theta[last][block], 0.0)


def simplex_product_qp(G: np.ndarray, c: np.ndarray, block: np.ndarray, n_blocks: int,
                       total: float, lam0: np.ndarray | None = None, *,
                       gap_tol: float = 0.0, tol: float = 1e-12,
                       max_iter: int = 10_000,
                       out_of_time: Callable[[], bool] | None = None
               ) -> tuple[np.ndarray, int]:
    r"""Minimize :math:`\tfrac12\|G^\top\lambda\|^2 - c^\top\lambda` over
    :math:`\lambda \ge 0` with :math:`\sum_{t: \text{block}_t = i} \lambda_t \le`
    ``total`` for every block i: an interior-point start (without ``lam0``) and a primal
    active-set finish (module docstring).

    Parameters
    ----------
    G : ndarray of shape (m, d)
        The cuts' gradients.
    c : ndarray of shape (m,)
        The cuts' offsets.
    block : ndarray of shape (m,)
        Each cut's block, in ``0 ... n_blocks - 1`` (blocks without cuts are allowed).
    n_blocks : int
    total : float
        The cap of every block's sum, > 0.
    lam0 : ndarray of shape (m,) or None
        A warm start, made feasible (its ``d + n_blocks`` largest entries above
        ``WARM_FLOOR * total`` kept); None starts from the interior point's support.
    gap_tol : float
        Also stop at an optimal point of a support where the master's duality gap
        (:func:`master_gap`) is at most ``gap_tol`` times the primal value.
    tol : float
        KKT violation allowed, relative to :math:`1 + |\nu_i|` in block i.
    max_iter : int
        Active-set iterations (KKT solves) at most.
    out_of_time : callable or None
        ``out_of_time()`` True: the time budget is spent; the current (feasible) point is
        returned.

    Returns
    -------
    lam : ndarray of shape (m,)
        Feasible: :math:`\lambda \ge 0` and every block's sum at most ``total``.
    n_iter : int

    Raises
    ------
    SolverError
        As :func:`simplex_qp`: cycling, ``max_iter`` KKT solves, non-finite data or steps.
    """
    m, n_features = G.shape
    order, Gx, cx, bx, starts = _with_slacks(G, c, block, n_blocks)
    if lam0 is not None and lam0.size == m:
        x = _warm(lam0, block, n_blocks, total, n_features + n_blocks)[order]
    else:
        x = _support_guess(*_interior_point(Gx, cx, bx, starts, total)[:2], starts, bx, total)
    support = x > 0
    ridge = MASTER_RIDGE * max(float(np.max(np.einsum("ij,ij->i", G, G), initial=0.0)),
                               np.finfo(float).tiny)
    if not (np.isfinite(ridge) and np.all(np.isfinite(c))):
        raise SolverError("the master QP has non-finite data (the cuts overflow)")
    guard = _CycleGuard("the several-block master QP", max_iter, out_of_time)
    x, n_iter = _product_active_set(Gx, cx, bx, starts, n_blocks, total, x, support, ridge,
                                    guard, size=m + n_blocks, tol=tol, gap_tol=gap_tol)
    return _without_slacks(x, order, block, m, n_blocks, total), n_iter


def simplex_product_interior(G: np.ndarray, c: np.ndarray, block: np.ndarray, n_blocks: int,
                             total: float, *, rtol: float = 1e-8) -> np.ndarray:
    r""":func:`simplex_product_qp`'s problem by its interior-point start alone, to the
    relative accuracy ``rtol`` (as CVXPY's Clarabel, whose default is that too; asked for
    much less, the interior point stalls on rounding and its point is worse, not better): a
    feasible :math:`\lambda` (the last iterate, every block's sum made ``total``: nonnegative,
    every block's sum at most ``total``) whose value is within about ``rtol`` of the optimum, in
    :math:`O(md^2 + d^3)` per interior-point iteration whatever the number of blocks (the
    active-set finish, exact, costs :math:`O((d + B)^3)` per iteration).

    Raises
    ------
    SolverError
        For non-finite data, or an interior point that does not reach ``rtol`` (the
        cutting plane's master then falls back to CVXPY's).
    """
    if not (np.all(np.isfinite(G)) and np.all(np.isfinite(c))):
        raise SolverError("the master QP has non-finite data (the cuts overflow)")
    m = G.shape[0]
    order, Gx, cx, bx, starts = _with_slacks(G, c, block, n_blocks)
    x, _, converged = _interior_point(Gx, cx, bx, starts, total, rtol=rtol)
    if not converged:
        raise SolverError(f"the master's interior point did not reach {rtol:g} ({m} cuts)")
    # the last iterate itself (every coordinate > 0), each block's sum made exactly total
    return _without_slacks(x * (total / np.add.reduceat(x, starts))[bx], order, block, m,
                           n_blocks, total)


def _with_slacks(G: np.ndarray, c: np.ndarray, block: np.ndarray, n_blocks: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cuts with a slack (a zero cut) appended per block, sorted by block (each block's
    slack last): ``(order, G, c, block, starts)``, ``order`` the sorting permutation and
    ``starts`` each block's first coordinate."""
    order = np.argsort(np.r_[block, np.arange(n_blocks)], kind="stable")
    Gx = np.vstack([G, np.zeros((n_blocks, G.shape[1]))])[order]
    cx = np.r_[c, np.zeros(n_blocks)][order]
    bx = np.r_[block, np.arange(n_blocks)][order].astype(np.int64)
    starts = np.searchsorted(bx, np.arange(n_blocks))
    return order, Gx, cx, bx, starts


def _product_active_set(Gx: np.ndarray, cx: np.ndarray, bx: np.ndarray, starts: np.ndarray,
                        n_blocks: int, total: float, x: np.ndarray, support: np.ndarray,
                        ridge: float, guard: _CycleGuard, *, size: int, tol: float,
                        gap_tol: float) -> tuple[np.ndarray, int]:
    """:func:`simplex_product_qp`'s active-set iterations on the cuts with their slacks
    (:func:`_with_slacks`, ``size`` coordinates in all) from the feasible ``x`` on
    ``support``, until the KKT conditions hold to ``tol`` (or the master's gap to
    ``gap_tol``) or the guard stops them: ``(x, n_iter)``. ``x`` and ``support`` are
    updated in place (x until the first optimum on a support)."""
    drop_below = MASTER_DROP * total
    one_at_a_time = False
    n_iter = 0
    while True:
        idx = np.flatnonzero(support)
        if guard.stop():
            break
        n_iter += 1
        k = idx.size
        Gs = Gx[idx]
        sol = _kkt_solution(Gs, cx[idx], bx[idx], n_blocks, total, ridge)
        y = sol[:k]
        if np.all(y >= 0):
            guard.optimal_on(idx)
            x = np.zeros(size)
            x[idx] = y
            enter = _entering(Gx, cx, bx, starts, idx, x, Gs.T @ y, -sol[k:], ridge, total,
                              tol, gap_tol)
            if enter is None:
                break
            if one_at_a_time:  # the last several could not all enter: the worst one alone
                worst = int(np.argmax(enter))  # (one index: ties would all enter again)
                enter = np.zeros(enter.shape, dtype=bool)
                enter[worst] = True
                one_at_a_time = False
            else:
                enter = enter > 0
            support[enter] = True
        else:
            xs = x[idx]
            safe, alpha = _step_towards(Gs, cx[idx], bx[idx], n_blocks, total, xs, y)
            if alpha <= 0:  # entered at 0 but negative in the joint solution: out again,
                # and the next optimal support grows by its worst violator only
                support[idx[(xs <= 0) & (y - xs < 0)]] = False
                one_at_a_time = True
            x[idx] = safe
            drop = idx[safe <= drop_below]
            x[drop] = 0.0
            support[drop] = False
    return x, n_iter


def _without_slacks(x: np.ndarray, order: np.ndarray, block: np.ndarray, m: int,
                    n_blocks: int, total: float) -> np.ndarray:
    """The multipliers of the ``m`` cuts from the active set's point ``x``
    (:func:`_with_slacks`'s coordinates), in the cuts' order and the slacks dropped:
    nonnegative, every block's sum at most ``total``."""
    lam = np.zeros(m + n_blocks)
    lam[order] = np.maximum(x, 0.0)
    lam = lam[:m]
    sums = np.bincount(block, weights=lam, minlength=n_blocks)
    over = sums > total
    if over.any():  # rounding only: the iterates keep every block's sum at ``total``
        lam *= np.where(over, total / np.where(over, sums, 1.0), 1.0)[block]
    return lam


def _kkt_solution(Gs: np.ndarray, c: np.ndarray, blocks: np.ndarray, n_blocks: int,
                  total: float, ridge: float) -> np.ndarray:
    r"""The solution of the master's KKT system on a support: the coordinates ``y`` (the
    first ``len(c)``), then the negated block multipliers; :math:`(G_S G_S^\top + \rho I)
    y + B^\top \mu = c_S`, :math:`B y = \text{total}` (least squares when singular)."""
    k = c.size
    kkt = np.zeros((k + n_blocks, k + n_blocks))
    kkt[:k, :k] = Gs @ Gs.T
    kkt[np.arange(k), np.arange(k)] += ridge
    kkt[np.arange(k), k + blocks] = 1.0
    kkt[k + blocks, np.arange(k)] = 1.0
    rhs = np.concatenate([c, np.full(n_blocks, total)])
    return _solve_kkt(kkt, rhs, "several-block")


def _entering(Gx: np.ndarray, cx: np.ndarray, bx: np.ndarray, starts: np.ndarray,
              idx: np.ndarray, x: np.ndarray, w: np.ndarray, nu: np.ndarray, ridge: float,
              total: float, tol: float, gap_tol: float) -> np.ndarray | None:
    """At the optimum on the support ``idx`` (``x``, ``w = G' x``, the blocks' multipliers
    ``nu``): None when it is the master's optimum (every coordinate's violation within
    ``tol``, or the master's gap within ``gap_tol``); else, per coordinate, how far its
    violation exceeds its limit where it is its block's worst (0 elsewhere), the
    coordinates that enter."""
    grad = Gx @ w - cx  # the gradient equals nu on each block's support
    grad[idx] += ridge * x[idx]
    violation = nu[bx] - grad
    violation[idx] = -np.inf
    worst = np.maximum.reduceat(violation, starts)
    limit = tol * (1.0 + np.abs(nu))
    if np.all(worst <= limit):
        return None
    if gap_tol > 0:  # the master's gap at w: xi_i the largest c_t - g_t'w or 0
        half = 0.5 * float(w @ w)
        primal = half + total * float(np.maximum.reduceat(cx - Gx @ w, starts).sum())
        if primal - (float(cx @ x) - half) <= gap_tol * max(abs(primal),
                                                            np.finfo(float).tiny):
            return None
    excess = violation - limit[bx]
    return np.where((violation == worst[bx]) & (excess > 0), excess, 0.0)


def _step_towards(Gs: np.ndarray, c: np.ndarray, blocks: np.ndarray, n_blocks: int,
                  total: float, xs: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """The longest feasible step from ``xs`` towards the support's optimum ``y`` (some of
    whose coordinates are negative), or the projection of a longer one when it does better
    (the projected search drops every coordinate it zeroes at once): ``(point, length)``."""
    step = y - xs
    shrinking = step < 0
    ratio = np.where(shrinking, xs / np.where(shrinking, -step, 1.0), np.inf)
    alpha = min(1.0, float(ratio.min()))  # the longest feasible step towards y
    safe = xs + alpha * step
    best = _value(Gs, c, safe)
    for length in 4.0 ** -np.arange(PROJECTED_TRIALS):
        if length <= alpha:
            break
        z = _project(xs + length * step, blocks, n_blocks, total)
        if _value(Gs, c, z) < best:
            return z, float(length)
    return safe, alpha


def _solve_kkt(kkt: np.ndarray, rhs: np.ndarray, which: str) -> np.ndarray:
    """The solution of a master QP's KKT system (least squares when it is singular);
    SolverError naming ``which`` master when it is not finite (ill-conditioned cuts)."""
    try:
        sol = np.linalg.solve(kkt, rhs)
    except np.linalg.LinAlgError:
        sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
    if not np.all(np.isfinite(sol)):
        raise SolverError(f"the {which} master QP's KKT system gave a non-finite "
                          "solution (ill-conditioned cuts)")
    return sol
