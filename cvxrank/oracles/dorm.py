r"""DORM (Le & Smola): ranking scores as inner products and the most violated permutation.

Le & Smola write every ranking score of a query of :math:`l` documents as an inner product
(Eqs. (9)-(16)) of position weights :math:`a` (non-increasing in the position) and a
relevance transform :math:`b(y)` of the grades, turn it into the loss (17), rank with the
feature map (20) weighted by a decreasing sequence :math:`c`, and find the constraint of the
structured max-margin problem (5)/(27) that a weight vector violates most, (8), as a linear
assignment problem (23)-(24).

**Convention for a ranking.** Every ranking here is an ``order``: an integer array with
``order[p]`` the document (row of the query) at position ``p`` (0-based; the paper's
position ``i = p + 1``). The paper's permutation :math:`\pi` maps the other way, a document
to its position: it writes :math:`v(\pi)_i = v_{\pi(i)}` and (Sect. 3.2)

.. math::

    \mathrm{score}(\pi, y) = \langle a(\pi), b(y)\rangle = \sum_{d} a_{\pi(d)} b_d
    = \sum_{p} a_p\, b_{\mathrm{order}[p]},

so :math:`\pi` is ``numpy.argsort(order)`` (the position of each document, 0-based) and the
last sum is what :func:`ranking_score` computes. :func:`linear_sum_assignment`'s column index
of document ``d`` is :math:`\pi(d)`, as in (24), where :math:`C_{ij}` pairs document
:math:`i` with position :math:`j`.

**Grades in any order.** The paper assumes the grades sorted in descending order, so that
the identity is an optimal permutation (Sect. 3.1). Here the documents stay in input order:
the optimal score is :math:`\max_\pi \langle a(\pi), b\rangle`, the sorted :math:`a` against
the sorted :math:`b` (rearrangement inequality), and the paper's identity is
:func:`ideal_order`, the documents by descending grade with ties in input order; on grades
already sorted it is the identity, as in the paper.

**The affine piece.** The oracles return a :class:`Violation`: the most violated ranking
:math:`\hat\pi` of (8), its loss :math:`\Delta(y, \hat\pi)` and the feature difference
:math:`\Phi(x, \hat\pi) - \Phi(x, \pi^*)` against the reference ranking :math:`\pi^*`
(``reference``; :func:`ideal_order` for the paper's (27b)). With them the query's loss, the
slack of (27),

.. math::

    \xi(v) = \max_\pi\; \Delta(y, \pi) + \langle v, \Phi(x, \pi) - \Phi(x, \pi^*)\rangle
    \;\ge\; \Delta(y, \hat\pi) + \langle v, \Phi(x, \hat\pi) - \Phi(x, \pi^*)\rangle,

is minorized by an affine function of :math:`v` with equality at the queried :math:`w`:
the cutting plane. Its value at :math:`w` is :attr:`Violation.value`.

References
----------
.. [1] Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures",
   arXiv:0704.3359, 2007: Sects. 2.2-2.4 (Lemma 1, (5), (8)), 3.2 ((9)-(17)), 3.3
   (Theorem 2, (18)), 3.4 ((19)), 4.1 ((20)-(21)), 4.2-4.3 ((22)-(26)), 4.4 ((27)), 6.3-6.4
   (the choices of c, mWTA).
.. [2] R. Jonker and A. Volgenant, "A shortest augmenting path algorithm for dense and sparse
   linear assignment problems", Computing 38, 1987 (the solver behind
   :func:`scipy.optimize.linear_sum_assignment`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from cvxrank.oracles.measures import (
    RANKING_MEASURES,
    MeasureOptions,
    RankingMeasure,
    check_grades,
    mwta_cutoff,
    ranking_measure,
)
from cvxrank.utils.lazy_sparse import sp

__all__ = [
    "MEASURES",
    "Violation",
    "feature_map",
    "ideal_order",
    "measure_loss",
    "most_violated_permutation",
    "most_violated_position_loss",
    "mwta_cutoff",
    "position_coefficients",
    "position_cost",
    "position_loss",
    "ranking_score",
    "score_vectors",
    "sorted_assignment",
]

#: The scores of Sect. 3.2 (and mWTA, Sect. 6.4) that :func:`score_vectors` writes as
#: :math:`\langle a(\pi), b(y)\rangle`, by name (:mod:`cvxrank.oracles.measures`).
MEASURES: tuple[str, ...] = tuple(RANKING_MEASURES)

CoefficientFamily = Literal["power", "log", "loglog"]


@dataclass(frozen=True)
class Violation:
    r"""The most violated constraint of one query, as an affine piece in the weights.

    For every weight vector :math:`v`, the query's slack satisfies
    :math:`\xi(v) \ge` ``loss`` :math:`+ \langle v,` ``feature_difference`` :math:`\rangle`,
    with equality at the weights the oracle was called with.

    Attributes
    ----------
    order : numpy.ndarray of int64, shape (l,)
        The most violated ranking: ``order[p]`` is the document at position ``p``.
    loss : float
        :math:`\Delta(y, \hat\pi)`: the loss of ``order`` (DORM (17) or (19); 1 - AP for
        SVM MAP).
    feature_difference : numpy.ndarray, shape (d,)
        :math:`\Phi(x, \hat\pi) - \Phi(x, \pi^*)`, the gradient of the piece in the weights
        (:math:`\pi^*` the reference ranking).
    value : float
        The piece at the queried weights :math:`w`: ``loss + w @ feature_difference``, the
        largest violation :math:`\max_\pi \Delta(y, \pi) + \langle w, \Phi(x, \pi) -
        \Phi(x, \pi^*)\rangle` (at least 0 when the reference ranking has loss 0).
    solver : {"sort", "lap", "greedy"}
        How ``order`` was found: the sorting shortcut, the linear assignment problem, or
        Yue et al.'s greedy interleaving (SVM MAP).
    """

    order: np.ndarray
    loss: float
    feature_difference: np.ndarray
    value: float
    solver: str


def _vector(v: npt.ArrayLike, name: str, size: int) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    if v.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {v.shape}")
    return v


def _order(order: npt.ArrayLike, size: int) -> np.ndarray:
    order = np.asarray(order)
    if (
        order.shape != (size,)
        or not np.issubdtype(order.dtype, np.integer)
        or not np.array_equal(np.sort(order), np.arange(size))
    ):
        raise ValueError(f"an order must be a permutation of 0..{size - 1}, got {order!r}")
    return order.astype(np.int64)


def _query_matrix(X: npt.ArrayLike | sp.spmatrix) -> np.ndarray | sp.csr_matrix:
    if sp.issparse(X):
        matrix = sp.csr_matrix(X, dtype=np.float64)
    else:
        matrix = np.asarray(X, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        raise ValueError(f"X must be a 2-D (documents x features) matrix, got {matrix.shape}")
    return matrix


def score_vectors(
    y: npt.ArrayLike,
    measure: str | RankingMeasure,
    *,
    cutoff: int | None = None,
    relevance_threshold: float = 1.0,
    neutral: float = 0.0,
    half_life: float = 5.0,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Position weights :math:`a` and relevance transform :math:`b(y)` of a ranking score.

    The score of a ranking is :math:`\langle a(\pi), b(y)\rangle = \sum_p a_p
    b_{\mathrm{order}[p]}` (:func:`ranking_score`), with the 1-based position
    :math:`i = p + 1`; each measure's :math:`a` and :math:`b` are listed in
    :mod:`cvxrank.oracles.measures` (Eqs. (9)-(16), mWTA of Sect. 6.4).

    Parameters
    ----------
    y : array_like, shape (l,)
        Grades :math:`r_d` of the query's documents, in input order (finite, >= 0).
    measure : RankingMeasure or str
        The score: a :class:`~cvxrank.oracles.measures.RankingMeasure` (a researcher's own),
        or the name of a built-in one: "wta", "mrr", "dcg", "ndcg", "precision", "eru",
        "normalized_eru" or "mwta".
    cutoff : int, optional
        The truncation level :math:`n` of DCG@n and NDCG@n (None: every position, the
        untruncated (11) and (13)) and of Precision@n (required). A cutoff above :math:`l`
        keeps every position for DCG and NDCG; Precision@n still divides by :math:`n`, so
        missing positions count as irrelevant. Not accepted by the other measures.
    relevance_threshold : float
        Precision@n's "correct" documents (15): grades :math:`\ge t`.
    neutral : float
        ERU's neutral vote :math:`\delta` (the paper's :math:`d`).
    half_life : float
        ERU's viewing half-life :math:`\alpha > 1`: the position whose weight is 1/2.

    Returns
    -------
    a : numpy.ndarray, shape (l,)
        Position weights, non-increasing.
    b : numpy.ndarray, shape (l,)
        Relevance transform of each document, in input order; non-decreasing in the grade
        (so :func:`ideal_order` is optimal), and all zeros for NDCG and normalized ERU when
        the optimal score is 0 (every ranking then scores 0 and has loss 0).

    Notes
    -----
    * The paper leaves the base of the logarithm of (11) open; base 2 is taken, as in Li's
      Eq. (2) and :mod:`cvxrank.metrics` (the base scales DCG but cancels in NDCG).
    * (12) prints the NDCG@n denominator as "NDCG@n(1, y)"; it is DCG@n of the ideal
      ranking, as (14) says.
    * (9) counts a document relevant for WTA when its grade is the query's top grade; (10)
      assumes a single most relevant document. With several documents of the top grade, MRR
      keeps the first one in input order (the one :func:`ideal_order` puts first), so that the
      score stays linear in the ranking.
    * Precision@n with fewer than :math:`n` documents divides by :math:`n` (``pad`` in
      :class:`cvxrank.metrics.Convention`), which is what :math:`a_i = 1/n` gives.

    References
    ----------
    Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", Sect. 3.2,
    Eqs. (9)-(16); Sect. 6.4 (mWTA).
    """
    y = check_grades(y)
    spec = ranking_measure(measure)
    if cutoff is not None:
        if not spec.takes_cutoff:
            raise ValueError(f"measure {spec.name!r} takes no cutoff, got cutoff={cutoff!r}")
        if isinstance(cutoff, bool) or not isinstance(cutoff, (int, np.integer)) or cutoff < 1:
            raise ValueError(f"cutoff must be a positive integer, got {cutoff!r}")
    return spec.vectors(y, cutoff, MeasureOptions(relevance_threshold=relevance_threshold,
                                                  neutral=neutral, half_life=half_life))


def ideal_order(y: npt.ArrayLike) -> np.ndarray:
    """The documents by descending grade, ties in input order: the paper's identity ranking.

    Le & Smola sort the grades in descending order so that the identity permutation
    :math:`\\mathbf{1}` is optimal for every score (Sect. 3.1) and use it as the reference
    :math:`z_i` of (5b) and (27b). On grades in any order this stable sort is that ranking.

    Parameters
    ----------
    y : array_like, shape (l,)
        Grades (finite, >= 0).

    Returns
    -------
    numpy.ndarray of int64, shape (l,)
        ``order[p]``, the document at position ``p``.
    """
    return np.argsort(-check_grades(y), kind="stable").astype(np.int64)


def ranking_score(order: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    r"""The score :math:`\langle a(\pi), b(y)\rangle = \sum_p a_p b_{\mathrm{order}[p]}`
    of a ranking (Eqs. (9)-(16)).

    Parameters
    ----------
    order : array_like of int, shape (l,)
        ``order[p]`` is the document at position ``p`` (the paper's :math:`\pi` is its
        inverse, ``argsort(order)``: :math:`\sum_d a_{\pi(d)} b_d` is the same sum).
    a, b : array_like, shape (l,)
        Position weights and relevance transform (:func:`score_vectors`).

    Returns
    -------
    float
    """
    a = np.asarray(a, dtype=np.float64)
    b = _vector(b, "b", a.size)
    return float(a @ b[_order(order, a.size)])


def measure_loss(order: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    r"""The loss (17): the optimal score minus the score of a ranking.

    .. math::

        \Delta(y, \pi) = \max_{\pi'} \langle a(\pi'), b(y)\rangle - \langle a(\pi), b(y)
        \rangle,

    the paper's :math:`\langle a(\mathbf{1}), b(y)\rangle - \langle a(\pi), b(y)\rangle`
    for grades sorted in descending order. The maximum pairs the sorted :math:`a` with the
    sorted :math:`b` (rearrangement inequality), so :math:`\Delta \ge 0`.

    Parameters
    ----------
    order : array_like of int, shape (l,)
        ``order[p]`` is the document at position ``p``.
    a, b : array_like, shape (l,)
        Position weights and relevance transform (:func:`score_vectors`).

    Returns
    -------
    float
    """
    a = np.asarray(a, dtype=np.float64)
    b = _vector(b, "b", a.size)
    best = float(np.sort(a)[::-1] @ np.sort(b)[::-1])
    return best - ranking_score(order, a, b)


def position_cost(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[np.ndarray, float]:
    r"""The loss (17) written as a general position-dependent loss (19).

    (19) is :math:`\Delta(\pi, y) = \sum_{d, p} \pi_{dp} C_{dp}(y) + \text{const}`, with
    :math:`C_{dp}` the cost of placing document :math:`d` at position :math:`p`; (17) is
    :math:`C_{dp} = -a_p b_d` and const the optimal score.

    Parameters
    ----------
    a, b : array_like, shape (l,)
        Position weights and relevance transform (:func:`score_vectors`).

    Returns
    -------
    cost : numpy.ndarray, shape (l, l)
        ``cost[d, p]``: document ``d`` at position ``p``.
    constant : float
        :math:`\max_\pi \langle a(\pi), b\rangle`.

    Notes
    -----
    The paper writes "simply choose :math:`C_{ij} = a_i b(y)_j`" after defining :math:`C_{ij}`
    as the cost of document :math:`i` at position :math:`j`: the indices of :math:`a` and
    :math:`b` are swapped there, and the sign is that of a score, not of the loss (17).
    """
    a = np.asarray(a, dtype=np.float64)
    b = _vector(b, "b", a.size)
    return -np.outer(b, a), float(np.sort(a)[::-1] @ np.sort(b)[::-1])


def position_loss(order: npt.ArrayLike, cost: npt.ArrayLike, constant: float = 0.0) -> float:
    r"""The general position-dependent loss (19) of a ranking.

    .. math::

        \Delta(\pi, y) = \sum_p C_{\mathrm{order}[p],\, p} + \text{const}.

    Parameters
    ----------
    order : array_like of int, shape (l,)
        ``order[p]`` is the document at position ``p``.
    cost : array_like, shape (l, l)
        ``cost[d, p]``, the cost of document ``d`` at position ``p``.
    constant : float
        The constant of (19).

    Returns
    -------
    float
    """
    cost = _cost(cost)
    order = _order(order, cost.shape[0])
    return float(cost[order, np.arange(order.size)].sum() + constant)


def _cost(cost: npt.ArrayLike) -> np.ndarray:
    cost = np.asarray(cost, dtype=np.float64)
    if cost.ndim != 2 or cost.shape[0] != cost.shape[1] or cost.shape[0] == 0:
        raise ValueError(f"cost must be a square (documents x positions) matrix, got {cost.shape}")
    return cost


def position_coefficients(
    n: int, family: CoefficientFamily = "power", *, d: float = 0.5
) -> np.ndarray:
    r"""The decreasing coefficients :math:`c` of the feature map (20), for positions 1..n.

    With the 1-based position :math:`i` (the paper's, as in :math:`a_i = \delta(i, 1)`),
    Sect. 6.3 tries

    * ``"power"``: :math:`c_i = (i + 1)^{-d}`, :math:`d > 0` (d = 1/2 in Sects. 6.3 and
      6.5, d = 1 in Sects. 6.2 and 6.4, d = 1/4 in Sect. 6.6);
    * ``"log"``: :math:`c_i = 1/\ln(i + 2)`;
    * ``"loglog"``: :math:`c_i = 1/\ln\ln(i + 2)`.

    All three are positive and strictly decreasing for :math:`i \ge 1`. The offsets matter
    for ``"loglog"``: :math:`\ln\ln(i + 2) > 0` needs :math:`i + 2 > e`, which holds from
    :math:`i = 1` (:math:`\ln\ln 3 \approx 0.094`, so :math:`c_1 \approx 10.6`,
    :math:`c_2 \approx 3.06`); with 0-based positions :math:`c_0 = 1/\ln\ln 2 < 0` would
    not be decreasing-positive at all.

    Parameters
    ----------
    n : int
        Number of positions (the query's number of documents).
    family : {"power", "log", "loglog"}
        The sequence.
    d : float
        Exponent of ``"power"`` (ignored otherwise).

    Returns
    -------
    numpy.ndarray, shape (n,)
        ``c[p]`` for the 0-based position ``p`` (the paper's :math:`c_{p+1}`).

    Notes
    -----
    The paper does not name the base of these logarithms; the natural logarithm is taken.
    For ``"log"`` another base only rescales :math:`c` (and with it the scale of
    :math:`w`); for ``"loglog"`` it changes the shape.

    References
    ----------
    Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", Eq. (20),
    Sects. 4.1 and 6.3.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    i = np.arange(1, n + 1, dtype=np.float64)
    if family == "power":
        if not d > 0:
            raise ValueError(f"d must be > 0 for a decreasing c, got {d}")
        return (i + 1.0) ** -d
    if family == "log":
        return 1.0 / np.log(i + 2.0)
    if family == "loglog":
        return 1.0 / np.log(np.log(i + 2.0))
    raise ValueError(f"family must be 'power', 'log' or 'loglog', got {family!r}")


def feature_map(
    X: npt.ArrayLike | sp.spmatrix, order: npt.ArrayLike, c: npt.ArrayLike
) -> np.ndarray:
    r"""The joint feature map (20) of a ranking.

    .. math::

        \Phi(x, \pi) = \sum_{d} c_{\pi(d)}\, \phi(d, q) = \sum_p c_p\, x_{\mathrm{order}[p]},

    with :math:`x_d = \phi(d, q)` the feature vector of document :math:`d` (row ``d`` of
    ``X``), so that :math:`\langle w, \Phi(x, \pi)\rangle = \sum_p c_p\, g_{\mathrm{order}[p]}`
    with :math:`g = X w` (21).

    Parameters
    ----------
    X : array_like or scipy.sparse matrix, shape (l, d)
        The query's documents.
    order : array_like of int, shape (l,)
        ``order[p]`` is the document at position ``p``.
    c : array_like, shape (l,)
        Position coefficients (:func:`position_coefficients`).

    Returns
    -------
    numpy.ndarray, shape (d,)
    """
    X = _query_matrix(X)
    c = _vector(c, "c", X.shape[0])
    return np.asarray(X.T @ c[_position_of(_order(order, c.size))], dtype=np.float64).ravel()


def _position_of(order: np.ndarray) -> np.ndarray:
    """The paper's pi: the position of each document."""
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    return position


def sorted_assignment(
    g: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike, c: npt.ArrayLike
) -> np.ndarray | None:
    r"""The most violated ranking by sorting, when sorting is provably optimal; else None.

    The assignment (24) maximizes :math:`\sum_p \big(c_p\, g_{\mathrm{order}[p]} - a_p\,
    b_{\mathrm{order}[p]}\big)`: a matrix that is a sum of two rank-one products,
    :math:`c\,g^\top - a\,b^\top` in position x document form. With :math:`c` non-increasing,
    sorting solves it in two cases:

    1. :math:`a = \lambda c` (the paper's case, Sect. 4.2, with :math:`\lambda = 1`): the
       matrix is the single product :math:`c\,(g - \lambda b)^\top`, maximized by the documents
       in descending order of :math:`g - \lambda b` (Theorem 2, Polya-Littlewood-Hardy).
    2. :math:`a` is non-increasing too and one order sorts :math:`g` descending and :math:`b`
       ascending at once (for instance :math:`w = 0`, where :math:`g = 0`): each of the two
       terms is then at its own maximum (Theorem 2 on each), so their sum is.

    Parameters
    ----------
    g : array_like, shape (l,)
        Document scores :math:`g = X w`.
    a, b : array_like, shape (l,)
        Position weights and relevance transform (:func:`score_vectors`).
    c : array_like, shape (l,)
        Position coefficients of the feature map.

    Returns
    -------
    numpy.ndarray of int64, shape (l,) or None
        ``order`` when a case applies (case 1 is tested up to a relative 1e-12), else None:
        the linear assignment problem is then needed.

    References
    ----------
    Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", Theorem 2 and the
    end of Sect. 4.2.
    """
    c = np.asarray(c, dtype=np.float64)
    g, a, b = (_vector(v, name, c.size) for v, name in ((g, "g"), (a, "a"), (b, "b")))
    if np.any(np.diff(c) > 0):
        return None
    if c[0] != 0:
        ratio = a[0] / c[0]
        if np.allclose(a, ratio * c, rtol=1e-12, atol=0.0):
            return np.argsort(-(g - ratio * b), kind="stable").astype(np.int64)
    if np.any(np.diff(a) > 0):
        return None
    order = np.lexsort((b, -g))
    return order.astype(np.int64) if np.all(np.diff(b[order]) >= 0) else None


def _assignment(gain: np.ndarray) -> np.ndarray:
    """The order maximizing sum_p gain[order[p], p] (documents x positions), by the LAP."""
    # imported here: scipy.optimize costs 0.2-0.3 s, which every `cvxrank fit` would pay
    # when the registry loads this family (benchmarks/bench_one_slack.py)
    from scipy.optimize import linear_sum_assignment

    documents, positions = linear_sum_assignment(gain, maximize=True)
    order = np.empty(documents.size, dtype=np.int64)
    order[positions] = documents
    return order


def _violation(
    X: np.ndarray | sp.csr_matrix,
    w: np.ndarray,
    order: np.ndarray,
    loss: float,
    c: np.ndarray,
    reference: np.ndarray,
    solver: str,
) -> Violation:
    coefficient = c[_position_of(order)] - c[_position_of(reference)]
    difference = np.asarray(X.T @ coefficient, dtype=np.float64).ravel()
    return Violation(order, loss, difference, float(loss + w @ difference), solver)


def _query(
    X: npt.ArrayLike | sp.spmatrix, w: npt.ArrayLike, c: npt.ArrayLike, reference: npt.ArrayLike
) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X = _query_matrix(X)
    w = _vector(w, "w", X.shape[1])
    c = _vector(c, "c", X.shape[0])
    reference = _order(reference, X.shape[0])
    return X, w, np.asarray(X @ w, dtype=np.float64).ravel(), c, reference


def most_violated_permutation(
    X: npt.ArrayLike | sp.spmatrix,
    w: npt.ArrayLike,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    c: npt.ArrayLike,
    reference: npt.ArrayLike,
    *,
    method: Literal["auto", "lap"] = "auto",
) -> Violation:
    r"""DORM's most violated permutation of one query, (8) with the loss (17).

    Finds

    .. math::

        \hat\pi = \operatorname*{argmax}_\pi\; \Delta(y, \pi) + \langle w, \Phi(x, \pi)\rangle
        = \operatorname*{argmax}_\pi \sum_p \big(c_p\, g_{\mathrm{order}[p]}
        - a_p\, b_{\mathrm{order}[p]}\big) + \text{const}  \qquad (22)\text{-}(23)

    with :math:`g = X w`: the linear assignment problem (24), :math:`C_{dp} = c_p g_d - a_p
    b_d` for document :math:`d` at position :math:`p`, solved exactly by
    :func:`scipy.optimize.linear_sum_assignment` (Jonker-Volgenant, the implementation the
    paper used, Sect. 4.3), or by a sort when :func:`sorted_assignment` proves one optimal.

    Parameters
    ----------
    X : array_like or scipy.sparse matrix, shape (l, d)
        The query's documents (rows :math:`\phi(d, q)`).
    w : array_like, shape (d,)
        Current weights.
    a, b : array_like, shape (l,)
        Position weights and relevance transform (:func:`score_vectors`).
    c : array_like, shape (l,)
        Position coefficients of the feature map (:func:`position_coefficients`).
    reference : array_like of int, shape (l,)
        The ranking :math:`\pi^*` of zero loss whose features the piece subtracts
        (:func:`ideal_order` for the paper's (27b)).
    method : {"auto", "lap"}
        ``"auto"`` sorts when :func:`sorted_assignment` applies and solves the assignment
        problem otherwise; ``"lap"`` always solves the assignment problem.

    Returns
    -------
    Violation
        ``loss`` is (17) of the ranking found and ``feature_difference`` is
        :math:`\Phi(x, \hat\pi) - \Phi(x, \pi^*)`.

    References
    ----------
    Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", Eqs. (8), (17),
    (20), (22)-(26).
    """
    X, w, g, c, reference = _query(X, w, c, reference)
    a, b = _vector(a, "a", g.size), _vector(b, "b", g.size)
    if method not in ("auto", "lap"):
        raise ValueError(f"method must be 'auto' or 'lap', got {method!r}")
    order = sorted_assignment(g, a, b, c) if method == "auto" else None
    solver = "sort"
    if order is None:
        order, solver = _assignment(np.outer(g, c) - np.outer(b, a)), "lap"
    return _violation(X, w, order, measure_loss(order, a, b), c, reference, solver)


def most_violated_position_loss(
    X: npt.ArrayLike | sp.spmatrix,
    w: npt.ArrayLike,
    cost: npt.ArrayLike,
    c: npt.ArrayLike,
    reference: npt.ArrayLike,
    *,
    constant: float = 0.0,
) -> Violation:
    r"""The most violated permutation of one query under a general position-dependent loss.

    Solves (8) with the loss (19), :math:`\Delta(\pi, y) = \sum_p C_{\mathrm{order}[p],\,p}
    + \text{const}`, as the linear assignment problem with entries :math:`c_p g_d + C_{dp}`
    (:math:`g = X w`), by :func:`scipy.optimize.linear_sum_assignment`.

    Parameters
    ----------
    X : array_like or scipy.sparse matrix, shape (l, d)
        The query's documents.
    w : array_like, shape (d,)
        Current weights.
    cost : array_like, shape (l, l)
        ``cost[d, p]``, the cost of document ``d`` at position ``p`` (:func:`position_cost`
        gives that of (17)).
    c : array_like, shape (l,)
        Position coefficients of the feature map.
    reference : array_like of int, shape (l,)
        The reference ranking :math:`\pi^*` whose features the piece subtracts (a ranking
        of zero loss for the bound of Lemma 1).
    constant : float
        The constant of (19).

    Returns
    -------
    Violation
        ``loss`` is (19) of the ranking found.

    References
    ----------
    Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", Eqs. (8), (19),
    (24)-(26).
    """
    X, w, g, c, reference = _query(X, w, c, reference)
    cost = _cost(cost)
    if cost.shape[0] != g.size:
        raise ValueError(f"cost must be {g.size} x {g.size}, got {cost.shape}")
    order = _assignment(np.outer(g, c) + cost)
    return _violation(X, w, order, position_loss(order, cost, constant), c, reference, "lap")
