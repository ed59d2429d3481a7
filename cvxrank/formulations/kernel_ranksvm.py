"""Kernel RankSVM: RankSVM over a reproducing-kernel Hilbert space, written with the Gram matrix.

By the representer theorem (Chapelle & Keerthi 2010, eq. (10)) the optimal scoring function
is ``f(x) = sum_i beta_i k(x, x_i)``, so the problem is finite-dimensional in ``beta``. This
formulation states it with the Gram matrix K directly (CVXPY ``quad_form`` with ``psd_wrap``;
no factorization of K), which makes it an independent reference for the fast route of the
paper's Sect. 6.3: the kernel PCA map (:mod:`cvxrank.numerics.kernel`) followed by a linear solver.
Pairs, weights, margins, losses, C and the dual set are RankSVM's
(:class:`~cvxrank.formulations.ranksvm.PairwiseSVM`); only the score map differs.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

from cvxrank.data.pairs import DEFAULT_MAX_PAIRS, PairSet
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.ranksvm import Loss, PairwiseSVM
from cvxrank.numerics.kernel import check_gram

if TYPE_CHECKING:
    import cvxpy as cp


class KernelRankSVM(PairwiseSVM):
    r"""RankSVM with a kernel, in the expansion coefficients :math:`\beta \in \mathbb{R}^n`.

    With K the n x n Gram matrix of the training documents and A the p x n pair operator,

    .. math::

        P(\beta) = \tfrac12 \beta^\top K \beta
            + C \sum_k c_k\, \ell\big(m_k - (A K \beta)_k\big),

    with :math:`\ell` the hinge, squared hinge or Huber loss of
    :class:`~cvxrank.formulations.ranksvm.RankSVM`, and the dual, with :math:`u = A^\top
    \alpha`,

    .. math::

        D(\alpha) = m^\top \alpha - \tfrac12 u^\top K u \;
        \Big[- \sum_k \frac{\alpha_k^2}{4 C c_k}\Big],

    over RankSVM's dual set (:math:`0 \le \alpha_k \le C c_k` for the hinge,
    :math:`\alpha_k \ge 0` with the ridge for the squared hinge, :math:`0 \le \alpha_k \le
    2 C c_k` with the ridge for the Huber loss), whose maximizer gives
    :math:`\beta = A^\top \alpha`. With the linear kernel :math:`K = X X^\top` it is
    :class:`~cvxrank.formulations.ranksvm.RankSVM` with :math:`w = X^\top \beta`.

    Parameters
    ----------
    data : RankingData
        Training data (grades and queries; its features are not used: K is).
    K : ndarray of shape (n, n)
        Gram matrix of the training documents (symmetric positive semidefinite).
    C, loss, pair_weight, margin, pairs, max_pairs
        As in :class:`~cvxrank.formulations.ranksvm.RankSVM`.

    Attributes
    ----------
    capabilities : frozenset of str
        ``kernel_matrix`` (the kernel PCA route of :mod:`cvxrank.solvers.kernel_newton`).

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
        reasons :class:`~cvxrank.formulations.ranksvm.RankSVM` gives.

    References
    ----------
    .. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
       Information Retrieval 13, 2010, Sect. 6.3 and eq. (10).
    """

    #: No row of :data:`cvxrank.methods.METHODS`: ``"auto"`` is its CVXPY reference.
    method = None

    capabilities = frozenset({"kernel_matrix"})
    linear_scores = False  # a new document is scored through the kernel, not X @ w

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
        super().__init__(data, C=C, loss=loss, pair_weight=pair_weight, margin=margin,
                         pairs=pairs, max_pairs=max_pairs)
        self.name = f"kernel-ranksvm-{self.loss.name}"
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

    def _extra_key(self) -> str:
        h = hashlib.sha1(np.ascontiguousarray(self.K).tobytes())
        h.update(super()._extra_key().encode())
        return h.hexdigest()[:16]

    # -- CVXPY reference ----------------------------------------------------------------
    @property
    def w_variable(self) -> cp.Variable:
        """The expansion coefficients ``beta`` (length n) of :meth:`primal`."""
        return self._variable("beta", self.data.n_documents)

    def _score_expression(self, theta: cp.Variable) -> cp.Expression:
        return self.K @ theta

    def _norm_expression(self, theta: cp.Variable) -> cp.Expression:
        import cvxpy as cp

        return cp.quad_form(theta, cp.psd_wrap(self.K))

    def _gram_expression(self, u: cp.Variable) -> cp.Expression:
        import cvxpy as cp

        return cp.quad_form(u, cp.psd_wrap(self.K))

    def _gram_value(self, alpha: np.ndarray) -> float:
        u = self.primal_from_dual(alpha)
        return float(u @ (self.K @ u))

    # -- numpy evaluators ---------------------------------------------------------------
    def scores(self, beta: np.ndarray) -> np.ndarray:
        """Training scores ``f(x_i) = (K beta)_i``."""
        return self.K @ np.asarray(beta, dtype=np.float64)

    def primal_value(self, w: np.ndarray) -> float:
        """P(beta), see the class docstring (``w`` is beta; the loss through the pairs)."""
        beta = np.asarray(w, dtype=np.float64)
        s = self.scores(beta)
        return float(0.5 * (beta @ s) + self.C * self.loss_engine("pairs").evaluate(s).value)

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """beta(alpha) = A^T alpha."""
        return np.asarray(self._A.T @ np.asarray(alpha, dtype=np.float64))
