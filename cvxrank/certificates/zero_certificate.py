r"""Is w = 0 the *exact* optimum? A certificate that rounding cannot undo.

The max-margin problems with a separation oracle (RankMM, DORM, SVM MAP) minimize
:math:`P(w) = \tfrac12\|w\|^2 + \kappa \sum_b L_b(w)`, every :math:`L_b` the maximum of
affine pieces :math:`c - g^\top w` and of 0 (:class:`~cvxrank.numerics.cuts.QueryCuts`). The
regularizer's gradient vanishes at 0, so **w = 0 is optimal iff** :math:`0 \in S = \sum_b
\partial L_b(0)`, :math:`\partial L_b(0) = \mathrm{conv}\{-g : \text{pieces of block b of
the largest offset}\}` (the zero piece among them where no offset is positive), for every
:math:`\kappa > 0` alike (Rockafellar 1970, Thm. 23.8 and 25.6).

A duality gap, however small, bounds :math:`\|w^*\|` but never proves :math:`w^* = 0`, and
that is what the measures of a zero model need: at w = 0 every score ties, any
:math:`w' \ne 0` nearby breaks the ties, so the tie rule's measures are the optimum's only
when :math:`w^* = 0` exactly (then the model radius is 0 and every measure is certified,
:mod:`cvxrank.certificates.measure_certificate`). :func:`certify_zero` proves :math:`0 \in
\operatorname{int} S` with a margin:

1. **Vertices.** A piece of block b is a point of :math:`\partial L_b(0)` when its offset is
   the block's largest at 0 (within :data:`OFFSET_ULPS` units in the last place: the
   losses' distinct values lie far further apart). The pool starts with the oracle at 0,
   the pieces a solver already holds (a cutting plane's working set,
   ``Run.info["cuts"]``) and the oracle at :math:`w = \varepsilon d` for
   :math:`d = \pm e_j` when no pieces are given: for :math:`\varepsilon` small, the oracle's
   maximizer of :math:`c - g^\top w` is a largest-offset piece that maximizes
   :math:`-g^\top d` among them, the vertex of :math:`\partial L_b(0)` that d exposes
   (checked; :math:`\varepsilon` shrinks until it holds).
2. **Interior**, an LP over the pool :math:`V_b` of every block: maximize t subject to
   :math:`\sum_k \lambda_k v_k = 0`, :math:`\sum_{k \in b} \lambda_k = 1` per block,
   :math:`\lambda \ge t`. When 0 is not in the pool's sum of hulls (or only on its
   boundary), the minimum-norm point p of that sum (a QP) names the next direction: the
   oracle at :math:`\varepsilon(-p)` adds the vertices that -p exposes; if they cannot lower
   :math:`p^\top v` below :math:`\|p\|^2`, p separates 0 from S and w = 0 is **not** optimal
   (column generation, Wolfe's minimum-norm point over a Minkowski sum).
3. **Margin**, in numpy, trusting no solver: with :math:`e = \sum_k \lambda_k v_k` (the LP's
   residual) and :math:`M = [V; E]` (the vertices' coordinates over the block indicators),
   any u with :math:`\|u - e\| \le \min_k\lambda_k\, \sigma_{\min}(M)` is
   :math:`\sum_k \lambda'_k v_k` with :math:`\lambda' = \lambda + M^+ [u - e; 0] \ge 0`, so
   :math:`S \supseteq B(0, \rho)`, :math:`\rho = \min\lambda\, \sigma_{\min}(M) - \|e\|`.
   Proven when :math:`\rho` exceeds :data:`MARGIN` times the largest vertex norm, far above
   the rounding in the vertices and in the SVD.

**Coordinates.** Every loss here reads w only through score differences within a query, so
a feature column constant within every query (exactly) moves all of a query's scores alike:
its pieces' coordinate is 0, and so is the optimum's weight on it. The certificate works in
the other coordinates (:meth:`~cvxrank.data.ranking_data.RankingData.varying_columns`; sharded
data reduce their shards' columns).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np

from cvxrank.certificates.reference import SOLVER_OPTIONS
from cvxrank.utils.lazy_sparse import sp

#: Offsets within this many units in the last place of the block's largest count as largest.
OFFSET_ULPS = 4
#: Proven when the ball's radius rho exceeds this fraction of the largest vertex norm.
MARGIN = 1e-9
#: Column-generation rounds (oracle calls) after the starting pool.
MAX_ROUNDS = 60
#: Starting step of the oracle points w = eps d, relative to offsets over gradient norms.
EPS_START = 1e-7
#: Shrink eps by this factor until the oracle returns largest-offset pieces (a few times).
EPS_SHRINK = 1e-3
EPS_TRIES = 4
#: The CVXPY solver of the LP and the QP.
SOLVER = "CLARABEL"


@dataclass(frozen=True)
class ZeroCertificate:
    """The outcome of :func:`certify_zero`.

    Attributes
    ----------
    proven : bool
        :math:`0 \\in \\operatorname{int} S`: w = 0 is the exact optimum at every C > 0.
    not_optimal : bool
        A direction of descent from 0 was found: w = 0 is not optimal at any C > 0.
    ball_radius : float
        :math:`\\rho` (NaN when no interior point was found).
    scale : float
        The largest vertex norm (:math:`\\rho` is compared with :data:`MARGIN` times it).
    vertices : int
        The pool's size at the end.
    oracle_calls : int
    reason : str
        One line: what was shown, or why nothing was.
    """

    proven: bool
    not_optimal: bool
    ball_radius: float
    scale: float
    vertices: int
    oracle_calls: int
    reason: str


class _Pool:
    """Vertices of every block's subdifferential at 0 (varying coordinates)."""

    def __init__(self, formulation: Any, columns: np.ndarray) -> None:
        self.f = formulation
        self.columns = columns
        self.d = int(formulation.data.n_features)
        at_zero = formulation.separation_oracle(np.zeros(self.d))
        offset = np.asarray(at_zero.offset, dtype=np.float64)
        # L_b = max(0, pieces): where no piece is positive at 0, the zero piece is active
        self.largest = np.maximum(offset, 0.0)
        self.n_blocks = int(offset.size)
        self.slack = OFFSET_ULPS * np.spacing(np.abs(self.largest))
        self.vertices: list[np.ndarray] = []
        self.blocks: list[np.ndarray] = []
        self._seen: set[bytes] = set()
        self.calls = 1
        norms = np.linalg.norm(np.asarray(at_zero.gradient), axis=1)
        self.eps = EPS_START * float(np.max(np.abs(self.largest))) / max(float(norms.max()),
                                                                         1e-300)
        self.add(at_zero.offset, at_zero.gradient, np.arange(self.n_blocks))
        zero_piece = np.flatnonzero(offset <= 0.0)
        self.add(np.zeros(zero_piece.size), np.zeros((zero_piece.size, self.d)), zero_piece)

    def add(self, offset: np.ndarray, gradient: np.ndarray, block: np.ndarray) -> int:
        """Keep the largest-offset pieces not yet held; return how many were new."""
        offset = np.asarray(offset, dtype=np.float64)
        block = np.asarray(block, dtype=np.int64)
        ok = (block >= 0) & (block < self.n_blocks)
        ok[ok] &= offset[ok] >= self.largest[block[ok]] - self.slack[block[ok]]
        v = -np.asarray(gradient, dtype=np.float64)[ok][:, self.columns]
        new = 0
        for row, b in zip(v, block[ok], strict=True):
            key = b.tobytes() + row.tobytes()
            if key not in self._seen:
                self._seen.add(key)
                self.vertices.append(row)
                self.blocks.append(b)
                new += 1
        return new

    def expose(self, direction: np.ndarray) -> int | None:
        """Add the vertices that ``direction`` (varying coordinates) exposes: the oracle at
        eps * direction, eps shrunk until every block returns a largest-offset piece;
        return how many were new, None when eps could not be made small enough."""
        w = np.zeros(self.d)
        unit = direction / np.linalg.norm(direction)
        for _ in range(EPS_TRIES):
            w[self.columns] = self.eps * unit
            cuts = self.f.separation_oracle(w)
            self.calls += 1
            offset = np.asarray(cuts.offset, dtype=np.float64)
            positive = self.largest > 0  # elsewhere the zero piece may win: no check
            if np.all(offset[positive] >= (self.largest - self.slack)[positive]):
                return self.add(offset, cuts.gradient, np.arange(self.n_blocks))
            self.eps *= EPS_SHRINK
        return None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.vertices), np.asarray(self.blocks)


def _indicator(block: np.ndarray, n_blocks: int) -> sp.csr_matrix:
    """The blocks x vertices matrix of ones: row i sums the multipliers of block i."""
    return sp.csr_matrix((np.ones(block.size), (block, np.arange(block.size))),
                         shape=(n_blocks, block.size))


def _interior(V: np.ndarray, block: np.ndarray, n_blocks: int) -> np.ndarray | None:
    """The LP of step 2: lambda with the largest smallest entry (None: infeasible or t <= 0)."""
    lam, t = cp.Variable(V.shape[0]), cp.Variable()
    E = _indicator(block, n_blocks)
    problem = cp.Problem(cp.Maximize(t), [V.T @ lam == 0, E @ lam == 1, lam >= t, t <= 1])
    try:
        _solve(problem)
    except cp.SolverError:
        return None
    if t.value is None or not float(t.value) > 0:  # step 3 checks lambda, whatever its accuracy
        return None
    return np.asarray(lam.value, dtype=np.float64)


def _min_norm(V: np.ndarray, block: np.ndarray, n_blocks: int) -> np.ndarray:
    """The minimum-norm point of the sum over blocks of the pool's hulls (a QP; the zero
    vector, which concludes nothing, when the solver fails)."""
    lam = cp.Variable(V.shape[0], nonneg=True)
    E = _indicator(block, n_blocks)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(V.T @ lam)), [E @ lam == 1])
    try:
        _solve(problem)  # any p will do: the oracle's exact support at -p decides
    except cp.SolverError:
        return np.zeros(V.shape[1])
    if lam.value is None:
        return np.zeros(V.shape[1])
    return V.T @ np.clip(np.asarray(lam.value, dtype=np.float64), 0.0, None)


def _solve(problem: cp.Problem) -> None:
    """Solve with :data:`SOLVER`; an inaccurate solution is used as it is (what it yields
    is checked in numpy), so CVXPY's warning about it is not shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        problem.solve(solver=SOLVER, **SOLVER_OPTIONS.get(SOLVER, {}))


def _margin(V: np.ndarray, block: np.ndarray, n_blocks: int,
            lam: np.ndarray) -> float:
    """Step 3's radius rho, in numpy."""
    lam = np.clip(lam, 0.0, None)
    E = _indicator(block, n_blocks).toarray()
    lam = lam / (E @ lam)[block]  # exactly one per block
    residual = float(np.linalg.norm(V.T @ lam))
    M = np.vstack([V.T, E])
    if M.shape[0] > M.shape[1]:
        return -math.inf
    sigma = np.linalg.svd(M, compute_uv=False)
    return float(lam.min()) * float(sigma[-1]) - residual


def certify_zero(formulation: Any, *, cuts: Any = None,
                 max_rounds: int = MAX_ROUNDS) -> ZeroCertificate:
    """Prove (or refute) that w = 0 is the exact optimum (module docstring).

    Parameters
    ----------
    formulation : Objective
        With the ``separation_oracle`` capability and ``data``.
    cuts : CutSet or None
        Pieces a solver already holds (``offset``, ``gradient``, ``block``, e.g. a
        cutting plane's ``Run.info["cuts"]``); without them the pool starts from the
        oracle at :math:`\\pm\\varepsilon e_j`.
    max_rounds : int
        Column-generation rounds at most.

    Returns
    -------
    ZeroCertificate
    """
    f = formulation
    columns = f.data.varying_columns()
    if columns.size == 0:
        return ZeroCertificate(True, False, math.inf, math.nan, 0, 0, "w = 0 is the exact "
                               "optimum at every C: every feature is constant within every "
                               "query, so the loss does not depend on w")
    pool = _Pool(f, columns)
    if cuts is not None:
        pool.add(cuts.offset, cuts.gradient, cuts.block)
    else:
        for j in range(columns.size):
            for sign in (1.0, -1.0):
                pool.expose(sign * np.eye(columns.size)[j])
    for _ in range(max_rounds + 1):
        V, block = pool.arrays()
        lam = _interior(V, block, pool.n_blocks)
        if lam is not None:
            rho = _margin(V, block, pool.n_blocks, lam)
            if rho > MARGIN * float(np.linalg.norm(V, axis=1).max()):
                return _outcome(pool, True, False, rho, "w = 0 is the exact optimum at every "
                                f"C: 0 is inside the subdifferential at 0 with margin "
                                f"{rho:.3g} ({pool.calls} oracle calls, {len(V)} vertices)")
            thin = _least_spread(V)  # inside, but too thin to tell: widen the pool there
            widened = [pool.expose(thin), pool.expose(-thin)]
            if not any(widened):  # nothing new (or no exact support): stuck
                break
            continue
        p = _min_norm(V, block, pool.n_blocks)
        if not np.linalg.norm(p) > 0:
            break
        new = pool.expose(-p)  # each block's vertex of least p . v over its subdifferential
        if new is None:  # no exact support at -p: nothing to conclude from p
            break
        V, block = pool.arrays()
        lowest = float(_block_min(V, block, p, pool.n_blocks).sum())  # min over S of p . s
        if lowest > MARGIN * float(np.linalg.norm(p)) * float(np.linalg.norm(V, axis=1).max()):
            return _outcome(pool, False, True, math.nan, "w = 0 is not optimal: a direction "
                            f"of descent at 0 (every subgradient s has p . s >= {lowest:.3g} "
                            "> 0), at every C")
        if new == 0:
            break
    return _outcome(pool, False, False, math.nan, "not proven: 0 was not shown to be inside "
                    f"the subdifferential at 0 with margin ({pool.calls} oracle calls)")


def _block_min(V: np.ndarray, block: np.ndarray, p: np.ndarray, n_blocks: int) -> np.ndarray:
    """Per block, the smallest p . v over the pool (the support function of S at -p)."""
    out = np.full(n_blocks, np.inf)
    np.minimum.at(out, block, V @ p)
    return out


def _least_spread(V: np.ndarray) -> np.ndarray:
    """The direction in which the pool's vertices spread least (last right singular
    vector of the centered vertices)."""
    centered = V - V.mean(axis=0)
    return np.linalg.svd(centered, full_matrices=False)[2][-1]


def _outcome(pool: _Pool, proven: bool, not_optimal: bool, rho: float,
             reason: str) -> ZeroCertificate:
    V, _ = pool.arrays()
    scale = float(np.linalg.norm(V, axis=1).max()) if len(V) else math.nan
    return ZeroCertificate(proven, not_optimal, rho, scale, len(V), pool.calls, reason)
