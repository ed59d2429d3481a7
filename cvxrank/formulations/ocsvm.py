r"""OC SVM: Shashua & Levin's large-margin ordinal classification with parallel hyperplanes.

A pointwise method (Li 2011, Sect. 3.1): one weight vector :math:`w` scores each document,
and thresholds between adjacent grades cut the score axis into grades. Queries play no role.
Two of Shashua & Levin's (2002) principles are implemented:

* :class:`OrdinalSVM` (``"ocsvm-fixed"``), the *fixed-margin* QP: one margin of width 2 on
  both sides of every threshold :math:`b_r`, soft with hinge slacks; it is the one Li's
  survey prints. Its Lagrange dual is a concave quadratic over a box with one equality per
  threshold (:class:`cvxrank.numerics.sets.BoxEqualSums`), which the projected-gradient solvers of
  :mod:`cvxrank.solvers.dual_gradient` solve with that set's exact projection.
* :class:`OrdinalSVMSumOfMargins` (``"ocsvm-sum-margins"``), the *sum-of-margins*
  principle (the survey's footnote): two thresholds :math:`a_r \le b_r` per gap, the sum of
  the gaps :math:`b_r - a_r` maximized under :math:`\|w\| \le 1`; primal and dual are second
  order cone programs (CVXPY reference only).

Grades are the distinct values of ``data.y`` in increasing order, numbered :math:`1..l`;
threshold :math:`r` separates grade :math:`r` from grade :math:`r + 1` and involves only the
documents of these two grades. A grade value absent from the data does not exist for the
model (the thresholds are between consecutive grades *present*). The hinge constraints are
stored once per (threshold, document) pair, threshold by threshold, the documents of the
lower grade first: :math:`m = \sum_{r=1}^{l-1} (m_r + m_{r+1})` rows, each with a sign
:math:`\sigma = -1` (lower grade) or :math:`+1` (upper grade). With :math:`M` the sparse
m x n matrix with :math:`M_{k, i(k)} = \sigma_k`, :math:`M X w` holds the signed scores, and
:math:`M^\top M = \operatorname{diag}(c)`, :math:`c_i \in \{1, 2\}` the number of thresholds
document :math:`i` borders.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import (
    LossWeighted,
    ProjectableDual,
    largest_row_norm,
    squared_operator_norm,
)
from cvxrank.numerics.sets import Box, BoxEqualSums
from cvxrank.utils.lazy_sparse import sp

if TYPE_CHECKING:
    import cvxpy as cp


class HingeRows:
    """The (threshold, document) hinge rows shared by both OC SVM formulations.

    Rows are ordered by threshold, then lower-grade documents before upper-grade ones, then
    by document index (see the module docstring).

    Parameters
    ----------
    data : RankingData
        The documents; their grades are the distinct values of ``data.y``.

    Attributes
    ----------
    grades : ndarray of shape (l,)
        The distinct grade values, increasing.
    counts : ndarray of shape (l,)
        Documents per grade, :math:`m_1 .. m_l`.
    doc, threshold : int ndarrays of shape (m,)
        Document and (0-based) threshold of each row.
    sign : ndarray of shape (m,)
        -1 for a document of the lower grade of its threshold, +1 for the upper grade.
    M : csr_matrix of shape (m, n)
        ``M[k, doc[k]] = sign[k]``.
    MX : ndarray or csr_matrix of shape (m, d)
        ``M @ X`` (one signed feature row per constraint; no more nonzeros than ``2 X``).
    n_thresholds : int
        :math:`l - 1`.

    Raises
    ------
    ValueError
        If the data have fewer than two distinct grades.
    """

    def __init__(self, data: RankingData) -> None:
        self.grades = np.unique(data.y)
        level = np.searchsorted(self.grades, data.y)
        self.counts = np.bincount(level, minlength=self.grades.size)
        n_levels = self.grades.size
        if n_levels < 2:
            raise ValueError(
                f"ordinal classification needs at least two distinct grades; every document "
                f"has grade {self.grades[0]:g}"
            )
        docs = np.arange(data.n_documents)
        lower = level <= n_levels - 2  # below threshold `level`
        upper = level >= 1  # above threshold `level - 1`
        doc = np.concatenate([docs[lower], docs[upper]])
        threshold = np.concatenate([level[lower], level[upper] - 1])
        sign = np.concatenate([-np.ones(lower.sum()), np.ones(upper.sum())])
        order = np.lexsort((doc, sign, threshold))
        self.doc, self.threshold, self.sign = doc[order], threshold[order], sign[order]
        m = self.doc.size
        self.M = sp.csr_matrix((self.sign, (np.arange(m), self.doc)),
                               shape=(m, data.n_documents))
        self.MX = self.M @ data.X
        self.n_thresholds = n_levels - 1

    @property
    def n_rows(self) -> int:
        """Number of hinge rows m (dual variables)."""
        return int(self.doc.size)

    def threshold_matrix(self) -> sp.csr_matrix:
        """m x (l-1) matrix with ``[k, threshold[k]] = sign[k]``."""
        return sp.csr_matrix((self.sign, (np.arange(self.n_rows), self.threshold)),
                             shape=(self.n_rows, self.n_thresholds))

    def document_coefficients(self, alpha: np.ndarray) -> np.ndarray:
        """``M^T alpha``: per document, the signed sum of its rows' multipliers (length n)."""
        return np.bincount(self.doc, weights=self.sign * np.asarray(alpha, dtype=np.float64),
                           minlength=self.M.shape[1])

    def rows_of(self, r: int, sign: float) -> np.ndarray:
        """Documents of threshold ``r`` (0-based) on side ``sign``."""
        return self.doc[(self.threshold == r) & (self.sign == sign)]


def grades_from_scores(scores: np.ndarray, thresholds: np.ndarray,
                       grades: np.ndarray) -> np.ndarray:
    r"""Li's prediction rule: the smallest :math:`r` with :math:`s - b_r < 0` (:math:`l` if none).

    Parameters
    ----------
    scores : array of shape (n,)
        :math:`s = \langle w, x \rangle`.
    thresholds : array of shape (l-1,)
        :math:`b_1 .. b_{l-1}`, in any order: the rule reads them left to right, so it is
        defined (and returns a grade) even when they are not increasing; for increasing
        thresholds it equals :math:`1 + \#\{r : s \ge b_r\}`.
    grades : array of shape (l,)
        The grade values that :math:`1..l` stand for.

    Returns
    -------
    ndarray of shape (n,)
        Predicted grade values.
    """
    below = np.asarray(scores)[:, None] < np.asarray(thresholds)[None, :]
    level = np.where(below.any(axis=1), below.argmax(axis=1), below.shape[1])
    return np.asarray(grades)[level]


def _smallest_minimizer(slope: float, weight: float, up: np.ndarray, down: np.ndarray) -> float:
    r"""Smallest minimizer of a convex piecewise-linear function of one variable.

    .. math::

        f(t) = \text{slope}\cdot t + \text{weight}\,\Big(\sum_{p \in \text{up}} (t - p)_+
               + \sum_{q \in \text{down}} (q - t)_+\Big), \qquad \text{weight} > 0.

    Its right derivative :math:`f'_+(t) = \text{slope} + \text{weight}\,(\#\{p \le t\} -
    \#\{q > t\})` is a non-decreasing step function that changes only at the breakpoints, so
    the smallest minimizer is the smallest breakpoint with :math:`f'_+ \ge 0`: found by
    sorting and two ``searchsorted`` calls, :math:`O(k \log k)`. Returns :math:`-\infty`
    (:math:`+\infty`) when :math:`f` decreases without bound to the left (right).
    """
    if slope - weight * down.size > 0:
        return -np.inf
    if slope + weight * up.size < 0:
        return np.inf
    up, down = np.sort(up), np.sort(down)
    candidates = np.unique(np.concatenate([up, down]))
    n_up_le = np.searchsorted(up, candidates, side="right")
    n_down_gt = down.size - np.searchsorted(down, candidates, side="right")
    ok = slope + weight * (n_up_le - n_down_gt) >= 0
    return float(candidates[int(np.argmax(ok))])


class OrdinalModel(ABC):
    """What the two OC SVMs share as models: grades cut from the score by thresholds.

    A subclass has ``grades`` (the grade values, increasing), ``split`` and
    :meth:`thresholds` of its primal point.
    """

    grades: np.ndarray

    @abstractmethod
    def thresholds(self, theta: np.ndarray) -> np.ndarray:
        """The score thresholds between consecutive grades (increasing)."""

    def predict_grades(self, theta: np.ndarray, X: np.ndarray | sp.spmatrix) -> np.ndarray:
        """Predicted grade values of the rows of ``X`` (:func:`grades_from_scores`)."""
        w = self.split(theta)[0]  # type: ignore[attr-defined]
        return grades_from_scores(np.asarray(X @ w), self.thresholds(theta), self.grades)

    def model_arrays(self, w: np.ndarray) -> dict[str, Any]:
        """The weights, the thresholds and the grades they separate."""
        return {"w": self.split(w)[0], "thresholds": self.thresholds(w),  # type: ignore[attr-defined]
                "grades": self.grades}

    def test_report(self, w: np.ndarray, data: RankingData) -> dict[str, float]:
        """``grade_accuracy`` and ``grade_mae`` of the predicted grades on ``data``."""
        d = self.split(w)[0].size  # type: ignore[attr-defined]
        grades = self.predict_grades(w, data.pad_features(d).X)
        return {"grade_accuracy": float(np.mean(grades == data.y)),
                "grade_mae": float(np.mean(np.abs(grades - data.y)))}


class OrdinalSVM(OrdinalModel, ProjectableDual, LossWeighted):
    r"""OC SVM with a fixed margin (Shashua & Levin 2002; Li 2011, Sect. 3.1).

    With grades :math:`1..l`, documents :math:`x_{r,i}` of grade :math:`r`
    (:math:`i = 1..m_r`) and thresholds :math:`b_1..b_{l-1}`, the primal is

    .. math::

        \min_{w, b, \xi, \xi^*}\ \tfrac12 \|w\|^2 + C \sum_{r=1}^{l-1} \Big(
            \sum_{i=1}^{m_r} \xi_{r,i} + \sum_{i=1}^{m_{r+1}} \xi^*_{r+1,i} \Big)

        \text{s.t.}\quad \langle w, x_{r,i} \rangle - b_r \le -1 + \xi_{r,i}, \quad
        \langle w, x_{r+1,i} \rangle - b_r \ge 1 - \xi^*_{r+1,i}, \quad
        \xi, \xi^* \ge 0,

    i.e. :math:`P(w, b) = \tfrac12\|w\|^2 + C \sum_k (1 - \sigma_k(\langle w, x_{i(k)}
    \rangle - b_{r(k)}))_+` over the m hinge rows :math:`k` of the module docstring
    (:math:`\sigma_k = -1` for grade :math:`r(k)`, :math:`+1` for grade :math:`r(k) + 1`).
    **The survey's printed QP has sign slips** (``<w, x_{r,i}> + b_r >= 1 - xi`` and
    ``<w, x_{r+1,i}> + b_r <= 1 - xi*`` would rank grade r above grade r+1 with no margin,
    and its inner sum runs to :math:`m_r` for the grade-(r+1) slacks); this is the consistent
    fixed-margin QP of Shashua & Levin, Sect. 3, with the survey's prediction rule.

    Lagrange dual (multipliers :math:`\alpha_k` of the hinge rows; derived from
    :math:`L = P - \sum_k \alpha_k(\sigma_k(\langle w, x_{i(k)}\rangle - b_{r(k)}) - 1 +
    \xi_k) - \sum_k \nu_k \xi_k`):

    .. math::

        \max_\alpha\ D(\alpha) = \sum_k \alpha_k - \tfrac12 \|X^\top M^\top \alpha\|^2
        \quad \text{s.t.}\quad 0 \le \alpha_k \le C, \qquad
        \sum_{i=1}^{m_r} \alpha_{r,i} = \sum_{i=1}^{m_{r+1}} \alpha^*_{r+1,i}
        \ \ (r = 1..l-1),

    with :math:`X^\top M^\top \alpha = \sum_k \sigma_k \alpha_k x_{i(k)} =
    \sum_{r} (\sum_i \alpha^*_{r+1,i} x_{r+1,i} - \sum_i \alpha_{r,i} x_{r,i})`. The
    equalities come from :math:`\partial L / \partial b_r = 0`, the box from
    :math:`\partial L/\partial \xi_k = C - \alpha_k - \nu_k = 0`, and stationarity in
    :math:`w` gives :math:`w(\alpha) = X^\top M^\top \alpha`.

    The thresholds are **not constrained to be ordered**: on data where adjacent grades
    overlap much, the optimum can have :math:`b_r > b_{r+1}` (Chu & Keerthi 2005, who add
    explicit or implicit order constraints to fix this). :meth:`predict_grades` uses the
    survey's rule "smallest :math:`r` with :math:`\langle w, x\rangle - b_r < 0`", which is
    defined for any thresholds (:func:`grades_from_scores`).

    The primal point :math:`\theta` of :meth:`primal_value` and :meth:`primal_from_dual` is
    the concatenation :math:`(w, b)` of length :math:`d + l - 1`.

    Parameters
    ----------
    data : RankingData
        Training data; grades are the distinct values of ``data.y`` (at least two).
    C : float
        Loss weight, finite and > 0 (a ``cp.Parameter``; change it with :meth:`set_params`).
        It multiplies a sum over the m hinge rows (about twice the number of documents), so
        ``C * m`` of order 1 to 100 is the natural range.

    Attributes
    ----------
    name : str
        ``"ocsvm-fixed"``.
    grades : ndarray of shape (l,)
        The grade values, increasing.
    n_thresholds : int
        :math:`l - 1`.
    dual_set : BoxEqualSums
        The dual feasible set, from which :meth:`project_dual`, :meth:`dual_infeasibility`
        and the constraints of :meth:`dual` come.
    capabilities : frozenset of str
        ``dual_gradient``.

    Raises
    ------
    ValueError
        For C not finite and > 0, or data with fewer than two distinct grades.

    References
    ----------
    .. [1] H. Li, "A Short Introduction to Learning to Rank", IEICE Trans. Inf. & Syst.,
       E94-D(10), 2011, Sect. 3.1 (SVM for ordinal classification).
    .. [2] A. Shashua and A. Levin, "Ranking with large margin principle: two approaches",
       Advances in Neural Information Processing Systems 15 (NIPS 2002), Sect. 3
       (fixed-margin strategy).
    .. [3] W. Chu and S. S. Keerthi, "New approaches to support vector ordinal regression",
       ICML 2005 (unordered thresholds of the fixed-margin solution).
    """

    #: The row of :data:`cvxrank.methods.METHODS` whose solvers ``"auto"`` tries.
    method = "ocsvm"

    name = "ocsvm-fixed"
    capabilities = frozenset({"dual_gradient"})

    def __init__(self, data: RankingData, *, C: float = 1.0) -> None:
        super().__init__(data, C=C)
        self._rows = HingeRows(data)
        self.grades = self._rows.grades
        self.n_thresholds = self._rows.n_thresholds
        self._gram_top: float | None = None

    @cached_property
    def dual_set(self) -> BoxEqualSums:
        """Per threshold, ``0 <= alpha <= C`` and the sum of the grade-r multipliers equal to
        the sum of the grade-(r+1) ones (:class:`~cvxrank.numerics.sets.BoxEqualSums`)."""
        rows = self._rows
        return BoxEqualSums(rows.threshold, rows.sign, 1.0, scale=self.hyper_parameter("C"))

    @property
    def n_dual(self) -> int:
        """Number of dual variables: the hinge rows m."""
        return self._rows.n_rows

    # -- CVXPY reference ----------------------------------------------------------------
    def _build_primal(self) -> cp.Problem:
        import cvxpy as cp

        rows = self._rows
        w, b = self.weight_variable, self.threshold_variable
        slack = cp.pos(1.0 - rows.MX @ w + rows.threshold_matrix() @ b)
        objective = 0.5 * cp.sum_squares(w) + self.parameter("C") * cp.sum(slack)
        return cp.Problem(cp.Minimize(objective))

    def _build_dual(self) -> cp.Problem:
        import cvxpy as cp

        alpha = self.alpha_variable
        objective = cp.sum(alpha) - 0.5 * cp.sum_squares(self._rows.MX.T @ alpha)
        return cp.Problem(cp.Maximize(objective), self.dual_set.constraints(alpha))

    @property
    def w_variable(self) -> cp.Expression:
        """The primal point ``theta = (w, b)`` of :meth:`primal`, as an expression."""
        import cvxpy as cp

        return cp.hstack([self.weight_variable, self.threshold_variable])

    @property
    def weight_variable(self) -> cp.Variable:
        """The weights ``w`` (length d) of :meth:`primal`."""
        return self._variable("w", self.data.n_features)

    @property
    def threshold_variable(self) -> cp.Variable:
        """The thresholds ``b`` (length l-1) of :meth:`primal`."""
        return self._variable("b", self.n_thresholds)

    @property
    def alpha_variable(self) -> cp.Variable:
        """The hinge-row multipliers ``alpha`` (length m) of :meth:`dual`."""
        return self._variable("alpha", self.n_dual)

    @property
    def rows(self) -> HingeRows:
        """The hinge rows (document, threshold and sign of each dual variable)."""
        return self._rows

    # -- numpy evaluators ---------------------------------------------------------------
    def split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(w, b)`` from ``theta``."""
        theta = np.asarray(theta, dtype=np.float64)
        d = self.data.n_features
        if theta.shape != (d + self.n_thresholds,):
            raise ValueError(f"theta must have shape ({d + self.n_thresholds},) = (d + l - 1,), "
                             f"got {theta.shape}")
        return theta[:d], theta[d:]

    def slacks(self, theta: np.ndarray) -> np.ndarray:
        """Hinge residuals ``max(0, 1 - sigma_k (<w, x_i(k)> - b_r(k)))`` of the m rows."""
        w, b = self.split(theta)
        rows = self._rows
        scores = self.data.X @ w
        return np.maximum(1.0 - rows.sign * (scores[rows.doc] - b[rows.threshold]), 0.0)

    def primal_value(self, w: np.ndarray) -> float:
        """P(theta) for ``theta = (w, b)``, see the class docstring."""
        weights, _ = self.split(w)
        return float(0.5 * (weights @ weights) + self.C * self.slacks(w).sum())

    def weights_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """w(alpha) = X^T M^T alpha."""
        return np.asarray(self.data.X.T @ self._rows.document_coefficients(alpha))

    def optimal_thresholds(self, w: np.ndarray) -> np.ndarray:
        r"""The exact minimizer :math:`b^*(w)` of the primal over :math:`b` for fixed ``w``.

        Each :math:`b_r` minimizes the convex piecewise-linear
        :math:`\sum_{i \le m_r} (1 + s_{r,i} - b)_+ + \sum_{i \le m_{r+1}} (b - s_{r+1,i} +
        1)_+` (:math:`s = \langle w, x \rangle`); the smallest minimizer is found by sorting
        the breakpoints (:func:`_smallest_minimizer`), :math:`O(n \log n)` in all.
        """
        rows = self._rows
        scores = self.data.X @ np.asarray(w, dtype=np.float64)
        return np.array([
            _smallest_minimizer(0.0, 1.0, up=scores[rows.rows_of(r, 1.0)] - 1.0,
                                down=scores[rows.rows_of(r, -1.0)] + 1.0)
            for r in range(self.n_thresholds)
        ])

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """``theta = (w(alpha), b*(w(alpha)))`` (see :meth:`optimal_thresholds`)."""
        w = self.weights_from_dual(alpha)
        return np.concatenate([w, self.optimal_thresholds(w)])

    def dual_value(self, alpha: np.ndarray) -> float:
        """D(alpha), the dual formula evaluated as is (feasible or not)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        w = self.weights_from_dual(alpha)
        return float(alpha.sum() - 0.5 * (w @ w))

    def thresholds(self, theta: np.ndarray) -> np.ndarray:
        """The thresholds :math:`b_r` between consecutive grades."""
        return self.split(theta)[1]

    # -- capabilities of the fast dual solvers ------------------------------------------
    def neg_dual_grad(self, alpha: np.ndarray) -> np.ndarray:
        """Gradient of -D at ``alpha``: ``M X X^T M^T alpha - 1``."""
        rows = self._rows
        scores = self.data.X @ self.weights_from_dual(alpha)
        return rows.sign * scores[rows.doc] - 1.0

    def dual_lipschitz(self) -> float:
        """A Lipschitz constant of :meth:`neg_dual_grad`.

        ``lambda_max(M X X^T M^T) = lambda_max(X^T diag(c) X)`` (``M^T M = diag(c)``, c the
        number of hinge rows of each document), computed once by
        :func:`~cvxrank.formulations.base.squared_operator_norm`.
        """
        if self._gram_top is None:
            self._gram_top = squared_operator_norm(self.data.X, self._rows.M)
        return self._gram_top

    def dual_strong_convexity(self) -> float:
        """0: the dual Hessian ``M X X^T M^T`` has rank at most d < m in general."""
        return 0.0

    def dual_start(self) -> np.ndarray:
        """A feasible starting point (zeros)."""
        return np.zeros(self._rows.n_rows)


class OrdinalSVMSumOfMargins(OrdinalModel, LossWeighted):
    r"""OC SVM with the sum-of-margins principle (Shashua & Levin 2002, Sect. 4).

    Each gap between grades :math:`r` and :math:`r+1` has two thresholds
    :math:`a_r \le b_r`: grade-:math:`r` documents should score at most :math:`a_r`, grade
    :math:`r+1` documents at least :math:`b_r`, and the margins :math:`b_r - a_r` are summed
    and maximized with :math:`\|w\| \le 1`. Implemented primal (a second-order cone program):

    .. math::

        \min_{w, a, b, \xi, \xi^*}\ \sum_{r=1}^{l-1} (a_r - b_r) + C \sum_{r=1}^{l-1} \Big(
            \sum_{i=1}^{m_r} \xi_{r,i} + \sum_{i=1}^{m_{r+1}} \xi^*_{r+1,i} \Big)

        \text{s.t.}\quad \langle w, x_{r,i} \rangle \le a_r + \xi_{r,i}, \quad
        \langle w, x_{r+1,i} \rangle \ge b_r - \xi^*_{r+1,i}, \quad \xi, \xi^* \ge 0,

        a_r \le b_r \ (r = 1..l-1), \qquad b_r \le a_{r+1} \ (r = 1..l-2), \qquad
        \|w\|_2 \le 1,

    i.e. :math:`P(w, a, b) = \sum_r (a_r - b_r) + C \sum_r \big(\sum_i (s_{r,i} - a_r)_+ +
    \sum_i (b_r - s_{r+1,i})_+\big)` on the feasible set, :math:`s = \langle w, x\rangle`.
    The chain :math:`a_1 \le b_1 \le a_2 \le \dots \le b_{l-1}` keeps the thresholds ordered
    (Shashua & Levin's constraints); for :math:`l = 2` the problem reduces to a
    :math:`\nu`-SVM, as they note.

    Lagrange dual. With multipliers :math:`\alpha_{r,i}, \alpha^*_{r+1,i} \in [0, C]` of the
    hinge rows (the vector :math:`\alpha` in the row order of the module docstring),
    :math:`\gamma_r \ge 0` of :math:`a_r \le b_r`, :math:`\delta_r \ge 0` of
    :math:`b_r \le a_{r+1}` (:math:`\delta_0 = \delta_{l-1} = 0`) and :math:`\eta \ge 0` of
    :math:`\|w\| \le 1`, stationarity in :math:`a_r` and :math:`b_r` gives
    :math:`A_r := \sum_i \alpha_{r,i} = 1 + \gamma_r - \delta_{r-1}` and
    :math:`B_r := \sum_i \alpha^*_{r+1,i} = 1 + \gamma_r - \delta_r`, and minimizing
    :math:`\eta \|w\| - \langle w, X^\top M^\top \alpha\rangle` over :math:`w` gives
    :math:`\eta \ge \|X^\top M^\top \alpha\|`, so

    .. math::

        \max_{\alpha, \gamma, \delta}\ D(\alpha) = -\|X^\top M^\top \alpha\|_2
        \quad \text{s.t.}\quad 0 \le \alpha \le C, \quad \gamma, \delta \ge 0, \quad
        A_r = 1 + \gamma_r - \delta_{r-1}, \quad B_r = 1 + \gamma_r - \delta_r.

    :math:`\gamma` and :math:`\delta` are eliminated: with partial sums
    :math:`P_r = \sum_{j \le r} (A_j - B_j)` (:math:`P_0 = 0`), :math:`\delta_r = P_r` and
    :math:`\gamma_r = P_{r-1} + A_r - 1`, so the implemented dual, over :math:`\alpha`
    alone, is

    .. math::

        \max_\alpha\ -\|X^\top M^\top \alpha\|_2 \quad \text{s.t.}\quad
        0 \le \alpha \le C,\quad P_r \ge 0 \ (r < l-1),\quad P_{l-1} = 0,\quad
        P_{r-1} + A_r \ge 1 \ (r = 1..l-1),

    with :math:`w(\alpha) = X^\top M^\top \alpha / \|X^\top M^\top \alpha\|`. The optimum is
    :math:`p^* = d^* \le 0` (:math:`w = 0, a = b = 0` is feasible with value 0).

    **Range of C.** Lowering :math:`a_1` (raising :math:`b_{l-1}`) by :math:`t` gains
    :math:`t` and costs at most :math:`C m_1 t` (:math:`C m_l t`), so the primal is
    unbounded when :math:`C \min(m_1, m_l) < 1`, and the dual (which needs :math:`A_1 \ge 1`
    and :math:`B_{l-1} \ge 1`) has no strictly feasible point at equality; C must satisfy
    :math:`C \min(m_1, m_l) > 1`.

    **Trivial regime.** The objective is positively homogeneous in :math:`(w, a, b)`, so
    either :math:`p^* < 0` with :math:`\|w^*\| = 1`, or :math:`p^* = 0` and :math:`w = 0`,
    :math:`a = b = 0` is optimal. The second happens when C is large against the sizes of the
    middle grades (a margin there costs more in slacks than it gains), e.g. on data whose
    top grade is rare, since C must also exceed :math:`1/\min(m_1, m_l)`; then the dual
    determines no direction and :math:`w(\alpha)` is only as meaningful as the rounding in
    :math:`X^\top M^\top \alpha`.

    The primal point :math:`\theta` is the concatenation :math:`(w, a, b)` of length
    :math:`d + 2(l - 1)`. No fast solver uses this formulation; :meth:`primal_from_dual`
    (exact thresholds for :math:`w(\alpha)`) lets the reference be cross-checked.

    Parameters
    ----------
    data : RankingData
        Training data; grades are the distinct values of ``data.y`` (at least two).
    C : float
        Loss weight: finite, > 0 and with ``C * min(m_1, m_l) > 1`` (a ``cp.Parameter``).

    Attributes
    ----------
    name : str
        ``"ocsvm-sum-margins"``.
    grades : ndarray of shape (l,)
    n_thresholds : int
        :math:`l - 1` (gaps; there are :math:`2(l-1)` thresholds).

    Raises
    ------
    ValueError
        For C not finite, not > 0 or with ``C * min(m_1, m_l) <= 1``, or data with fewer
        than two distinct grades.

    Notes
    -----
    Clarabel, at the reference settings of :data:`cvxrank.certificates.reference.SOLVER_OPTIONS`
    (feasibility 1e-10), solves the primal to ``optimal`` but usually stops at
    ``optimal_inaccurate`` on this dual (its primal residual stalls near 1e-9 as the
    barrier parameter goes to 0; the QP ``max -||X^T M^T alpha||^2 / 2`` over the same set
    does not have the problem), with a dual value still correct to about 1e-10. ECOS
    certifies both: use ``solve_reference(f, "ECOS")`` for this formulation.

    References
    ----------
    .. [1] H. Li, "A Short Introduction to Learning to Rank", IEICE Trans. Inf. & Syst.,
       E94-D(10), 2011, Sect. 3.1 (footnote: "the other method maximizes the sum of all
       margins").
    .. [2] A. Shashua and A. Levin, "Ranking with large margin principle: two approaches",
       Advances in Neural Information Processing Systems 15 (NIPS 2002), Sect. 4
       (sum-of-margins strategy).
    """

    #: The row of :data:`cvxrank.methods.METHODS` whose solvers ``"auto"`` tries.
    method = "ocsvm"

    name = "ocsvm-sum-margins"
    strong_convexity = 0.0  # a linear objective over ||w|| <= 1: no model radius
    #: Clarabel stops at ``optimal_inaccurate`` on this dual; ECOS certifies it.
    reference_solver = "ECOS"

    @property
    def gap_floor(self) -> float:
        """``(l - 1) max_i ||x_i||``: the objective sums l - 1 margins between scores of a
        unit-norm w, each at most the largest document norm, and can be 0 at the optimum."""
        return float((self.grades.size - 1) * largest_row_norm(self.data.X))

    def __init__(self, data: RankingData, *, C: float = 1.0) -> None:
        self._rows = HingeRows(data)  # before C is checked: the check needs the grade counts
        super().__init__(data, C=C)
        self.grades = self._rows.grades
        self.n_thresholds = self._rows.n_thresholds
        l1 = self.n_thresholds
        # rows k: lower-grade rows see a_r, upper-grade rows see b_r (signs of M)
        lower = self._rows.sign < 0
        r = self._rows.threshold
        self._lower_of = sp.csr_matrix((np.where(lower, -1.0, 0.0), (np.arange(r.size), r)),
                                       shape=(r.size, l1))
        self._upper_of = sp.csr_matrix((np.where(lower, 0.0, 1.0), (np.arange(r.size), r)),
                                       shape=(r.size, l1))

    def _check_param(self, key: str, value: float) -> None:
        super()._check_param(key, value)
        extreme = int(min(self._rows.counts[0], self._rows.counts[-1]))
        if not value * extreme > 1:
            raise ValueError(
                f"C * min(m_1, m_l) must exceed 1 (else the sum-of-margins primal is unbounded "
                f"or its dual not strictly feasible); the lowest and highest grades have "
                f"{self._rows.counts[0]} and {self._rows.counts[-1]} documents, so C must be "
                f"> {1.0 / extreme:g}, got {value}"
            )

    @property
    def n_dual(self) -> int:
        """Number of dual variables: the hinge rows m."""
        return self._rows.n_rows

    # -- CVXPY reference ----------------------------------------------------------------
    def _build_primal(self) -> cp.Problem:
        import cvxpy as cp

        rows = self._rows
        w = self.weight_variable
        a, b = self.threshold_variables
        # lower rows: s - a_r = -(M X w)_k - a_r; upper rows: b_r - s = -(M X w)_k + b_r
        slack = cp.pos(self._lower_of @ a + self._upper_of @ b - rows.MX @ w)
        objective = cp.sum(a - b) + self.parameter("C") * cp.sum(slack)
        constraints = [cp.norm(w, 2) <= 1, a <= b]
        if self.n_thresholds > 1:
            constraints.append(b[:-1] <= a[1:])
        return cp.Problem(cp.Minimize(objective), constraints)

    def _dual_maps(self) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        """(l-1) x m matrices mapping ``alpha`` to ``P_r`` and to ``P_{r-1} + A_r``."""
        rows = self._rows
        k, l1 = np.arange(rows.n_rows), self.n_thresholds
        first = sp.csr_matrix(((rows.sign < 0).astype(float), (rows.threshold, k)),
                              shape=(l1, rows.n_rows))  # A_r
        diff = sp.csr_matrix((-rows.sign, (rows.threshold, k)),
                             shape=(l1, rows.n_rows))  # A_r - B_r
        partial = sp.csr_matrix(np.tril(np.ones((l1, l1)))) @ diff  # P_r
        shift = sp.eye(l1, k=-1, format="csr")  # row r picks P_{r-1} (P_0 = 0)
        return partial.tocsr(), (first + shift @ partial).tocsr()

    @cached_property
    def _box(self) -> Box:
        """The box ``0 <= alpha <= C`` of the dual (its other constraints couple the rows)."""
        return Box(0.0, 1.0, scale=self.hyper_parameter("C"))

    def _build_dual(self) -> cp.Problem:
        import cvxpy as cp

        partial, shifted = self._dual_maps()
        alpha = self.alpha_variable
        constraints = [*self._box.constraints(alpha), partial[-1] @ alpha == 0,
                       shifted @ alpha >= 1]
        if self.n_thresholds > 1:
            constraints.append(partial[:-1] @ alpha >= 0)
        objective = -cp.norm(self._rows.MX.T @ alpha, 2)
        return cp.Problem(cp.Maximize(objective), constraints)

    @property
    def w_variable(self) -> cp.Expression:
        """The primal point ``theta = (w, a, b)`` of :meth:`primal`, as an expression."""
        import cvxpy as cp

        return cp.hstack([self.weight_variable, *self.threshold_variables])

    @property
    def weight_variable(self) -> cp.Variable:
        """The weights ``w`` (length d) of :meth:`primal`."""
        return self._variable("w", self.data.n_features)

    @property
    def threshold_variables(self) -> tuple[cp.Variable, cp.Variable]:
        """The thresholds ``(a, b)`` (each of length l-1) of :meth:`primal`."""
        return self._variable("a", self.n_thresholds), self._variable("b", self.n_thresholds)

    @property
    def alpha_variable(self) -> cp.Variable:
        """The hinge-row multipliers ``alpha`` (length m) of :meth:`dual`."""
        return self._variable("alpha", self.n_dual)

    @property
    def rows(self) -> HingeRows:
        """The hinge rows (document, threshold and sign of each dual variable)."""
        return self._rows

    # -- numpy evaluators ---------------------------------------------------------------
    def split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(w, a, b)`` from ``theta``."""
        theta = np.asarray(theta, dtype=np.float64)
        d, l1 = self.data.n_features, self.n_thresholds
        if theta.shape != (d + 2 * l1,):
            raise ValueError(f"theta must have shape ({d + 2 * l1},) = (d + 2(l - 1),), got "
                             f"{theta.shape}")
        return theta[:d], theta[d:d + l1], theta[d + l1:]

    def slacks(self, theta: np.ndarray) -> np.ndarray:
        """Hinge residuals: ``(s - a_r)_+`` (lower-grade rows), ``(b_r - s)_+`` (upper)."""
        w, a, b = self.split(theta)
        rows = self._rows
        s = (self.data.X @ w)[rows.doc]
        target = np.where(rows.sign < 0, a[rows.threshold], b[rows.threshold])
        return np.maximum(rows.sign * (target - s), 0.0)

    def primal_value(self, w: np.ndarray) -> float:
        """P(theta) for ``theta = (w, a, b)``: the objective formula, feasible or not.

        The hard constraints (``||w|| <= 1`` and the threshold chain) are measured
        separately by :meth:`primal_infeasibility`.
        """
        _, a, b = self.split(w)
        return float((a - b).sum() + self.C * self.slacks(w).sum())

    def primal_infeasibility(self, theta: np.ndarray) -> float:
        """Largest violation of ``||w|| <= 1`` and ``a_1 <= b_1 <= a_2 <= ... <= b_{l-1}``."""
        w, a, b = self.split(theta)
        chain = np.column_stack([a, b]).ravel()
        return max(0.0, float(np.linalg.norm(w) - 1.0), float(-np.diff(chain).min()))

    def weights_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """``X^T M^T alpha`` scaled to unit norm (0 if it vanishes)."""
        v = np.asarray(self.data.X.T @ self._rows.document_coefficients(alpha))
        norm = float(np.linalg.norm(v))
        return v / norm if norm > 0 else v

    def optimal_thresholds(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r"""The exact minimizer :math:`(a^*, b^*)` of the primal over the thresholds, w fixed.

        With :math:`t = (a_1, b_1, a_2, \dots, b_{l-1})` the problem is
        :math:`\min \sum_j f_j(t_j)` s.t. :math:`t_1 \le \dots \le t_{2l-2}`, with convex
        piecewise-linear :math:`f_j` (:math:`a_r + C\sum_i (s_{r,i} - a_r)_+` and
        :math:`-b_r + C \sum_i (b_r - s_{r+1,i})_+`): pool adjacent violators, each pool at
        the smallest minimizer of the sum of its functions (:func:`_smallest_minimizer`).
        """
        rows = self._rows
        scores = self.data.X @ np.asarray(w, dtype=np.float64)
        # chain element j: (slope, up breakpoints, down breakpoints)
        pieces = []
        for r in range(self.n_thresholds):
            empty = np.empty(0)
            pieces.append((1.0, empty, scores[rows.rows_of(r, -1.0)]))
            pieces.append((-1.0, scores[rows.rows_of(r, 1.0)], empty))
        pools: list[list] = []  # [first element, size, slope, ups, downs, value]
        for j, (slope, up, down) in enumerate(pieces):
            pools.append([j, 1, slope, up, down, _smallest_minimizer(slope, self.C, up, down)])
            while len(pools) > 1 and pools[-2][5] > pools[-1][5]:
                right = pools.pop()
                left = pools[-1]
                left[1] += right[1]
                left[2] += right[2]
                left[3] = np.concatenate([left[3], right[3]])
                left[4] = np.concatenate([left[4], right[4]])
                left[5] = _smallest_minimizer(left[2], self.C, left[3], left[4])
        chain = np.concatenate([np.full(pool[1], pool[5]) for pool in pools])
        return chain[0::2], chain[1::2]

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """``theta = (w(alpha), a*, b*)`` with the exact thresholds for ``w(alpha)``."""
        w = self.weights_from_dual(alpha)
        a, b = self.optimal_thresholds(w)
        return np.concatenate([w, a, b])

    def dual_value(self, alpha: np.ndarray) -> float:
        """D(alpha) = -||X^T M^T alpha||, evaluated as is (feasible or not)."""
        return -float(np.linalg.norm(self.data.X.T @ self._rows.document_coefficients(alpha)))

    def dual_infeasibility(self, alpha: np.ndarray) -> float:
        """Largest violation of the constraints of the implemented dual (class docstring)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        partial, shifted = (op @ alpha for op in self._dual_maps())
        return max(self._box.violation(alpha), float(-partial[:-1].min(initial=0.0)),
                   abs(float(partial[-1])), float((1.0 - shifted).max()))

    def thresholds(self, theta: np.ndarray) -> np.ndarray:
        """Each gap's middle ``(a_r + b_r) / 2``, where grades are cut."""
        _, a, b = self.split(theta)
        return 0.5 * (a + b)
