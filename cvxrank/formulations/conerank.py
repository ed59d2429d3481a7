r"""ConeRank (Tran & Pham): ranking as learning a polyhedral cone, and its two convex blocks.

An ordered pair of documents (l, m) of one query, :math:`r_l > r_m`, gives the difference
:math:`z = x_l - x_m`, normalized by (5), :math:`z \leftarrow \rho z / (\alpha + \|z\|_2)`,
and weighted by the relevance difference :math:`\phi = r_l - r_m` (7). A cone is the conic
hull of the K columns of a basis :math:`U \in \mathbb{R}^{N \times K}`; a pair's loss is
:math:`\phi \|z - U w\|_2^2` at its coefficients :math:`w`, averaged per query (3) and over
the queries (4). The approximate formulation (18) is

.. math::

    \min_{U, \{w_j\}} \; \sum_j a_j \|z_j - U w_j\|_2^2, \qquad
    a_j = \frac{\phi_j}{P\, n_{q(j)}},
    \quad \text{s.t. } \|u_k\|_2 \le c,\; w_j \ge 0,\; \|w_j\|_1 = 1,

and (9) replaces :math:`\|w_j\|_1 = 1` by the band :math:`\lambda_l \le \|w_j\|_1 \le
\lambda_u` (8) (and the ball by its sphere; this module keeps the ball, (18)'s convex
relaxation, for both). P is the number of queries that have pairs and :math:`n_q` the number
of pairs of query q (a query without pairs has no loss (3) and is left out of (4); P only
scales the objective, so it does not move the minimizer).

The joint problem is not convex; each block is (Sect. 4):

* :class:`FoldingIn`: every pair's coefficients for a fixed basis U, separable over pairs;
* :class:`BasisUpdate`: the basis for fixed coefficients, separable over columns of the
  constraint but coupled through :math:`G = \sum_j a_j w_j w_j^\top`.

Both are :class:`~cvxrank.formulations.base.Formulation` objects whose fixed block is data
(part of :meth:`~cvxrank.formulations.base.Formulation.cache_key`, so certified references
are cached by its content), with their CVXPY primal and dual. Their duals have one variable
per pair and feature, :math:`y_j` (the residual's multiplier); at :math:`y_j = 2 a_j (z_j -
U w_j)` the dual value is the primal value minus the Frank-Wolfe gap of the block, so any
primal point certifies a bound (``primal_certificate``, :meth:`FoldingIn.dual_value_at`).

:class:`ConeRank` is the joint problem, whose point is the stacked ``(U, W)``; it has no
CVXPY problem and is judged by monotone descent (registry ``check="alternation"``).

References
----------
.. [1] T. T. Tran and D.-S. Pham, "ConeRANK: Ranking as Learning Generalized Inequalities",
   eqs. (1)-(9), (18); Sect. 4, Alg. 1.
"""

from __future__ import annotations

import hashlib
from abc import abstractmethod
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank.data.pairs import DEFAULT_MAX_PAIRS, build_pairs
from cvxrank.data.ranking_data import RankingData
from cvxrank.data.scales import check_magnitude
from cvxrank.formulations.base import Formulation, Objective
from cvxrank.methods import K_PARAM, SCORING_PARAM
from cvxrank.numerics.sets import L2Ball, SumBand
from cvxrank.utils.lazy_sparse import sp

if TYPE_CHECKING:
    import cvxpy as cp

#: The paper's number of basis vectors (Sect. 6.1, from Fig. 3).
DEFAULT_K = 10


def _digest(*arrays: np.ndarray) -> str:
    """A short hash of arrays' contents and shapes."""
    h = hashlib.sha1()
    for a in arrays:
        a = np.ascontiguousarray(a, dtype=np.float64)
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def normalize_differences(D: np.ndarray, alpha: float, rho: float) -> np.ndarray:
    r"""Tran & Pham's normalization (5): :math:`z \leftarrow \rho z / (\alpha + \|z\|_2)`.

    Keeps the direction, bounds the norm by :math:`\rho` (6) and shrinks differences much
    shorter than :math:`\alpha` (noise).

    Parameters
    ----------
    D : ndarray of shape (p, N)
        One difference per row.
    alpha, rho : float
        :math:`\alpha > 0`, :math:`\rho > 0`.
    """
    if not (alpha > 0 and rho > 0 and np.isfinite(alpha) and np.isfinite(rho)):
        raise ValueError(f"alpha and rho must be finite and > 0, got {alpha} and {rho}")
    norms = np.linalg.norm(D, axis=1)
    return D * (rho / (alpha + norms))[:, None]


@dataclass(frozen=True, eq=False)
class ConePairs:
    r"""The ordered pair differences of a data set, normalized and weighted for ConeRank.

    Attributes
    ----------
    Z : ndarray of shape (p, N)
        Normalized differences (5), pairs sorted by query as
        :func:`~cvxrank.data.pairs.build_pairs` sorts them.
    phi : ndarray of shape (p,)
        Relevance differences :math:`\phi_j > 0` (7).
    weight : ndarray of shape (p,)
        :math:`a_j = \phi_j / (P n_{q(j)})`, the coefficient of :math:`\|z_j - U w_j\|^2`
        in (18).
    pair_ptr : ndarray of shape (P + 1,)
        Query i (of those with pairs) owns pairs ``pair_ptr[i]:pair_ptr[i + 1]``.
    alpha, rho : float
        The normalization's constants.
    """

    Z: np.ndarray
    phi: np.ndarray
    weight: np.ndarray
    pair_ptr: np.ndarray
    alpha: float
    rho: float

    @property
    def n_pairs(self) -> int:
        """Number of ordered pairs p."""
        return int(self.Z.shape[0])

    @property
    def n_features(self) -> int:
        """Feature dimension N."""
        return int(self.Z.shape[1])

    @property
    def n_queries(self) -> int:
        """Number of queries with pairs, P."""
        return int(self.pair_ptr.size - 1)

    @cached_property
    def query(self) -> np.ndarray:
        """Index (among queries with pairs) of each pair's query."""
        return np.repeat(np.arange(self.n_queries), np.diff(self.pair_ptr))

    @cached_property
    def fingerprint(self) -> str:
        """A hash of Z and the weights (for cache keys)."""
        return _digest(self.Z, self.weight)

    @cached_property
    def constant(self) -> float:
        r""":math:`\sum_j a_j \|z_j\|^2`, the objective at U = 0."""
        return float(self.weight @ np.einsum("ij,ij->i", self.Z, self.Z))


def cone_pairs(data: RankingData, *, alpha: float = 1.0, rho: float | None = None,
               max_pairs: int = DEFAULT_MAX_PAIRS) -> ConePairs:
    r"""The ordered pairs of ``data`` as ConeRank uses them (Tran & Pham Sects. 3.2-3.3).

    Parameters
    ----------
    data : RankingData
    alpha : float
        :math:`\alpha` of (5) (the paper: 1).
    rho : float or None
        :math:`\rho` of (5); None is the paper's :math:`\sqrt N`.
    max_pairs : int
        Refuse more pairs than this (:func:`~cvxrank.data.pairs.build_pairs`); the
        differences take p x N floats.

    Raises
    ------
    ValueError
        If no query has two grades (no pairs), or alpha, rho are not finite and > 0
        (:class:`~cvxrank.errors.UsageError` for features whose squares overflow).
    """
    check_magnitude(data)  # before the differences' norms, which would overflow
    pairs = build_pairs(data, max_pairs=max_pairs)
    rho = float(np.sqrt(data.n_features)) if rho is None else float(rho)
    X = data.X
    D = X[pairs.upper] - X[pairs.lower]
    D = D.toarray() if sp.issparse(D) else np.asarray(D, dtype=np.float64)
    Z = normalize_differences(D, float(alpha), rho)
    counts = pairs.pairs_per_query[pairs.pairs_per_query > 0]
    n_q = np.repeat(counts, counts).astype(np.float64)
    phi = np.asarray(pairs.delta, dtype=np.float64)
    weight = phi / (counts.size * n_q)
    for a in (Z, phi, weight):
        a.flags.writeable = False
    return ConePairs(Z=Z, phi=phi, weight=weight,
                     pair_ptr=np.r_[0, np.cumsum(counts)].astype(np.int64),
                     alpha=float(alpha), rho=rho)


def objective(pairs: ConePairs, U: np.ndarray, W: np.ndarray) -> float:
    r"""The objective of (18) (and of (9) at given coefficients): :math:`\sum_j a_j \|z_j -
    U w_j\|^2` with ``U`` of shape (N, K) and ``W`` of shape (p, K), one row per pair.

    Evaluated as :math:`\sum_j a_j (\|z_j\|^2 - 2 w_j^\top U^\top z_j + w_j^\top U^\top U
    w_j)`, :math:`O(pNK)`.
    """
    B = pairs.Z @ U
    M = U.T @ U
    quad = np.einsum("ij,ij->i", W @ M - 2.0 * B, W)
    return float(pairs.constant + pairs.weight @ quad)


def coefficient_set(n_pairs: int, K: int, lambda_l: float = 1.0,
                    lambda_u: float = 1.0) -> SumBand:
    r"""The coefficients' feasible set, one group of K per pair: :math:`w_j \ge 0`,
    :math:`\lambda_l \le \|w_j\|_1 \le \lambda_u` ((8); (18) when both are 1), on
    ``W.ravel()`` (row-major)."""
    return SumBand(np.repeat(np.arange(n_pairs), K), lambda_l, lambda_u)


def _support(h: np.ndarray, lambda_l: float, lambda_u: float) -> np.ndarray:
    r"""Support function of the band, row by row: :math:`\max_{v \ge 0, \lambda_l \le
    1^\top v \le \lambda_u} h^\top v = \max(\lambda_u m, \lambda_l m)`, :math:`m = \max_k
    h_k` (the maximum is at a vertex :math:`\lambda e_k`)."""
    top = h.max(axis=1)
    return np.maximum(lambda_u * top, lambda_l * top)


def _check_band(lambda_l: float, lambda_u: float) -> None:
    if not (np.isfinite(lambda_l) and np.isfinite(lambda_u) and 0 < lambda_l <= lambda_u):
        raise ValueError(f"need 0 < lambda_l <= lambda_u (Tran & Pham (8)), got lambda_l = "
                         f"{lambda_l} and lambda_u = {lambda_u}")


class _ConeParameters:
    r"""The hyper-parameter check of ConeRank and its blocks: every one finite and > 0, and
    the band (8) ordered, :math:`\lambda_l \le \lambda_u`."""

    def _check_param(self, key: str, value: float) -> None:
        super()._check_param(key, value)  # type: ignore[misc]
        if not value > 0:
            raise ValueError(f"{key} must be > 0, got {value}")
        hyper = getattr(self, "_hyper", {})
        if {"lambda_l", "lambda_u"} <= set(hyper):
            band = {**self.params(), key: value}  # type: ignore[attr-defined]
            _check_band(band["lambda_l"], band["lambda_u"])


class _Block(Formulation):
    """What the two ConeRank blocks share: the pairs, the residual dual and its value."""

    gap_floor = 0.0

    def __init__(self, data: RankingData, pairs: ConePairs | None, *, K: int,
                 **hyper: float) -> None:
        self.pairs = cone_pairs(data) if pairs is None else pairs
        self.K = int(K)
        super().__init__(data, **hyper)

    @property
    def n_dual(self) -> int:
        """p x N: one multiplier per pair and feature."""
        return self.pairs.n_pairs * self.pairs.n_features

    def dual_infeasibility(self, alpha: np.ndarray) -> float:
        """0: the residual multipliers are unconstrained."""
        return 0.0

    def _residual_terms(self, Y: np.ndarray) -> float:
        r""":math:`\sum_j y_j^\top z_j - \|y_j\|^2 / (4 a_j)`."""
        p = self.pairs
        return float(np.einsum("ij,ij->", Y, p.Z)
                     - (np.einsum("ij,ij->i", Y, Y) / (4.0 * p.weight)).sum())

    def residual_dual(self, U: np.ndarray, W: np.ndarray) -> np.ndarray:
        r"""The dual point :math:`y_j = 2 a_j (z_j - U w_j)` of a primal point (flattened)."""
        p = self.pairs
        return (2.0 * p.weight[:, None] * (p.Z - W @ U.T)).ravel()

    def _matrix(self, name: str, shape: tuple[int, int]) -> cp.Variable:
        """The CVXPY matrix variable ``name`` (made on first use, then kept)."""

        def make() -> cp.Variable:
            import cvxpy as cp

            return cp.Variable(shape, name=name)

        return self._cached(f"variable:{name}", make)

    @abstractmethod
    def _point_variable(self) -> cp.Variable:
        """The block's matrix variable (W or U)."""

    @property
    def w_variable(self) -> cp.Expression:
        """The block's matrix variable, flattened row by row (the numpy point's layout)."""
        import cvxpy as cp

        return cp.vec(self._point_variable(), order="C")

    def _residual_variable(self) -> cp.Variable:
        r"""V of shape (p, N), with :math:`y_j = 2 a_j v_j`: the CVXPY duals are written in
        V (a residual, of the size of z) because Y is of the size of the tiny weights
        :math:`a_j = \phi_j / (P n_q)`, which leaves Clarabel's dual inaccurate."""
        return self._matrix("V", (self.pairs.n_pairs, self.pairs.n_features))

    def _dual_matrix(self) -> cp.Expression:
        r""":math:`Y = 2\,\mathrm{diag}(a) V`."""
        import cvxpy as cp

        return cp.multiply(2.0 * self.pairs.weight[:, None], self._residual_variable())

    @property
    def alpha_variable(self) -> cp.Expression:
        import cvxpy as cp

        return cp.vec(self._dual_matrix(), order="C")

    def _dual_residual_objective(self) -> cp.Expression:
        r""":math:`\sum_j y_j^\top z_j - \|y_j\|^2/(4 a_j) = \sum_j a_j (2 v_j^\top z_j -
        \|v_j\|^2)`."""
        import cvxpy as cp

        p, V = self.pairs, self._residual_variable()
        return (cp.sum(cp.multiply(2.0 * p.weight[:, None] * p.Z, V))
                - cp.sum_squares(cp.multiply(np.sqrt(p.weight)[:, None], V)))

    def _primal_residual(self, U: cp.Expression, W: cp.Expression) -> cp.Expression:
        import cvxpy as cp

        p = self.pairs
        return cp.sum_squares(cp.multiply(np.sqrt(p.weight)[:, None], p.Z - W @ U.T))


class FoldingIn(_ConeParameters, _Block):
    r"""ConeRank's folding-in block: every pair's coefficients for a fixed basis U.

    .. math::

        \min_{W} \sum_j a_j \|z_j - U w_j\|_2^2 \quad \text{s.t. } w_j \ge 0,\;
        \lambda_l \le 1^\top w_j \le \lambda_u,

    Tran & Pham Alg. 1 step 1 on (18) (:math:`\lambda_l = \lambda_u = 1`) or on (8). The
    point is ``W.ravel()`` (p x K, row-major). The dual, over :math:`Y \in \mathbb{R}^{p
    \times N}`, is

    .. math::

        \max_Y \sum_j \Big[y_j^\top z_j - \frac{\|y_j\|^2}{4 a_j}
        - \max(\lambda_u m_j, \lambda_l m_j)\Big], \quad m_j = \max_k (U^\top y_j)_k .

    Parameters
    ----------
    data : RankingData
    U : ndarray of shape (N, K)
        The fixed basis (data, not a hyper-parameter: part of the cache key).
    lambda_l, lambda_u : float
        The band of (8), :math:`0 < \lambda_l \le \lambda_u` (default 1, 1: (18)).
    pairs : ConePairs or None
        Pairs already built (default :func:`cone_pairs` of ``data`` with the paper's
        normalization).
    """

    name = "conerank-foldin"
    capabilities = frozenset({"primal_certificate", "cone_block"})

    def __init__(self, data: RankingData, U: np.ndarray, *, lambda_l: float = 1.0,
                 lambda_u: float = 1.0, pairs: ConePairs | None = None) -> None:
        U = np.array(U, dtype=np.float64)
        _check_band(lambda_l, lambda_u)
        self.U = U
        super().__init__(data, pairs, K=U.shape[1] if U.ndim == 2 else 0,
                         lambda_l=lambda_l, lambda_u=lambda_u)
        if U.ndim != 2 or U.shape[0] != self.pairs.n_features or not np.all(np.isfinite(U)):
            raise ValueError(f"U must be a finite matrix of shape (N = "
                             f"{self.pairs.n_features}, K), got shape {U.shape}")
        self.U.flags.writeable = False

    def _extra_key(self) -> str:
        return f"U={_digest(self.U)}|pairs={self.pairs.fingerprint}"

    @property
    def band(self) -> tuple[float, float]:
        """:math:`(\\lambda_l, \\lambda_u)`."""
        p = self.params()
        return p["lambda_l"], p["lambda_u"]

    @property
    def feasible_set(self) -> SumBand:
        """The coefficients' set (:func:`coefficient_set`)."""
        return coefficient_set(self.pairs.n_pairs, self.K, *self.band)

    def start(self) -> np.ndarray:
        r"""A feasible start: uniform coefficients, :math:`w_j = (s / K) 1` with :math:`s =
        \max(\lambda_l, \min(1, \lambda_u))`."""
        lo, hi = self.band
        return np.full(self.pairs.n_pairs * self.K, min(max(1.0, lo), hi) / self.K)

    def _W(self, w: np.ndarray) -> np.ndarray:
        return np.asarray(w, dtype=np.float64).reshape(self.pairs.n_pairs, self.K)

    def primal_value(self, w: np.ndarray) -> float:
        return objective(self.pairs, self.U, self._W(w))

    def dual_value(self, alpha: np.ndarray) -> float:
        Y = np.asarray(alpha, dtype=np.float64).reshape(self.pairs.n_pairs, -1)
        return self._residual_terms(Y) - float(_support(Y @ self.U, *self.band).sum())

    def dual_value_at(self, w: np.ndarray) -> float:
        """The dual value at the residual multipliers of ``w`` (:meth:`residual_dual`):
        ``primal_value(w)`` minus the Frank-Wolfe gap, a lower bound on p*."""
        return self.dual_value(self.residual_dual(self.U, self._W(w)))

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        r"""A minimizer of the Lagrangian: :math:`\lambda e_k` at :math:`k = \arg\max_k
        (U^\top y_j)_k`, :math:`\lambda = \lambda_u` if that maximum is positive, else
        :math:`\lambda_l`."""
        Y = np.asarray(alpha, dtype=np.float64).reshape(self.pairs.n_pairs, -1)
        H = Y @ self.U
        k = H.argmax(axis=1)
        lo, hi = self.band
        W = np.zeros((H.shape[0], self.K))
        W[np.arange(H.shape[0]), k] = np.where(H[np.arange(H.shape[0]), k] > 0, hi, lo)
        return W.ravel()

    def _point_variable(self) -> cp.Variable:
        return self._matrix("W", (self.pairs.n_pairs, self.K))

    def _build_primal(self) -> cp.Problem:
        import cvxpy as cp

        W = self._point_variable()
        total = cp.sum(W, axis=1)
        return cp.Problem(cp.Minimize(self._primal_residual(self.U, W)),
                          [W >= 0, total >= self.parameter("lambda_l"),
                           total <= self.parameter("lambda_u")])

    def _build_dual(self) -> cp.Problem:
        import cvxpy as cp

        # in V (y_j = 2 a_j v_j) and tau (t_j = 2 a_j tau_j): t_j >= lambda (U^T y_j)_k
        # is tau_j >= lambda (U^T v_j)_k, and every variable is of the size of z
        p = self.pairs
        tau = cp.Variable(p.n_pairs, name="tau")
        H = self._residual_variable() @ self.U
        column = cp.reshape(tau, (p.n_pairs, 1), order="C") @ np.ones((1, self.K))
        return cp.Problem(
            cp.Maximize(self._dual_residual_objective() - (2.0 * p.weight) @ tau),
            [column >= self.parameter("lambda_u") * H, column >= self.parameter("lambda_l") * H])


class BasisUpdate(_ConeParameters, _Block):
    r"""ConeRank's basis-update block: the basis U for fixed coefficients W.

    .. math::

        \min_{U} \sum_j a_j \|z_j - U w_j\|_2^2 \quad \text{s.t. } \|u_k\|_2 \le c,

    Tran & Pham Alg. 1 step 2 ((18)'s relaxation of :math:`\|u_k\|_2 = c`). The point is
    ``U.ravel()`` (N x K, row-major). The dual, over :math:`Y \in \mathbb{R}^{p \times N}`:

    .. math::

        \max_Y \sum_j \Big[y_j^\top z_j - \frac{\|y_j\|^2}{4 a_j}\Big]
        - c \sum_k \Big\|\sum_j w_{jk} y_j\Big\|_2 .

    The objective is :math:`\mathrm{const} - 2\,\mathrm{tr}(U^\top B) + \mathrm{tr}(U G
    U^\top)` with :math:`G = W^\top \mathrm{diag}(a) W` (K x K) and :math:`B = Z^\top
    \mathrm{diag}(a) W` (N x K): after :math:`O(pNK)` set-up an evaluation costs
    :math:`O(NK^2)`.

    Parameters
    ----------
    data : RankingData
    W : ndarray of shape (p, K)
        The fixed coefficients, one row per pair (data: part of the cache key).
    c : float
        The radius of each basis vector's ball (the paper: :math:`2\rho`); None is
        :math:`2\rho` of the pairs' normalization.
    pairs : ConePairs or None
        As in :class:`FoldingIn`.
    """

    name = "conerank-basis"
    capabilities = frozenset({"primal_certificate", "cone_block"})

    def __init__(self, data: RankingData, W: np.ndarray, *, c: float | None = None,
                 pairs: ConePairs | None = None) -> None:
        W = np.array(W, dtype=np.float64)
        pairs = cone_pairs(data) if pairs is None else pairs
        self.W = W
        super().__init__(data, pairs, K=W.shape[1] if W.ndim == 2 else 0,
                         c=2.0 * pairs.rho if c is None else c)
        if W.ndim != 2 or W.shape[0] != self.pairs.n_pairs or not np.all(np.isfinite(W)):
            raise ValueError(f"W must be a finite matrix of shape (p = {self.pairs.n_pairs}, "
                             f"K), got shape {W.shape}")
        self.W.flags.writeable = False
        aW = self.pairs.weight[:, None] * W
        self.G = W.T @ aW
        self.B = self.pairs.Z.T @ aW

    def _extra_key(self) -> str:
        return f"W={_digest(self.W)}|pairs={self.pairs.fingerprint}"

    @property
    def c(self) -> float:
        """The ball radius c."""
        return self._hyper["c"].value

    @property
    def ball(self) -> L2Ball:
        """The ball of one basis vector, :math:`\\|u_k\\|_2 \\le c`."""
        return L2Ball(1.0, scale=self.hyper_parameter("c"))

    def project(self, U: np.ndarray) -> np.ndarray:
        """Each column projected onto its ball (:attr:`ball`)."""
        return self.ball.project_columns(U)

    def _U(self, u: np.ndarray) -> np.ndarray:
        return np.asarray(u, dtype=np.float64).reshape(self.pairs.n_features, self.K)

    def value(self, U: np.ndarray) -> float:
        """The objective at the matrix U, :math:`O(NK^2)`."""
        return float(self.pairs.constant - 2.0 * np.sum(U * self.B)
                     + np.sum((U @ self.G) * U))

    def gradient(self, U: np.ndarray) -> np.ndarray:
        """:math:`2 (U G - B)`."""
        return 2.0 * (U @ self.G - self.B)

    def frank_wolfe_gap(self, U: np.ndarray) -> float:
        r""":math:`\max_{\|v_k\| \le c} \langle \nabla, U - V\rangle = \langle \nabla, U
        \rangle + c \sum_k \|\nabla_k\|`, the certified suboptimality bound at U."""
        g = self.gradient(U)
        return float(np.sum(g * U) + self.c * np.linalg.norm(g, axis=0).sum())

    def primal_value(self, w: np.ndarray) -> float:
        return self.value(self._U(w))

    def dual_value(self, alpha: np.ndarray) -> float:
        Y = np.asarray(alpha, dtype=np.float64).reshape(self.pairs.n_pairs, -1)
        S = Y.T @ self.W
        return self._residual_terms(Y) - self.c * float(np.linalg.norm(S, axis=0).sum())

    def dual_value_at(self, w: np.ndarray) -> float:
        """``primal_value(w)`` minus the Frank-Wolfe gap (:meth:`frank_wolfe_gap`): the dual
        value at the residual multipliers of ``w``, in :math:`O(NK^2)`."""
        U = self._U(w)
        return self.value(U) - self.frank_wolfe_gap(U)

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        r"""The Lagrangian's minimizer :math:`u_k = c\, s_k / \|s_k\|`, :math:`s_k = \sum_j
        w_{jk} y_j` (0 where :math:`s_k = 0`)."""
        Y = np.asarray(alpha, dtype=np.float64).reshape(self.pairs.n_pairs, -1)
        S = Y.T @ self.W
        norms = np.linalg.norm(S, axis=0)
        return (S * np.divide(self.c, norms, out=np.zeros_like(norms),
                              where=norms > 0)).ravel()

    def start(self) -> np.ndarray:
        """U = 0 (feasible)."""
        return np.zeros(self.pairs.n_features * self.K)

    def _point_variable(self) -> cp.Variable:
        return self._matrix("U", (self.pairs.n_features, self.K))

    def _build_primal(self) -> cp.Problem:
        import cvxpy as cp

        U = self._point_variable()
        return cp.Problem(cp.Minimize(self._primal_residual(U, self.W)),
                          [cp.norm(U, 2, axis=0) <= self.parameter("c")])

    def _build_dual(self) -> cp.Problem:
        import cvxpy as cp

        Y = self._dual_matrix()
        spread = cp.sum(cp.norm(Y.T @ self.W, 2, axis=0))
        return cp.Problem(cp.Maximize(self._dual_residual_objective()
                                      - self.parameter("c") * spread))


class ConeRank(_ConeParameters, Objective):
    r"""The joint ConeRank problem (18) (or with the band (8)): basis and coefficients.

    Not convex: an :class:`~cvxrank.formulations.base.Objective` (no CVXPY problem, no
    dual). Its point is ``theta = concat(U.ravel(), W.ravel())`` (:meth:`split`,
    :meth:`join`), and its solvers (:mod:`cvxrank.solvers.conerank`) alternate the convex
    blocks :class:`FoldingIn` and :class:`BasisUpdate`. The model scores documents by
    Alg. 2's vote per query (``scoring="vote"``) or by the equivalent linear scorer
    :math:`v = (U^+)^\top 1` (``"linear"``: the same ranking up to ties;
    :func:`linear_direction`), :meth:`scores`.

    Parameters
    ----------
    data : RankingData
    K : int
        Number of basis vectors (the paper: 10).
    c : float or None
        Radius of each basis vector's ball; None is :math:`2\rho` (the paper).
    lambda_l, lambda_u : float
        The coefficient band (8); 1, 1 is (18).
    alpha, rho : float
        Normalization (5); ``rho=None`` is :math:`\sqrt N` (the paper).
    pairs : ConePairs or None
        Pairs already built (then ``alpha`` and ``rho`` are theirs).
    scoring : {"vote", "linear"}
        How :meth:`scores` ranks documents (it does not change the problem).
    """

    #: The row of :data:`cvxrank.methods.METHODS` whose solvers ``"auto"`` tries.
    method = "conerank"

    name = "conerank"
    linear_scores = False  # Alg. 2 votes per query (scoring="linear" ranks alike up to ties)
    capabilities = frozenset({"cone_blocks"})

    def __init__(self, data: RankingData, *, K: int = DEFAULT_K, c: float | None = None,
                 lambda_l: float = 1.0, lambda_u: float = 1.0, alpha: float = 1.0,
                 rho: float | None = None, pairs: ConePairs | None = None,
                 scoring: str = "vote") -> None:
        K = K_PARAM.check(K)  # the methods table's constraints (cvxrank.methods)
        self.scoring = SCORING_PARAM.check(scoring)
        _check_band(lambda_l, lambda_u)
        self.pairs = cone_pairs(data, alpha=alpha, rho=rho) if pairs is None else pairs
        self.K = K
        super().__init__(data, c=2.0 * self.pairs.rho if c is None else c,
                         lambda_l=lambda_l, lambda_u=lambda_u)

    def _extra_key(self) -> str:
        return f"K={self.K}|pairs={self.pairs.fingerprint}"

    @property
    def c(self) -> float:
        """The ball radius c."""
        return self._hyper["c"].value

    @property
    def band(self) -> tuple[float, float]:
        """:math:`(\\lambda_l, \\lambda_u)`."""
        p = self.params()
        return p["lambda_l"], p["lambda_u"]

    def split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(U, W)`` from the stacked point."""
        N, K, p = self.pairs.n_features, self.K, self.pairs.n_pairs
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (N * K + p * K,):
            raise ValueError(f"theta must have shape ({N * K + p * K},), got {theta.shape}")
        return theta[:N * K].reshape(N, K), theta[N * K:].reshape(p, K)

    @staticmethod
    def join(U: np.ndarray, W: np.ndarray) -> np.ndarray:
        """The stacked point of ``(U, W)``."""
        return np.concatenate([np.ravel(U), np.ravel(W)])

    def folding_in(self, U: np.ndarray) -> FoldingIn:
        """The folding-in block at basis U (same pairs and band)."""
        lo, hi = self.band
        return FoldingIn(self.data, U, lambda_l=lo, lambda_u=hi, pairs=self.pairs)

    def basis_update(self, W: np.ndarray) -> BasisUpdate:
        """The basis-update block at coefficients W (same pairs and c)."""
        return BasisUpdate(self.data, W, c=self.c, pairs=self.pairs)

    def random_start(self, seed: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
        r"""The paper's start (Sect. 6.1): basis vectors in random directions on the sphere
        of radius c (feasible for both (9) and (18)); coefficients uniform on [0, 1],
        normalized to :math:`\|w_j\|_1 = 1` (moved into the band (8) if 1 is outside it)."""
        rng = np.random.default_rng(seed)
        U = rng.standard_normal((self.pairs.n_features, self.K))
        U *= self.c / np.linalg.norm(U, axis=0)
        W = rng.uniform(size=(self.pairs.n_pairs, self.K))
        lo, hi = self.band
        W *= min(max(1.0, lo), hi) / W.sum(axis=1, keepdims=True)
        return U, W

    def primal_value(self, w: np.ndarray) -> float:
        """The objective (18) at the stacked point."""
        return objective(self.pairs, *self.split(w))

    def feasibility(self, U: np.ndarray, W: np.ndarray) -> float:
        """Largest violation of the constraints at ``(U, W)`` (0 when feasible)."""
        lo, hi = self.band
        balls = float(np.max(np.linalg.norm(U, axis=0) - self.c, initial=0.0))
        return max(balls, coefficient_set(W.shape[0], self.K, lo, hi).violation(W.ravel()))

    # -- the model ------------------------------------------------------------------------
    def weights(self, w: np.ndarray) -> np.ndarray:
        r"""The linear scorer :math:`v = (U^+)^\top 1` of the point's basis
        (:func:`linear_direction`)."""
        return linear_direction(self.split(w)[0])

    def scores(self, w: np.ndarray, data: RankingData) -> np.ndarray:
        """Alg. 2's votes per query (``scoring="vote"``) or ``X @ v`` (``"linear"``)."""
        X = data.pad_features(self.pairs.n_features).X
        if self.scoring == "linear":
            return np.asarray(X @ self.weights(w)).ravel()
        return vote_scores(self.split(w)[0], X, data.query_ptr)

    def sizes(self) -> dict[str, int]:
        """``n_pairs``: the ordered training pairs (one coefficient vector each)."""
        return {"n_pairs": int(self.pairs.n_pairs)}

    def model_arrays(self, w: np.ndarray) -> dict[str, Any]:
        """The basis ``U`` (N x K) and the linear scorer ``v`` (:func:`linear_direction`)."""
        U = self.split(w)[0]
        return {"U": U, "v": linear_direction(U)}


def linear_direction(U: np.ndarray) -> np.ndarray:
    r"""The linear scorer equivalent to Alg. 2's vote: :math:`v = (U^+)^\top 1`.

    Alg. 2 folds a test pair in without constraints, :math:`w = \arg\min \|z - Uw\|^2 = U^+
    z`, and votes for the first document when :math:`1^\top w > 0`. Since :math:`1^\top U^+
    z = v^\top z` is linear in :math:`z = x_l - x_m` (and the normalization (5) only scales
    z by a positive factor), the vote for l over m is :math:`v^\top x_l > v^\top x_m`: the
    vote count of a document is the number of documents of its query with a strictly lower
    score :math:`v^\top x` (plus ties broken to the later document), so sorting by
    :math:`v^\top x` gives Alg. 2's ranking up to ties, in :math:`O(n_q N)` instead of
    :math:`O(n_q^2 N)` per query.
    """
    return np.linalg.pinv(U).T @ np.ones(U.shape[1])


def vote_scores(U: np.ndarray, X: np.ndarray, query_ptr: np.ndarray) -> np.ndarray:
    r"""Alg. 2, literally: per query, every pair l < m folded in without constraints (least
    squares on :math:`z = x_l - x_m`), a vote to l if the coefficients sum to more than 0,
    else to m. :math:`O(n_q^2 (N + K))` per query (the pairs are formed query by query).

    Parameters
    ----------
    U : ndarray of shape (N, K)
    X : ndarray of shape (n, N)
    query_ptr : ndarray of shape (n_queries + 1,)

    Returns
    -------
    ndarray of shape (n,)
        The scoring array A (votes per document).
    """
    pinv = np.linalg.pinv(U)  # K x N
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    votes = np.zeros(X.shape[0])
    for q in range(len(query_ptr) - 1):
        lo, hi = int(query_ptr[q]), int(query_ptr[q + 1])
        n = hi - lo
        if n < 2:
            continue
        first, second = np.triu_indices(n, k=1)
        Z = X[lo + first] - X[lo + second]
        coeff_sum = (Z @ pinv.T).sum(axis=1)
        win = coeff_sum > 0
        np.add.at(votes, lo + np.where(win, first, second), 1.0)
    return votes
