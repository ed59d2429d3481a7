r"""n-slack cutting planes with a certified gap, for query-level polyhedral losses.

For :math:`P(w) = \tfrac12\|w\|^2 + \kappa \sum_i L_i(w)` (:math:`\kappa = C/m`) with each
:math:`L_i` a maximum of affine functions, the separation oracle of the formulation
(:meth:`~cvxrank.formulations.rankmm.RankMM.separation_oracle`) returns, at any w, the
affine piece :math:`L_i(v) \ge c - g^\top v` active there. The solver keeps one working set
of pieces per query (the n-slack cutting plane of Le & Smola, Alg. 2; Joachims 2006 and
Tsochantaridis et al. 2005 for the structural SVM) and solves the restricted master QP

.. math::

    \min_{w, \xi} \; \tfrac12\|w\|^2 + \kappa \sum_i \xi_i \quad \text{s.t.} \quad
    \xi_i \ge 0, \quad \xi_i \ge c_t - g_t^\top w \;\; (t \in W_i),

with CVXPY (Clarabel, :func:`solve_master`; the default) or by hand
(:func:`solve_master_blocks`: an interior-point start and a joint primal active set over the
queries' capped simplices, :mod:`cvxrank.solvers.simplex_product_qp`; ``master="blocks"``).
Its multipliers :math:`\lambda_t \ge 0` satisfy :math:`\sum_{t \in
W_i} \lambda_t \le \kappa`, and for *any* such :math:`\lambda`

.. math::

    P(v) \ge \tfrac12\|v\|^2 + \sum_t \lambda_t (c_t - g_t^\top v) \ge
    D(\lambda) = \sum_t \lambda_t c_t - \tfrac12 \Big\|\sum_t \lambda_t g_t\Big\|^2

(each cut minorizes its :math:`L_i`, and a combination of weights at most :math:`\kappa` of
the cuts and of 0 is at most :math:`\kappa L_i`), so :math:`D(\lambda) \le p^*`: after
clipping the master's multipliers to that set (so an inexact master cannot break the bound)
the gap :math:`P(w) - D(\lambda)` is a certificate computed in :math:`O(|W| d)`, and the
solver stops when it is at most ``tol`` times :math:`P(w)`. Since each piece is a pair
weighting :math:`\pi^t` from the loss's own unit dual set, :math:`\beta = \sum_t \lambda_t
\pi^t` is a feasible point of the formulation's dual with :math:`D(\beta) = D(\lambda)`;
it is returned as the run's ``alpha`` (in the printed variables).

Cost per iteration: one oracle call (:math:`O(p + nd)` for RankMM), and a master QP in
:math:`d + B` variables and :math:`|W| + B` constraints (B queries with pairs), independent of
the number of pairs. Pieces whose multiplier has been zero for ``prune_after`` master solves
are dropped from the working set (they stay valid minorants; dropping only loosens the
master, and the gap is certified at every iteration all the same).

References
----------
.. [1] Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", 2007, Alg. 2
   (n-slack column generation) and eqs. (27)-(28).
.. [2] T. Joachims, "Training linear SVMs in linear time", KDD 2006 (cutting planes for
   ranking SVMs with an O(n log n) oracle).
.. [3] I. Tsochantaridis, T. Joachims, T. Hofmann and Y. Altun, "Large margin methods for
   structured and interdependent output variables", JMLR 6, 2005.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.capabilities import solver
from cvxrank.errors import SolverError
from cvxrank.solvers.rankmm import query_blocks
from cvxrank.solvers.simplex_product_qp import simplex_product_qp
from cvxrank.trace import Run, SolverOptions, Status, TraceRecorder

#: A piece enters the working set when it exceeds the master's slack by more than this
#: (relative to 1 + L_i(w)): rounding, not a violation, below it.
VIOLATION = 1e-12


class WorkingSet:
    r"""The pieces kept per query: offsets :math:`c_t`, gradients :math:`g_t`, their query
    and their pair weights :math:`\pi^t` (indices and values), grown by :meth:`add` and
    pruned by :meth:`prune`."""

    def __init__(self, n_features: int) -> None:
        self.offset = np.zeros(0)
        self.gradient = np.zeros((0, n_features))
        self.block = np.zeros(0, dtype=np.int64)
        self.support: list[tuple[np.ndarray, np.ndarray] | None] = []
        self.idle = np.zeros(0, dtype=np.int64)
        self.multiplier = np.zeros(0)  # the last master's (0 for new pieces)

    def __len__(self) -> int:
        return int(self.offset.size)

    def add(self, offset: np.ndarray, gradient: np.ndarray, block: np.ndarray,
            support: list[tuple[np.ndarray, np.ndarray] | None]) -> None:
        """Append pieces."""
        self.offset = np.r_[self.offset, offset]
        self.gradient = np.vstack([self.gradient, gradient])
        self.block = np.r_[self.block, block].astype(np.int64)
        self.support.extend(support)
        self.idle = np.r_[self.idle, np.zeros(offset.size, dtype=np.int64)]
        self.multiplier = np.r_[self.multiplier, np.zeros(offset.size)]

    def prune(self, multiplier: np.ndarray, after: int) -> None:
        """Drop the pieces idle (zero multiplier) for ``after`` consecutive solves."""
        self.idle = np.where(multiplier > 0, 0, self.idle + 1)
        self.multiplier = multiplier
        keep = self.idle < after
        if not keep.all():
            self.offset, self.gradient = self.offset[keep], self.gradient[keep]
            self.block, self.idle = self.block[keep], self.idle[keep]
            self.multiplier = self.multiplier[keep]
            self.support = [s for s, k in zip(self.support, keep, strict=True) if k]


def solve_master(working: WorkingSet, n_blocks: int, kappa: float,
                 solver_name: str = "CLARABEL") -> tuple[np.ndarray, np.ndarray]:
    r"""The restricted master QP (module docstring) in CVXPY: ``(w, lambda)``.

    ``lambda`` are the multipliers of the cut constraints, clipped to the set
    :math:`\lambda \ge 0`, :math:`\sum_{t \in W_i} \lambda_t \le \kappa` (rescaled per query
    where an inexact solve exceeds it), so that :func:`dual_bound` is a valid lower bound.

    Raises
    ------
    SolverError
        If the QP solver does not report an optimal (or optimal-inaccurate) solution.
    """
    import cvxpy as cp

    w = cp.Variable(working.gradient.shape[1], name="w")
    xi = cp.Variable(n_blocks, name="xi")
    cuts = xi[working.block] >= working.offset - working.gradient @ w
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + kappa * cp.sum(xi)),
                         [cuts, xi >= 0])
    problem.solve(solver=solver_name)
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise SolverError(f"the cutting-plane master QP ({solver_name}) ended with status "
                          f"{problem.status!r} on {len(working)} cuts")
    lam = np.maximum(np.asarray(cuts.dual_value, dtype=np.float64).ravel(), 0.0)
    total = np.bincount(working.block, weights=lam, minlength=n_blocks)
    shrink = np.where(total > kappa, kappa / np.maximum(total, np.finfo(float).tiny), 1.0)
    return np.asarray(w.value, dtype=np.float64), lam * shrink[working.block]


def solve_master_blocks(working: WorkingSet, n_blocks: int, kappa: float,
                        lam: np.ndarray | None = None, *, tol: float = 1e-10,
                        max_sweeps: int = 500) -> tuple[np.ndarray, np.ndarray]:
    r"""The restricted master's dual, by hand: an interior-point start and a primal
    active-set finish over the product of the queries' capped simplices.

    The dual of the master is :math:`\max D(\lambda)` over :math:`\lambda \ge 0`,
    :math:`\sum_{t \in W_i} \lambda_t \le \kappa` per query (:func:`dual_bound`), solved
    by :func:`cvxrank.solvers.simplex_product_qp.simplex_product_qp`: from ``lam`` (a warm
    start), else from the support guessed by a Mehrotra predictor-corrector interior point
    (Nocedal & Wright, Alg. 16.4), the primal active-set method (Alg. 16.3) on all the
    queries' multipliers jointly, one KKT system of the support and one multiplier per
    query, the low-rank :math:`Q = G G^\top` never formed. It stops at the optimum of a
    support that satisfies the KKT conditions, or where the master's duality gap,
    :math:`\tfrac12\|w\|^2 + \kappa \sum_i \xi_i(w) - D(\lambda)` at :math:`w = \sum_t
    \lambda_t g_t`, is at most ``tol`` times the primal side. Every iterate of the active
    set is feasible, so :func:`dual_bound` stays a certified bound whenever it stops.

    Parameters
    ----------
    working : WorkingSet
    n_blocks : int
        Queries (blocks of the working set's ``block``).
    kappa : float
        The cap :math:`\kappa = C/m` of each query's multipliers.
    lam : ndarray or None
        A warm start (the last master's multipliers, 0 for new cuts); None for a cold start.
    tol : float
        Relative duality gap at which to stop.
    max_sweeps : int
        At most ``max_sweeps`` times (cuts + queries) active-set iterations.

    Returns
    -------
    w, lambda
        As :func:`solve_master`.
    """
    G, c = working.gradient, working.offset
    lam, _ = simplex_product_qp(G, c, working.block, n_blocks, kappa, lam, gap_tol=tol,
                                max_iter=max_sweeps * (len(working) + n_blocks))
    return G.T @ lam, lam


def dual_bound(working: WorkingSet, lam: np.ndarray) -> float:
    r""":math:`D(\lambda) = \sum_t \lambda_t c_t - \tfrac12\|\sum_t \lambda_t g_t\|^2`
    (the Lagrangian minimized at :math:`w = \sum_t \lambda_t g_t`; cuts
    :math:`c_t - g_t^\top w`)."""
    w = working.gradient.T @ lam
    return float(lam @ working.offset - 0.5 * (w @ w))


def iteration_bound(formulation: Any, tol: float = tolerances.FAST_SOLVER_GAP) -> int:
    r"""The n-slack cutting plane's proven iteration bound at relative gap ``tol``.

    Tsochantaridis et al. (2005, Thm. 18; Le & Smola quote it) bound the iterations of the
    n-slack algorithm on :math:`\tfrac12\|w\|^2 + \frac{C'}{n}\sum_i \xi_i` until no
    constraint is violated by more than :math:`\epsilon` by
    :math:`\max(2n\Delta/\epsilon,\; 8C'\Delta R^2/\epsilon^2)`, with :math:`\Delta` the
    largest loss and R the largest norm of a piece's gradient. Here n = B blocks,
    :math:`C' = \kappa B`, :math:`\Delta = \max_i L_i(0)` (a piece's offset is at most
    :math:`L_i(0)`), :math:`R = \max_i 2\max_{j \in i}\|x_j - \bar x_i\| \ge
    \|x_j - x_k\|` (a piece's pair weights sum to at most 1;
    :meth:`~cvxrank.solvers.rankmm.QueryBlocks.max_squared_diameter` gives :math:`R^2`), and, since
    :math:`\epsilon`-violation leaves a gap of at most :math:`\kappa B \epsilon`,
    :math:`\epsilon = \mathrm{tol}\, P(0) / (\kappa B)`. :math:`P(0) \ge p^*` makes the
    bound smaller than the proven one at the relative gap ``tol`` (a stricter check).
    """
    f = formulation
    kappa = float(f.C) / f.m
    n_blocks = int(f.queries_with_pairs.size)
    zero = np.zeros(f.data.n_features)
    delta = float(f.query_losses(zero).max())
    R_sq = query_blocks(f).max_squared_diameter()
    eps = tol * f.primal_value(zero) / (kappa * n_blocks)
    bound = max(2 * n_blocks * delta / eps, 8 * kappa * n_blocks * delta * R_sq / eps ** 2)
    return int(min(math.ceil(bound), 2 ** 62))


@solver("cutting-plane", needs=("separation_oracle",), max_iter=1000)
def solve_cutting_plane(
    formulation: Any,
    options: SolverOptions,
    *,
    master_solver: str = "CLARABEL",
    prune_after: int = 20,
    master: str = "cvxpy",
) -> Run:
    r"""n-slack cutting planes on a query-level polyhedral loss, stopping on a certified gap.

    See the module docstring for the master QP, the certificate
    :math:`P(w) - D(\lambda)` and the cost of an iteration.

    Parameters
    ----------
    formulation : Formulation
        With the ``separation_oracle`` capability (RankMM's three losses, DORM, SVM MAP:
        ``C``, ``m``, ``queries_with_pairs``, ``query_losses``); with ``pair_weighted_cuts``
        (RankMM) the run also returns the dual point.
    options : SolverOptions
        ``tol``: stop when :math:`(P(w) - D(\lambda)) / P(w) \le` ``tol``; ``max_iter``:
        master solves at most; ``time_budget``, ``callback``, ``until`` as
        :class:`~cvxrank.trace.SolverOptions` says (the method is deterministic).
    master_solver : str
        CVXPY solver of the master QP (``master="cvxpy"``).
    master : {"cvxpy", "blocks"}
        The master by CVXPY (:func:`solve_master`) or by hand (:func:`solve_master_blocks`,
        from the interior point's start at every iteration).
    prune_after : int
        Drop a piece after this many consecutive master solves with a zero multiplier.

    Returns
    -------
    Run
        The trace's extra columns: ``cuts`` (working-set size), ``oracle_time`` and
        ``master_time`` (seconds of the iteration) and ``violation`` (the largest
        :math:`L_i(w) - \xi_i` the oracle found). ``w`` the best primal point seen,
        ``alpha`` the printed dual point of the best bound (None without
        ``dual_from_pair_weights``); ``info`` with ``n_cuts`` (working set at the end),
        ``cuts_added``, ``master_time`` and ``oracle_time`` (seconds in all).

    References
    ----------
    .. [1] Q. V. Le and A. J. Smola, Alg. 2; T. Joachims, KDD 2006.
    """
    if master not in ("cvxpy", "blocks"):
        raise ValueError(f"master must be 'cvxpy' or 'blocks', got {master!r}")
    if prune_after < 1:
        raise ValueError(f"prune_after must be >= 1, got {prune_after}")
    f = formulation
    rec = TraceRecorder(f, options)
    tol = rec.tol
    kappa = float(f.C) / f.m
    n_blocks = int(f.queries_with_pairs.size)
    working = WorkingSet(f.data.n_features)
    w = np.zeros(f.data.n_features)
    best_w, best_p = w, f.primal_value(w)
    best_d, best_lam, best_support = 0.0, np.zeros(0), []  # lambda = 0: D = 0 <= p*
    xi = np.zeros(n_blocks)
    master_time = oracle_time = 0.0
    added_total = 0
    k = 0
    # per iteration: seconds in the oracle and the master, the largest violation found
    step = {"oracle_time": 0.0, "master_time": 0.0, "violation": float("nan")}
    sharpen = 0.01  # the hand-written master's gap, relative to the outer gap
    status: Status | None = None
    message: str | None = None
    while rec.record(k, w=best_w, values=(best_p, best_d),
                     extra={"cuts": float(len(working)), **step}):
        k += 1
        started = time.perf_counter()
        cuts = f.separation_oracle(w)
        violated = np.flatnonzero(cuts.loss - xi > VIOLATION * (1.0 + cuts.loss))
        supports = cuts.supports()
        step["oracle_time"] = time.perf_counter() - started
        step["violation"] = float(np.max(cuts.loss - xi))
        oracle_time += step["oracle_time"]
        p = float(0.5 * (w @ w) + kappa * cuts.loss.sum())
        if p < best_p:
            best_w, best_p = w, p
        if violated.size == 0 and master == "blocks" and sharpen > 1e-12:
            sharpen *= 1e-3  # an inexact master's point: solve it closer, add nothing
        elif violated.size == 0:  # the master is exact at w: P(w) is its value
            if rec.record(k, w=best_w, values=(best_p, best_d),
                          extra={"cuts": float(len(working)), **step}):
                status = Status.CONVERGED if rec.tol_met else Status.NUMERICAL
                message = (("converged: tolerance met; no violated cut left to tighten the "
                            "certificate further") if rec.tol_met else
                           ("stopped: no violated cut left, but the certified gap "
                            f"{best_p - best_d:.3g} is above the tolerance"))
            break
        else:
            working.add(cuts.offset[violated], cuts.gradient[violated], violated,
                        [supports[b] for b in violated])
            added_total += int(violated.size)
        started = time.perf_counter()
        try:
            if master == "blocks":
                # to a gap well below the outer one: an inexact master only slows the
                # bound, which any feasible lambda certifies. Cold (the interior point's
                # support guess): from the last multipliers, with one new cut per query at
                # 0, the active set took 300-550 steps a master on SVM MAP (OHSUMED Fold1,
                # C = 100; 3.4 s in all against 0.59 s cold and CVXPY's 1.4 s)
                outer = (best_p - best_d) / max(abs(best_p), np.finfo(float).tiny)
                w, lam = solve_master_blocks(working, n_blocks, kappa,
                                             tol=sharpen * max(outer, tol))
            else:
                w, lam = solve_master(working, n_blocks, kappa, master_solver)
        except SolverError as error:  # the bound so far stands; say why the run stopped
            if rec.record(k, w=best_w, values=(best_p, best_d),
                          extra={"cuts": float(len(working)), **step}):
                status, message = Status.NUMERICAL, f"stopped: {error}"
            break
        step["master_time"] = time.perf_counter() - started
        master_time += step["master_time"]
        xi = np.zeros(n_blocks)
        np.maximum.at(xi, working.block, working.offset - working.gradient @ w)
        d = dual_bound(working, lam)
        if d > best_d:
            best_d, best_lam, best_support = d, lam, list(working.support)
        working.prune(lam, prune_after)
    alpha = None
    if "pair_weighted_cuts" in f.capabilities:  # pieces that are pair weightings (RankMM)
        beta = np.zeros(f.n_pairs)
        for lam_t, (pairs, weights) in zip(best_lam, best_support, strict=True):
            beta[pairs] += lam_t * weights
        alpha = f.dual_from_pair_weights(beta)
    return rec.result(best_w, alpha, k, "cutting-plane", status=status, message=message,
                      n_cuts=len(working), cuts_added=added_total, master_time=master_time,
                      oracle_time=oracle_time)
