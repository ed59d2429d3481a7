r"""1-slack cutting planes for the pairwise SVMs (Joachims 2006), with a hand-written master.

For :math:`P(w) = \tfrac12\|w\|^2 + C R(w)` with the pairwise loss :math:`R(w) = \sum_k c_k
\ell(w^\top d_k)` convex (the hinge of RankSVM and IR SVM, Li 2011 Sects. 4.1-4.2; Chapelle
& Keerthi eq. (1)), the oracle at :math:`w_t` is one loss evaluation,
:math:`O(n d + n \log n)` by sorting and without building the pairs when the weights are
structured (:meth:`~cvxrank.formulations.ranksvm.RankSVM.evaluate_loss`): its value and
subgradient give the cut :math:`R(v) \ge a_t^\top v + b_t`, :math:`a_t = X^\top \partial_s
R`, :math:`b_t = R(w_t) - a_t^\top w_t`. For the hinge it is Joachims' most violated
constraint of the 1-slack problem, :math:`a_t = -\sum_{k \in V_t} c_k d_k` over the pairs
with margin violated at :math:`w_t`. The restricted master

.. math::

    \min_{w, \xi \ge 0} \tfrac12\|w\|^2 + C\xi \quad \text{s.t.} \quad \xi \ge a_t^\top w +
    b_t \;\; (t \in W)

has the dual, with the cut 0 (:math:`a_0 = 0, b_0 = 0`: :math:`\xi \ge 0`) as coordinate 0,

.. math::

    \max_{\lambda \ge 0,\; 1^\top\lambda = C} D(\lambda) = b^\top\lambda -
    \tfrac12 \lambda^\top Q \lambda, \qquad Q = A A^\top, \quad w(\lambda) = -A^\top\lambda,

a QP in :math:`|W| + 1` variables whatever the number of pairs, solved here by a primal
active-set method (:func:`simplex_qp`; :func:`solve_master_cvxpy` is the same master in
CVXPY, to check it). Every feasible :math:`\lambda` certifies :math:`D(\lambda) \le p^*`
(each cut minorizes R), so the solver stops when :math:`P(w_{best}) - D(\lambda) \le`
``tol`` :math:`P(w_{best})`, :math:`w_{best}` the best oracle point. The trace records, per
iteration, the time in the master and in the oracle, the cut's violation at the master's
point (:math:`a_t^\top w_t + b_t - \xi_t`) and the working-set size (extra columns).

Iterations: at most :math:`\lceil \log_2 (\Delta / (4 R^2 C)) \rceil + \lceil 16 R^2 C /
\varepsilon \rceil` to an additive precision :math:`C\varepsilon` of the objective (Joachims,
Finley & Yu 2009, Thm. 5), with :math:`\Delta = R(0)` and :math:`R` the largest cut norm
(:func:`iteration_bound`).

References
----------
.. [1] T. Joachims, "Training linear SVMs in linear time", KDD 2006 (1-slack cutting planes,
   the O(n log n) ranking oracle).
.. [2] T. Joachims, T. Finley and C.-N. Yu, "Cutting-plane training of structural SVMs",
   Machine Learning 77, 2009, Thm. 5.
.. [3] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola and Q. V. Le, "Bundle methods for
   regularized risk minimization", JMLR 11, 2010 (the same method as BMRM).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.capabilities import solver
from cvxrank.formulations.base import largest_row_norm
from cvxrank.threads import blas_threads
from cvxrank.trace import Run, SolverOptions, TraceRecorder


def simplex_qp(Q: np.ndarray, b: np.ndarray, total: float, x0: np.ndarray | None = None,
               *, tol: float = 1e-12, max_iter: int = 10_000) -> tuple[np.ndarray, int]:
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

    Returns
    -------
    x : ndarray of shape (t,)
        Feasible (to rounding), optimal for ``Q`` plus the ridge.
    n_iter : int
    """
    t = b.size
    if x0 is None or abs(x0.sum() - total) > 1e-9 * total or np.any(x0 < 0):
        x = np.zeros(t)
        x[int(np.argmax(b))] = total
        solved = False
    else:
        x = x0.astype(np.float64, copy=True)
        solved = True  # if x0 solves the QP on its support (checked below), skip that solve
    support = x > 0
    ridge = 1e-12 * max(float(np.max(np.diag(Q), initial=0.0)), np.finfo(float).tiny)
    for it in range(max_iter):
        idx = np.flatnonzero(support)
        k = idx.size
        if solved:
            solved = False
            g = Q[:, idx] @ x[idx] + ridge * x - b
            nu = float(np.mean(g[idx]))
            if np.ptp(g[idx]) > tol * (1.0 + abs(nu)):
                continue  # not the support's optimum: solve it
        else:
            kkt = np.empty((k + 1, k + 1))
            kkt[:k, :k] = Q[idx[:, None], idx]
            kkt.flat[0:k * (k + 2):k + 2] += ridge  # the diagonal of the Q block
            kkt[:k, k] = kkt[k, :k] = 1.0
            kkt[k, k] = 0.0
            rhs = np.empty(k + 1)
            rhs[:k], rhs[k] = b[idx], total
            try:
                sol = np.linalg.solve(kkt, rhs)
            except np.linalg.LinAlgError:
                sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
            y = sol[:k]
            if np.any(y < 0):
                d = y - x[idx]
                shrinking = d < 0
                ratio = np.where(shrinking, x[idx] / np.where(shrinking, -d, 1.0), np.inf)
                x[idx] += min(1.0, float(ratio.min())) * d
                drop = idx[x[idx] <= 1e-15 * total]
                x[drop] = 0.0
                support[drop] = False
                if not support.any():
                    support[int(np.argmax(b))] = True
                continue
            x = np.zeros(t)
            x[idx] = y
            nu = -float(sol[k])  # g = nu on the support
            g = Q[:, idx] @ y + ridge * x - b
        violation = nu - g
        violation[idx] = -np.inf
        j = int(np.argmax(violation))
        if violation[j] <= tol * (1.0 + abs(nu)):
            return x, it
        support[j] = True
    return x, max_iter


def solve_master_cvxpy(A: np.ndarray, b: np.ndarray, C: float,
                       solver_name: str = "CLARABEL") -> tuple[np.ndarray, float]:
    r"""The restricted master's primal :math:`\min \tfrac12\|w\|^2 + C\xi`, :math:`\xi \ge 0`,
    :math:`\xi \ge a_t^\top w + b_t`, in CVXPY (the check of :func:`simplex_qp`).

    Returns
    -------
    w : ndarray
    value : float
        The optimal value (SolverError if the status is not optimal).
    """
    import cvxpy as cp

    from cvxrank.errors import SolverError
    from cvxrank.reference import SOLVER_OPTIONS

    w, xi = cp.Variable(A.shape[1]), cp.Variable(nonneg=True)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * xi), [xi >= A @ w + b])
    problem.solve(solver=solver_name, **SOLVER_OPTIONS.get(solver_name, {}))
    if problem.status != cp.OPTIMAL:
        raise SolverError(f"{solver_name} ended the 1-slack master with status "
                          f"{problem.status}")
    return np.asarray(w.value, dtype=np.float64), float(problem.value)


class WorkingSet:
    """The cuts of a 1-slack run: rows of A, offsets b, their Gram matrix Q and the master's
    multipliers, the cut 0 first (with all the weight, ``C``, at the start).

    Stored with spare capacity (doubled when full), so that adding the t-th cut costs O(td)
    for its row of Q, not a copy of the t x t matrix; :attr:`A`, :attr:`b`, :attr:`Q` and
    :attr:`lam` are views of the filled part.

    Parameters
    ----------
    n_features : int
    C : float
    """

    def __init__(self, n_features: int, C: float, capacity: int = 64) -> None:
        self._A = np.zeros((capacity, n_features))
        self._b = np.zeros(capacity)
        self._Q = np.zeros((capacity, capacity))
        self._lam = np.zeros(capacity)
        self._lam[0] = C
        self.size = 1

    @property
    def A(self) -> np.ndarray:
        """The cuts' rows a_t, shape (t, d)."""
        return self._A[:self.size]

    @property
    def b(self) -> np.ndarray:
        """The cuts' offsets, shape (t,)."""
        return self._b[:self.size]

    @property
    def Q(self) -> np.ndarray:
        """Their Gram matrix A A^T, shape (t, t)."""
        return self._Q[:self.size, :self.size]

    @property
    def lam(self) -> np.ndarray:
        """The master's multipliers, shape (t,)."""
        return self._lam[:self.size]

    @lam.setter
    def lam(self, value: np.ndarray) -> None:
        self._lam[:self.size] = value

    def add(self, a: np.ndarray, offset: float) -> None:
        """Append the cut :math:`a^\\top v + b` (its multiplier starts at 0)."""
        t = self.size
        if t == self._b.size:
            grown = WorkingSet(self._A.shape[1], 0.0, 2 * t)
            grown._A[:t], grown._b[:t], grown._Q[:t, :t] = self.A, self.b, self.Q
            grown._lam[:t] = self.lam
            self._A, self._b, self._Q, self._lam = grown._A, grown._b, grown._Q, grown._lam
        qa = self.A @ a
        self._Q[t, :t] = qa
        self._Q[:t, t] = qa
        self._Q[t, t] = a @ a
        self._A[t] = a
        self._b[t] = offset
        self._lam[t] = 0.0
        self.size = t + 1

    def dual_value(self) -> float:
        """:math:`D(\\lambda) = b^\\top \\lambda - \\tfrac12 \\lambda^\\top Q \\lambda`."""
        return float(self.b @ self.lam - 0.5 * self.lam @ self.Q @ self.lam)

    def w(self) -> np.ndarray:
        """:math:`w(\\lambda) = -A^\\top \\lambda`."""
        return -(self.lam @ self.A)

    def snapshot(self) -> CutSet:
        """Read-only copies of the filled part."""
        return CutSet(*(_locked(a) for a in (self.A, self.b, self.Q, self.lam)))


def _locked(array: np.ndarray) -> np.ndarray:
    """A read-only copy."""
    out = np.array(array, dtype=np.float64)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class CutSet:
    """The cuts of a finished 1-slack run, read-only: rows ``A`` (t x d), offsets ``b``,
    their Gram matrix ``Q = A A^T`` and the last master's multipliers ``lam``, the cut 0
    first; the first s cuts are the working set of the s-th master."""

    A: np.ndarray
    b: np.ndarray
    Q: np.ndarray
    lam: np.ndarray


def iteration_bound(formulation, p_star: float,
                    tol: float = tolerances.FAST_SOLVER_GAP) -> int:
    r"""Joachims, Finley & Yu's bound (Thm. 5) on the iterations to a relative gap ``tol``.

    :math:`\lceil \log_2 (\Delta / (4 R^2 C)) \rceil + \lceil 16 R^2 C / \varepsilon
    \rceil` with :math:`\Delta = R(0)` (the loss at w = 0, the largest cut offset),
    :math:`R^2 = (\sum_k c_k)^2 \, 4 \max_i \|x_i\|^2 \ge \max_t \|a_t\|^2` (a cut is
    a sub-sum of the weighted pair differences) and :math:`\varepsilon =` ``tol``
    :math:`p^*/C` (an :math:`\varepsilon`-precise master point is within :math:`C\varepsilon`
    of :math:`p^*`).

    Parameters
    ----------
    formulation : RankSVM or IRSVM
    p_star : float
        The optimal value (e.g. the certified reference's).
    tol : float
    """
    C = formulation.C
    X = formulation.X
    delta = float(formulation.evaluate_loss(np.zeros(X.shape[1])).value)
    R2 = float(np.sum(formulation.pair_weight)) ** 2 * 4.0 * largest_row_norm(X) ** 2
    if delta <= 0 or R2 <= 0 or p_star <= 0:
        return 1
    eps = tol * p_star / C
    first = max(0, math.ceil(math.log2(max(delta / (4.0 * R2 * C), 1.0))))
    return int(first + math.ceil(16.0 * R2 * C / eps))


@solver("1-slack", needs=("loss_subgradient",), max_iter=10_000)
def solve_one_slack(
    formulation: Any,
    options: SolverOptions,
    *,
    master: str = "active-set",
) -> Run:
    """1-slack cutting planes with the hand-written master (see the module docstring).

    Parameters
    ----------
    formulation : RankSVM or IRSVM
        Offers ``evaluate_loss(w)`` (value and subgradient in the scores), ``X``, ``C``.
    options : SolverOptions
        ``tol``: stop at a certified relative gap ``(P(w) - D(lambda)) / P(w) <= tol``;
        ``max_iter``: oracle calls; ``time_budget``, ``callback``, ``until`` as
        :class:`~cvxrank.trace.SolverOptions` says (the method is deterministic).
    master : {"active-set", "cvxpy"}
        The hand-written master (:func:`simplex_qp`) or CVXPY's (:func:`solve_master_cvxpy`,
        whose w is used and whose multipliers are re-derived by :func:`simplex_qp` from its
        point, for the certificate).

    Returns
    -------
    Run
        ``w`` the best oracle point; the trace's dual is :math:`D(\\lambda)`; extra columns
        ``master_time``, ``oracle_time``, ``violation``, ``cuts``; ``info["cuts"]`` the
        final cuts (:class:`CutSet`).
    """
    if master not in ("active-set", "cvxpy"):
        raise ValueError(f"master must be 'active-set' or 'cvxpy', got {master!r}")
    f, C = formulation, formulation.C
    X = f.X
    d = X.shape[1]
    rec = TraceRecorder(f, options)
    cuts = WorkingSet(d, C)
    w = np.zeros(d)
    best_w, best = w, math.inf
    xi, master_time, k = 0.0, 0.0, 0
    # matrix-vector products of d = tens of columns: a second BLAS thread only waits (on 2
    # shared cores it made the five OHSUMED folds' fits 2-4x slower)
    with blas_threads(1):
        while True:
            start = time.perf_counter()
            ev = f.evaluate_loss(w)
            a = np.asarray(X.T @ ev.grad, dtype=np.float64).ravel()
            offset = float(ev.value - a @ w)
            value = float(0.5 * w @ w + C * ev.value)
            oracle_time = time.perf_counter() - start
            if value < best:
                best, best_w = value, w
            violation = float(ev.value - xi)
            cuts.add(a, offset)
            if not rec.record(k, w=best_w, values=(best, cuts.dual_value()),
                              extra={"master_time": master_time, "oracle_time": oracle_time,
                                     "violation": violation, "cuts": cuts.b.size - 1}):
                break
            start = time.perf_counter()
            if master == "active-set":
                cuts.lam, _ = simplex_qp(cuts.Q, cuts.b, C, cuts.lam)
                w = cuts.w()
            else:
                w, _ = solve_master_cvxpy(cuts.A, cuts.b, C)
                cuts.lam, _ = simplex_qp(cuts.Q, cuts.b, C, cuts.lam)
            xi = float(max(0.0, np.max(cuts.A @ w + cuts.b)))
            master_time = time.perf_counter() - start
            k += 1
    return rec.result(best_w, None, k, "1-slack", cuts=cuts.snapshot())
