r"""Cutting planes with a certified gap: one core for the 1-slack and the n-slack solvers.

Both solvers minimize :math:`P(w) = \tfrac12\|w\|^2 + \kappa \sum_{i=1}^B L_i(w)` over
blocks i with convex losses :math:`L_i`, given an oracle that returns at any w, for every
block, the affine piece active there (its linearization),

.. math::

    L_i(v) \ge c_i - g_i^\top v \quad \text{for all } v, \qquad \text{with equality at } v = w

(:class:`~cvxrank.numerics.cuts.QueryCuts`):

* **1-slack** (:func:`cvxrank.solvers.one_slack.solve_one_slack`): one block,
  :math:`\kappa = C`, :math:`L_1` the whole pairwise loss of RankSVM or IR SVM, its piece
  from one sorted loss evaluation (Joachims 2006);
* **n-slack** (:func:`solve_cutting_plane`): a block per query with pairs,
  :math:`\kappa = C/m`, the pieces from the formulation's separation oracle (RankMM's three
  losses, DORM, SVM MAP; Le & Smola Alg. 2, Tsochantaridis et al. 2005).

The core keeps the pieces in one :class:`WorkingSet` and solves the restricted master QP

.. math::

    \min_{w, \xi} \; \tfrac12\|w\|^2 + \kappa \sum_i \xi_i \quad \text{s.t.} \quad
    \xi_i \ge 0, \quad \xi_i \ge c_t - g_t^\top w \;\; (t \in W_i),

through one interface (:func:`solve_master`): with one block by the warm-started active set
:func:`~cvxrank.solvers.simplex_product_qp.simplex_qp` over one simplex (the zero cut
:math:`\xi \ge 0` as its coordinate 0, the Gram matrix kept up to date by the working set;
``master="active-set"``), with several by
:func:`~cvxrank.solvers.simplex_product_qp.simplex_product_qp` (``master="blocks"``), by its
interior point alone (:func:`~cvxrank.solvers.simplex_product_qp.simplex_product_interior`,
``master="interior"``: O(md^2) an iteration whatever the number of blocks B, where the
active set's finish costs O((d + B)^3)) or by CVXPY (``master="cvxpy"``, any block count).
The master's multipliers :math:`\lambda_t \ge 0` satisfy
:math:`\sum_{t \in W_i} \lambda_t \le \kappa`, and for *any* such :math:`\lambda`

.. math::

    P(v) \ge \tfrac12\|v\|^2 + \sum_t \lambda_t (c_t - g_t^\top v) \ge
    D(\lambda) = \sum_t \lambda_t c_t - \tfrac12 \Big\|\sum_t \lambda_t g_t\Big\|^2

(each cut minorizes its :math:`L_i`, and a combination of weights at most :math:`\kappa` of
the cuts and of 0 is at most :math:`\kappa L_i`), so :math:`D(\lambda) \le p^*`: after
clipping the multipliers of an inexact master to that set the gap :math:`P(w) - D(\lambda)`
is a certificate computed in :math:`O(|W| d)`, with :math:`P(w)` from the oracle's losses.

One iteration: the oracle at the master's last point, the pieces it finds violated added
to the working set (a piece violated by at most :data:`VIOLATION` is rounding), one trace
record with the best point's objective and the best bound so far (the solver stops when
their gap is at most ``tol`` times the objective), an optional exact finish (a solver's
hook, tried once the tolerance is met while an ``until`` rule still asks for more), the
master, and pruning (pieces whose multiplier has been zero for ``prune_after`` masters are
dropped: they stay valid minorants, dropping only loosens the master, and the gap is
certified at every iteration all the same). When the oracle finds nothing violated the
master is exact at w: the run stops (an inexact hand-written master is first solved closer).
Each piece of RankMM is a pair weighting :math:`\pi^t` from the loss's own unit dual set, so
:math:`\beta = \sum_t \lambda_t \pi^t` is a feasible point of the formulation's dual with
:math:`D(\beta) = D(\lambda)`; it is returned as the run's ``alpha`` (in the printed
variables).

Iterations (:func:`iteration_bound`): for one block at most :math:`\lceil \log_2 (\Delta /
(4 R^2 \kappa)) \rceil + \lceil 16 R^2 \kappa / \varepsilon \rceil` (Joachims, Finley & Yu
2009, Thm. 5), for B blocks at most :math:`\max(2B\Delta/\varepsilon, 8\kappa B\Delta
R^2/\varepsilon^2)` (Tsochantaridis et al. 2005, Thm. 18), with :math:`\Delta` the largest
block loss at w = 0 and R the largest norm of a piece's gradient, which the formulation
states (the ``cut_bounds`` capability).

References
----------
.. [1] T. Joachims, "Training linear SVMs in linear time", KDD 2006 (1-slack cutting planes,
   the O(n log n) ranking oracle).
.. [2] T. Joachims, T. Finley and C.-N. Yu, "Cutting-plane training of structural SVMs",
   Machine Learning 77, 2009, Thm. 5.
.. [3] Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", 2007, Alg. 2
   (n-slack column generation) and eqs. (27)-(28).
.. [4] I. Tsochantaridis, T. Joachims, T. Hofmann and Y. Altun, "Large margin methods for
   structured and interdependent output variables", JMLR 6, 2005, Thm. 18.
.. [5] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola and Q. V. Le, "Bundle methods for
   regularized risk minimization", JMLR 11, 2010 (the 1-slack method as BMRM).
"""

from __future__ import annotations

import math
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.core.capabilities import require, solver
from cvxrank.core.trace import Run, SolverOptions, Status, TraceRecorder, certified_radius
from cvxrank.errors import SolverError
from cvxrank.numerics import rounding
from cvxrank.numerics.cuts import QueryCuts
from cvxrank.solvers.simplex_product_qp import (
    simplex_product_interior,
    simplex_product_qp,
    simplex_qp,
)
from cvxrank.tolerances import (
    ITERATION_BOUND_CAP,
    MASTER_SATURATION,
    SHARPEN_FACTOR,
    SHARPEN_FLOOR,
)

#: A piece enters the working set when it exceeds the master's slack by more than this
#: (relative to 1 + L_i(w)): rounding, not a violation, below it.
VIOLATION = 1e-12

#: The masters by name: the one-block active set, the several-block hand-written QP, its
#: interior point alone, CVXPY.
MASTERS = ("active-set", "blocks", "interior", "cvxpy")

#: The hand-written several-block master is solved to this fraction of the outer gap (and
#: closer each time the oracle finds nothing violated at its inexact point:
#: :data:`~cvxrank.tolerances.SHARPEN_FACTOR`, :data:`~cvxrank.tolerances.SHARPEN_FLOOR`).
SHARPEN = 1e-2

#: An exact finish is tried again once the certified gap has fallen by this factor since its
#: last try.
FINISH_GAP_FACTOR = 10.0

#: The master finish's multipliers must reproduce its point to this relative residual (and
#: no cut may exceed its block's slack by more), in at most this many active-set steps.
RESIDUAL = 1e-12
REFINE_STEPS = 10

#: The pair weights of a piece (indices and values), or None for pieces that are not pair
#: weightings.
Support = tuple[np.ndarray, np.ndarray] | None


@dataclass(frozen=True)
class Polished:
    """What an exact finish returns: a point, its objective and a certified lower bound on
    :math:`p^*`, with the rounding bounds of both; ``gap`` the gap between them where the
    finish computed it in a better-conditioned form than their difference (with its own
    rounding bound ``gap_error``)."""

    w: np.ndarray
    primal: float
    dual: float
    primal_error: float
    dual_error: float
    lam: np.ndarray | None = None  # the working set's multipliers of ``dual`` (master finish)
    gap: float | None = None
    gap_error: float = 0.0


#: An exact finish: ``finish(w, radius)`` from the best point and its certified radius, a
#: :class:`Polished` point or None (nothing tried).
Finish = Callable[[np.ndarray, float], Polished | None]


@dataclass(frozen=True)
class CutSet:
    r"""The cuts of a finished run, read-only: offsets ``offset`` (t,), gradients
    ``gradient`` (t x d), the block of each cut, the last master's multipliers
    ``multiplier`` and, when the master kept it, the Gram matrix ``gram``
    (:math:`G G^\top`, else None). With the one-block master the zero cut comes first and,
    without pruning, the first s cuts are the working set of the (s-1)-th master."""

    offset: np.ndarray
    gradient: np.ndarray
    block: np.ndarray
    multiplier: np.ndarray
    gram: np.ndarray | None


class WorkingSet:
    r"""The pieces :math:`c_t - g_t^\top v` a cutting plane keeps, with their block, the
    last master's multipliers, the pair weights of each (for the dual map, or None) and,
    when the master needs it, their Gram matrix :math:`Q = G G^\top`.

    Stored with spare capacity (doubled when full), so that the t-th cut costs O(td) for its
    row of Q, not a copy of the t x t matrix; :attr:`offset`, :attr:`gradient`,
    :attr:`block`, :attr:`multiplier` and :attr:`gram` are views of the filled part.

    Parameters
    ----------
    n_features : int
    gram : bool
        Keep Q up to date (the one-block master's).
    zero_cut : float or None
        Start with the zero cut (:math:`c = 0`, :math:`g = 0`: :math:`\xi \ge 0`) of block
        0 holding the whole cap ``zero_cut`` (the one-block master's coordinate 0, its
        slack); it is never pruned.
    capacity : int
        Initial room (cuts).
    """

    def __init__(self, n_features: int, *, gram: bool = False,
                 zero_cut: float | None = None, capacity: int = 64) -> None:
        self._offset = np.zeros(capacity)
        self._gradient = np.zeros((capacity, n_features))
        self._block = np.zeros(capacity, dtype=np.int64)
        self._multiplier = np.zeros(capacity)
        self._idle = np.zeros(capacity, dtype=np.int64)
        self._gram = np.zeros((capacity, capacity)) if gram else None
        self.supports: list[Support] = []
        self.size = 0
        self.fixed = 0  # cuts at the front that are never pruned (the zero cut)
        if zero_cut is not None:
            self.add(np.zeros(1), np.zeros((1, n_features)), np.zeros(1, dtype=np.int64))
            self._multiplier[0] = zero_cut
            self.fixed = 1

    def __len__(self) -> int:
        return self.size

    @property
    def n_cuts(self) -> int:
        """The cuts the oracle added (the zero cut not counted)."""
        return self.size - self.fixed

    @property
    def offset(self) -> np.ndarray:
        """:math:`c_t`, shape (t,)."""
        return self._offset[:self.size]

    @property
    def gradient(self) -> np.ndarray:
        """:math:`g_t`, shape (t, d)."""
        return self._gradient[:self.size]

    @property
    def block(self) -> np.ndarray:
        """The block of each cut, shape (t,)."""
        return self._block[:self.size]

    @property
    def multiplier(self) -> np.ndarray:
        """The last master's multipliers (0 for cuts added since), shape (t,)."""
        return self._multiplier[:self.size]

    @multiplier.setter
    def multiplier(self, value: np.ndarray) -> None:
        self._multiplier[:self.size] = value

    @property
    def gram(self) -> np.ndarray:
        """:math:`Q = G G^\\top`, shape (t, t) (only when kept)."""
        if self._gram is None:
            raise ValueError("this working set keeps no Gram matrix (gram=False)")
        return self._gram[:self.size, :self.size]

    def add(self, offset: np.ndarray, gradient: np.ndarray, block: np.ndarray,
            supports: list[Support] | None = None) -> None:
        """Append cuts (their multipliers start at 0)."""
        k = int(offset.size)
        if k == 0:
            return
        t = self.size
        if t + k > self._offset.size:
            self._grow(max(2 * self._offset.size, t + k))
        self._offset[t:t + k] = offset
        self._gradient[t:t + k] = gradient
        self._block[t:t + k] = block
        self._multiplier[t:t + k] = 0.0
        self._idle[t:t + k] = 0
        if self._gram is not None:
            cross = self._gradient[:t + k] @ np.asarray(gradient).T  # (t + k, k)
            self._gram[:t + k, t:t + k] = cross
            self._gram[t:t + k, :t + k] = cross.T
        self.supports.extend(supports if supports is not None else [None] * k)
        self.size = t + k

    def _grow(self, capacity: int) -> None:
        t = self.size

        def bigger(array: np.ndarray) -> np.ndarray:
            out = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
            out[:t] = array[:t]
            return out

        self._offset, self._gradient = bigger(self._offset), bigger(self._gradient)
        self._block, self._multiplier = bigger(self._block), bigger(self._multiplier)
        self._idle = bigger(self._idle)
        if self._gram is not None:
            gram = np.zeros((capacity, capacity))
            gram[:t, :t] = self.gram
            self._gram = gram

    def prune(self, after: int) -> None:
        """Drop the cuts whose multiplier has been zero for ``after`` consecutive masters
        (the zero cut stays)."""
        idle = self._idle[:self.size]
        idle[:] = np.where(self.multiplier > 0, 0, idle + 1)
        keep = idle < after
        keep[:self.fixed] = True
        if keep.all():
            return
        kept = np.flatnonzero(keep)
        for array in (self._offset, self._gradient, self._block, self._multiplier,
                      self._idle):
            array[:kept.size] = array[kept]
        if self._gram is not None:
            self._gram[:kept.size, :kept.size] = self._gram[kept[:, None], kept]
        self.supports = [self.supports[i] for i in kept]
        self.size = int(kept.size)

    def w(self, lam: np.ndarray) -> np.ndarray:
        r""":math:`w(\lambda) = G^\top \lambda`, the master's point of the multipliers."""
        return lam @ self.gradient

    def dual_value(self, lam: np.ndarray) -> float:
        r""":math:`D(\lambda) = \sum_t \lambda_t c_t - \tfrac12\|G^\top\lambda\|^2` (a bound on
        :math:`p^*` for feasible :math:`\lambda`, module docstring)."""
        w = self.w(lam)
        return float(lam @ self.offset - 0.5 * (w @ w))

    def snapshot(self) -> CutSet:
        """Read-only copies of the filled part."""
        gram = None if self._gram is None else _locked(self.gram)
        return CutSet(_locked(self.offset), _locked(self.gradient), _locked(self.block),
                      _locked(self.multiplier), gram)


def _locked(array: np.ndarray) -> np.ndarray:
    """A read-only copy."""
    out = np.array(array)
    out.setflags(write=False)
    return out


# ------------------------------------------------------------------------------ masters
def solve_master(working: WorkingSet, n_blocks: int, kappa: float, master: str, *,
                 tol: float = 0.0, solver_name: str = "CLARABEL",
                 out_of_time: Callable[[], bool] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    r"""The restricted master (module docstring): ``(w, lambda)``, :math:`\lambda` feasible
    (:math:`\lambda \ge 0`, at most :math:`\kappa` per block), :math:`w = G^\top\lambda`
    for the hand-written masters.

    A master that fails falls back to the others: a hand-written one that does not terminate
    (it cycles or reaches its iteration cap: rounding on ill-conditioned cuts) to CVXPY,
    whose solver falls back to the next of :data:`MASTER_SOLVERS`
    (:func:`solve_master_cvxpy`), and CVXPY (an interior point can fail at C = 1e10 and
    beyond) to the hand-written several-block active set, which takes any block count.

    Parameters
    ----------
    working : WorkingSet
        For ``"active-set"``: one block, the zero cut first and the Gram matrix kept.
    n_blocks : int
    kappa : float
        The cap of each block's multipliers.
    master : {"active-set", "blocks", "interior", "cvxpy"}
        :func:`~cvxrank.solvers.simplex_product_qp.simplex_qp` warm-started from the last
        multipliers, :func:`solve_master_blocks` (to the relative gap ``tol``), its
        interior point alone (:func:`~cvxrank.solvers.simplex_product_qp.
        simplex_product_interior`, to 1e-8: O(md^2) an iteration whatever the number of
        blocks) or :func:`solve_master_cvxpy` (``solver_name`` first).
    out_of_time : callable or None
        ``out_of_time()`` True: the time budget is spent; a hand-written master returns its
        current (feasible) multipliers.

    Raises
    ------
    SolverError
        If every fallback fails.
    """
    def active_set() -> tuple[np.ndarray, np.ndarray]:
        lam, _ = simplex_qp(working.gram, working.offset, kappa, working.multiplier,
                            out_of_time=out_of_time)
        return working.w(lam), lam

    def blocks() -> tuple[np.ndarray, np.ndarray]:
        return solve_master_blocks(working, n_blocks, kappa, tol=tol, out_of_time=out_of_time)

    def interior() -> tuple[np.ndarray, np.ndarray]:
        lam = simplex_product_interior(working.gradient, working.offset, working.block,
                                       n_blocks, kappa)
        return working.w(lam), lam

    def cvxpy() -> tuple[np.ndarray, np.ndarray]:
        return solve_master_cvxpy(working, n_blocks, kappa, solver_name)

    first = {"active-set": active_set, "blocks": blocks, "interior": interior,
             "cvxpy": cvxpy}[master]
    failures = []
    for attempt in dict.fromkeys((first, cvxpy, blocks)):  # the chosen one, then the others
        try:
            return attempt()
        except SolverError as error:
            failures.append(str(error))
    raise SolverError("; ".join(failures))


#: CVXPY solvers the master is tried with, in this order after the one asked for.
MASTER_SOLVERS = ("CLARABEL", "ECOS")


def solve_master_cvxpy(working: WorkingSet, n_blocks: int, kappa: float,
                       solver_name: str = "CLARABEL") -> tuple[np.ndarray, np.ndarray]:
    r"""The restricted master QP (module docstring) in CVXPY: ``(w, lambda)``.

    ``lambda`` are the multipliers of the cut constraints, clipped to the set
    :math:`\lambda \ge 0`, :math:`\sum_{t \in W_i} \lambda_t \le \kappa` (rescaled per block
    where an inexact solve exceeds it), so that :meth:`WorkingSet.dual_value` is a valid
    lower bound. The QP is always feasible and bounded below (large slacks, objective
    :math:`\ge 0`): a solver that fails or reports it infeasible or unbounded (rounding on
    ill-conditioned cuts) is followed by the next of :data:`MASTER_SOLVERS`.

    Raises
    ------
    SolverError
        If no solver reports an optimal (or optimal-inaccurate) solution with finite values.
    """
    import cvxpy as cp

    if not (np.all(np.isfinite(working.gradient)) and np.all(np.isfinite(working.offset))):
        raise SolverError("the cutting-plane master has non-finite cuts (the features "
                          "overflow)")
    w = cp.Variable(working.gradient.shape[1], name="w")
    xi = cp.Variable(n_blocks, name="xi")
    cuts = xi[working.block] >= working.offset - working.gradient @ w
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + kappa * cp.sum(xi)),
                         [cuts, xi >= 0])
    outcomes = []
    for name in dict.fromkeys((solver_name.upper(), *MASTER_SOLVERS)):
        try:
            with warnings.catch_warnings():  # "may be inaccurate": the status says it
                warnings.simplefilter("ignore", UserWarning)
                problem.solve(solver=name)
        except (cp.error.SolverError, ValueError):  # failed, or not installed
            outcomes.append(f"{name} failed")
            continue
        if (problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and w.value is not None
                and np.all(np.isfinite(w.value)) and cuts.dual_value is not None):
            break
        outcomes.append(f"{name}: {problem.status}")
    else:
        raise SolverError(f"the cutting-plane master QP ({len(working)} cuts; feasible and "
                          f"bounded) was not solved: {'; '.join(outcomes)}")
    lam = np.maximum(np.nan_to_num(np.asarray(cuts.dual_value, dtype=np.float64).ravel()),
                     0.0)
    total = np.bincount(working.block, weights=lam, minlength=n_blocks)
    shrink = np.where(total > kappa, kappa / np.maximum(total, np.finfo(float).tiny), 1.0)
    return np.asarray(w.value, dtype=np.float64), lam * shrink[working.block]


def solve_master_blocks(working: WorkingSet, n_blocks: int, kappa: float,
                        lam: np.ndarray | None = None, *, tol: float = 1e-10,
                        max_sweeps: int = 500,
                        out_of_time: Callable[[], bool] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    r"""The restricted master's dual, by hand: an interior-point start and a primal
    active-set finish over the product of the blocks' capped simplices.

    The dual of the master is :math:`\max D(\lambda)` over :math:`\lambda \ge 0`,
    :math:`\sum_{t \in W_i} \lambda_t \le \kappa` per block, solved by
    :func:`cvxrank.solvers.simplex_product_qp.simplex_product_qp`: from ``lam`` (a warm
    start), else from the support guessed by a Mehrotra predictor-corrector interior point
    (Nocedal & Wright, Alg. 16.4), the primal active-set method (Alg. 16.3) on all the
    blocks' multipliers jointly, one KKT system of the support and one multiplier per
    block, the low-rank :math:`Q = G G^\top` never formed. It stops at the optimum of a
    support that satisfies the KKT conditions, or where the master's duality gap,
    :math:`\tfrac12\|w\|^2 + \kappa \sum_i \xi_i(w) - D(\lambda)` at :math:`w = \sum_t
    \lambda_t g_t`, is at most ``tol`` times the primal side. Every iterate of the active
    set is feasible, so :meth:`WorkingSet.dual_value` stays a certified bound whenever it
    stops.

    Parameters
    ----------
    working : WorkingSet
    n_blocks : int
        Blocks of the working set's ``block``.
    kappa : float
        The cap :math:`\kappa` of each block's multipliers.
    lam : ndarray or None
        A warm start (the last master's multipliers, 0 for new cuts); None for a cold start.
    tol : float
        Relative duality gap at which to stop.
    max_sweeps : int
        At most ``max_sweeps`` times (cuts + blocks) active-set iterations.
    out_of_time : callable or None
        ``out_of_time()`` True: the time budget is spent; the current (feasible)
        multipliers are returned.

    Returns
    -------
    w, lambda
        As :func:`solve_master_cvxpy`.
    """
    G, c = working.gradient, working.offset
    lam, _ = simplex_product_qp(G, c, working.block, n_blocks, kappa, lam, gap_tol=tol,
                                max_iter=max_sweeps * (len(working) + n_blocks),
                                out_of_time=out_of_time)
    return working.w(lam), lam


# ------------------------------------------------------------------------ iteration bound
def iteration_bound(formulation: Any, tol: float = tolerances.FAST_SOLVER_GAP,
                    p_star: float | None = None) -> int:
    r"""The cutting plane's proven iteration bound at the relative gap ``tol``.

    From the formulation's ``cut_bounds()``: the weight :math:`\kappa` of each block's loss,
    R, a bound on the norm of any piece's gradient, and the block losses :math:`L_i(0)`
    (B blocks, :math:`\Delta = \max_i L_i(0)` bounds every piece's offset). An
    :math:`\varepsilon`-violation of the master's constraints leaves a gap of at most
    :math:`\kappa B \varepsilon`, so :math:`\varepsilon =` ``tol`` :math:`p / (\kappa B)`
    with :math:`p = p^*` when given, else :math:`P(0) = \kappa \sum_i L_i(0) \ge p^*`
    (which makes the bound smaller than the proven one at the relative gap ``tol``: a
    stricter check).

    * One block (the 1-slack; Joachims, Finley & Yu 2009, Thm. 5):
      :math:`\lceil \log_2 (\Delta / (4 R^2 \kappa)) \rceil + \lceil 16 R^2 \kappa /
      \varepsilon \rceil`;
    * B > 1 blocks (the n-slack; Tsochantaridis et al. 2005, Thm. 18, as Le & Smola quote
      it, for :math:`\tfrac12\|w\|^2 + \frac{C'}{n}\sum_i \xi_i` with n = B and
      :math:`C' = \kappa B`): :math:`\max(2B\Delta/\varepsilon,\; 8\kappa B\Delta
      R^2/\varepsilon^2)`.

    Parameters
    ----------
    formulation : Objective
        With the ``cut_bounds`` capability.
    tol : float
    p_star : float or None
        The optimal value (e.g. the certified reference's); None: :math:`P(0)`.

    Returns
    -------
    int
        At least 1 (1 when w = 0 is optimal: no loss at 0, or no piece with a gradient).

    Raises
    ------
    CapabilityError
        For a formulation without ``cut_bounds``.
    """
    require(formulation, "iteration_bound", ("cut_bounds",))
    kappa, radius, losses = formulation.cut_bounds()
    losses = np.asarray(losses, dtype=np.float64)
    n_blocks = int(losses.size)
    delta = float(losses.max(initial=0.0))
    scale = kappa * float(losses.sum()) if p_star is None else float(p_star)
    R2 = float(radius) ** 2
    if delta <= 0 or R2 <= 0 or scale <= 0 or tol <= 0:
        return 1
    eps = tol * scale / (kappa * n_blocks)
    if n_blocks == 1:
        first = max(0, math.ceil(math.log2(max(delta / (4.0 * R2 * kappa), 1.0))))
        bound = first + math.ceil(16.0 * R2 * kappa / eps)
    else:
        bound = max(2 * n_blocks * delta / eps, 8 * kappa * n_blocks * delta * R2 / eps ** 2)
    return int(min(math.ceil(bound), ITERATION_BOUND_CAP))


# ------------------------------------------------------------------------------ the loop
@dataclass
class _Best:
    """The best point and bound of a run so far, with their rounding bounds (and the
    multipliers and pair weights of that bound, for the dual map); ``gap`` the finish's
    better-conditioned gap between the two while both are the finish's (None otherwise)."""

    w: np.ndarray
    primal: float
    primal_error: float = 0.0
    dual: float = 0.0  # lambda = 0: D = 0 <= p*
    dual_error: float = 0.0
    lam: np.ndarray | None = None
    supports: list[Support] | None = None
    gap: tuple[float, float] | None = None

    def relative_gap(self) -> float:
        """``(primal - dual) / |primal|`` (the tiniest float for a primal of 0)."""
        return (self.primal - self.dual) / max(abs(self.primal), np.finfo(float).tiny)

    def certificate(self) -> dict[str, float | None]:
        """The gap and its rounding bound, as :meth:`~cvxrank.core.trace.TraceRecorder.record`
        takes them."""
        if self.gap is not None:
            return {"gap": self.gap[0], "gap_error": self.gap[1]}
        return {"gap": None, "gap_error": self.primal_error + self.dual_error}


@dataclass
class _Bounds:
    r"""What a run knows beyond its best point and bound: its blocks, a bound on
    :math:`\|w^*\|` (from :math:`P(0)` at the first call), the largest rounding bound of a
    cut so far, and the cuts added."""

    n_blocks: int
    reach: float = math.inf
    cut_error_max: float = 0.0
    added: int = 0


def _abandonable(formulation: Any, options: SolverOptions) -> bool:
    """Whether the oracle's calls after the first may be abandoned at the time budget
    (:func:`within_budget`): a formulation's separation oracle (an assignment, a sort per
    query) may outlast the whole budget; the 1-slack's sorted pass is called directly."""
    return options.time_budget is not None and "separation_oracle" in getattr(
        formulation, "capabilities", ())


def _working_set(n_features: int, master: str, kappa: float) -> WorkingSet:
    """The run's working set: with the Gram matrix of the cuts and the zero cut for the
    one-block active-set master."""
    one_block = master == "active-set"
    return WorkingSet(n_features, gram=one_block, zero_cut=kappa if one_block else None)


def _check_master(master: str, n_blocks: int) -> None:
    """ValueError for an unknown master, or the one-block active set on several blocks."""
    if master not in MASTERS:
        raise ValueError(f"master must be one of {', '.join(MASTERS)}, got {master!r}")
    if master == "active-set" and n_blocks != 1:
        raise ValueError(f"the active-set master has one block; this problem has {n_blocks}")


def _oracle_overran(budget: float | None) -> str:
    """The message of a run whose time budget ran out during a separation oracle call."""
    return (f"stopped: time budget {budget:g} s reached during a separation oracle call "
            "(left to finish in the background, its result unused)")


def _finish(best: _Best, finish: Finish, formulation: Any, working: WorkingSet,
            keep_dual: bool, totals: dict[str, float]) -> float:
    """One try of the finish at the best point (:func:`_polish`), the bound's multipliers and
    pair weights kept (``keep_dual``) when it gives them, counted in ``totals``; its
    seconds."""
    elapsed, lam = _polish(best, finish, formulation.strong_convexity)
    if lam is not None and keep_dual:  # the bound's dual point
        best.lam, best.supports = lam, list(working.supports)
    totals["finishes"] += 1
    totals["finish_time"] += elapsed
    return elapsed


def _take_cuts(cuts: QueryCuts, w: np.ndarray, xi: np.ndarray, kappa: float, best: _Best,
               working: WorkingSet, bounds: _Bounds) -> tuple[np.ndarray, float]:
    r"""The oracle's answer at ``w`` taken in: the primal value (the best point kept), the
    rounding bounds, the violated cuts added to the working set. Returns the violated
    blocks and the largest :math:`L_i(w) - \xi_i`."""
    excess = cuts.loss - xi
    violated = np.flatnonzero(excess > VIOLATION * (1.0 + cuts.loss))
    primal = float(0.5 * (w @ w) + kappa * cuts.loss.sum())
    error = primal_error(cuts, w, kappa)
    if not math.isfinite(bounds.reach):  # w = 0: 1/2 ||w*||^2 <= p* <= P(0)
        bounds.reach = math.sqrt(2.0 * (primal + error))
    bounds.cut_error_max = max(bounds.cut_error_max, cut_error(cuts, w, bounds.reach))
    if primal < best.primal:
        best.w, best.primal, best.primal_error, best.gap = w, primal, error, None
    supports = cuts.supports()
    working.add(cuts.offset[violated], cuts.gradient[violated], violated,
                [supports[b] for b in violated])
    bounds.added += int(violated.size)
    return violated, float(np.max(excess))


def _take_master(working: WorkingSet, w: np.ndarray, lam: np.ndarray, kappa: float,
                 best: _Best, bounds: _Bounds, keep_dual: bool,
                 prune_after: int | None) -> np.ndarray:
    r"""The master's solution taken in: its multipliers on the working set, its dual value
    (the best bound kept, with its rounding bound and, ``keep_dual``, its multipliers and
    pair weights); the cuts idle for ``prune_after`` masters dropped. Returns the slacks
    :math:`\xi_i` of the cuts at ``w``."""
    n_blocks = bounds.n_blocks
    working.multiplier = lam
    xi = np.zeros(n_blocks)
    np.maximum.at(xi, working.block, working.offset - working.gradient @ w)
    dual = working.dual_value(lam)
    if dual > best.dual:
        best.dual, best.gap = dual, None
        best.dual_error = dual_error(dual, w, working.n_cuts, kappa, n_blocks,
                                     bounds.cut_error_max)
        if keep_dual:
            best.lam, best.supports = lam.copy(), list(working.supports)
    if prune_after is not None:
        working.prune(prune_after)
    return xi


def primal_error(cuts: QueryCuts, w: np.ndarray, kappa: float) -> float:
    r"""The rounding bound of :math:`P(w) = \tfrac12\|w\|^2 + \kappa \sum_i L_i(w)` from
    the oracle's losses: their own bounds (``cuts.loss_error``, where the oracle gives
    them) and the final sum's, :math:`\gamma_{d+B+4}(\tfrac12\|w\|^2 + \kappa \sum_i
    |L_i|)`."""
    own = 0.0 if cuts.loss_error is None else kappa * float(np.sum(cuts.loss_error))
    return own + rounding.value_error(w.size + cuts.n_blocks,
                                      0.5 * float(w @ w) + kappa * float(np.abs(cuts.loss).sum()))


def cut_error(cuts: QueryCuts, w: np.ndarray, reach: float) -> float:
    r"""How far below a valid piece of :math:`L_i` any computed piece :math:`\hat c_i -
    \hat g_i^\top v` can lie, over the ball :math:`\|v\| \le` ``reach`` (which holds the
    optimum): the loss's rounding, the offset's :math:`\hat c_i = \hat L_i + \hat g_i^\top
    w` (:math:`\gamma_{d+2}(|\hat L_i| + |\hat g_i|^\top |w|)`) and the gradient's error
    times :math:`\|v - w\| \le` ``reach`` :math:`+ \|w\|`; the largest over the blocks."""
    own = np.abs(cuts.loss) + np.abs(cuts.gradient) @ np.abs(w)
    error = rounding.gamma(w.size + 2) * own
    if cuts.loss_error is not None:
        error = error + cuts.loss_error
    if cuts.gradient_error is not None:
        error = error + cuts.gradient_error * (reach + float(np.linalg.norm(w)))
    return float(np.max(error, initial=0.0))


def dual_error(dual: float, w: np.ndarray, n_cuts: int, kappa: float, n_blocks: int,
               cut_error_max: float) -> float:
    r"""The rounding bound of a master's :math:`D(\lambda)` (``dual``, at its point
    :math:`w = G^\top\lambda`, over ``n_cuts`` cuts): the cuts' own errors (at most
    ``cut_error_max`` each, weighted by at most :math:`\kappa` per block) and the sums'
    (:math:`\gamma_{t+d+4}(|D| + 2\|w\|^2)`, the offsets' weighted sum being
    :math:`D + \tfrac12\|w\|^2`)."""
    return (kappa * n_blocks * cut_error_max
            + rounding.value_error(n_cuts + w.size, abs(dual) + 2.0 * float(w @ w)))


def run_cutting_plane(
    formulation: Any,
    options: SolverOptions,
    oracle: Callable[[np.ndarray], QueryCuts],
    *,
    n_blocks: int,
    kappa: float,
    master: str,
    name: str,
    prune_after: int | None = None,
    master_solver: str = "CLARABEL",
    finish: Finish | None = None,
    exact_master: bool = False,
    dual_map: Callable[[np.ndarray, list[Support]], np.ndarray] | None = None,
) -> Run:
    r"""The cutting-plane loop both solvers run (module docstring).

    Parameters
    ----------
    formulation : Objective
        Gives ``data.n_features`` and the recorder's ``primal_value`` and
        ``strong_convexity``.
    options : SolverOptions
        ``tol``: stop when :math:`(P(w) - D(\lambda)) / P(w) \le` ``tol``; ``max_iter``:
        master solves at most; ``time_budget``, ``callback``, ``until`` as
        :class:`~cvxrank.core.trace.SolverOptions` says.
    oracle : callable
        ``oracle(w)`` -> :class:`~cvxrank.numerics.cuts.QueryCuts` with one piece per block.
    n_blocks : int
    kappa : float
        The weight of each block's loss.
    master : {"active-set", "blocks", "interior", "cvxpy"}
        :func:`solve_master`'s (``"active-set"``: one block only).
    name : str
        The solver's name, for the run.
    prune_after : int or None
        Drop a piece after this many consecutive masters with a zero multiplier (None:
        never).
    master_solver : str
        CVXPY solver of ``master="cvxpy"``.
    finish : callable or None
        An exact finish (:data:`Finish`), tried when the tolerance is met but the ``until``
        rule is not, again each time the gap has fallen by :data:`FINISH_GAP_FACTOR` and
        when the oracle finds nothing violated (the working set is then final); its
        point and bound replace the run's when better, and are recorded as a row of their
        own (same iteration).
    exact_master : bool
        Use :func:`master_finish` (the restricted master solved exactly) as the exact
        finish (several blocks; instead of ``finish``).
    dual_map : callable or None
        ``dual_map(lam, supports)``: the formulation's dual point of the best bound's
        multipliers and their cuts' pair weights (the run's ``alpha``; None without).

    Returns
    -------
    Run
        ``w`` the best point seen, ``alpha`` as ``dual_map`` gives it; the trace's extra
        columns ``cuts`` (working-set size, the zero cut not counted), ``oracle_time`` and
        ``master_time`` (seconds of the iteration), ``violation`` (the largest
        :math:`L_i(w) - \xi_i` the oracle found) and, on a finish's row, ``finish_time``;
        ``info``: ``cuts`` (the final :class:`CutSet`), ``n_cuts``, ``cuts_added``,
        ``master_time`` and ``oracle_time`` (seconds in all), ``finishes`` (tries) and
        ``finish_time``.
    """
    _check_master(master, n_blocks)
    loop = _Loop(formulation, options, oracle, n_blocks=n_blocks, kappa=kappa, master=master,
                 prune_after=prune_after, master_solver=master_solver, finish=finish,
                 exact_master=exact_master, dual_map=dual_map)
    status, message = loop.run()
    return loop.result(name, status, message)


class _Loop:
    """One run of :func:`run_cutting_plane` (its parameters), set up as it starts: the
    recorder, the working set, the best point and bound (:class:`_Best`), what the run
    knows beyond them (:class:`_Bounds`), and the state between iterations: the master's
    last point ``w`` and its slacks ``xi``, the iteration ``k``, the several-block
    master's sharpening, the gap below which the finish is tried next, the seconds of the
    iteration (``step``, with its largest violation) and in all (``totals``)."""

    def __init__(self, formulation: Any, options: SolverOptions,
                 oracle: Callable[[np.ndarray], QueryCuts], *, n_blocks: int, kappa: float,
                 master: str, prune_after: int | None, master_solver: str,
                 finish: Finish | None, exact_master: bool,
                 dual_map: Callable[[np.ndarray, list[Support]], np.ndarray] | None) -> None:
        self.formulation, self.options, self.oracle = formulation, options, oracle
        self.n_blocks, self.kappa, self.master = n_blocks, kappa, master
        self.prune_after, self.master_solver = prune_after, master_solver
        self.dual_map = dual_map
        self.rec = TraceRecorder(formulation, options)
        self.threaded = _abandonable(formulation, options)
        self.working = working = _working_set(formulation.data.n_features, master, kappa)
        self.w = np.zeros(formulation.data.n_features)
        self.best = _Best(w=self.w, primal=math.inf)
        self.bounds = bounds = _Bounds(n_blocks)
        if exact_master:
            finish = master_finish(working, n_blocks, kappa, oracle,
                                   lambda: bounds.cut_error_max)
        self.finish = finish
        self.xi = np.zeros(n_blocks)
        self.totals = {"finishes": 0, "master_time": 0.0, "oracle_time": 0.0,
                       "finish_time": 0.0}
        self.step = {"master_time": 0.0, "oracle_time": 0.0, "violation": math.nan}
        self.sharpen, self.next_finish, self.k = SHARPEN, math.inf, 0

    def run(self) -> tuple[Status | None, str | None]:
        """Iterate (module docstring) until the run stops: its status and message (None for
        the recorder's own, when a row of the trace stopped it)."""
        while True:
            violated = self._separate()
            if violated is None:  # the budget ran out during the call: a last row, at this time
                self.row(self.step)
                return Status.TIME_BUDGET, _oracle_overran(self.options.time_budget)
            if not self.row(self.step):
                return None, None
            if not self._try_finish(violated):
                return None, None
            if violated.size == 0 and not self._solve_closer():  # the master is exact at w
                return _no_cut_left(self.rec.tol_met, self.best.primal - self.best.dual)
            error = self._master()
            if error is not None:  # the bound so far stands; say why the run stopped
                return Status.NUMERICAL, f"stopped: {error}"
            self.k += 1

    def row(self, extra: dict[str, float]) -> bool:
        """A record of the best point and bound (False: the recorder stops the run)."""
        best = self.best
        return self.rec.record(self.k, w=best.w, values=(best.primal, best.dual),
                               **best.certificate(),
                               extra={"cuts": self.working.n_cuts, **extra})

    def _separate(self) -> np.ndarray | None:
        """The oracle at the master's last point, its answer taken in (:func:`_take_cuts`)
        and timed: the violated blocks, or None when the time budget ran out during the
        call."""
        started = time.perf_counter()
        w = self.w
        cuts = (within_budget(self.oracle, w, self.rec.seconds_left())
                if self.threaded and self.k else self.oracle(w))
        if cuts is None:
            return None
        violated, self.step["violation"] = _take_cuts(cuts, w, self.xi, self.kappa,
                                                      self.best, self.working, self.bounds)
        self.step["oracle_time"] = time.perf_counter() - started
        self.totals["oracle_time"] += self.step["oracle_time"]
        return violated

    def _try_finish(self, violated: np.ndarray) -> bool:
        """The exact finish (:func:`_finish`), when there is one and the tolerance is met,
        tried again once the gap has fallen below the last try's by
        :data:`FINISH_GAP_FACTOR` and a last time when nothing is ``violated``; its row
        recorded. False: the recorder stops the run."""
        best = self.best
        if not (self.finish is not None and self.rec.tol_met
                and (best.primal - best.dual <= self.next_finish or violated.size == 0)):
            return True
        self.next_finish = (best.primal - best.dual) / FINISH_GAP_FACTOR
        elapsed = _finish(best, self.finish, self.formulation, self.working,
                          self.dual_map is not None, self.totals)
        return self.row({"finish_time": elapsed})

    def _solve_closer(self) -> bool:
        """With nothing violated: True when the hand-written several-block master is to be
        solved closer (an inexact point; nothing added), False when the master is exact at
        w (P(w) is its value)."""
        if self.master == "blocks" and self.sharpen > SHARPEN_FLOOR:
            self.sharpen *= SHARPEN_FACTOR
            return True
        return False

    def _master(self) -> SolverError | None:
        """The restricted master solved (:func:`solve_master`), taken in
        (:func:`_take_master`) and timed; the error when every master failed."""
        started = time.perf_counter()
        best, rec = self.best, self.rec
        # the hand-written several-block master to a gap well below the outer one: an
        # inexact master only slows the bound, which any feasible lambda certifies
        try:
            self.w, lam = solve_master(self.working, self.n_blocks, self.kappa, self.master,
                                       tol=self.sharpen * max(best.relative_gap(), rec.tol),
                                       solver_name=self.master_solver,
                                       out_of_time=rec.out_of_time)
        except SolverError as error:
            return error
        self.xi = _take_master(self.working, self.w, lam, self.kappa, best, self.bounds,
                               self.dual_map is not None, self.prune_after)
        self.step["master_time"] = time.perf_counter() - started
        self.totals["master_time"] += self.step["master_time"]
        return None

    def result(self, name: str, status: Status | None, message: str | None) -> Run:
        """The run (:func:`run_cutting_plane`'s Returns), ``alpha`` the dual map's of the
        best bound's multipliers."""
        best, dual_map, working = self.best, self.dual_map, self.working
        alpha = None if dual_map is None else dual_map(*(
            (best.lam, best.supports) if best.lam is not None else (np.zeros(0), [])))
        return self.rec.result(best.w, alpha, self.k, name, status=status, message=message,
                               cuts=working.snapshot(), n_cuts=working.n_cuts,
                               cuts_added=self.bounds.added, **self.totals)


def within_budget(oracle: Callable[[np.ndarray], QueryCuts], w: np.ndarray,
                  seconds: float | None) -> QueryCuts | None:
    """``oracle(w)``, or None when it has not returned within ``seconds`` (None: no limit).

    A separation oracle can take longer than a whole time budget (DORM's assignment on a
    query of thousands of documents): with a budget it runs in a worker thread
    (SciPy's assignment and NumPy release the GIL) and the run stops when the budget
    does; the abandoned call finishes in the background (a daemon thread, which does not
    keep the process alive).
    """
    if seconds is None:
        return oracle(w)
    result: list[QueryCuts] = []
    failure: list[BaseException] = []

    def call() -> None:
        try:
            result.append(oracle(w))
        except BaseException as error:  # re-raised in the caller's thread
            failure.append(error)

    worker = threading.Thread(target=call, name="cvxrank-oracle", daemon=True)
    worker.start()
    worker.join(seconds)
    if failure:
        raise failure[0]
    return result[0] if result else None


def _polish(best: _Best, finish: Finish,
            strong_convexity: float) -> tuple[float, np.ndarray | None]:
    """Run an exact finish from the best point and its certified radius; keep its point and
    bound where better (a finish that fails keeps neither); return its seconds and the
    multipliers of its bound when it raised the bound (None otherwise)."""
    started = time.perf_counter()
    gap = best.primal - best.dual if best.gap is None else best.gap[0]
    radius = certified_radius(gap, strong_convexity, best.certificate()["gap_error"])
    try:
        polished = finish(best.w, radius)
    except SolverError:  # a finish that does not terminate (ill-conditioned cuts) adds nothing
        polished = None
    raised = None
    if polished is not None:
        primal, dual = polished.primal < best.primal, polished.dual > best.dual
        if primal:
            best.w, best.primal, best.primal_error = polished.w, polished.primal, \
                polished.primal_error
        if dual:
            best.dual, best.dual_error, raised = polished.dual, polished.dual_error, \
                polished.lam
        if primal or dual:  # the finish's own gap holds while both sides are its own
            best.gap = ((polished.gap, polished.gap_error)
                        if primal and dual and polished.gap is not None else None)
    return time.perf_counter() - started, raised


def master_finish(working: WorkingSet, n_blocks: int, kappa: float,
                  oracle: Callable[[np.ndarray], QueryCuts],
                  cut_error_max: Callable[[], float]) -> Finish:
    r"""The n-slack's exact finish: the restricted master solved exactly.

    An interior-point master (CVXPY) stops at a relative accuracy, and the cutting plane's
    gap with it; certified measures need a smaller model radius. ``finish(w, radius)``
    solves the current restricted master by
    :func:`~cvxrank.solvers.simplex_product_qp.simplex_product_qp` to a zero gap (its
    primal active set ends at a support that satisfies the KKT conditions, an exact
    optimum up to rounding) and returns the master's point :math:`G^\top\lambda` with its
    objective (the oracle's losses) and the bound :math:`D(\lambda)` (module docstring):
    equal to the objective to rounding once the working set holds the optimum's pieces
    (the gap summed by block, :func:`gap_by_block`, without the cancellation of two large
    sides). Its rounding bounds add the cuts' own (``cut_error_max()``, the largest so far,
    :func:`cut_error`) to the gap's terms'.
    """

    def finish(w: np.ndarray, radius: float) -> Polished | None:
        if not len(working):
            return None
        _, lam = solve_master_blocks(working, n_blocks, kappa, tol=0.0)
        lam = _refine_support(working, lam, n_blocks, kappa)
        w_new = working.w(lam)
        cuts = oracle(w_new)
        loss = cuts.loss
        primal = float(0.5 * (w_new @ w_new) + kappa * loss.sum())
        error = primal_error(cuts, w_new, kappa)
        gap = gap_by_block(working, lam, w_new, loss, kappa)
        # the gap's terms: losses (their error, weighted by kappa per block) and the cuts'
        # values at w (their offsets' and products' rounding)
        values = np.abs(working.offset) + np.abs(working.gradient) @ np.abs(w_new)
        cuts_error = kappa * n_blocks * cut_error_max()
        gap_error = (error + cuts_error
                     + rounding.value_error(working.n_cuts + w_new.size,
                                            gap + kappa * float(values.max(initial=0))
                                            * n_blocks))
        return Polished(w_new, primal, primal - gap, error, error + cuts_error
                        + dual_error(primal - gap, w_new, working.n_cuts, kappa, n_blocks,
                                     0.0), lam=lam, gap=gap, gap_error=gap_error)

    return finish


def _refine_support(working: WorkingSet, lam: np.ndarray, n_blocks: int,
                    kappa: float) -> np.ndarray:
    r"""The master's multipliers made exact on their support, by a few active-set steps.

    With F the cuts of positive multiplier and T the blocks whose multipliers sum to
    :math:`\kappa` (only there may :math:`\xi_i > 0`), the master's KKT conditions are
    linear,

    .. math::

        w = G_F^\top \lambda_F, \qquad g_t^\top w + \xi_{i(t)} = c_t \;\; (t \in F), \qquad
        \sum_{t \in F \cap W_i} \lambda_t = \kappa \;\; (i \in T),

    with :math:`\xi_i = 0` elsewhere: least squares gives w (unique), then nonnegative
    multipliers that reproduce w and the sums (:func:`scipy.optimize.nnls`, Lawson-Hanson;
    the support may be degenerate). When there are none, the cuts NNLS leaves at 0 leave F
    (they are not tight at the optimum); cuts the new w violates join it. The cuts of F are
    then tight to rounding (sums that rounding puts above :math:`\kappa` are scaled back to
    it); the given multipliers when no support is found in :data:`REFINE_STEPS` steps. A
    block is saturated when its sum is within :data:`~cvxrank.tolerances.MASTER_SATURATION`
    of :math:`\kappa`.
    """
    from scipy.optimize import nnls  # imported here: fits without the finish skip its import

    F = np.flatnonzero(lam > 0)
    sums = np.bincount(working.block[F], weights=lam[F], minlength=n_blocks)
    saturated = sums >= kappa * (1.0 - MASTER_SATURATION)
    for _ in range(REFINE_STEPS):
        if F.size == 0:
            return lam
        block = working.block[F]
        T = np.flatnonzero(saturated & (np.bincount(block, minlength=n_blocks) > 0))
        G = working.gradient[F]
        d, nF, nT = G.shape[1], F.size, T.size
        E = (block[None, :] == T[:, None]).astype(np.float64)
        kkt = np.zeros((d + nF + nT, d + nF + nT))
        kkt[:d, :d] = np.eye(d)
        kkt[:d, d:d + nF] = -G.T
        kkt[d:d + nF, :d] = G
        kkt[d:d + nF, d + nF:] = E.T
        kkt[d + nF:, d:d + nF] = E
        rhs = np.r_[np.zeros(d), working.offset[F], np.full(nT, kappa)]
        solution = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
        w = solution[:d]
        xi = np.zeros(n_blocks)
        xi[T] = solution[d + nF:]
        violated = np.flatnonzero(working.offset - working.gradient @ w - xi[working.block]
                                  > RESIDUAL * (1.0 + np.abs(working.offset)))
        target = np.r_[w, np.full(nT, kappa)]
        nonnegative, residual = nnls(np.vstack([G.T, E]), target)
        if violated.size == 0 and residual <= RESIDUAL * float(np.linalg.norm(target)):
            refined = np.zeros_like(lam)
            refined[F] = nonnegative
            totals = np.bincount(working.block, weights=refined, minlength=n_blocks)
            return refined * (kappa / np.maximum(totals, kappa))[working.block]
        keep = F[nonnegative > 0]
        if keep.size == F.size and violated.size == 0:
            return lam
        F = np.union1d(keep, violated)
    return lam


def gap_by_block(working: WorkingSet, lam: np.ndarray, w: np.ndarray, loss: np.ndarray,
                 kappa: float) -> float:
    r""":math:`P(w) - D(\lambda)` at :math:`w = G^\top\lambda`, summed by block from small
    nonnegative terms.

    With :math:`s_t = c_t - g_t^\top w` (each cut's value at w, at most its block's loss
    :math:`L_i(w)`) and :math:`\|w\|^2 = \sum_t \lambda_t g_t^\top w`,

    .. math::

        P(w) - D(\lambda) = \sum_i \Big[\Big(\kappa - \sum_{t \in W_i} \lambda_t\Big) L_i(w)
        + \sum_{t \in W_i} \lambda_t \big(L_i(w) - s_t\big)\Big],

    every term nonnegative for a feasible :math:`\lambda`: at an optimum they vanish one by
    one (a cut the oracle returns again gives :math:`L_i(w) - s_t = 0` exactly), where
    :math:`P(w)` and :math:`D(\lambda)` computed apart would leave the rounding of each, a
    gap of some ulps of :math:`p^*` and a model radius of its square root. Terms that
    rounding makes negative count as 0 (the sum only grows).
    """
    block = working.block
    values = working.offset - working.gradient @ w
    free = kappa - np.bincount(block, weights=lam, minlength=loss.size)
    terms = np.maximum(free * loss, 0.0).sum() + np.maximum(lam * (loss[block] - values),
                                                             0.0).sum()
    return float(terms)


def _no_cut_left(tol_met: bool, gap: float) -> tuple[Status, str]:
    """The status and message of a run whose oracle found nothing violated."""
    if tol_met:
        return Status.CONVERGED, ("converged: tolerance met; no violated cut left to tighten "
                                  "the certificate further")
    return Status.NUMERICAL, (f"stopped: no violated cut left, but the certified gap "
                              f"{gap:.3g} is above the tolerance")


# ------------------------------------------------------------------------------ n-slack
def pair_weight_dual(formulation: Any) -> Callable[[np.ndarray, list[Support]], np.ndarray]:
    r"""The dual map of pieces that are pair weightings (``pair_weighted_cuts``, RankMM):
    :math:`\beta = \sum_t \lambda_t \pi^t`, then the formulation's printed dual point."""

    def dual_point(lam: np.ndarray, supports: list[Support]) -> np.ndarray:
        beta = np.zeros(formulation.n_pairs)
        for lam_t, support in zip(lam, supports, strict=True):
            if support is not None:
                pairs, weights = support
                beta[pairs] += lam_t * weights
        return formulation.dual_from_pair_weights(beta)

    return dual_point


@solver("cutting-plane", needs=("separation_oracle",), max_iter=1000)
def solve_cutting_plane(
    formulation: Any,
    options: SolverOptions,
    *,
    master_solver: str = "CLARABEL",
    prune_after: int = 20,
    master: str = "cvxpy",
    finish: bool = True,
) -> Run:
    r"""n-slack cutting planes on a query-level polyhedral loss, stopping on a certified gap.

    The core of the module docstring with a block per query with pairs, :math:`\kappa =
    C/m` and the formulation's separation oracle (most violated constraint per query). One
    iteration costs one oracle call (:math:`O(p + nd)` for RankMM) and a master QP in
    :math:`d + B` variables and :math:`|W| + B` constraints, independent of the number of
    pairs.

    Parameters
    ----------
    formulation : Formulation
        With the ``separation_oracle`` capability (RankMM's three losses, DORM, SVM MAP:
        ``C``, ``m``, ``queries_with_pairs``, ``query_losses``); with ``pair_weighted_cuts``
        (RankMM) the run also returns the dual point.
    options : SolverOptions
        ``tol``: stop when :math:`(P(w) - D(\lambda)) / P(w) \le` ``tol``; ``max_iter``:
        master solves at most; ``time_budget``, ``callback``, ``until`` as
        :class:`~cvxrank.core.trace.SolverOptions` says (the method is deterministic).
    master_solver : str
        CVXPY solver of the master QP (``master="cvxpy"``).
    master : {"cvxpy", "blocks", "interior"}
        The master by CVXPY (:func:`solve_master_cvxpy`) or by hand
        (:func:`solve_master_blocks`, from the interior point's start at every iteration;
        ``"interior"``, that interior point alone to 1e-8, whose iterations cost O(md^2)
        whatever the number of queries).
    prune_after : int
        Drop a piece after this many consecutive master solves with a zero multiplier.
    finish : bool
        Try the exact finish (:func:`master_finish`) once the tolerance is met while an
        ``until`` rule (certified measures, a model radius) still asks for more.

    Returns
    -------
    Run
        As :func:`run_cutting_plane` returns it: ``w`` the best primal point seen,
        ``alpha`` the printed dual point of the best bound (None without
        ``pair_weighted_cuts``).

    References
    ----------
    .. [1] Q. V. Le and A. J. Smola, Alg. 2; T. Joachims, KDD 2006.
    """
    if master not in ("cvxpy", "blocks", "interior"):
        raise ValueError(f"master must be 'cvxpy', 'blocks' or 'interior', got {master!r}")
    if prune_after < 1:
        raise ValueError(f"prune_after must be >= 1, got {prune_after}")
    f = formulation
    dual_map = pair_weight_dual(f) if "pair_weighted_cuts" in f.capabilities else None
    return run_cutting_plane(f, options, f.separation_oracle,
                             n_blocks=int(f.queries_with_pairs.size), kappa=float(f.C) / f.m,
                             master=master, name="cutting-plane", prune_after=prune_after,
                             master_solver=master_solver, exact_master=finish,
                             dual_map=dual_map)
