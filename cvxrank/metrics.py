r"""Information-retrieval measures for learning to rank, with every convention explicit.

Every measure is computed per query and returned as a float array of length
``n_queries``; :func:`mean_over_queries` averages it (a query scored NaN is left out of the
mean, which is how ``no_relevant="skip"`` works). :func:`evaluate` computes the usual
table (NDCG@1..k, P@1..k, MAP, MRR and, for LETOR 4.0, MeanNDCG) in one pass.

The inputs of every measure are ``y``, the grades (a 1-D array of finite, non-negative
numbers, usually integers); ``scores``, the predictions (a 1-D array of finite floats of the
same length, higher scores ranked first); and ``query_ptr``, the offsets of the queries: the
rows of query ``q`` are ``query_ptr[q]:query_ptr[q + 1]`` (contiguous, at least one row
each). :func:`query_ptr_from_qid` builds ``query_ptr`` from a per-row query id.

Evaluation tools disagree on the gain, the discount, ties in the scores, queries without a
relevant document and queries with fewer than ``k`` documents. A :class:`Convention` names
each choice; :data:`PRESETS` holds those of LETOR 3.0 and 4.0's ``Eval-Score`` scripts,
trec_eval, scikit-learn and LightGBM.

References
----------
.. [1] H. Li, "A Short Introduction to Learning to Rank", IEICE Transactions on Information
   and Systems, E94-D(10), 2011, Sect. 1.3, Eqs. (1)-(4) (DCG, NDCG) and the definition of
   MAP that follows them.
.. [2] Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures" (DORM),
   arXiv:0704.3359, 2007, Sect. 3.2, Eqs. (9)-(16) (WTA, MRR, DCG, NDCG, Precision@n, ERU).
.. [3] J. S. Breese, D. Heckerman and C. Kadie, "Empirical Analysis of Predictive Algorithms
   for Collaborative Filtering", UAI 1998 (expected rank utility).
.. [4] F. McSherry and M. Najork, "Computing Information Retrieval Performance Measures
   Efficiently in the Presence of Tied Scores", ECIR 2008 (measures averaged over ties).
.. [5] T. Qin, T.-Y. Liu, J. Xu and H. Li, "LETOR: A Benchmark Collection for Research on
   Learning to Rank for Information Retrieval", Information Retrieval 13(4), 2010, and the
   evaluation scripts ``Eval-Score-3.0.pl`` and ``Eval-Score-4.0.pl`` (J. Xu, T.-Y. Liu).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from cvxrank.data.ranking_data import MAX_GRADE

__all__ = [
    "PRESETS",
    "Convention",
    "auc",
    "average_precision",
    "dcg_at_k",
    "evaluate",
    "expected_rank_utility",
    "get_preset",
    "kendall_tau",
    "mean_ndcg",
    "mean_over_queries",
    "ndcg_at_k",
    "pairwise_accuracy",
    "precision_at_k",
    "query_ptr_from_qid",
    "reciprocal_rank",
    "tied_documents",
    "winner_takes_all",
]

Gain = Literal["exp2", "linear"]
Discount = Literal["log2", "letor"]
Ties = Literal["input_order", "docid_descending", "average", "pessimistic", "optimistic"]
NdcgShortList = Literal["truncate", "zero"]
PrecisionShortList = Literal["truncate", "zero", "pad"]
ApCutoffDenominator = Literal["relevant", "min_relevant_k"]

_CHOICES: dict[str, tuple[str, ...]] = {
    "discount": ("log2", "letor"),
    "ties": ("input_order", "docid_descending", "average", "pessimistic", "optimistic"),
    "ndcg_short_list": ("truncate", "zero"),
    "precision_short_list": ("truncate", "zero", "pad"),
    "ap_cutoff_denominator": ("relevant", "min_relevant_k"),
}


@dataclass(frozen=True)
class Convention:
    r"""The conventions under which a measure is computed.

    Parameters
    ----------
    gain : {"exp2", "linear"} or sequence of float
        Gain :math:`G(y)` of a grade: ``"exp2"`` is :math:`2^y - 1` (Li, Eq. (1)), defined
        here for grades up to ``MAX_GRADE`` = 30 (LightGBM's limit; a larger grade is a
        ``ValueError``, where 2^y - 1 would lose exactness and overflow at 1024);
        ``"linear"`` is :math:`y` (trec_eval, scikit-learn), for any finite grade; a sequence
        is a table indexed by integer grade (every grade must then be an integer below its
        length).
    discount : {"log2", "letor"}
        Discount :math:`D(i)` of the 1-based position :math:`i`: ``"log2"`` is
        :math:`1/\log_2(1 + i)` (Li, Eq. (2)); ``"letor"`` is 1 at :math:`i = 1` and
        :math:`1/\log_2 i` after, so positions 1 and 2 both have discount 1.
    ties : {"input_order", "docid_descending", "average", "pessimistic", "optimistic"}
        Documents with equal scores: ``"input_order"`` keeps their input order (a stable
        sort by descending score: LETOR's scripts, which makes the file order part of the
        result); ``"docid_descending"`` puts the larger document id first, comparing the ids
        as strings (trec_eval's rule: its ``qsort`` compares score, then ``strcmp`` of the
        docnos, both descending); it needs the ``docid`` argument of the measure and keeps the
        input order when ``docid`` is None; ``"pessimistic"`` puts the lowest grade first,
        ``"optimistic"`` the highest; ``"average"`` reports the expected value of the measure
        over all orderings of each tied block, all equally likely (McSherry & Najork). For
        measures linear in the ranked grades (DCG, P@k, WTA, ERU) that is the measure with
        each grade replaced by the mean grade of its tied block, as in
        :func:`sklearn.metrics.ndcg_score`; average precision and the reciprocal rank use
        exact formulas.
    no_relevant : float or "skip"
        Value of a query without relevant document: one whose ideal DCG is 0 for NDCG (and
        normalized ERU), one without a grade ``>= relevance_threshold`` for P@k, AP, RR and
        WTA. ``"skip"`` scores it NaN, which leaves it out of :func:`mean_over_queries`. This
        rule takes precedence over the short-list rules.
    relevance_threshold : float
        Grades ``>= relevance_threshold`` are relevant for the binary measures (P@k, AP,
        RR, WTA, AUC).
    ndcg_short_list : {"truncate", "zero"}
        NDCG@k (and DCG@k) of a query with :math:`n < k` documents: ``"truncate"`` computes
        it at :math:`\min(k, n)` (DCG and ideal DCG over the :math:`n` documents; padding the
        ranking with irrelevant documents gives the same value); ``"zero"`` scores it 0 (the
        query still counts in the mean).
    precision_short_list : {"truncate", "zero", "pad"}
        P@k of a query with :math:`n < k` documents: ``"truncate"`` is
        :math:`\mathrm{rel}(n) / n`; ``"pad"`` counts the missing positions as irrelevant,
        :math:`\mathrm{rel}(n) / k`; ``"zero"`` scores it 0 (still counted in the mean).
    ap_cutoff_denominator : {"relevant", "min_relevant_k"}
        Denominator of AP@k (average precision with a cutoff ``k``): the number :math:`R`
        of relevant documents (trec_eval's ``map_cut``) or :math:`\min(R, k)` (LightGBM's
        ``map@k``). Without a cutoff both are :math:`R`.

    See Also
    --------
    PRESETS : the conventions of LETOR, trec_eval, scikit-learn and LightGBM.
    """

    gain: Gain | Sequence[float] = "exp2"
    discount: Discount = "log2"
    ties: Ties = "input_order"
    no_relevant: float | Literal["skip"] = 0.0
    relevance_threshold: float = 1.0
    ndcg_short_list: NdcgShortList = "truncate"
    precision_short_list: PrecisionShortList = "pad"
    ap_cutoff_denominator: ApCutoffDenominator = "relevant"

    def __post_init__(self) -> None:
        if isinstance(self.gain, str):
            if self.gain not in ("exp2", "linear"):
                raise ValueError(
                    f"gain must be 'exp2', 'linear' or a table of gains, got {self.gain!r}"
                )
        else:
            table = tuple(float(g) for g in self.gain)
            if not table or not all(math.isfinite(g) and g >= 0 for g in table):
                raise ValueError(
                    f"a gain table must be a non-empty sequence of finite non-negative "
                    f"numbers, got {self.gain!r}"
                )
            object.__setattr__(self, "gain", table)
        for name, valid in _CHOICES.items():
            value = getattr(self, name)
            if value not in valid:
                raise ValueError(f"{name} must be one of {', '.join(valid)}; got {value!r}")
        if isinstance(self.no_relevant, str):
            if self.no_relevant != "skip":
                raise ValueError(
                    f"no_relevant must be a number or 'skip', got {self.no_relevant!r}"
                )
        elif not math.isfinite(self.no_relevant):
            raise ValueError(f"no_relevant must be finite or 'skip', got {self.no_relevant}")
        if not math.isfinite(self.relevance_threshold):
            raise ValueError("relevance_threshold must be finite")

    @property
    def no_relevant_value(self) -> float:
        """The per-query value of a query without relevant document (NaN for ``"skip"``)."""
        return math.nan if self.no_relevant == "skip" else float(self.no_relevant)


#: Named conventions. ``letor3`` and ``letor4`` reproduce LETOR's ``Eval-Score-3.0.pl`` and
#: ``Eval-Score-4.0.pl`` (gain table 0, 1, 3 for grades 0, 1, 2; stable sort; a query without
#: relevant document scores 0 and counts in the mean; 3.0 scores NDCG@k and P@k of a query
#: with fewer than k documents 0, 4.0 scores NDCG@k 0 and divides P@k by k). The scripts'
#: tables only know grades 0-2 (a grade 3 would get gain 0 and count as irrelevant); here the
#: gain is 2^y - 1 and grades >= 1 are relevant, which agrees on LETOR's data. ``trec`` is
#: trec_eval's ``ndcg_cut``, ``P``, ``map`` and ``recip_rank``, ties included: trec_eval breaks
#: score ties by docno, descending (``ties="docid_descending"``); without document ids the
#: input order is kept, which trec_eval never does. ``sklearn`` is
#: :func:`sklearn.metrics.ndcg_score` (``ignore_ties=False``). ``lightgbm`` is LightGBM's
#: ``ndcg@k`` and ``map@k`` (a query without relevant document scores 1).
#: On large grades: the exp2 presets (``letor3``, ``letor4``, ``lightgbm``) refuse grades
#: above ``MAX_GRADE`` = 30, as LightGBM does; ``trec`` and ``sklearn`` (linear gain) take any
#: finite grade >= 0.
PRESETS: dict[str, Convention] = {
    "letor3": Convention(
        gain="exp2",
        discount="letor",
        ties="input_order",
        no_relevant=0.0,
        relevance_threshold=1.0,
        ndcg_short_list="zero",
        precision_short_list="zero",
    ),
    "letor4": Convention(
        gain="exp2",
        discount="letor",
        ties="input_order",
        no_relevant=0.0,
        relevance_threshold=1.0,
        ndcg_short_list="zero",
        precision_short_list="pad",
    ),
    "trec": Convention(
        gain="linear",
        discount="log2",
        ties="docid_descending",
        no_relevant=0.0,
        relevance_threshold=1.0,
        ndcg_short_list="truncate",
        precision_short_list="pad",
    ),
    "sklearn": Convention(
        gain="linear",
        discount="log2",
        ties="average",
        no_relevant=0.0,
        relevance_threshold=1.0,
        ndcg_short_list="truncate",
        precision_short_list="truncate",
    ),
    "lightgbm": Convention(
        gain="exp2",
        discount="log2",
        ties="input_order",
        no_relevant=1.0,
        relevance_threshold=1.0,
        ndcg_short_list="truncate",
        precision_short_list="truncate",
        ap_cutoff_denominator="min_relevant_k",
    ),
}


def get_preset(name: str) -> Convention:
    """The :class:`Convention` of a named preset.

    Parameters
    ----------
    name : str
        One of the keys of :data:`PRESETS` (``letor3``, ``letor4``, ``trec``, ``sklearn``,
        ``lightgbm``).

    Raises
    ------
    ValueError
        If ``name`` is not a preset; the message lists the valid names.
    """
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown metrics preset {name!r}; valid presets: {', '.join(PRESETS)}"
        ) from None


def _as_convention(convention: Convention | str) -> Convention:
    if isinstance(convention, Convention):
        return convention
    return get_preset(convention)


def query_ptr_from_qid(qid: npt.ArrayLike) -> np.ndarray:
    """Query offsets from a per-row query id whose equal values are contiguous.

    Parameters
    ----------
    qid : array_like, shape (n,)
        Query id of each row (any comparable values).

    Returns
    -------
    numpy.ndarray of int64, shape (n_queries + 1,)
        ``query_ptr``: the rows of query ``q`` are ``query_ptr[q]:query_ptr[q + 1]``.

    Raises
    ------
    ValueError
        If ``qid`` is not 1-D, or if a query id reappears after rows of another query (the
        message names the query id and the row where it reappears).
    """
    qid = np.asarray(qid)
    if qid.ndim != 1:
        raise ValueError(f"qid must be 1-D, got shape {qid.shape}")
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]]) if qid.size else np.array([], int)
    _, first = np.unique(qid[starts], return_index=True)
    if first.size != starts.size:
        repeated = np.setdiff1d(np.arange(starts.size), first)[0]
        row = int(starts[repeated])
        raise ValueError(
            f"qid {qid[row].item()!r} reappears at row {row} after rows of other queries; the rows "
            "of a query must be contiguous"
        )
    return np.r_[starts, qid.size].astype(np.int64)


def _check_inputs(
    y: npt.ArrayLike, scores: npt.ArrayLike, query_ptr: npt.ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    ptr = np.asarray(query_ptr)
    if y.ndim != 1 or scores.ndim != 1:
        raise ValueError(f"y and scores must be 1-D, got shapes {y.shape} and {scores.shape}")
    if y.size != scores.size:
        raise ValueError(f"y has {y.size} rows but scores has {scores.size}; they must match")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise ValueError(f"scores[{bad[0]}] is {scores[bad[0]]}; scores must be finite")
    bad = np.flatnonzero(~(np.isfinite(y) & (y >= 0)))
    if bad.size:
        raise ValueError(f"y[{bad[0]}] is {y[bad[0]]}; grades must be finite and >= 0")
    if ptr.ndim != 1 or ptr.size < 2 or not np.issubdtype(ptr.dtype, np.integer):
        raise ValueError(
            "query_ptr must be a 1-D integer array of n_queries + 1 >= 2 offsets, got "
            f"shape {ptr.shape} and dtype {ptr.dtype}"
        )
    if ptr[0] != 0 or ptr[-1] != y.size:
        raise ValueError(
            f"query_ptr must start at 0 and end at the number of rows {y.size}, got "
            f"{ptr[0]} and {ptr[-1]}"
        )
    empty = np.flatnonzero(np.diff(ptr) <= 0)
    if empty.size:
        raise ValueError(
            f"query {empty[0]} has no rows (query_ptr[{empty[0]}] = {ptr[empty[0]]}, "
            f"query_ptr[{empty[0] + 1}] = {ptr[empty[0] + 1]}); offsets must increase"
        )
    return y, scores, ptr.astype(np.int64)


@dataclass(frozen=True)
class _Ranking:
    """The documents of every query sorted by score.

    Slot ``ptr[q] + i - 1`` holds the document at position ``i`` of query ``q``;
    ``order[slot]`` is its input row.
    """

    y: np.ndarray
    ptr: np.ndarray
    order: np.ndarray
    query: np.ndarray
    position: np.ndarray
    block: np.ndarray | None

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.ptr)

    def expected(self, values: np.ndarray) -> np.ndarray:
        """Per-slot values averaged over each tied block (ties="average"), else unchanged."""
        if self.block is None:
            return values
        means = np.bincount(self.block, weights=values) / np.bincount(self.block)
        return means[self.block]

    def at_cutoff(self, cumulative: np.ndarray, k: int) -> np.ndarray:
        """Per query, a per-slot cumulative sum read at position ``min(k, n)``."""
        return cumulative[self.ptr[:-1] + np.minimum(k, self.sizes) - 1]

    def per_query_sum(self, values: np.ndarray) -> np.ndarray:
        """Per query, the sum of per-slot values, accumulated in position order."""
        return np.bincount(self.query, weights=values, minlength=self.sizes.size)


def _rank(
    y: npt.ArrayLike,
    scores: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    ties: str,
    docid: npt.ArrayLike | None = None,
) -> _Ranking:
    y, scores, ptr = _check_inputs(y, scores, query_ptr)
    sizes = np.diff(ptr)
    query = np.repeat(np.arange(sizes.size), sizes)
    keys: tuple[np.ndarray, ...] = (-scores, query)
    if ties == "pessimistic":
        keys = (y, *keys)
    elif ties == "optimistic":
        keys = (-y, *keys)
    elif ties == "docid_descending" and docid is not None:
        keys = (-_docid_rank(docid, y.size), *keys)
    order = np.lexsort(keys)  # stable: equal keys keep the input order
    position = np.arange(y.size) - ptr[query] + 1
    block = None
    if ties == "average":
        s = scores[order]
        block = np.cumsum(np.r_[True, (s[1:] != s[:-1]) | (query[1:] != query[:-1])]) - 1
    return _Ranking(y, ptr, order, query, position, block)


def _docid_rank(docid: npt.ArrayLike, n: int) -> np.ndarray:
    """Rank of each document id in string order (code points, which is UTF-8 byte order)."""
    ids = np.asarray(docid, dtype=object)
    if ids.shape != (n,):
        raise ValueError(f"docid has shape {ids.shape} but there are {n} documents")
    missing = np.flatnonzero([d is None for d in ids])
    if missing.size:
        raise ValueError(f"docid[{missing[0]}] is None; every document needs an id")
    _, rank = np.unique(ids.astype(str), return_inverse=True)
    return rank.reshape(n)


def tied_documents(scores: npt.ArrayLike, query_ptr: npt.ArrayLike) -> np.ndarray:
    """Per query, the number of documents whose score equals another one's in the query.

    How such ties are broken is a convention (:class:`Convention`, ``ties``) that can move a
    measure a lot: LETOR's files list a query's documents in an order that carries relevance
    information, so breaking ties by file order (LETOR's scripts) rewards constant scores.

    Parameters
    ----------
    scores : array_like, shape (n,)
        Predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).

    Returns
    -------
    numpy.ndarray of int64, shape (n_queries,)
    """
    scores = np.asarray(scores, dtype=np.float64)
    _, scores, ptr = _check_inputs(np.zeros(scores.shape), scores, query_ptr)
    query = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    order = np.lexsort((scores, query))
    s, q = scores[order], query[order]
    new = np.r_[True, (s[1:] != s[:-1]) | (q[1:] != q[:-1])]
    block = np.cumsum(new) - 1
    size = np.bincount(block)
    tied = (size > 1)[block]
    return np.bincount(q[tied], minlength=ptr.size - 1).astype(np.int64)


def _segment_cumsum(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Cumulative sums restarting at each query, added in position order."""
    return np.concatenate([np.cumsum(part) for part in np.split(values, ptr[1:-1])])


def _gains(y: np.ndarray, gain: str | tuple[float, ...]) -> np.ndarray:
    if gain == "exp2":
        bad = np.flatnonzero(y > MAX_GRADE)
        if bad.size:
            raise ValueError(
                f"y[{bad[0]}] is {y[bad[0]]:g}, above {MAX_GRADE}, the largest grade of the exp2 "
                "gain 2^y - 1 (LightGBM's limit; the gain overflows at 1024); use a linear gain "
                "(the trec or sklearn preset)"
            )
        return np.exp2(y) - 1.0
    if gain == "linear":
        return y
    table = np.asarray(gain)
    index = y.astype(np.int64)
    bad = np.flatnonzero((index != y) | (index >= table.size))
    if bad.size:
        raise ValueError(
            f"y[{bad[0]}] is {y[bad[0]]}, which has no entry in the gain table of "
            f"{table.size} entries (integer grades 0..{table.size - 1})"
        )
    return table[index]


def _discounts(position: np.ndarray, discount: str) -> np.ndarray:
    p = position.astype(np.float64)
    if discount == "log2":
        return 1.0 / np.log2(p + 1.0)
    return 1.0 / np.log2(np.maximum(p, 2.0))


def _relevant(y: np.ndarray, conv: Convention) -> np.ndarray:
    return (y >= conv.relevance_threshold).astype(np.float64)


def _dcg_cumulative(r: _Ranking, conv: Convention) -> tuple[np.ndarray, np.ndarray]:
    """Per-slot DCG@i of the ranking and of the ideal ranking, summed in position order."""
    gain = _gains(r.y, conv.gain)
    discount = _discounts(r.position, conv.discount)
    ideal = np.lexsort((-gain, r.query))
    return (
        _segment_cumsum(r.expected(gain[r.order]) * discount, r.ptr),
        _segment_cumsum(gain[ideal] * discount, r.ptr),
    )


def _ndcg_table(r: _Ranking, conv: Convention, ks: Sequence[int]) -> np.ndarray:
    dcg, ideal = _dcg_cumulative(r, conv)
    table = np.empty((len(ks), r.sizes.size))
    for row, k in enumerate(ks):
        d, i = r.at_cutoff(dcg, k), r.at_cutoff(ideal, k)
        value = np.divide(d, i, out=np.full_like(d, conv.no_relevant_value), where=i > 0)
        if conv.ndcg_short_list == "zero":
            value[(r.sizes < k) & (i > 0)] = 0.0
        table[row] = value
    return table


def _precision_table(r: _Ranking, conv: Convention, ks: Sequence[int]) -> np.ndarray:
    relevant = _relevant(r.y, conv)[r.order]
    hits = _segment_cumsum(r.expected(relevant), r.ptr)
    none = r.per_query_sum(relevant) == 0
    table = np.empty((len(ks), r.sizes.size))
    for row, k in enumerate(ks):
        found = r.at_cutoff(hits, k)
        if conv.precision_short_list == "truncate":
            value = found / np.minimum(k, r.sizes)
        else:
            value = found / k
            if conv.precision_short_list == "zero":
                value[r.sizes < k] = 0.0
        value[none] = conv.no_relevant_value
        table[row] = value
    return table


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def dcg_at_k(
    y: npt.ArrayLike,
    scores: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    k: int = 10,
    *,
    convention: Convention | str = "letor3",
    docid: npt.ArrayLike | None = None,
) -> np.ndarray:
    r"""Discounted cumulative gain at position ``k`` of each query.

    .. math::

        \mathrm{DCG}@k = \sum_{i=1}^{\min(k, n)} G\bigl(y_{\pi(i)}\bigr)\, D(i),

    where :math:`\pi(i)` is the document at position :math:`i` of the ranking by descending
    score, :math:`G` the gain and :math:`D` the discount of the convention (Li, Eq. (3)).
    The terms are added in position order. Under ``ndcg_short_list="zero"`` a query with
    fewer than ``k`` documents scores 0; ``no_relevant`` does not apply to DCG.

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).
    k : int
        Cutoff (positive).
    convention : Convention or str
        A :class:`Convention` or the name of a preset.
    docid : array_like of str, optional
        Document ids, which break score ties under ``ties="docid_descending"`` (the
        ``trec`` preset); ignored by the other tie rules.

    Returns
    -------
    numpy.ndarray, shape (n_queries,)

    References
    ----------
    H. Li, "A Short Introduction to Learning to Rank", IEICE 2011, Sect. 1.3, Eq. (3).
    """
    conv = _as_convention(convention)
    k = _check_k(k)
    r = _rank(y, scores, query_ptr, conv.ties, docid)
    value = r.at_cutoff(_dcg_cumulative(r, conv)[0], k)
    if conv.ndcg_short_list == "zero":
        value[r.sizes < k] = 0.0
    return value


def ndcg_at_k(
    y: npt.ArrayLike,
    scores: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    k: int = 10,
    *,
    convention: Convention | str = "letor3",
    docid: npt.ArrayLike | None = None,
) -> np.ndarray:
    r"""Normalized discounted cumulative gain at position ``k`` of each query.

    .. math::

        \mathrm{NDCG}@k = \frac{\mathrm{DCG}@k(\pi)}{\mathrm{DCG}@k(\pi^*)},

    with :math:`\pi^*` the ideal ranking (grades sorted in descending order) and both DCGs
    taken at :math:`\min(k, n)` (Li, Eq. (4); DORM, Eq. (14)). A query whose ideal DCG is 0
    scores ``convention.no_relevant``; otherwise, under ``ndcg_short_list="zero"``, a query
    with fewer than ``k`` documents scores 0.

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).
    k : int
        Cutoff (positive).
    convention : Convention or str
        A :class:`Convention` or the name of a preset.
    docid : array_like of str, optional
        Document ids, which break score ties under ``ties="docid_descending"`` (the
        ``trec`` preset); ignored by the other tie rules.

    Returns
    -------
    numpy.ndarray, shape (n_queries,)
        NaN for the queries skipped under ``no_relevant="skip"``.

    References
    ----------
    H. Li, "A Short Introduction to Learning to Rank", IEICE 2011, Sect. 1.3, Eqs. (1)-(4).
    Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", Eq. (14).
    """
    conv = _as_convention(convention)
    k = _check_k(k)
    return _ndcg_table(_rank(y, scores, query_ptr, conv.ties, docid), conv, [k])[0]


def _mean_ndcg(r: _Ranking, conv: Convention) -> np.ndarray:
    dcg, ideal = _dcg_cumulative(r, conv)
    none = ideal[r.ptr[:-1]] == 0  # the ideal ranking starts with the largest gain
    ratio = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)
    value = r.per_query_sum(ratio) / r.sizes
    value[none] = conv.no_relevant_value
    return value


def mean_ndcg(
    y: npt.ArrayLike,
    scores: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    *,
    convention: Convention | str = "letor4",
    docid: npt.ArrayLike | None = None,
) -> np.ndarray:
    r"""LETOR 4.0's MeanNDCG: each query's mean of NDCG@i over all its positions.

    .. math::

        \mathrm{MeanNDCG} = \frac{1}{n} \sum_{i=1}^{n} \mathrm{NDCG}@i,

    with :math:`n` the number of documents of the query. A query whose ideal DCG is 0
    scores ``convention.no_relevant``.

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).
    convention : Convention or str
        A :class:`Convention` or the name of a preset.
    docid : array_like of str, optional
        Document ids, which break score ties under ``ties="docid_descending"`` (the
        ``trec`` preset); ignored by the other tie rules.

    Returns
    -------
    numpy.ndarray, shape (n_queries,)

    References
    ----------
    ``Eval-Score-4.0.pl`` of LETOR 4.0 (J. Xu, T.-Y. Liu), MeanNDCG; H. Li, IEICE 2011,
    Eq. (4).
    """
    conv = _as_convention(convention)
    return _mean_ndcg(_rank(y, scores, query_ptr, conv.ties, docid), conv)


def precision_at_k(
    y: npt.ArrayLike,
    scores: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    k: int = 10,
    *,
    convention: Convention | str = "letor3",
    docid: npt.ArrayLike | None = None,
) -> np.ndarray:
    r"""Precision at position ``k``: the fraction of relevant documents in the top ``k``.

    .. math::

        \mathrm{P}@k = \frac{1}{k} \sum_{i=1}^{k} \mathbb{1}\bigl[y_{\pi(i)} \ge t\bigr]

    with :math:`t` the relevance threshold (DORM, Eq. (15)). A query with fewer than ``k``
    documents follows ``convention.precision_short_list`` (``"truncate"``: divide by
    :math:`n`; ``"pad"``: divide by :math:`k`; ``"zero"``: score 0); a query without
    relevant document scores ``convention.no_relevant``.

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).
    k : int
        Cutoff (positive).
    convention : Convention or str
        A :class:`Convention` or the name of a preset.
    docid : array_like of str, optional
        Document ids, which break score ties under ``ties="docid_descending"`` (the
        ``trec`` preset); ignored by the other tie rules.

    Returns
    -------
    numpy.ndarray, shape (n_queries,)

    References
    ----------
    Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", Eq. (15).
    """
    conv = _as_convention(convention)
    k = _check_k(k)
    return _precision_table(_rank(y, scores, query_ptr, conv.ties, docid), conv, [k])[0]


def _average_precision(r: _Ranking, conv: Convention, k: int | None) -> np.ndarray:
    relevant = _relevant(r.y, conv)[r.order]
    hits = _segment_cumsum(relevant, r.ptr)  # relevant documents at positions <= i
    if r.block is None:
        terms = relevant * hits / r.position
    else:
        # McSherry & Najork: a tied block of m documents with rel relevant ones, after
        # `before` relevant documents, holds at its j-th position a relevant document with
        # probability rel / m, preceded inside the block by (j - 1)(rel - 1)/(m - 1) relevant
        # documents on average given that it is relevant.
        size = np.bincount(r.block)
        rel = np.bincount(r.block, weights=relevant)
        first = np.flatnonzero(np.r_[True, r.block[1:] != r.block[:-1]])
        before = (hits - relevant)[first][r.block]
        j = np.arange(r.block.size) - first[r.block] + 1
        m, n_rel = size[r.block], rel[r.block]
        inside = np.divide((j - 1) * (n_rel - 1), m - 1, out=np.zeros(j.size), where=m > 1)
        terms = n_rel / m * (before + 1 + inside) / r.position
    if k is not None:
        terms = np.where(r.position <= k, terms, 0.0)
    total = r.per_query_sum(relevant)
    if k is not None and conv.ap_cutoff_denominator == "min_relevant_k":
        denominator = np.minimum(total, k)
    else:
        denominator = total
    return np.divide(
        r.per_query_sum(terms),
        denominator,
        out=np.full(total.size, conv.no_relevant_value),
        where=total > 0,
    )


def average_precision(
    y: npt.ArrayLike,
    scores: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    k: int | None = None,
    *,
    convention: Convention | str = "letor3",
    docid: npt.ArrayLike | None = None,
) -> np.ndarray:
    r"""Average precision of each query (its mean over queries is MAP).

    .. math::

        \mathrm{AP} = \frac{1}{R} \sum_{i=1}^{n} \mathrm{P}@i \;
        \mathbb{1}\bigl[y_{\pi(i)} \ge t\bigr],

    the mean, over the :math:`R` relevant documents, of the precision at their positions
    (Li, Sect. 1.3). With a cutoff ``k`` the sum stops at position ``k`` and the denominator
    is :math:`R` or :math:`\min(R, k)` (``convention.ap_cutoff_denominator``). Under
    ``ties="average"`` the exact expectation over the orderings of tied blocks is returned
    (McSherry & Najork, 2008). A query without relevant document scores
    ``convention.no_relevant``.

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).
    k : int or None
        Optional cutoff.
    convention : Convention or str
        A :class:`Convention` or the name of a preset.
    docid : array_like of str, optional
        Document ids, which break score ties under ``ties="docid_descending"`` (the
        ``trec`` preset); ignored by the other tie rules.

    Returns
    -------
    numpy.ndarray, shape (n_queries,)

    References
    ----------
    H. Li, "A Short Introduction to Learning to Rank", IEICE 2011, Sect. 1.3 (MAP).
    F. McSherry and M. Najork, ECIR 2008 (expected AP over tied scores).
    """
    conv = _as_convention(convention)
    if k is not None:
        k = _check_k(k)
    return _average_precision(_rank(y, scores, query_ptr, conv.ties, docid), conv, k)


def _reciprocal_rank(r: _Ranking, conv: Convention) -> np.ndarray:
    relevant = _relevant(r.y, conv)[r.order]
    value = np.full(r.sizes.size, conv.no_relevant_value)
    slots = np.flatnonzero(relevant)
    queries, at = np.unique(r.query[slots], return_index=True)
    first = slots[at]  # the first relevant slot of each query that has one
    if r.block is None:
        value[queries] = 1.0 / r.position[first]
        return value
    # The first block holding a relevant document: `before` documents precede it, it has m
    # documents, n_rel relevant ones; the first relevant one of the block sits at its j-th
    # place with probability n_rel/(m-j+1) * prod_{t<j} (m-n_rel-t+1)/(m-t+1).
    block = r.block[first]
    size = np.bincount(r.block)[block]
    n_rel = np.bincount(r.block, weights=relevant)[block].astype(np.int64)
    start = np.searchsorted(r.block, block)
    before = start - r.ptr[queries]
    for q, b, m, n in zip(queries, before, size, n_rel, strict=True):
        j = np.arange(1, m - n + 2)
        survive = np.cumprod(np.r_[1.0, (m - n - j[:-1] + 1) / (m - j[:-1] + 1)])
        value[q] = np.sum(survive * n / (m - j + 1) / (b + j))
    return value


def reciprocal_rank(
    y: npt.ArrayLike,
    scores: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    *,
    convention: Convention | str = "letor3",
    docid: npt.ArrayLike | None = None,
) -> np.ndarray:
    r"""Reciprocal rank of the first relevant document of each query (its mean is MRR).

    .. math::

        \mathrm{RR} = \frac{1}{\min\{i : y_{\pi(i)} \ge t\}}.

    DORM (Eq. (10)) takes the rank of the single most relevant document; here any grade
    ``>= convention.relevance_threshold`` counts, as in trec_eval's ``recip_rank`` (set the
    threshold to the top grade for DORM's version). Under ``ties="average"`` the exact
    expectation over the orderings of the first tied block holding a relevant document is
    returned. A query without relevant document scores ``convention.no_relevant``.

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).
    convention : Convention or str
        A :class:`Convention` or the name of a preset.
    docid : array_like of str, optional
        Document ids, which break score ties under ``ties="docid_descending"`` (the
        ``trec`` preset); ignored by the other tie rules.

    Returns
    -------
    numpy.ndarray, shape (n_queries,)

    References
    ----------
    Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", Eq. (10).
    """
    conv = _as_convention(convention)
    return _reciprocal_rank(_rank(y, scores, query_ptr, conv.ties, docid), conv)


def winner_takes_all(
    y: npt.ArrayLike,
    scores: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    *,
    convention: Convention | str = "letor3",
    docid: npt.ArrayLike | None = None,
) -> np.ndarray:
    r"""Winner takes all: 1 if the top-ranked document of a query is relevant, else 0.

    .. math::

        \mathrm{WTA} = \mathbb{1}\bigl[y_{\pi(1)} \ge t\bigr].

    DORM (Eq. (9)) counts only documents of the query's top grade; setting the relevance
    threshold to that grade gives its version. Under ``ties="average"`` the value is the
    fraction of relevant documents among those tied at the top. A query without relevant
    document scores ``convention.no_relevant``.

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).
    convention : Convention or str
        A :class:`Convention` or the name of a preset.
    docid : array_like of str, optional
        Document ids, which break score ties under ``ties="docid_descending"`` (the
        ``trec`` preset); ignored by the other tie rules.

    Returns
    -------
    numpy.ndarray, shape (n_queries,)

    References
    ----------
    Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", Eq. (9).
    """
    conv = _as_convention(convention)
    r = _rank(y, scores, query_ptr, conv.ties, docid)
    relevant = _relevant(r.y, conv)[r.order]
    value = r.expected(relevant)[r.ptr[:-1]]
    value[r.per_query_sum(relevant) == 0] = conv.no_relevant_value
    return value


def expected_rank_utility(
    y: npt.ArrayLike,
    scores: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    *,
    neutral: float = 0.0,
    half_life: float = 5.0,
    normalize: bool = False,
    convention: Convention | str = "letor3",
    docid: npt.ArrayLike | None = None,
) -> np.ndarray:
    r"""Expected rank utility (Breese et al., 1998) of each query.

    .. math::

        \mathrm{ERU} = \sum_{i=1}^{n} \max\bigl(y_{\pi(i)} - d, 0\bigr)\,
        2^{-(i - 1)/(\alpha - 1)},

    with :math:`d` the neutral grade and :math:`\alpha` the half-life: the position whose
    weight is 1/2 (DORM, Eq. (16)). With ``normalize=True`` the value is divided by the ERU
    of the ideal ranking; a query whose ideal ERU is 0 then scores
    ``convention.no_relevant``. Only ``convention.ties`` is used otherwise.

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).
    neutral : float
        Neutral grade :math:`d`: grades at or below it bring no utility.
    half_life : float
        Viewing half-life :math:`\alpha > 1`.
    normalize : bool
        Divide by the ideal ERU.
    convention : Convention or str
        A :class:`Convention` or the name of a preset.
    docid : array_like of str, optional
        Document ids, which break score ties under ``ties="docid_descending"`` (the
        ``trec`` preset); ignored by the other tie rules.

    Returns
    -------
    numpy.ndarray, shape (n_queries,)

    References
    ----------
    J. S. Breese, D. Heckerman and C. Kadie, UAI 1998, Sect. 4 (rank scoring).
    Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", Eq. (16).
    """
    conv = _as_convention(convention)
    if not half_life > 1:
        raise ValueError(f"half_life must be > 1, got {half_life}")
    r = _rank(y, scores, query_ptr, conv.ties, docid)
    utility = np.maximum(r.y - neutral, 0.0)
    weight = np.exp2(-(r.position - 1) / (half_life - 1))
    value = r.per_query_sum(r.expected(utility[r.order]) * weight)
    if not normalize:
        return value
    ideal = r.per_query_sum(utility[np.lexsort((-utility, r.query))] * weight)
    return np.divide(value, ideal, out=np.full_like(value, conv.no_relevant_value), where=ideal > 0)


def _tied_pairs(query: np.ndarray, n_queries: int, *values: np.ndarray) -> np.ndarray:
    """Per query, the number of pairs of documents equal in every one of ``values``."""
    order = np.lexsort((*values, query))
    columns = [query[order], *(v[order] for v in values)]
    new = np.r_[True, np.any([c[1:] != c[:-1] for c in columns], axis=0)]
    size = np.bincount(np.cumsum(new) - 1).astype(np.float64)
    return np.bincount(columns[0][new], weights=size * (size - 1) / 2, minlength=n_queries)


def _inversions(values: np.ndarray, owner: np.ndarray, n_groups: int) -> np.ndarray:
    """Pairs ``i < j`` with ``values[i] > values[j]``, counted per ``owner[values[j]]``.

    A bottom-up merge sort, vectorized over blocks: ``values`` are non-negative integers;
    at each level the sorted left block of every pair of blocks is searched for the elements
    of the right block, then each pair is sorted.
    """
    n = values.size
    span = int(values.max()) + 1
    slot = np.arange(n)
    counts = np.zeros(n_groups)
    width = 1
    while width < n:
        pair = slot // (2 * width)
        right = (slot // width) % 2 == 1
        keys = pair * span + values
        left = keys[~right]  # sorted: each left block is sorted and pair ids increase
        greater = np.searchsorted(left, (pair[right] + 1) * span) - np.searchsorted(
            left, keys[right], side="right"
        )
        counts += np.bincount(owner[values[right]], weights=greater, minlength=n_groups)
        values = np.sort(keys) - pair * span
        width *= 2
    return counts


@dataclass(frozen=True)
class _PairCounts:
    """Per-query pair counts between grades and scores (all float arrays)."""

    pairs: np.ndarray  # all pairs, n(n-1)/2
    tied_grade: np.ndarray  # pairs with equal grades
    tied_score: np.ndarray  # pairs with equal scores
    concordant: np.ndarray  # y_i > y_j and s_i > s_j
    discordant: np.ndarray  # y_i > y_j and s_i < s_j
    score_only_tied: np.ndarray  # y_i > y_j and s_i == s_j


def _pair_counts(y: np.ndarray, scores: np.ndarray, ptr: np.ndarray) -> _PairCounts:
    sizes = np.diff(ptr).astype(np.float64)
    nq = sizes.size
    query = np.repeat(np.arange(nq), np.diff(ptr))
    # Dense rank of (query, score): documents of different queries never form an inversion.
    by_score = np.lexsort((scores, query))
    qs, ss = query[by_score], scores[by_score]
    new = np.r_[True, (qs[1:] != qs[:-1]) | (ss[1:] != ss[:-1])]
    rank = np.empty(y.size, dtype=np.int64)
    rank[by_score] = np.cumsum(new) - 1
    # In the order (query, grade, score) ascending, the inversions of the score ranks are
    # exactly the pairs with y_i < y_j and s_i > s_j.
    discordant = _inversions(rank[np.lexsort((scores, y, query))], qs[new], nq)
    pairs = sizes * (sizes - 1) / 2
    tied_grade = _tied_pairs(query, nq, y)
    tied_score = _tied_pairs(query, nq, scores)
    score_only = tied_score - _tied_pairs(query, nq, scores, y)
    concordant = pairs - tied_grade - score_only - discordant
    return _PairCounts(pairs, tied_grade, tied_score, concordant, discordant, score_only)


def _accuracy(c: _PairCounts) -> np.ndarray:
    ordered = c.pairs - c.tied_grade
    return np.divide(
        c.concordant + c.score_only_tied / 2,
        ordered,
        out=np.full(ordered.size, np.nan),
        where=ordered > 0,
    )


def pairwise_accuracy(
    y: npt.ArrayLike, scores: npt.ArrayLike, query_ptr: npt.ArrayLike
) -> np.ndarray:
    r"""Fraction of the preference pairs of each query that the scores order correctly.

    .. math::

        \frac{1}{|P|} \sum_{(i, j) \in P} \Bigl(\mathbb{1}[s_i > s_j]
        + \tfrac12 \mathbb{1}[s_i = s_j]\Bigr), \qquad P = \{(i, j) : y_i > y_j\}.

    Computed in :math:`O(n \log^2 n)` time and :math:`O(n)` memory (a vectorized merge sort
    counts the discordant pairs) without listing the pairs. A query whose documents all
    have the same grade has no pair and scores NaN (left out of the mean).

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).

    Returns
    -------
    numpy.ndarray, shape (n_queries,)

    References
    ----------
    O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs", Information
    Retrieval 13(3), 2010 (pairwise ranking error).
    """
    y, scores, ptr = _check_inputs(y, scores, query_ptr)
    return _accuracy(_pair_counts(y, scores, ptr))


def auc(
    y: npt.ArrayLike,
    scores: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    *,
    convention: Convention | str = "letor3",
) -> np.ndarray:
    r"""Area under the ROC curve of each query, relevant against non-relevant documents.

    .. math::

        \mathrm{AUC} = \frac{1}{|R|\,|\bar R|} \sum_{i \in R} \sum_{j \in \bar R}
        \Bigl(\mathbb{1}[s_i > s_j] + \tfrac12 \mathbb{1}[s_i = s_j]\Bigr),

    with :math:`R` the documents graded ``>= convention.relevance_threshold``; it equals
    :func:`sklearn.metrics.roc_auc_score` on the query. The AUC of a query with only one
    class is undefined: NaN (left out of the mean), whatever ``no_relevant`` says.

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).
    convention : Convention or str
        A :class:`Convention` or the name of a preset (only ``relevance_threshold`` is used).

    Returns
    -------
    numpy.ndarray, shape (n_queries,)
    """
    conv = _as_convention(convention)
    y, scores, ptr = _check_inputs(y, scores, query_ptr)
    return _accuracy(_pair_counts(_relevant(y, conv), scores, ptr))


def kendall_tau(y: npt.ArrayLike, scores: npt.ArrayLike, query_ptr: npt.ArrayLike) -> np.ndarray:
    r"""Kendall's :math:`\tau_b` between the scores and the grades of each query.

    .. math::

        \tau_b = \frac{n_c - n_d}{\sqrt{(n_0 - t_s)(n_0 - t_y)}},

    with :math:`n_c` and :math:`n_d` the concordant and discordant pairs, :math:`n_0 =
    n(n-1)/2` and :math:`t_s`, :math:`t_y` the pairs tied in the scores and in the grades
    (the variant :func:`scipy.stats.kendalltau` computes by default). A query with constant
    scores or constant grades scores NaN (left out of the mean).

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).

    Returns
    -------
    numpy.ndarray, shape (n_queries,)

    References
    ----------
    M. G. Kendall, "The treatment of ties in ranking problems", Biometrika 33(3), 1945.
    """
    y, scores, ptr = _check_inputs(y, scores, query_ptr)
    c = _pair_counts(y, scores, ptr)
    scale = (c.pairs - c.tied_score) * (c.pairs - c.tied_grade)
    return np.divide(
        c.concordant - c.discordant,
        np.sqrt(scale),
        out=np.full(scale.size, np.nan),
        where=scale > 0,
    )


def mean_over_queries(values: npt.ArrayLike) -> float:
    """Mean of per-query values, leaving out the NaN ones (skipped or undefined queries).

    Parameters
    ----------
    values : array_like, shape (n_queries,)

    Returns
    -------
    float
        The mean over the non-NaN values; NaN if every value is NaN.
    """
    values = np.asarray(values, dtype=np.float64)
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else math.nan


def evaluate(
    y: npt.ArrayLike,
    scores: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    preset: Convention | str = "letor3",
    k: int = 10,
    per_query: bool = False,
    mean_ndcg: bool | None = None,
    docid: npt.ArrayLike | None = None,
) -> dict[str, object]:
    r"""The usual evaluation table: NDCG@1..k, P@1..k, MAP, MRR (and MeanNDCG).

    Ranks each query once and computes every measure under one convention, so that
    ``preset="letor3"`` and ``"letor4"`` reproduce LETOR's ``Eval-Score-3.0.pl`` and
    ``Eval-Score-4.0.pl`` (the latter prints 4 decimals).

    Parameters
    ----------
    y, scores : array_like, shape (n,)
        Grades and predicted scores.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets (see :func:`query_ptr_from_qid`).
    preset : Convention or str
        A :class:`Convention` or the name of a preset.
    k : int
        Largest cutoff of NDCG and P.
    per_query : bool
        Also return the per-query values, under ``"per_query"``.
    mean_ndcg : bool or None
        Report LETOR 4.0's MeanNDCG (:func:`mean_ndcg`); ``None`` reports it for the
        ``letor4`` convention only.
    docid : array_like of str, optional
        Document ids, which break score ties under ``ties="docid_descending"`` (the
        ``trec`` preset); ignored by the other tie rules.

    Returns
    -------
    dict
        ``"ndcg@1"``..``"ndcg@k"``, ``"p@1"``..``"p@k"``, ``"map"``, ``"mrr"`` and, when
        asked, ``"mean_ndcg"``: means over the queries (:func:`mean_over_queries`) as
        floats. With ``per_query=True``, ``"per_query"`` maps the same names to lists of
        per-query values (NaN for skipped queries), in the order of ``query_ptr``.

    References
    ----------
    H. Li, "A Short Introduction to Learning to Rank", IEICE 2011, Sect. 1.3, Eqs. (1)-(4).
    T. Qin, T.-Y. Liu, J. Xu and H. Li, "LETOR", Information Retrieval 13(4), 2010.
    """
    conv = _as_convention(preset)
    k = _check_k(k)
    if mean_ndcg is None:
        mean_ndcg = conv == PRESETS["letor4"]
    r = _rank(y, scores, query_ptr, conv.ties, docid)
    ks = range(1, k + 1)
    values: dict[str, np.ndarray] = {}
    for name, table in (("ndcg", _ndcg_table(r, conv, ks)), ("p", _precision_table(r, conv, ks))):
        values.update({f"{name}@{i}": row for i, row in zip(ks, table, strict=True)})
    values["map"] = _average_precision(r, conv, None)
    values["mrr"] = _reciprocal_rank(r, conv)
    if mean_ndcg:
        values["mean_ndcg"] = _mean_ndcg(r, conv)
    result: dict[str, object] = {name: mean_over_queries(v) for name, v in values.items()}
    if per_query:
        result["per_query"] = {name: v.tolist() for name, v in values.items()}
    return result
