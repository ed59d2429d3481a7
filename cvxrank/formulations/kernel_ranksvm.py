"""Kernel RankSVM: RankSVM over a reproducing-kernel Hilbert space, written with the Gram matrix.

By the representer theorem (Chapelle & Keerthi 2010, eq. (10)) the optimal scoring function
is ``f(x) = sum_i beta_i k(x, x_i)``, so the problem is finite-dimensional in ``beta``. This
formulation states it with the Gram matrix K directly (CVXPY ``quad_form`` with ``psd_wrap``;
no factorization of K), which makes it an independent reference for the fast route of the
paper's Sect. 6.3: the kernel PCA map (:mod:`cvxrank.kernel`) followed by a linear solver.
"""

from __future__ import annotations

import hashlib

import cvxpy as cp
import numpy as np

from cvxrank.data.pairs import DEFAULT_MAX_PAIRS, PairSet, build_pairs
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import Formulation
from cvxrank.formulations.ranksvm import Loss, _per_pair
from cvxrank.kernel import check_gram


class KernelRankSVM(Formulation):
    r"""RankSVM with a kernel, in the expansion coefficients :math:`\beta \in \mathbb{R}^n`.

    With K the n x n Gram matrix of the training documents and A the p x n pair operator,

    .. math::

        P(\beta) = \tfrac12 \beta^\top K \beta
            + C \sum_k c_k\, \ell\big(m_k - (A K \beta)_k\big),

    with :math:`\ell(t) = \max(0, t)` (hinge) or :math:`\max(0, t)^2` (squared hinge), and
    the dual, with :math:`u = A^\top \alpha`,

    .. math::

        D(\alpha) = m^\top \alpha - \tfrac12 u^\top K u \;
        \Big[- \sum_k \frac{\alpha_k^2}{4 C c_k}\Big],
        \qquad 0 \le \alpha_k \le C c_k \text{ (hinge) or } \alpha_k \ge 0,

    whose maximizer gives :math:`\beta = A^\top \alpha`. With the linear kernel
    :math:`K = X X^\top` it is :class:`~cvxrank.formulations.ranksvm.RankSVM` with
    :math:`w = X^\top \beta`.

    Parameters
    ----------
    data : RankingData
        Training data (grades and queries; its features are not used: K is).
    K : ndarray of shape (n, n)
        Gram matrix of the training documents (symmetric positive semidefinite).
    C, loss, pair_weight, margin, pairs, max_pairs
        As in :class:`~cvxrank.formulations.ranksvm.RankSVM`.

    Notes
    -----
    For a singular K (e.g. the linear kernel with fewer features than documents) the primal
    minimizer ``beta`` is not unique (any null-space component of K can be added), and
    interior-point solvers may then stop at ``optimal_inaccurate`` on the primal; the dual
    and the kernel PCA route are unaffected.

    Raises
    ------
    ValueError
        For a K that is not n x n, symmetric and finite, or with an eigenvalue below
        ``-1e-8 max(1, lambda_max)`` (not PSD: the problem would not be convex), and for the
        reasons :class:`RankSVM` gives.

    References
    ----------
    .. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
       Information Retrieval 13, 2010, Sect. 6.3 and eq. (10).
    """

    def __init__(
        self,
        data: RankingData,
        K: np.ndarray,
        *,
        C: float = 1.0,
        loss: Loss = "squared_hinge",
        pair_weight: np.ndarray | None = None,
        margin: np.ndarray | None = None,
        pairs: PairSet | None = None,
        max_pairs: int = DEFAULT_MAX_PAIRS,
    ) -> None:
        super().__init__(data)
        if loss not in ("hinge", "squared_hinge"):
            raise ValueError(f"loss must be 'hinge' or 'squared_hinge', got {loss!r}")
        self.loss: str = loss
        self.name = f"kernel-ranksvm-{loss}"
        self._check_param("C", float(C))
        K = check_gram(K)
        if K.shape[0] != data.n_documents:
            raise ValueError(f"K is {K.shape[0]} x {K.shape[0]} but the data has "
                             f"{data.n_documents} documents")
        smallest = float(np.linalg.eigvalsh(K)[0])
        top = float(np.abs(K).max(initial=0.0)) * K.shape[0]
        if smallest < -1e-8 * max(1.0, top):
            raise ValueError(f"the kernel matrix is not positive semidefinite: smallest "
                             f"eigenvalue {smallest:.3e}")
        self.K = K
        self.pairs = build_pairs(data, max_pairs=max_pairs) if pairs is None else pairs
        p = self.pairs.n_pairs
        self.pair_weight = _per_pair(pair_weight, p, "pair_weight", positive=True)
        self.margin = _per_pair(margin, p, "margin", positive=False)
        self._A = self.pairs.A
        self._C = cp.Parameter(nonneg=True, name="C", value=float(C))
        self._inv_4C = cp.Parameter(nonneg=True, name="inv_4C", value=0.25 / float(C))
        n = data.n_documents
        self._beta = cp.Variable(n, name="beta")
        self._s = cp.Variable(n, name="s")
        self._alpha = cp.Variable(p, name="alpha")
        self._u = cp.Variable(n, name="u")

    @property
    def parameters(self) -> dict[str, cp.Parameter]:
        """``{"C": C}``."""
        return {"C": self._C}

    def _check_param(self, key: str, value: float) -> None:
        super()._check_param(key, value)
        if key == "C" and not value > 0:
            raise ValueError(f"C must be > 0, got {value}")

    def set_params(self, **values: float) -> None:
        """Change C (re-solved, not rebuilt)."""
        super().set_params(**values)
        self._inv_4C.value = 0.25 / float(self._C.value)

    @property
    def C(self) -> float:  # noqa: N802 (the papers' name)
        """Current value of C."""
        return float(self._C.value)

    def _extra_key(self) -> str:
        h = hashlib.sha1(np.ascontiguousarray(self.K).tobytes())
        for part in (self.pairs.upper, self.pairs.lower, self.pair_weight, self.margin):
            h.update(np.ascontiguousarray(part).tobytes())
        return h.hexdigest()[:16]

    def _build_primal(self) -> cp.Problem:
        slack = cp.pos(self.margin - self._A @ self._s)
        loss = self.pair_weight @ (slack if self.loss == "hinge" else cp.square(slack))
        objective = 0.5 * cp.quad_form(self._beta, cp.psd_wrap(self.K)) + self._C * loss
        return cp.Problem(cp.Minimize(objective), [self._s == self.K @ self._beta])

    def _build_dual(self) -> cp.Problem:
        objective = self.margin @ self._alpha - 0.5 * cp.quad_form(self._u, cp.psd_wrap(self.K))
        constraints = [self._u == self._A.T @ self._alpha, self._alpha >= 0]
        if self.loss == "hinge":
            constraints.append(self._alpha <= self._C * self.pair_weight)
        else:
            ridge = (1.0 / self.pair_weight) @ cp.square(self._alpha)
            objective = objective - self._inv_4C * ridge
        return cp.Problem(cp.Maximize(objective), constraints)

    @property
    def w_variable(self) -> cp.Variable:
        """The expansion coefficients ``beta`` (length n) of :meth:`primal`."""
        return self._beta

    @property
    def alpha_variable(self) -> cp.Variable:
        """The pair multipliers ``alpha`` (length p) of :meth:`dual`."""
        return self._alpha

    def scores(self, beta: np.ndarray) -> np.ndarray:
        """Training scores ``f(x_i) = (K beta)_i``."""
        return self.K @ np.asarray(beta, dtype=np.float64)

    def primal_value(self, w: np.ndarray) -> float:
        """P(beta), see the class docstring (``w`` is beta)."""
        beta = np.asarray(w, dtype=np.float64)
        s = self.scores(beta)
        xi = np.maximum(self.margin - self._A @ s, 0.0)
        loss = self.pair_weight @ (xi if self.loss == "hinge" else xi * xi)
        return float(0.5 * (beta @ s) + self.C * loss)

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """beta(alpha) = A^T alpha."""
        return np.asarray(self._A.T @ np.asarray(alpha, dtype=np.float64))

    def dual_value(self, alpha: np.ndarray) -> float:
        """D(alpha), the dual formula evaluated as is (feasible or not)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        u = self.primal_from_dual(alpha)
        value = self.margin @ alpha - 0.5 * (u @ (self.K @ u))
        if self.loss == "squared_hinge":
            value -= (alpha * alpha) @ (1.0 / self.pair_weight) / (4.0 * self.C)
        return float(value)

    def dual_infeasibility(self, alpha: np.ndarray) -> float:
        """Largest violation of ``alpha >= 0`` (and ``alpha <= C c`` for the hinge)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        violation = max(0.0, float(-alpha.min()))
        if self.loss == "hinge":
            violation = max(violation, float((alpha - self.C * self.pair_weight).max()))
        return violation
