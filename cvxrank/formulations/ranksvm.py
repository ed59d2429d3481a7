"""RankSVM: the pairwise (squared) hinge-loss ranking SVM, with pair weights and margins.

One class covers the Ranking SVM QP of Herbrich et al. as stated by Li (2011), Sect. 4.1, the
squared-hinge RankSVM of Chapelle & Keerthi (2010), eq. (1), and, through per-pair weights
``c_k`` and margins ``m_k``, IR SVM's cost-sensitive loss (Li 2011, Sect. 4.2: ``c_k =
tau_k mu_q``), query normalization and relevance-dependent margins (margin rescaling,
Chapelle & Keerthi 2010, Sect. 6.2).

Both the primal and the dual are written over the sparse p x n difference operator ``A`` of
:class:`~cvxrank.data.pairs.PairSet`, so that the problem data stay O(nd + p) nonzeros: CVXPY
folds products of constant matrices, so ``A @ (X @ w)`` would become a dense p x d block.
The primal therefore carries the document scores ``s = X w`` as an auxiliary variable and the
dual the document coefficients ``u = A^T alpha``.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from cvxrank.data.pairs import DEFAULT_MAX_PAIRS, PairSet, build_pairs
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import Formulation

Loss = Literal["hinge", "squared_hinge"]

#: Largest feature dimension for which :meth:`RankSVM.dual_lipschitz` forms the d x d matrix
#: ``X^T A^T A X`` (via the sparse n x n Laplacian ``A^T A``) and takes its exact largest
#: eigenvalue; above it, ARPACK (``eigsh``) runs on the matrix-free operator.
DENSE_GRAM_MAX_FEATURES = 512

#: Factor applied to the computed squared operator norm so that rounding (dense path) or the
#: ARPACK tolerance (matrix-free path, ``tol=1e-10``) cannot make the Lipschitz constant an
#: underestimate.
LIPSCHITZ_SAFETY = 1.0 + 1e-6


class RankSVM(Formulation):
    r"""Linear RankSVM with the hinge or squared hinge loss on preference pairs.

    For the p preference pairs :math:`k = (i, j)` (:math:`y_i > y_j`, same query) with
    weights :math:`c_k > 0` and margins :math:`m_k`, and :math:`A` the p x n difference
    operator (:math:`(A X w)_k = w^\top (x_i - x_j)`), the primal problems are

    .. math::

        \text{hinge:}\quad
        P(w) = \tfrac12 \|w\|^2 + C \sum_k c_k \max(0,\, m_k - w^\top(x_i - x_j)),

        \text{squared hinge:}\quad
        P(w) = \tfrac12 \|w\|^2 + C \sum_k c_k \max(0,\, m_k - w^\top(x_i - x_j))^2,

    and their Lagrange duals (maximized over :math:`\alpha \in \mathbb{R}^p`) are

    .. math::

        \text{hinge:}\quad
        D(\alpha) = m^\top \alpha - \tfrac12 \|X^\top A^\top \alpha\|^2,
        \quad 0 \le \alpha_k \le C c_k,

        \text{squared hinge:}\quad
        D(\alpha) = m^\top \alpha - \tfrac12 \|X^\top A^\top \alpha\|^2
        - \sum_k \frac{\alpha_k^2}{4 C c_k},
        \quad \alpha_k \ge 0,

    with :math:`w(\alpha) = X^\top A^\top \alpha` at the optimum of both.

    With unit weights and margins the hinge primal is Li's Ranking SVM QP (slack
    :math:`\xi_k = \max(0, 1 - w^\top(x_i - x_j))`) and the squared-hinge primal is Chapelle &
    Keerthi's eq. (1) with :math:`\ell(t) = \max(0, 1 - t)^2`. **Convention for C:** the loss
    term is multiplied by C, as in the papers. Chapelle & Keerthi's published Matlab code
    multiplies it by C/2, so their code's C is twice the C here.

    Parameters
    ----------
    data : RankingData
        Training data.
    C : float
        Loss weight, finite and > 0 (a ``cp.Parameter``; change it with :meth:`set_params`).
    loss : {"hinge", "squared_hinge"}
        The pair loss.
    pair_weight : array of shape (p,) or None
        Per-pair weights :math:`c_k > 0` (default ones), e.g. IR SVM's
        :math:`\tau_{k(i)} \mu_{q(i)}` or a per-query normalization.
    margin : array of shape (p,) or None
        Per-pair margins :math:`m_k` (default ones), e.g. a relevance-dependent margin.
    pairs : PairSet or None
        The preference pairs (default: ``build_pairs(data, max_pairs=max_pairs)``).
    max_pairs : int
        Refusal limit passed to :func:`~cvxrank.data.pairs.build_pairs`.

    Attributes
    ----------
    name : str
        ``"ranksvm-hinge"`` or ``"ranksvm-squared_hinge"``.
    pairs : PairSet
        The preference pairs; ``pairs.A`` is the operator :math:`A`.
    loss : str
    pair_weight, margin : ndarray of shape (p,)
        Read-only copies of :math:`c` and :math:`m`.

    Raises
    ------
    ValueError
        For C not finite and > 0, an unknown loss, weights or margins of the wrong length,
        non-finite, or (weights) not positive, pairs of another data set, or data without
        preference pairs.

    Notes
    -----
    :meth:`dual_value` evaluates the dual formula at any ``alpha``, feasible or not (it is the
    smooth concave quadratic that solvers and finite differences see); the constraint
    violation is reported separately by :meth:`dual_infeasibility`. The weak-duality bound
    ``dual_value(alpha) <= p*`` holds only for feasible ``alpha``.

    References
    ----------
    .. [1] H. Li, "A Short Introduction to Learning to Rank", IEICE Trans. Inf. & Syst.,
       E94-D(10), 2011, Sect. 4.1 (Ranking SVM QP and its hinge form (5)) and Sect. 4.2
       (IR SVM weights).
    .. [2] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
       Information Retrieval 13, 2010, eq. (1) (objective), Sect. 3 (the operator A),
       Sect. 6.2 (margin rescaling).
    """

    def __init__(
        self,
        data: RankingData,
        *,
        C: float = 1.0,
        loss: Loss = "hinge",
        pair_weight: np.ndarray | None = None,
        margin: np.ndarray | None = None,
        pairs: PairSet | None = None,
        max_pairs: int = DEFAULT_MAX_PAIRS,
    ) -> None:
        super().__init__(data)
        if loss not in ("hinge", "squared_hinge"):
            raise ValueError(f"loss must be 'hinge' or 'squared_hinge', got {loss!r}")
        self.loss: str = loss
        self.name = f"ranksvm-{loss}"
        self._check_param("C", float(C))
        self.pairs = build_pairs(data, max_pairs=max_pairs) if pairs is None else pairs
        if self.pairs.n_documents != data.n_documents:
            raise ValueError(
                f"pairs index {self.pairs.n_documents} documents but the data has "
                f"{data.n_documents}"
            )
        p = self.pairs.n_pairs
        self.pair_weight = _per_pair(pair_weight, p, "pair_weight", positive=True)
        self.margin = _per_pair(margin, p, "margin", positive=False)
        self._C = cp.Parameter(nonneg=True, name="C", value=float(C))
        # 1/(4C), the coefficient of the squared-hinge dual's ridge term: a parameter of its
        # own keeps the dual DPP (1/C is not DPP); set_params keeps it in sync with C.
        self._inv_4C = cp.Parameter(nonneg=True, name="inv_4C", value=0.25 / float(C))
        self._X = data.X
        self._A = self.pairs.A
        self._w = cp.Variable(data.n_features, name="w")
        self._s = cp.Variable(data.n_documents, name="s")
        self._alpha = cp.Variable(p, name="alpha")
        self._u = cp.Variable(data.n_documents, name="u")
        self._op_norm_sq: float | None = None

    # -- hyper-parameters ---------------------------------------------------------------
    @property
    def parameters(self) -> dict[str, cp.Parameter]:
        """``{"C": C}``."""
        return {"C": self._C}

    def _check_param(self, key: str, value: float) -> None:
        super()._check_param(key, value)
        if key == "C" and not value > 0:
            raise ValueError(f"C must be > 0, got {value}")

    def set_params(self, **values: float) -> None:
        """Change C (the CVXPY problems are re-solved, not rebuilt or recompiled)."""
        super().set_params(**values)
        self._inv_4C.value = 0.25 / float(self._C.value)

    @property
    def C(self) -> float:  # noqa: N802 (the papers' name)
        """Current value of C."""
        return float(self._C.value)

    def _extra_key(self) -> str:
        h = hashlib.sha1()
        for part in (self.pairs.upper, self.pairs.lower, self.pair_weight, self.margin):
            h.update(np.ascontiguousarray(part).tobytes())
        return h.hexdigest()[:16]

    # -- CVXPY reference ----------------------------------------------------------------
    # The weighted squares are written c @ square(.) (p small cones for the conic solvers)
    # rather than sum_squares (one cone of size p + 2): ECOS stops at optimal_inaccurate or
    # fails on the latter from about 10^4 pairs.
    def _build_primal(self) -> cp.Problem:
        slack = cp.pos(self.margin - self._A @ self._s)
        if self.loss == "hinge":
            loss = self.pair_weight @ slack
        else:
            loss = self.pair_weight @ cp.square(slack)
        objective = 0.5 * cp.sum_squares(self._w) + self._C * loss
        return cp.Problem(cp.Minimize(objective), [self._s == self._X @ self._w])

    def _build_dual(self) -> cp.Problem:
        objective = self.margin @ self._alpha - 0.5 * cp.sum_squares(self._X.T @ self._u)
        constraints = [self._u == self._A.T @ self._alpha, self._alpha >= 0]
        if self.loss == "hinge":
            constraints.append(self._alpha <= self._C * self.pair_weight)
        else:
            ridge = (1.0 / self.pair_weight) @ cp.square(self._alpha)
            objective = objective - self._inv_4C * ridge
        return cp.Problem(cp.Maximize(objective), constraints)

    @property
    def w_variable(self) -> cp.Variable:
        """The weights ``w`` (length d) of :meth:`primal`."""
        return self._w

    @property
    def score_variable(self) -> cp.Variable:
        """The primal's auxiliary document scores ``s = X w`` (length n)."""
        return self._s

    @property
    def alpha_variable(self) -> cp.Variable:
        """The pair multipliers ``alpha`` (length p) of :meth:`dual`."""
        return self._alpha

    @property
    def document_variable(self) -> cp.Variable:
        """The dual's auxiliary document coefficients ``u = A^T alpha`` (length n)."""
        return self._u

    # -- numpy evaluators (O(nd + p) each) ----------------------------------------------
    def margins(self, w: np.ndarray) -> np.ndarray:
        """Pairwise margins ``A X w``, i.e. ``w . (x_i - x_j)`` for each pair."""
        return self._A @ (self._X @ np.asarray(w, dtype=np.float64))

    def slacks(self, w: np.ndarray) -> np.ndarray:
        """Hinge residuals ``max(0, m_k - w . (x_i - x_j))``."""
        return np.maximum(self.margin - self.margins(w), 0.0)

    def primal_value(self, w: np.ndarray) -> float:
        """P(w), see the class docstring."""
        w = np.asarray(w, dtype=np.float64)
        xi = self.slacks(w)
        loss = self.pair_weight @ (xi if self.loss == "hinge" else xi * xi)
        return float(0.5 * (w @ w) + self.C * loss)

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """w(alpha) = X^T A^T alpha."""
        return np.asarray(self._X.T @ (self._A.T @ np.asarray(alpha, dtype=np.float64)))

    def dual_value(self, alpha: np.ndarray) -> float:
        """D(alpha), the dual formula evaluated as is (see Notes of the class docstring)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        w = self.primal_from_dual(alpha)
        value = self.margin @ alpha - 0.5 * (w @ w)
        if self.loss == "squared_hinge":
            value -= (alpha * alpha) @ (1.0 / self.pair_weight) / (4.0 * self.C)
        return float(value)

    def dual_infeasibility(self, alpha: np.ndarray) -> float:
        """Largest absolute violation of ``alpha >= 0`` (and ``alpha <= C c`` for hinge)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        violation = max(0.0, float(-alpha.min()))
        if self.loss == "hinge":
            violation = max(violation, float((alpha - self.C * self.pair_weight).max()))
        return violation

    # -- capabilities of the fast dual solvers ------------------------------------------
    def neg_dual_grad(self, alpha: np.ndarray) -> np.ndarray:
        """Gradient of -D at ``alpha``: ``A X X^T A^T alpha - m`` (``+ alpha/(2 C c)``)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        grad = self.margins(self.primal_from_dual(alpha)) - self.margin
        if self.loss == "squared_hinge":
            grad += alpha / (2.0 * self.C * self.pair_weight)
        return grad

    def dual_lipschitz(self) -> float:
        """A Lipschitz constant of :meth:`neg_dual_grad`.

        ``||X^T A^T||_2^2`` (cached; it does not depend on C) times
        :data:`LIPSCHITZ_SAFETY`, plus ``1/(2 C min c)`` for the squared hinge.
        """
        lipschitz = self._operator_norm_sq()
        if self.loss == "squared_hinge":
            lipschitz += 1.0 / (2.0 * self.C * float(self.pair_weight.min()))
        return lipschitz

    def dual_strong_convexity(self) -> float:
        """Strong-convexity modulus of -D: 0 (hinge) or ``1/(2 C max c)`` (squared hinge)."""
        if self.loss == "hinge":
            return 0.0
        return 1.0 / (2.0 * self.C * float(self.pair_weight.max()))

    def project_dual(self, alpha: np.ndarray) -> np.ndarray:
        """Euclidean projection onto the dual feasible set: ``[0, C c]`` or ``[0, inf)``."""
        alpha = np.asarray(alpha, dtype=np.float64)
        if self.loss == "hinge":
            return np.clip(alpha, 0.0, self.C * self.pair_weight)
        return np.maximum(alpha, 0.0)

    def dual_start(self) -> np.ndarray:
        """A feasible starting point (zeros)."""
        return np.zeros(self.pairs.n_pairs)

    def _operator_norm_sq(self) -> float:
        """``LIPSCHITZ_SAFETY * lambda_max(X^T A^T A X)``, computed once, without ``A X``."""
        if self._op_norm_sq is None:
            X, A = self._X, self._A
            d = X.shape[1]
            if d <= DENSE_GRAM_MAX_FEATURES:
                laplacian = (A.T @ A).tocsr()  # n x n, at most n + 2p nonzeros
                gram = X.T @ (laplacian @ X)
                gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
                top = float(np.linalg.eigvalsh(0.5 * (gram + gram.T))[-1])
            else:
                op = spla.LinearOperator(
                    (d, d), dtype=np.float64,
                    matvec=lambda v: X.T @ (A.T @ (A @ (X @ np.ravel(v)))),
                )
                top = float(spla.eigsh(op, k=1, which="LA", tol=1e-10,
                                       return_eigenvectors=False)[0])
            self._op_norm_sq = LIPSCHITZ_SAFETY * max(top, 0.0)
        return self._op_norm_sq


def _per_pair(values: np.ndarray | None, p: int, what: str, *, positive: bool) -> np.ndarray:
    """A read-only float64 copy of a per-pair array (ones if None), validated."""
    if values is None:
        out = np.ones(p)
    else:
        out = np.array(values, dtype=np.float64)
        if out.shape != (p,):
            raise ValueError(f"{what} must have shape ({p},) (one value per pair), got "
                             f"{out.shape}")
        bad = np.flatnonzero(~np.isfinite(out) | ((out <= 0) if positive else False))
        if bad.size:
            need = "finite and > 0" if positive else "finite"
            raise ValueError(f"{what}[{bad[0]}] = {out[bad[0]]}; every {what} must be {need}")
    out.flags.writeable = False
    return out
