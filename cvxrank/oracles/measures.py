r"""Le & Smola's ranking scores as objects: each measure is its position weights and its
relevance transform (Sect. 3.2, Eqs. (9)-(16); mWTA, Sect. 6.4).

A :class:`RankingMeasure` writes the score of a ranking of one query as
:math:`\langle a(\pi), b(y)\rangle` (:func:`cvxrank.oracles.dorm.ranking_score`): its
:meth:`~RankingMeasure.vectors` give the non-increasing position weights :math:`a` and the
relevance transform :math:`b` of the grades (non-decreasing in the grade). That is all DORM's
loss (17), its most violated permutation (24) and its cutting plane need, so a researcher's
measure written the same way (a subclass with its two vectors) gets DORM's solver as the
built-in ones do. With the 1-based position :math:`i` (:math:`a_i = 0` beyond a cut-off
:math:`n`; :math:`\pi^*` an optimal ranking):

* :data:`wta` (9): :math:`a_i = \delta(i, 1)`, :math:`b_d = \delta(r_d, r_{\max})`;
* :data:`mrr` (10): :math:`a_i = 1/i`, :math:`b_d = \delta(d, d^*)` with :math:`d^*` the
  first document (in input order) of the top grade;
* :data:`dcg` (11): :math:`a_i = 1/\log_2(i + 1)` for :math:`i \le n`,
  :math:`b_d = 2^{r_d} - 1`;
* :data:`ndcg` (13)-(14): the same :math:`a`, :math:`b_d = (2^{r_d} - 1) /
  \mathrm{DCG@}n(\pi^*)`;
* :data:`precision` (15): :math:`a_i = 1/n` for :math:`i \le n`, :math:`b_d = [r_d \ge t]`;
* :data:`eru` (16): :math:`a_i = 2^{(1-i)/(\alpha-1)}`, :math:`b_d = \max(r_d - \delta, 0)`;
* :data:`normalized_eru` (Sect. 3.2, "in a similar manner to NDCG"): the same :math:`a`,
  :math:`b_d = \max(r_d - \delta, 0) / \mathrm{ERU}(\pi^*)`;
* :data:`mwta` (Sect. 6.4): NDCG with :math:`n` = :func:`mwta_cutoff`.

References
----------
.. [1] Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures",
   arXiv:0704.3359, 2007, Sect. 3.2, Eqs. (9)-(16); Sect. 6.4 (mWTA).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cvxrank.utils.named import by_name


@dataclass(frozen=True)
class MeasureOptions:
    """The constants some measures take.

    Attributes
    ----------
    relevance_threshold : float
        Precision@n's "correct" documents (15): grades :math:`\\ge t`.
    neutral : float
        ERU's neutral vote :math:`\\delta` (the paper's :math:`d`).
    half_life : float
        ERU's viewing half-life :math:`\\alpha > 1`: the position whose weight is 1/2.
    """

    relevance_threshold: float = 1.0
    neutral: float = 0.0
    half_life: float = 5.0


class RankingMeasure(ABC):
    """A ranking score :math:`\\langle a(\\pi), b(y)\\rangle` of one query (module docstring).

    Attributes
    ----------
    name : str
        The name ``DORM(loss=...)`` and ``cvxrank fit --loss`` use (``@n`` adds a cut-off).
    takes_cutoff : bool
        Whether a cut-off n truncates it (DCG@n, NDCG@n, Precision@n).
    needs_cutoff : bool
        Whether it is defined only with one (Precision@n).
    """

    name: str
    takes_cutoff: bool = False
    needs_cutoff: bool = False

    def __repr__(self) -> str:
        return f"cvxrank.oracles.measures.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # one object per measure, also after pickling

    @abstractmethod
    def vectors(self, y: np.ndarray, cutoff: int | None,
                options: MeasureOptions) -> tuple[np.ndarray, np.ndarray]:
        """The position weights :math:`a` and relevance transform :math:`b` of the grades
        ``y`` (finite, >= 0, in input order; at least one), with the cut-off checked."""


def check_grades(y: npt.ArrayLike) -> np.ndarray:
    """``y`` as a float64 array of grades: ValueError unless it is 1-D, non-empty, finite and
    >= 0."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"y must be a non-empty 1-D array of grades, got shape {y.shape}")
    bad = np.flatnonzero(~(np.isfinite(y) & (y >= 0)))
    if bad.size:
        raise ValueError(f"y[{bad[0]}] is {y[bad[0]]}; grades must be finite and >= 0")
    return y


def mwta_cutoff(y: npt.ArrayLike) -> int:
    r"""The truncation level of DORM's modified WTA (mWTA) for one query (Sect. 6.4).

    mWTA optimizes NDCG@n with a per-query n chosen from the ideal ranking: n = 3 if its
    top 3 documents hold at least two grades ("more than one level of preference"); if they
    all share the top grade, n is the position of the first document of a lower grade, so
    that at least one lower-ranking document is inside the cutoff. Both cases are
    :math:`n = \max(3, m + 1)` with :math:`m` the number of documents of the top grade,
    capped at the number of documents :math:`l`.

    Parameters
    ----------
    y : array_like, shape (l,)
        Grades of the query's documents (finite, >= 0).

    Returns
    -------
    int
        :math:`\min(l, \max(3, m + 1))`.

    Notes
    -----
    The paper's words are "for queries that have more than 2 level of preference at the top
    3 items, the truncation is 3; for queries that have only one level of preference at the
    top 3 items, the truncation level is after position where the next level of preference
    appears". Read literally the first case leaves exactly two levels uncovered; here two
    levels count as "more than one" and also give 3.
    """
    y = check_grades(y)
    top = int(np.count_nonzero(y == y.max()))
    return min(y.size, max(3, top + 1))


def positions(y: np.ndarray) -> np.ndarray:
    """The 1-based positions :math:`i = 1, ..., l` of a query of ``y.size`` documents."""
    return np.arange(1, y.size + 1, dtype=np.float64)


def normalized(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``b`` divided by the optimal score <a, b> (all zeros if that is 0)."""
    best = float(np.sort(a)[::-1] @ np.sort(b)[::-1])
    return b / best if best > 0 else np.zeros_like(b)


class _WTA(RankingMeasure):
    name = "wta"

    def vectors(self, y: np.ndarray, cutoff: int | None,
                options: MeasureOptions) -> tuple[np.ndarray, np.ndarray]:
        return (positions(y) == 1).astype(np.float64), (y == y.max()).astype(np.float64)


class _MRR(RankingMeasure):
    name = "mrr"

    def vectors(self, y: np.ndarray, cutoff: int | None,
                options: MeasureOptions) -> tuple[np.ndarray, np.ndarray]:
        b = np.zeros(y.size)
        b[np.argmax(y)] = 1.0
        return 1.0 / positions(y), b


class _DCG(RankingMeasure):
    """DCG@n, and NDCG@n (``normalized``)."""

    takes_cutoff = True

    def __init__(self, name: str, *, normalized: bool) -> None:
        self.name = name
        self.normalized = normalized

    def truncation(self, y: np.ndarray, cutoff: int | None) -> int:
        """The cut-off n (every position without one)."""
        return y.size if cutoff is None else cutoff

    def vectors(self, y: np.ndarray, cutoff: int | None,
                options: MeasureOptions) -> tuple[np.ndarray, np.ndarray]:
        position = positions(y)
        n = self.truncation(y, cutoff)
        a = np.where(position <= n, 1.0 / np.log2(position + 1.0), 0.0)
        gain = np.exp2(y) - 1.0
        return a, normalized(a, gain) if self.normalized else gain


class _MWTA(_DCG):
    """NDCG truncated at :func:`~cvxrank.oracles.dorm.mwta_cutoff` (Sect. 6.4)."""

    takes_cutoff = False

    def __init__(self) -> None:
        super().__init__("mwta", normalized=True)

    def truncation(self, y: np.ndarray, cutoff: int | None) -> int:
        return mwta_cutoff(y)


class _Precision(RankingMeasure):
    name = "precision"
    takes_cutoff = needs_cutoff = True

    def vectors(self, y: np.ndarray, cutoff: int | None,
                options: MeasureOptions) -> tuple[np.ndarray, np.ndarray]:
        if cutoff is None:
            raise ValueError("measure 'precision' needs a cutoff n (Precision@n)")
        a = np.where(positions(y) <= cutoff, 1.0 / cutoff, 0.0)
        return a, (y >= options.relevance_threshold).astype(np.float64)


class _ERU(RankingMeasure):
    """ERU, and normalized ERU (``normalized``, Sect. 3.2: "in a similar manner to NDCG")."""

    def __init__(self, name: str, *, normalized: bool) -> None:
        self.name = name
        self.normalized = normalized

    def vectors(self, y: np.ndarray, cutoff: int | None,
                options: MeasureOptions) -> tuple[np.ndarray, np.ndarray]:
        if not options.half_life > 1:
            raise ValueError(f"half_life must be > 1, got {options.half_life}")
        a = np.exp2((1.0 - positions(y)) / (options.half_life - 1.0))
        utility = np.maximum(y - options.neutral, 0.0)
        return a, normalized(a, utility) if self.normalized else utility


#: Winner takes all (9).
wta = _WTA()
#: Mean reciprocal rank (10).
mrr = _MRR()
#: DCG@n (11).
dcg = _DCG("dcg", normalized=False)
#: NDCG@n (13)-(14).
ndcg = _DCG("ndcg", normalized=True)
#: Precision@n (15).
precision = _Precision()
#: Expected rank utility (16).
eru = _ERU("eru", normalized=False)
#: ERU over its optimum (Sect. 3.2).
normalized_eru = _ERU("normalized_eru", normalized=True)
#: DORM's modified WTA (Sect. 6.4).
mwta = _MWTA()

#: The built-in measures by name, in the paper's order.
RANKING_MEASURES: dict[str, RankingMeasure] = {m.name: m for m in (
    wta, mrr, dcg, ndcg, precision, eru, normalized_eru, mwta)}


def ranking_measure(measure: str | RankingMeasure) -> RankingMeasure:
    """The measure named ``measure`` (:data:`RANKING_MEASURES`), or ``measure`` itself.

    Raises
    ------
    ValueError
        For any other name or object.
    """
    return by_name(measure, RankingMeasure, RANKING_MEASURES, "measure")
