"""RankSVM: the pairwise hinge, squared-hinge or Huber ranking SVM, with pair weights and margins.

One class covers the Ranking SVM QP of Herbrich et al. as stated by Li (2011), Sect. 4.1, the
squared-hinge RankSVM of Chapelle & Keerthi (2010), eq. (1), their Huber loss (Sect. 4.1),
and, through weights and margins, IR SVM's cost-sensitive loss (Li 2011, Sect. 4.2: ``c_k =
tau_k mu_q``), query normalization and relevance-dependent margins (margin and slack
rescaling, Chapelle & Keerthi 2010, Sect. 6.2).

Weights and margins come in two forms:

* **structured**: a weight per query times a weight per pair of grades, and a margin per pair
  of grades (``query_weight``, ``level_weight``, ``level_margin``). The pairwise loss is then
  evaluated in O(n log n) by :class:`~cvxrank.formulations.pair_losses.SortedPairLoss`
  (PRSVM+) and the preference pairs are built only when something needs them (the CVXPY
  problems, the dual solvers, PRSVM);
* **explicit**: one weight and one margin per pair (``pair_weight``, ``margin``), evaluated
  through the sparse pair operator A.

Both the primal and the dual CVXPY problems are written over the sparse p x n difference
operator ``A`` of :class:`~cvxrank.data.pairs.PairSet`, so that the problem data stay
O(nd + p) nonzeros: CVXPY folds products of constant matrices, so ``A @ (X @ w)`` would become
a dense p x d block. The primal therefore carries the document scores ``s = X w`` as an
auxiliary variable and the dual the document coefficients ``u = A^T alpha``.

:class:`PairwiseSVM` holds what does not depend on how documents are scored (pairs, weights,
margins, loss, C, the dual set and the CVXPY problems up to the score map); :class:`RankSVM`
scores with ``X w`` and :class:`~cvxrank.formulations.kernel_ranksvm.KernelRankSVM` with
``K beta``. CVXPY is imported only when a CVXPY problem or variable is asked for.
"""

from __future__ import annotations

import hashlib
import math
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank.data.pairs import DEFAULT_MAX_PAIRS, PairSet, build_pairs, count_pairs
from cvxrank.data.ranking_data import RankingData, largest_distance_to_mean, squared_distances
from cvxrank.formulations.base import (
    LossWeighted,
    ProjectableDual,
    largest_row_norm,
    no_pairs_error,
    squared_operator_norm,
)
from cvxrank.formulations.pair_losses import ExplicitPairLoss, LossEvaluation, SortedPairLoss
from cvxrank.losses import PairLoss, Ramp, ramp_of
from cvxrank.numerics import compensated, rounding
from cvxrank.numerics.rounding import LossRounding
from cvxrank.numerics.sets import Box
from cvxrank.utils.lazy_sparse import sp

if TYPE_CHECKING:
    import cvxpy as cp

#: A pair loss: a :class:`~cvxrank.losses.PairLoss` or the name of a built-in one.
Loss = str | PairLoss

#: A value per pair of grades: a mapping ``{(higher_grade, lower_grade): value}`` or a
#: function ``value(higher_grade, lower_grade)``.
GradeTable = Mapping[tuple[float, float], float] | Callable[[float, float], float]

#: Pairwise loss engines: ``"sorted"`` (PRSVM+, no pairs), ``"pairs"`` (PRSVM, operator A).
ENGINES = ("sorted", "pairs")


@dataclass(frozen=True)
class MarginBand:
    r"""The pairs of a hinge RankSVM near their margin at a point w, and sums over the others.

    With :math:`d_k = x_i - x_j` and :math:`t_k = w^\top d_k - m_k`, a ball
    :math:`\|w^* - w\| \le r` around the optimum puts every pair with :math:`t_k < -r
    \|d_k\|` below its margin at :math:`w^*` too (so :math:`\alpha^*_k = C c_k` in the
    box dual), every pair with :math:`t_k > r \|d_k\|` above it (:math:`\alpha^*_k = 0`):
    only the band :math:`|t_k| \le r \|d_k\|` is undecided (:meth:`RankSVM.margin_band`).

    Attributes
    ----------
    radius : float
        The r of the band.
    difference : ndarray of shape (k, d)
        :math:`d_k` of the band's pairs.
    margin, weight : ndarray of shape (k,)
        Their :math:`m_k` and :math:`c_k`.
    violated_sum : ndarray of shape (d,)
        :math:`\sum_{k \in V} c_k d_k` over the pairs V below the band.
    violated_margin : float
        :math:`\sum_{k \in V} c_k m_k`.
    violated_error, violated_margin_error : float
        Bounds on the rounding of ``violated_sum`` (2-norm) and ``violated_margin``
        (:mod:`cvxrank.numerics.rounding`).
    residual_error : float
        A bound on the rounding of every pair's computed :math:`t_k` at w.
    smallest_margin : float
        The smallest :math:`|m_k|` of any pair (inf without pairs).
    """

    radius: float
    difference: np.ndarray
    margin: np.ndarray
    weight: np.ndarray
    violated_sum: np.ndarray
    violated_margin: float
    violated_error: float = 0.0
    violated_margin_error: float = 0.0
    residual_error: float = 0.0
    smallest_margin: float = math.inf


def loss_capabilities(ramp: Ramp) -> set[str]:
    """What the RankSVM objective offers for a loss of this ``ramp`` wherever its data are
    (in memory, or sharded over a cluster, :class:`cvxrank.distributed.ShardedRankSVM`): a
    subgradient of the loss (the 1-slack), the exact finish's margin band (piecewise linear),
    Newton's products and the double-word gradient (piecewise quadratic), a certificate from
    any primal point (the squared hinge, whose dual point is a function of w)."""
    capabilities = {"loss_subgradient"}
    if ramp.linear:
        capabilities.add("margin_band")
    else:
        capabilities |= {"pairwise_newton", "accurate_gradient"}
        if not ramp.capped:
            capabilities.add("primal_certificate")
    return capabilities


class PairwiseSVM(ProjectableDual, LossWeighted):
    r"""The RankSVM problem on preference pairs, whatever the model of the document scores.

    With scores :math:`s(\theta)` linear in the parameters :math:`\theta` and a squared norm
    :math:`\|\theta\|^2_G` (:class:`RankSVM`: :math:`s = X w`, :math:`\|w\|^2`;
    :class:`~cvxrank.formulations.kernel_ranksvm.KernelRankSVM`: :math:`s = K \beta`,
    :math:`\beta^\top K \beta`),

    .. math::

        P(\theta) = \tfrac12 \|\theta\|^2_G + C \sum_k c_k\, \ell\big(m_k - (A s(\theta))_k\big),
        \qquad
        D(\alpha) = m^\top \alpha - \tfrac12 q(A^\top \alpha)
        \Big[- \sum_k \frac{\alpha_k^2}{4 C c_k}\Big],

    with :math:`q(u) = u^\top G_s u` the Gram form of the scores (:math:`\|X^\top u\|^2`, or
    :math:`u^\top K u`), the ridge for the squared hinge and Huber losses, and the dual set
    :attr:`dual_set` (:class:`~cvxrank.numerics.sets.Box`): :math:`[0, C c]` (hinge), :math:`[0,
    \infty)` (squared hinge), :math:`[0, 2 \delta C c]` (Huber of width :math:`\delta`). A
    loss's knot k and scale a (:class:`~cvxrank.losses.Ramp`) are folded into the pairs: its
    margins are :math:`m_k + k - 1` and its weights :math:`a c_k`, so that :math:`\ell` is a
    unit ramp. See :class:`RankSVM` for the losses, the parameters and the references.

    Subclasses give the score map and the two quadratic forms, in CVXPY
    (:meth:`_score_expression`, :meth:`_norm_expression`, :meth:`_gram_expression`) and in
    numpy (:meth:`_gram_value`), the primal variable (:attr:`w_variable`), the map
    :meth:`primal_from_dual` and :meth:`primal_value`.
    """

    def __init__(
        self,
        data: RankingData,
        *,
        C: float,
        loss: Loss,
        pair_weight: np.ndarray | None = None,
        margin: np.ndarray | None = None,
        query_weight: np.ndarray | None = None,
        level_weight: GradeTable | None = None,
        level_margin: GradeTable | None = None,
        pairs: PairSet | None = None,
        max_pairs: int = DEFAULT_MAX_PAIRS,
    ) -> None:
        self.loss, ramp = ramp_of(loss)
        self.ramp = ramp.unit()
        super().__init__(data, C=C)
        explicit = pair_weight is not None or margin is not None
        if explicit and not (query_weight is None and level_weight is None
                             and level_margin is None):
            raise ValueError("give either explicit per-pair weights and margins (pair_weight, "
                             "margin) or structured ones (query_weight, level_weight, "
                             "level_margin), not both")
        if pairs is not None and pairs.n_documents != data.n_documents:
            raise ValueError(
                f"pairs index {pairs.n_documents} documents but the data has "
                f"{data.n_documents} documents"
            )
        # The sorted engine sums over all pairs of the data: a given subset of them must go
        # through the pair operator.
        self.structured = not explicit and (pairs is None or _all_pairs_of(pairs, data))
        p = pairs.n_pairs if pairs is not None else int(count_pairs(data).sum())
        if p == 0:
            raise no_pairs_error(data.source)
        self._n_pairs = p
        self._given_pairs = pairs
        self._max_pairs = max_pairs
        self.grades = np.unique(data.y)
        self.grade_level = np.searchsorted(self.grades, data.y)
        self.query_weight = _per_query(query_weight, data.n_queries)
        used = self._used_grade_pairs()
        # the loss's scale and knot, folded into the pairs (the class docstring)
        self.weight_table = _grade_table(level_weight, self.grades, "level_weight", 1.0,
                                         positive=True, used=used) * ramp.scale
        self.margin_table = _grade_table(level_margin, self.grades, "level_margin", 1.0,
                                         positive=False, used=used) + ramp.margin_shift
        self._pair_weight = None if pair_weight is None else _folded(_per_pair(
            pair_weight, p, "pair_weight", positive=True) * ramp.scale)
        self._margin = None if margin is None else _folded(
            _per_pair(margin, p, "margin", positive=False) + ramp.margin_shift)
        self._engines: dict[str, ExplicitPairLoss | SortedPairLoss] = {}

    def _derived_values(self) -> dict[str, float]:
        # 1/(4C), the coefficient of the squared-hinge dual's ridge term: a parameter of its
        # own keeps the dual DPP (1/C is not DPP); set_params keeps it in sync with C.
        return {"inv_4C": 0.25 / self.C}

    # -- pairs, weights and margins -----------------------------------------------------
    @cached_property
    def pairs(self) -> PairSet:
        """The preference pairs (built on first access, refused above ``max_pairs``)."""
        if self._given_pairs is not None:
            return self._given_pairs
        return build_pairs(self.data, max_pairs=self._max_pairs)

    @property
    def n_dual(self) -> int:
        """Number of dual variables: the preference pairs (counted, not built)."""
        return self._n_pairs

    def sizes(self) -> dict[str, int]:
        """``n_dual`` and ``n_pairs`` (the preference pairs)."""
        return {"n_dual": int(self.n_dual), "n_pairs": int(self._n_pairs)}

    @cached_property
    def pair_weight(self) -> np.ndarray:
        """Per-pair weights :math:`c_k` (read-only)."""
        if self._pair_weight is not None:
            return self._pair_weight
        P, lv = self.pairs, self.grade_level
        out = self.query_weight[P.query] * self.weight_table[lv[P.upper], lv[P.lower]]
        out.flags.writeable = False
        return out

    @cached_property
    def margin(self) -> np.ndarray:
        """Per-pair margins :math:`m_k` (read-only)."""
        if self._margin is not None:
            return self._margin
        lv = self.grade_level
        out = self.margin_table[lv[self.pairs.upper], lv[self.pairs.lower]]
        out.flags.writeable = False
        return out

    @property
    def _A(self) -> sp.csr_matrix:  # noqa: N802 (the paper's name)
        return self.pairs.A

    def _pair_margins(self) -> np.ndarray:
        """The margins the pairs have: per used pair of grades with structured weights, per
        pair otherwise."""
        if not self.structured:
            return np.asarray(self.margin)
        used = sorted(self._used_grade_pairs())
        return np.array([self.margin_table[hi, lo] for hi, lo in used])

    def _used_grade_pairs(self) -> set[tuple[int, int]]:
        """(higher, lower) grade levels that occur together in some query."""
        qidx, lv = self.data.query_index, self.grade_level
        present = np.zeros((self.data.n_queries, self.grades.size), dtype=bool)
        present[qidx, lv] = True
        together = present.T.astype(np.int64) @ present.astype(np.int64)
        return {(hi, lo) for hi, lo in zip(*np.nonzero(together), strict=True) if hi > lo}

    def loss_engine(self, kind: str = "auto") -> ExplicitPairLoss | SortedPairLoss:
        """The engine that evaluates the pairwise loss of document scores (cached).

        Parameters
        ----------
        kind : {"auto", "sorted", "pairs"}
            ``"sorted"``: :class:`~cvxrank.formulations.pair_losses.SortedPairLoss`
            (PRSVM+, O(n log n), no pairs; structured weights only); ``"pairs"``:
            :class:`~cvxrank.formulations.pair_losses.ExplicitPairLoss` (PRSVM, through A);
            ``"auto"``: sorted when the weights are structured, else pairs.

        Raises
        ------
        ValueError
            For an unknown kind, or ``"sorted"`` with explicit per-pair weights or margins.
        """
        if kind == "auto":
            kind = "sorted" if self.structured else "pairs"
        if kind not in ENGINES:
            raise ValueError(f"loss engine must be 'auto', 'sorted' or 'pairs'; got {kind!r}")
        if kind not in self._engines:
            if kind == "sorted":
                if not self.structured:
                    raise ValueError(
                        f"{self.name}: the O(n log n) engine (PRSVM+) needs weights of the "
                        "form query_weight x level_weight and margins per pair of grades; "
                        "explicit per-pair weights or margins need the pair engine (PRSVM)"
                    )
                self._engines[kind] = SortedPairLoss(
                    self.data.query_index, self.grade_level, self.query_weight,
                    self.weight_table, self.margin_table, self.ramp)
            else:
                self._engines[kind] = ExplicitPairLoss(self._A, self.pair_weight, self.margin,
                                                       self.ramp)
        return self._engines[kind]

    def _extra_key(self) -> str:
        h = hashlib.sha1(self.loss.fingerprint.encode())
        parts: list[np.ndarray] = []
        if self._given_pairs is not None:
            parts += [self._given_pairs.upper, self._given_pairs.lower]
        if self.structured:
            parts += [self.query_weight, self.weight_table, self.margin_table]
        else:
            parts += [self.pair_weight, self.margin]
        for part in parts:
            h.update(np.ascontiguousarray(part).tobytes())
        return h.hexdigest()[:16]

    # -- the dual feasible set ----------------------------------------------------------
    @cached_property
    def dual_set(self) -> Box:
        """``[0, C c]`` (hinge), ``[0, 2 width C c]`` (Huber) or ``[0, inf)`` (squared hinge),
        with C the formulation's hyper-parameter (a ``cp.Parameter`` in :meth:`dual`)."""
        if not (self.ramp.linear or self.ramp.capped):
            return Box(0.0, np.inf)
        factor = 1.0 if self.ramp.linear else 2.0 * self.ramp.width
        return Box(0.0, factor * self.pair_weight, scale=self.hyper_parameter("C"))

    # -- CVXPY reference ----------------------------------------------------------------
    @abstractmethod
    def _score_expression(self, theta: cp.Variable) -> cp.Expression:
        """The document scores ``s(theta)`` as a CVXPY expression."""

    @abstractmethod
    def _norm_expression(self, theta: cp.Variable) -> cp.Expression:
        """The squared norm ``||theta||^2_G`` of the primal as a CVXPY expression."""

    @abstractmethod
    def _gram_expression(self, u: cp.Variable) -> cp.Expression:
        """The dual's quadratic form ``q(u)`` of the document coefficients (CVXPY)."""

    @abstractmethod
    def _gram_value(self, alpha: np.ndarray) -> float:
        """``q(A^T alpha)`` in numpy."""

    # The weighted squares are written c @ square(.) (p small cones for the conic solvers)
    # rather than sum_squares (one cone of size p + 2): ECOS stops at optimal_inaccurate or
    # fails on the latter from about 10^4 pairs.
    def _build_primal(self) -> cp.Problem:
        import cvxpy as cp

        theta, s = self.w_variable, self.score_variable
        slack = cp.pos(self.margin - self._A @ s)
        if self.ramp.linear:
            loss = self.pair_weight @ slack
        elif not self.ramp.capped:
            loss = self.pair_weight @ cp.square(slack)
        else:
            loss = self.pair_weight @ cp.huber(slack, self.ramp.width)
        objective = 0.5 * self._norm_expression(theta) + self.parameter("C") * loss
        return cp.Problem(cp.Minimize(objective), [s == self._score_expression(theta)])

    def _build_dual(self) -> cp.Problem:
        import cvxpy as cp

        alpha, u = self.alpha_variable, self.document_variable
        objective = self.margin @ alpha - 0.5 * self._gram_expression(u)
        constraints = [u == self._A.T @ alpha, *self.dual_set.constraints(alpha)]
        if not self.ramp.linear:
            ridge = (1.0 / self.pair_weight) @ cp.square(alpha)
            objective = objective - self.parameter("inv_4C") * ridge
        return cp.Problem(cp.Maximize(objective), constraints)

    @property
    def score_variable(self) -> cp.Variable:
        """The primal's auxiliary document scores ``s = s(theta)`` (length n)."""
        return self._variable("s", self.data.n_documents)

    @property
    def alpha_variable(self) -> cp.Variable:
        """The pair multipliers ``alpha`` (length p) of :meth:`dual`."""
        return self._variable("alpha", self.n_dual)

    @property
    def document_variable(self) -> cp.Variable:
        """The dual's auxiliary document coefficients ``u = A^T alpha`` (length n)."""
        return self._variable("u", self.data.n_documents)

    # -- numpy evaluators ---------------------------------------------------------------
    def _dual_ridge(self, alpha: np.ndarray) -> float:
        """``sum_k alpha_k^2 / (4 C c_k)`` (squared hinge, Huber), 0 for the hinge."""
        if self.ramp.linear:
            return 0.0
        return float((alpha * alpha) @ (1.0 / self.pair_weight) / (4.0 * self.C))

    def dual_value(self, alpha: np.ndarray) -> float:
        """D(alpha), the dual formula evaluated as is (feasible or not)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        value = self.margin @ alpha - 0.5 * self._gram_value(alpha)
        return float(value - self._dual_ridge(alpha))

    def dual_strong_convexity(self) -> float:
        """Strong-convexity modulus of -D: 0 (hinge) or ``1/(2 C max c)`` (the others)."""
        if self.ramp.linear:
            return 0.0
        return 1.0 / (2.0 * self.C * float(self.pair_weight.max()))

    def dual_start(self) -> np.ndarray:
        """A feasible starting point (zeros)."""
        return np.zeros(self.n_dual)


class RankSVM(PairwiseSVM):
    r"""Linear RankSVM with the hinge, squared hinge or Huber loss on preference pairs.

    For the p preference pairs :math:`k = (i, j)` (:math:`y_i > y_j`, same query) with
    weights :math:`c_k > 0` and margins :math:`m_k`, :math:`A` the p x n difference operator
    (:math:`(A X w)_k = w^\top (x_i - x_j)`) and :math:`r_k = m_k - w^\top(x_i - x_j)`, the
    primal problems are

    .. math::

        P(w) = \tfrac12 \|w\|^2 + C \sum_k c_k\, \ell(r_k), \qquad
        \ell(r) = \begin{cases} \max(0, r) & \text{hinge} \\
                                \max(0, r)^2 & \text{squared hinge} \\
                                \max(0, r)^2 - \max(0, r - 1)^2 & \text{Huber}
                  \end{cases}

    (the Huber loss is 0 for r <= 0, r^2 on [0, 1] and 2r - 1 above: Chapelle & Keerthi's
    :math:`\ell_{Huber}(t)` with :math:`t = 1 - r`), and their Lagrange duals (maximized over
    :math:`\alpha \in \mathbb{R}^p`) are

    .. math::

        \text{hinge:}\quad
        D(\alpha) = m^\top \alpha - \tfrac12 \|X^\top A^\top \alpha\|^2,
        \quad 0 \le \alpha_k \le C c_k,

        \text{squared hinge:}\quad
        D(\alpha) = m^\top \alpha - \tfrac12 \|X^\top A^\top \alpha\|^2
        - \sum_k \frac{\alpha_k^2}{4 C c_k},
        \quad \alpha_k \ge 0,

        \text{Huber:}\quad \text{the squared-hinge } D(\alpha), \quad 0 \le \alpha_k \le 2 C c_k,

    with :math:`w(\alpha) = X^\top A^\top \alpha` at the optimum of each.

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
        Loss weight, finite and > 0 (a ``cp.Parameter`` in the CVXPY problems; change it with
        :meth:`set_params`).
    loss : PairLoss or {"hinge", "squared_hinge", "huber"}
        The pair loss: one of :mod:`cvxrank.losses` (a name stands for the built-in one), a
        ramp of any knot and scale (:meth:`cvxrank.losses.PairLoss.piecewise`,
        :meth:`~cvxrank.losses.PairLoss.with_margin`).
    pair_weight : array of shape (p,) or None
        Explicit per-pair weights :math:`c_k > 0`, in the pair order of
        :func:`~cvxrank.data.pairs.build_pairs`.
    margin : array of shape (p,) or None
        Explicit per-pair margins :math:`m_k`.
    query_weight : array of shape (n_queries,) or None
        Structured weights: a factor per query (e.g. IR SVM's :math:`\mu_q`).
    level_weight : mapping or callable, optional
        Structured weights: a factor per pair of grades, ``{(y_i, y_j): value}`` for every
        pair of grades y_i > y_j present in a query, or ``value(y_i, y_j)`` (slack rescaling
        by grade pair, Chapelle & Keerthi Sect. 6.2 case 2; IR SVM's :math:`\tau_k`).
    level_margin : mapping or callable, optional
        Structured margins per pair of grades (margin rescaling), in the same forms.
    pairs : PairSet or None
        The preference pairs (default: ``build_pairs(data, max_pairs=max_pairs)``, built when
        first needed).
    max_pairs : int
        Refusal limit passed to :func:`~cvxrank.data.pairs.build_pairs`.

    Attributes
    ----------
    name : str
        ``"ranksvm-<loss name>"``.
    pairs : PairSet
        The preference pairs; ``pairs.A`` is the operator :math:`A` (built on first access).
    loss : PairLoss
    ramp : Ramp
        The loss's shape at knot 1 and scale 1 (what the engines evaluate).
    pair_weight, margin : ndarray of shape (p,)
        Read-only per-pair :math:`c` and :math:`m` (derived from the structured form if
        given), the loss's scale and knot folded in (:class:`PairwiseSVM`; as given for the
        built-in losses).
    structured : bool
        True when the weights and margins are structured and the pairs are all the
        preference pairs of the data (PRSVM+ applies).
    dual_set : Box
        The dual feasible set (see above), from which :meth:`project_dual`,
        :meth:`dual_infeasibility` and the constraints of :meth:`dual` come.
    capabilities : frozenset of str
        ``dual_gradient``, ``pair_samples`` and ``loss_subgradient``; ``cut_bounds`` and
        ``margin_band`` (hinge); ``pairwise_newton`` and ``accurate_gradient`` (squared
        hinge, Huber);
        ``primal_certificate`` (squared hinge); ``sorted_pairs`` and ``query_blocks`` (when
        structured).

    Raises
    ------
    ValueError
        For C not finite and > 0, an unknown loss, explicit weights or margins of the wrong
        length, non-finite, or (weights) not positive, structured weights not finite and > 0
        or missing a pair of grades, explicit and structured forms mixed, pairs of another
        data set, or data without preference pairs.

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
       Sect. 4.1 (Huber loss), Sect. 6.2 (margin and slack rescaling).
    """

    #: The row of :data:`cvxrank.methods.METHODS` whose solvers ``"auto"`` tries.
    method = "ranksvm"

    def __init__(
        self,
        data: RankingData,
        *,
        C: float = 1.0,
        loss: Loss = "hinge",
        pair_weight: np.ndarray | None = None,
        margin: np.ndarray | None = None,
        query_weight: np.ndarray | None = None,
        level_weight: GradeTable | None = None,
        level_margin: GradeTable | None = None,
        pairs: PairSet | None = None,
        max_pairs: int = DEFAULT_MAX_PAIRS,
    ) -> None:
        super().__init__(data, C=C, loss=loss, pair_weight=pair_weight, margin=margin,
                         query_weight=query_weight, level_weight=level_weight,
                         level_margin=level_margin, pairs=pairs, max_pairs=max_pairs)
        self.name = f"ranksvm-{self.loss.name}"
        self._X = data.X
        self._op_norm_sq: float | None = None
        capabilities = {"dual_gradient", "pair_samples"} | loss_capabilities(self.ramp)
        if self.ramp.linear:
            capabilities.add("cut_bounds")
        if self.structured:
            capabilities |= {"sorted_pairs", "query_blocks"}
        self.capabilities = frozenset(capabilities)

    @property
    def X(self) -> np.ndarray | sp.csr_matrix:  # noqa: N802 (the papers' name)
        """The feature matrix of the training data."""
        return self._X

    # -- CVXPY reference ----------------------------------------------------------------
    @property
    def w_variable(self) -> cp.Variable:
        """The weights ``w`` (length d) of :meth:`primal`."""
        return self._variable("w", self.data.n_features)

    def _score_expression(self, theta: cp.Variable) -> cp.Expression:
        return self._X @ theta

    def _norm_expression(self, theta: cp.Variable) -> cp.Expression:
        import cvxpy as cp

        return cp.sum_squares(theta)

    def _gram_expression(self, u: cp.Variable) -> cp.Expression:
        import cvxpy as cp

        return cp.sum_squares(self._X.T @ u)

    def _gram_value(self, alpha: np.ndarray) -> float:
        w = self.primal_from_dual(alpha)
        return float(w @ w)

    # -- numpy evaluators ---------------------------------------------------------------
    def margins(self, w: np.ndarray) -> np.ndarray:
        """Pairwise margins ``A X w``, i.e. ``w . (x_i - x_j)`` for each pair."""
        return self._A @ (self._X @ np.asarray(w, dtype=np.float64))

    def slacks(self, w: np.ndarray) -> np.ndarray:
        """Hinge residuals ``max(0, m_k - w . (x_i - x_j))``."""
        return np.maximum(self.margin - self.margins(w), 0.0)

    def evaluate_loss(self, w: np.ndarray, engine: str = "auto") -> LossEvaluation:
        """The pairwise loss at ``w``: value, gradient in the scores, Hessian products."""
        return self.loss_engine(engine).evaluate(self._X @ np.asarray(w, dtype=np.float64))

    def primal_value(self, w: np.ndarray) -> float:
        """P(w), see the class docstring (O(n log n) with structured weights, else O(p))."""
        w = np.asarray(w, dtype=np.float64)
        return float(0.5 * (w @ w) + self.C * self.evaluate_loss(w).value)

    def zero_is_exact(self) -> str:
        r"""Why w = 0 is the exact optimum: every preference pair compares two documents with
        the same features (each query's documents are equal where its grades differ), so
        the loss does not depend on w and :math:`\tfrac12\|w\|^2` decides; else ""."""
        data = self.data
        X = data.X.toarray() if sp.issparse(data.X) else np.asarray(data.X)
        order = np.argsort(data.query_index, kind="stable")
        queries = data.query_index[order]
        starts = np.flatnonzero(np.r_[True, queries[1:] != queries[:-1]])
        rows = X[order]
        spread = np.maximum.reduceat(rows, starts) - np.minimum.reduceat(rows, starts)
        grades = data.y[order]
        ranked = np.maximum.reduceat(grades, starts) > np.minimum.reduceat(grades, starts)
        if ranked.any() and not np.any(spread[ranked]):
            return ("w = 0 is the exact optimum: the documents of every query with preference "
                    "pairs have equal features, so the loss does not depend on w")
        return ""

    def accurate_gradient(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r""":math:`\nabla P(w) = w - C \sum_k c_k \ell'(r_k) d_k` at ``w`` exactly up to a
        bound that is a few units of :math:`2^{-106}` of its terms, and that bound per feature
        (the smooth losses: squared hinge and Huber; :func:`accurate_gradient` of
        :meth:`accurate_loss_gradient`). It costs O(p d) with a constant of some tens of
        float64 operations: the Newton solvers call it at their last iterate, where the
        float64 gradient's rounding bound is too loose for what a fit asks (a badly scaled
        column: its gradient entry sums terms of order scale that cancel below float64's
        rounding; certified measures that need a radius below that bound).

        Returns
        -------
        g, error : ndarray of shape (d,)
            The gradient rounded to float64 and a bound on ``|g - grad P(w)|`` per feature.
        """
        return accurate_gradient(w, self.C, [self.accurate_loss_gradient(w)])

    def compensated_gradient(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        r""":math:`\nabla P(w)` in double-word arithmetic without the pairs: O(nd + n log n)
        (:meth:`compensated_loss_gradient`, with :func:`accurate_gradient`). The Newton
        solvers try this before :meth:`accurate_gradient` (O(pd)), which needs the pairs.

        Returns
        -------
        (g, error) or None
            As :meth:`accurate_gradient`; None for sparse features.
        """
        part = self.compensated_loss_gradient(w)
        return None if part is None else accurate_gradient(w, self.C, [part])

    def compensated_loss_gradient(self, w: np.ndarray) -> AccuratePart | None:
        r""":math:`X^\top \partial L / \partial s` at ``w`` in double-word arithmetic,
        without the pairs (a shard's part of the sum, as :meth:`accurate_loss_gradient`).

        The products with X are Ogita, Rump & Oishi's Dot2
        (:mod:`cvxrank.numerics.compensated_kernels`): the scores :math:`Xw` and
        :math:`X^\top \beta`. The loss's gradient in the scores :math:`\beta` is, with
        structured weights (the sorted engine), the sorted passes in double-words
        (:meth:`SortedPairLoss.accurate_gradient
        <cvxrank.formulations.pair_losses.SortedPairLoss.accurate_gradient>`), so the bound
        is of order :math:`u^2` of the terms, as :meth:`accurate_loss_gradient`'s; with
        explicit pair weights it is the float64 one with its rounding bound, which then
        propagates as :math:`\max_i |x_{ij}|\, \|\hat\beta - \beta\|_1` per feature.

        Returns
        -------
        AccuratePart or None
            None for sparse features.
        """
        if sp.issparse(self._X):
            return None
        from cvxrank.numerics.compensated_kernels import dot2_columns, dot2_rows

        w = np.asarray(w, dtype=np.float64)
        if self.structured:
            s_hi, s_lo, s_error = dot2_rows(self._X, w)
            beta, beta_lo, beta_error = self.loss_engine("sorted").accurate_gradient(
                s_hi, s_lo, s_error)
            hi, lo, error, size = dot2_columns(self._X, beta, beta_lo, beta_error)
        else:
            ev = self.evaluate_loss(w)
            hi, lo, error, size = dot2_columns(self._X, ev.grad)
            error = error + np.asarray(self.data.column_scales, dtype=np.float64) * \
                ev.rounding().grad_bound(rounding.product_error(self.data.column_scales, w))
        return AccuratePart(hi, lo, error, size)

    def accurate_loss_gradient(self, w: np.ndarray) -> AccuratePart:
        r""":math:`X^\top \partial L / \partial s = -\sum_k c_k \ell'(r_k) d_k` at ``w``
        over the explicit pairs in double-word arithmetic (:mod:`cvxrank.numerics.compensated`): the
        scores :math:`x_i^\top w`, the residuals :math:`r_k = m_k - (s_i - s_j)`, the slopes,
        each document's sum and the products with X carried in about 106 bits, with a bound
        on the error per feature (:class:`AccuratePart`; a shard's part of the sum)."""
        if self.ramp.linear:
            raise ValueError(f"{self.name}: a piecewise-linear loss has no gradient")
        w = np.asarray(w, dtype=np.float64)
        P, c, m = self.pairs, np.asarray(self.pair_weight), np.asarray(self.margin)
        n, d = self._X.shape
        s = (np.zeros(n), np.zeros(n))
        magnitude = np.zeros(n)
        for j, column in _columns(self._X, range(d)):
            s = compensated.add(s, compensated.two_product(column, np.full(n, w[j])))
            magnitude += np.abs(column * w[j])
        s_error = compensated.ADD_ERROR * d * magnitude * 2.0
        up, low = P.upper, P.lower
        r = compensated.add((m, np.zeros_like(m)),
                            compensated.add((-s[0][up], -s[1][up]), (s[0][low], s[1][low])))
        r_error = (2.0 * compensated.ADD_ERROR * (np.abs(m) + magnitude[up] + magnitude[low])
                   + s_error[up] + s_error[low])
        positive = r[0] > 0
        slope = (2.0 * np.where(positive, r[0], 0.0), 2.0 * np.where(positive, r[1], 0.0))
        if self.ramp.capped:  # slope 2 min(r, width) on r > 0
            width = self.ramp.width
            over = r[0] > width
            slope = (np.where(over, 2.0 * width, slope[0]), np.where(over, 0.0, slope[1]))
        a = compensated.times_float(slope, c)
        a_error = 2.0 * c * r_error + compensated.TIMES_FLOAT_ERROR * np.abs(a[0]) * 2.0
        # beta_i = dL/ds_i: -a_k at the upper document, +a_k at the lower one
        beta, counts = compensated.segment_sums(
            (np.concatenate([-a[0], a[0]]), np.concatenate([-a[1], a[1]])),
            np.concatenate([up, low]), n)
        spread = np.bincount(up, weights=np.abs(a[0]), minlength=n) + np.bincount(
            low, weights=np.abs(a[0]), minlength=n)
        beta_error = (compensated.sum_error(counts, 2.0 * spread)
                      + np.bincount(up, weights=a_error, minlength=n)
                      + np.bincount(low, weights=a_error, minlength=n))
        part = AccuratePart(np.empty(d), np.empty(d), np.empty(d), np.empty(d))
        for j, column in _columns(self._X, range(d)):
            hi, lo = compensated.tree_sum(compensated.times_float(beta, column))
            size = float(np.abs(beta[0]) @ np.abs(column))
            part.hi[j], part.lo[j], part.size[j] = hi, lo, size
            part.error[j] = (2.0 * compensated.TIMES_FLOAT_ERROR * size
                             + float(compensated.sum_error(n, 2.0 * size))
                             + float(beta_error @ np.abs(column)) * 2.0)
        return part

    def primal_bounds(self, w: np.ndarray) -> tuple[float, float]:
        """P(w) and a bound on its rounding (:func:`primal_rounding`)."""
        w = np.asarray(w, dtype=np.float64)
        ev = self.evaluate_loss(w)
        return (float(0.5 * (w @ w) + self.C * ev.value),
                primal_rounding(self.data, self.C, w, ev.value, ev.rounding()))

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """w(alpha) = X^T A^T alpha."""
        return np.asarray(self._X.T @ (self._A.T @ np.asarray(alpha, dtype=np.float64)))

    def dual_value_at(self, w: np.ndarray, evaluation: LossEvaluation | None = None,
                      loss_gradient: np.ndarray | None = None) -> float:
        r"""Dual objective at the dual point that ``w`` induces (squared hinge), else NaN.

        For the squared hinge, :math:`\alpha_k(w) = 2 C c_k \max(0, m_k - w^\top(x_i -
        x_j))` is dual feasible (:math:`\alpha \ge 0`) and equals :math:`\alpha^*` at
        :math:`w^*` (the KKT conditions), so :math:`D(\alpha(w)) \le p^*` certifies the
        primal gap :math:`P(w) - p^* \le P(w) - D(\alpha(w))`. Since :math:`A^\top \alpha(w)
        = -C\, \partial L / \partial s`, it costs one loss evaluation and no pairs:

        .. math::

            D(\alpha(w)) = 2 C \sum_k c_k m_k \xi_k
                - \tfrac12 C^2 \|X^\top \partial L / \partial s\|^2 - C\, L(Xw).

        Parameters
        ----------
        w : ndarray of shape (d,)
        evaluation : LossEvaluation, optional
            The loss already evaluated at ``X w`` (saves a sort).
        loss_gradient : ndarray of shape (d,), optional
            :math:`X^\top \partial L / \partial s` of that evaluation, if the caller holds it
            (saves a product with X).
        """
        if "primal_certificate" not in self.capabilities:
            return float("nan")
        ev = self.evaluate_loss(w) if evaluation is None else evaluation
        if loss_gradient is None:
            loss_gradient = np.asarray(self._X.T @ ev.grad)
        return squared_hinge_dual_bound(self.C, ev.value, ev.margin_hinge, loss_gradient)

    # -- cutting planes: the iteration bound and the exact finish (hinge) -------------------
    def total_pair_weight(self) -> float:
        r""":math:`\sum_k c_k` (structured weights: from the grade counts of each query, without
        the pairs)."""
        if not self.structured:
            return float(np.sum(self.pair_weight))
        counts = np.zeros((self.data.n_queries, self.grades.size))
        np.add.at(counts, (self.data.query_index, self.grade_level), 1.0)
        below = np.tril(self.weight_table, -1)  # W[hi, lo], hi > lo
        return float(np.einsum("qh,hl,ql->q", counts, below, counts) @ self.query_weight)

    def cut_bounds(self) -> tuple[float, float, np.ndarray]:
        r"""What the 1-slack cutting plane's iteration bound needs (Joachims, Finley & Yu
        2009, Thm. 5; :func:`cvxrank.solvers.cutting_plane.iteration_bound`): the loss
        weight C of its one block, :math:`R = 2 \sum_k c_k \max_i \|x_i\| \ge \|\sum_{k
        \in V} c_k d_k\|` (a cut's gradient is a sub-sum of the weighted pair differences)
        and the loss at w = 0."""
        radius = 2.0 * self.total_pair_weight() * largest_row_norm(self._X)
        loss = float(self.evaluate_loss(np.zeros(self.data.n_features)).value)
        return float(self.C), radius, np.array([loss])

    def margin_band(self, w: np.ndarray, radii: Sequence[float], *,
                    max_pairs: int = 100_000) -> MarginBand | None:
        r"""The hinge pairs whose margin a ball around ``w`` leaves undecided, and the sums
        over those below it (:class:`MarginBand`), for the first (the widest) of ``radii``
        whose window holds at most ``max_pairs`` pairs; None when none does.

        With structured weights the pairs are never all built: in each block of the sorted
        engine (a query, an upper grade and the lower grades of one weight and margin) the
        lower documents are sorted by score once, and each upper document i finds by binary
        search the lower ones within :math:`s_i - m \pm r D_b` (:math:`D_b` a bound on the
        block's :math:`\|d_k\|`): its window; those beyond it are below their margin, and
        their sums come from the counts (Joachims 2006's sorted pass); the window's pairs
        are built and split exactly by :math:`|t_k| \le r \|d_k\|`. O(E log E + k d) for E
        block entries and k pairs in the window; explicit weights: O(p) over the pairs.

        Parameters
        ----------
        w : ndarray of shape (d,)
        radii : sequence of float
            Radii r >= 0 to try, the largest first (any r gives a consistent split; a bound
            on :math:`\|w - w^*\|` makes it the optimum's).
        max_pairs : int
            Largest window (pairs built).

        Raises
        ------
        ValueError
            For a loss other than the hinge.
        """
        if not self.ramp.linear:
            raise ValueError(f"{self.name}: the margin band is a piecewise-linear loss's")
        w = np.asarray(w, dtype=np.float64)
        s = np.asarray(self._X @ w, dtype=np.float64).ravel()
        window = (self._sorted_window if self.structured else self._explicit_window)(
            s, [float(r) for r in radii], max_pairs)
        if window is None:
            return None
        radius, upper, lower, weight, margin, violated_doc, violated_margin = window
        D = self._X[upper] - self._X[lower]
        D = np.asarray(D.toarray() if sp.issparse(D) else D, dtype=np.float64)
        t = s[upper] - s[lower] - margin
        inside = np.abs(t) <= radius * np.sqrt(np.einsum("ij,ij->i", D, D))
        below = ~inside & (t < 0)
        violated_sum = (np.asarray(self._X.T @ violated_doc, dtype=np.float64).ravel()
                        + weight[below] @ D[below])
        return MarginBand(radius, D[inside], margin[inside], weight[inside], violated_sum,
                          float(violated_margin + weight[below] @ margin[below]),
                          **self._band_rounding(w, s, violated_doc, weight[below], D[below]))

    def _band_rounding(self, w: np.ndarray, s: np.ndarray, violated_doc: np.ndarray,
                       weight: np.ndarray, D: np.ndarray) -> dict[str, float]:
        r"""The rounding bounds of a :class:`MarginBand` at w (:mod:`cvxrank.numerics.rounding`):
        the per-document coefficients of the violated pairs sum weights times counts, at most
        :math:`2W` in all (W :meth:`total_pair_weight`); ``violated_sum`` is :math:`X^\top`
        times them (:func:`~cvxrank.numerics.rounding.gradient_error`) plus the window's violated
        differences; ``violated_margin`` sums at most W times the largest margin; each
        :math:`t_k` is a difference of two scores :math:`fl(Xw)` and a margin."""
        data = self.data
        total = self.total_pair_weight()
        margins = np.abs(self._pair_margins())
        chain = data.n_documents + int(weight.size) + 4
        coefficient_error = rounding.gamma(chain) * 2.0 * total
        violated = rounding.gradient_error(
            np.zeros_like(w), 1.0, data.column_scales, data.column_norms, data.n_documents,
            float(np.abs(violated_doc).sum()), float(np.linalg.norm(violated_doc)),
            coefficient_error)
        window = rounding.gamma(weight.size + 2) * np.linalg.norm(np.abs(weight) @ np.abs(D))
        scores = rounding.score_bound(data.column_scales, w)
        largest = float(margins.max(initial=0.0))
        return {"violated_error": float(np.linalg.norm(violated)) + float(window),
                "violated_margin_error": rounding.gamma(chain) * total * largest,
                "residual_error": (2.0 * rounding.product_error(data.column_scales, w)
                                   + 4.0 * rounding.UNIT_ROUNDOFF * (largest + scores)),
                "smallest_margin": float(margins.min(initial=math.inf))}

    @cached_property
    def _block_reach(self) -> np.ndarray:
        r"""Per entry of the sorted engine's blocks, :math:`\|x - \bar x_b\|`, its distance
        to its block's mean (so :math:`\|x_i - x_j\|` is at most the sum of two entries'
        reach, and at most the block's largest upper plus largest lower reach)."""
        b = self.loss_engine("sorted").blocks
        rows = self._X[b.doc]
        sizes = np.diff(b.ptr)
        if not sp.issparse(rows) and sizes.size and sizes.min() > 0:  # blocks are contiguous
            mean = np.add.reduceat(rows, b.ptr[:-1], axis=0) / sizes[:, None]
        else:
            mean = sp.csr_matrix((1.0 / sizes[b.block], (b.block, np.arange(b.doc.size))),
                                 shape=(b.ptr.size - 1, b.doc.size)) @ rows
            mean = np.asarray(mean.toarray() if sp.issparse(mean) else mean)
        return np.sqrt(np.maximum(squared_distances(rows, mean[b.block]), 0.0))

    def _sorted_window(self, s: np.ndarray, radii: list[float], max_pairs: int
                       ) -> tuple[Any, ...] | None:
        """The radius used, the window's pairs (upper, lower, weight, margin) and, per
        document, the coefficient of the pairs beyond the window below their margin, and
        their weighted margin sum, by one sort per block (:meth:`margin_band`)."""
        b = self.loss_engine("sorted").blocks
        reach = self._block_reach
        spread = np.zeros((b.ptr.size - 1, 2))
        np.maximum.at(spread, (b.block, b.upper.astype(np.int64)), reach)
        lows, ups = np.flatnonzero(~b.upper), np.flatnonzero(b.upper)
        # complex keys sort by block, then by score: one binary search finds a block's own
        keys = b.block[lows] + 1j * s[b.doc[lows]]
        order = np.argsort(keys)
        lows, keys = lows[order], keys[order]
        end = np.searchsorted(b.block[lows], b.block[ups], side="right")
        centre = s[b.doc[ups]] - b.margin[ups]
        blk = b.block[ups]
        width = spread.sum(axis=1)[blk]
        for radius in radii:
            top = np.searchsorted(keys, blk + 1j * (centre + radius * width), side="right")
            bottom = np.searchsorted(keys, blk + 1j * (centre - radius * width), side="left")
            size = top - bottom
            if int(size.sum()) <= max_pairs:
                break
        else:
            return None
        above = end - top  # t < -r D_b: below the margin
        cover = np.cumsum(np.bincount(top, minlength=lows.size + 1)
                          - np.bincount(end, minlength=lows.size + 1))[:lows.size]
        n = self.data.n_documents
        doc_coef = (np.bincount(b.doc[ups], weights=b.weight[ups] * above, minlength=n)
                    - np.bincount(b.doc[lows], weights=b.weight[lows] * cover, minlength=n))
        violated_margin = float((b.weight[ups] * b.margin[ups]) @ above)
        pair_up = np.repeat(ups, size)
        first = np.repeat(bottom - np.cumsum(size) + size, size)
        pair_low = lows[first + np.arange(pair_up.size)]
        # the pair's own bound on ||d_k||: the window's pairs beyond it are decided here
        t = s[b.doc[pair_up]] - s[b.doc[pair_low]] - b.margin[pair_up]
        near = np.abs(t) <= radius * (reach[pair_up] + reach[pair_low])
        far_below = ~near & (t < 0)
        np.add.at(doc_coef, b.doc[pair_up[far_below]], b.weight[pair_up[far_below]])
        np.subtract.at(doc_coef, b.doc[pair_low[far_below]], b.weight[pair_up[far_below]])
        violated_margin += float(b.weight[pair_up[far_below]] @ b.margin[pair_up[far_below]])
        pair_up, pair_low = pair_up[near], pair_low[near]
        return (radius, b.doc[pair_up], b.doc[pair_low], b.weight[pair_up],
                b.margin[pair_up], doc_coef, violated_margin)

    def _explicit_window(self, s: np.ndarray, radii: list[float], max_pairs: int
                         ) -> tuple[Any, ...] | None:
        r""":meth:`_sorted_window` over explicit pairs: the margins of all of them, the window
        :math:`|t_k| \le r D` with D twice the largest distance to the documents' mean."""
        P = self.pairs
        X = self._X
        spread = 2.0 * largest_distance_to_mean(X)
        t = s[P.upper] - s[P.lower] - self.margin
        for radius in radii:
            inside = np.abs(t) <= radius * spread
            if int(np.count_nonzero(inside)) <= max_pairs:
                break
        else:
            return None
        below = (t < 0) & ~inside
        coef = np.where(below, self.pair_weight, 0.0)
        return (radius, P.upper[inside], P.lower[inside], self.pair_weight[inside],
                self.margin[inside], np.asarray(P.A.T @ coef), float(coef @ self.margin))

    # -- dual_gradient: what the fast dual solvers need ----------------------------------
    def neg_dual_grad(self, alpha: np.ndarray) -> np.ndarray:
        """Gradient of -D at ``alpha``: ``A X X^T A^T alpha - m`` (``+ alpha/(2 C c)``)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        grad = self.margins(self.primal_from_dual(alpha)) - self.margin
        if not self.ramp.linear:
            grad += alpha / (2.0 * self.C * self.pair_weight)
        return grad

    def dual_lipschitz(self) -> float:
        """A Lipschitz constant of :meth:`neg_dual_grad`.

        ``||X^T A^T||_2^2`` (:func:`~cvxrank.formulations.base.squared_operator_norm`,
        computed once: it does not depend on C), plus ``1/(2 C min c)`` for the squared
        hinge and Huber.
        """
        if self._op_norm_sq is None:
            self._op_norm_sq = squared_operator_norm(self._X, self._A)
        lipschitz = self._op_norm_sq
        if not self.ramp.linear:
            lipschitz += 1.0 / (2.0 * self.C * float(self.pair_weight.min()))
        return lipschitz


@dataclass(frozen=True)
class AccuratePart:
    r"""A sum :math:`X_k^\top \partial L_k / \partial s` in double-word arithmetic
    (:meth:`RankSVM.accurate_loss_gradient`): per feature its value ``hi + lo``, a bound
    ``error`` on that value's error and the magnitude ``size`` of its terms."""

    hi: np.ndarray
    lo: np.ndarray
    error: np.ndarray
    size: np.ndarray


def accurate_gradient(w: np.ndarray, C: float, parts: Sequence[AccuratePart]
                      ) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`w + C \sum_k X_k^\top \partial L_k / \partial s` from the parts (the data's,
    or each shard's) in double-word arithmetic, rounded to float64, and a bound on its error
    per feature: the parts' own, the additions' (at most
    :data:`cvxrank.numerics.compensated.ADD_ERROR` of the terms' magnitudes each) and the final
    rounding."""
    w = np.asarray(w, dtype=np.float64)
    total = (np.zeros_like(w), np.zeros_like(w))
    error, size = np.zeros_like(w), np.zeros_like(w)
    for part in parts:
        total = compensated.add(total, (part.hi, part.lo))
        error, size = error + part.error, size + part.size
    error += 2.0 * compensated.ADD_ERROR * len(parts) * size
    hi, lo = compensated.add((w, np.zeros_like(w)),
                             compensated.times_float(total, np.full(w.size, float(C))))
    return hi, (np.abs(lo) + C * error * 2.0
                + 2.0 * compensated.ADD_ERROR * (np.abs(w) + C * size))


def _columns(X: np.ndarray | sp.csr_matrix, features: range
             ) -> Iterator[tuple[int, np.ndarray]]:
    """The feature columns of X, one at a time, as contiguous float64 vectors (a sparse X
    through one CSC copy)."""
    csc = sp.csc_matrix(X) if sp.issparse(X) else None
    for j in features:
        if csc is None:
            yield j, np.ascontiguousarray(X[:, j], dtype=np.float64)
        else:
            column = np.zeros(X.shape[0])
            lo, hi = csc.indptr[j], csc.indptr[j + 1]
            column[csc.indices[lo:hi]] = csc.data[lo:hi]
            yield j, column


def primal_rounding(data: Any, C: float, w: np.ndarray, loss: float,
                    bound: LossRounding) -> float:
    r"""The rounding bound of :math:`P(w) = \tfrac12\|w\|^2 + C L(fl(Xw))`: the loss's at
    scores off by :func:`cvxrank.numerics.rounding.product_error`, and the sum's."""
    delta = rounding.product_error(data.column_scales, w)
    return (C * bound.value_bound(delta)
            + rounding.value_error(w.size + 2, 0.5 * float(w @ w) + C * abs(loss)))


def squared_hinge_dual_bound(C: float, value: float, margin_hinge: float,
                             loss_gradient: np.ndarray) -> float:
    r"""The squared-hinge dual value at the KKT point of w, from the loss at :math:`Xw`:
    :math:`D(\alpha(w)) = 2 C \sum_k c_k m_k \xi_k - \tfrac12 C^2 \|X^\top \partial L /
    \partial s\|^2 - C L(Xw)` (:meth:`RankSVM.dual_value_at`), with ``value`` L(Xw),
    ``margin_hinge`` :math:`\sum_k c_k m_k \xi_k` and ``loss_gradient``
    :math:`X^\top \partial L / \partial s`; a lower bound on :math:`p^*`."""
    u = C * loss_gradient
    return float(2.0 * C * margin_hinge - 0.5 * (u @ u) - C * value)


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


def _folded(values: np.ndarray) -> np.ndarray:
    """``values`` read-only (a per-pair array with the loss folded in)."""
    values.flags.writeable = False
    return values


def _all_pairs_of(pairs: PairSet, data: RankingData) -> bool:
    """Whether ``pairs`` holds every preference pair of ``data`` (each exactly once)."""
    if pairs.n_pairs != int(count_pairs(data).sum()):
        return False
    up, lo, qidx = pairs.upper, pairs.lower, data.query_index
    if not (np.all(data.y[up] > data.y[lo]) and np.all(qidx[up] == qidx[lo])):
        return False
    return np.unique(up * data.n_documents + lo).size == pairs.n_pairs


def _per_query(values: np.ndarray | None, n_queries: int) -> np.ndarray:
    """Validated per-query weights (ones if None)."""
    return _per_pair(values, n_queries, "query_weight", positive=True)


def _grade_table(spec: GradeTable | None, grades: np.ndarray, what: str, default: float, *,
                 positive: bool, used: set[tuple[int, int]]) -> np.ndarray:
    """An R x R table ``T[hi, lo]`` of a per-grade-pair value, validated on the used pairs."""
    table = np.full((grades.size, grades.size), float(default))
    if spec is None:
        return table
    if not callable(spec):
        given = {(float(a), float(b)): v for (a, b), v in spec.items()}
    for hi, lo in sorted(used):
        key = (float(grades[hi]), float(grades[lo]))
        if callable(spec):
            value = float(spec(*key))
        elif key in given:
            value = float(given[key])
        else:
            raise ValueError(f"{what} has no value for the grade pair {key[0]:g} > {key[1]:g}, "
                             "which occurs in the data")
        if not np.isfinite(value) or (positive and value <= 0):
            need = "finite and > 0" if positive else "finite"
            raise ValueError(f"{what}[{key[0]:g}, {key[1]:g}] = {value}; every {what} must be "
                             f"{need}")
        table[hi, lo] = value
    return table
