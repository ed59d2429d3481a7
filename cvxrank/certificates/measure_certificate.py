r"""Certificates that the ranking measures of a model are those of the exact optimum.

The objectives :math:`\tfrac12\|w\|^2 + C\,\mathrm{loss}(Xw)` of cvxrank are 1-strongly
convex, so a certified duality gap :math:`g` at :math:`w` puts the optimum in the ball
:math:`\|w^* - w\| \le r = \sqrt{2g}` (:func:`cvxrank.core.trace.certified_radius`; a run's
``w_radius``). :func:`certify_measures`
tells, per measure and per query, whether the measure has the same value for *every*
:math:`w'` of that ball, hence the value it has at :math:`w^*`.

The rule
--------
**Pairs.** For :math:`w' = w + \delta`, :math:`\|\delta\| \le r`, and two documents of a
query with scores :math:`s_i \ge s_j`,

.. math::

    s'_i - s'_j = (s_i - s_j) + \delta^\top (x_i - x_j) \ge (s_i - s_j) - r\|x_i - x_j\|,

with equality at :math:`\delta = -r (x_i - x_j)/\|x_i - x_j\|`. The pair is *fixed* (its
order is the same in the whole ball) when :math:`s_i - s_j > r\|x_i - x_j\|`, then
:math:`s'_i > s'_j` everywhere, or when :math:`x_i = x_j` (and :math:`s_i = s_j`), then
:math:`s'_i = s'_j` everywhere and the tie rule of the convention, which looks at the
documents and never at :math:`w'`, orders them as at :math:`w`. Otherwise the extreme
:math:`\delta` above gives :math:`s'_j \ge s'_i`: the test is exact for one pair.

**Label sequences.** Every measure of :func:`cvxrank.metrics.evaluate` reads a query's
ranking only through its sequence of labels in rank order: the grades for NDCG@k and
MeanNDCG, binary relevance (grade ``>= relevance_threshold``) for P@k, MAP and MRR; the
ideal DCG and the number of relevant documents do not depend on the ranking. Documents of
one label may thus swap freely. Let :math:`\sigma` be the ranking of ``evaluate`` at
:math:`w` (descending score, ties broken by the convention) and :math:`B_1, B_2, \dots` its
maximal runs of equal label (*blocks*). Per query and measure the rule checks that pairs
are fixed:

- full-list measures (MAP, MeanNDCG, unknown keys): every pair of
  :math:`B_t \times B_{t+1}`, for every :math:`t`;
- top-k measures (NDCG@k, P@k), with :math:`k' = \min(k, n)`, :math:`B_T` the block of
  position :math:`k'`, :math:`A = B_1 \cup \dots \cup B_{T-1}`, :math:`H` the documents of
  :math:`B_T` at positions :math:`\le k'` (the first :math:`k' - |A|` of :math:`B_T`) and
  :math:`V` the documents after :math:`B_T`: every pair of :math:`B_t \times B_{t+1}` for
  :math:`t < T`; every pair of :math:`H \times \{v \in V: \ell(v) \ne \ell(B_T)\}`; if
  :math:`T > 1`, every pair of :math:`B_{T-1} \times \{v \in V : \ell(v) = \ell(B_T)\}`;
- MRR: top-k with :math:`k` the position of the first relevant document; a query without
  relevant document is certified (its value is ``no_relevant`` for every :math:`w'`).

*Why this suffices.* Take :math:`w'` in the ball and its ranking :math:`\pi'`. A checked
pair :math:`(i, j)`, :math:`i` before :math:`j` in :math:`\sigma`, has :math:`i` before
:math:`j` in :math:`\pi'` (strictly higher score, or identical documents ordered by the tie
rule as in :math:`\sigma`), and :math:`s'_i \ge s'_j` with equality only for identical
documents. For :math:`a \in B_s`, :math:`b \in B_u`, :math:`s < u`, a chain
:math:`a \to c_{s+1} \to \dots \to b` through one document per block uses checked pairs
only, so :math:`a` precedes :math:`b` in :math:`\pi'` too. *Full lists:* :math:`\pi'` lists
all of :math:`B_1`, then all of :math:`B_2`, and so on, each block perhaps permuted; blocks
have one label, so the label sequence is :math:`\sigma`'s. *Top k:* the documents of
:math:`A` precede those of :math:`B_T` (chains), those of :math:`V` with label
:math:`\ell(B_T)` (the third set of pairs, then chains inside :math:`A`) and the other
documents of :math:`V` (they follow :math:`H`, which follows :math:`A`). So :math:`A` fills
positions :math:`1..|A|` of :math:`\pi'` with :math:`\sigma`'s labels. A document of
:math:`V` with another label than :math:`B_T`'s follows the :math:`|A| + |H| = k'`
documents of :math:`A \cup H`, so positions :math:`|A|+1..k'` hold documents of
:math:`B_T`, or of :math:`V` with the label of :math:`B_T`: all of label
:math:`\ell(B_T)`. Documents after :math:`B_T` enter the top :math:`k'` only in place of
documents of the same label, and the first :math:`k'` labels are :math:`\sigma`'s.

*Ties* ``"average"``: ``evaluate`` averages the measure over the orders of each group of
equal scores. A group of :math:`\sigma` holding several labels is given a label of its own
(one block), and its documents must be identical (its first document against the others is
checked: their score difference is 0, so only identity passes). Identical documents share a
group, hence a block, so the checked pairs between blocks are strict; the argument above
then holds for every order of the tied documents of :math:`\pi'`, and each mixed group
stays a whole group of equal scores at the same positions: the distribution of the label
sequence over the tie orders, hence the average, is the same at :math:`w'` as at :math:`w`.

The rule is sufficient, not necessary: "not certified" means "could not be certified"
(two documents of different grades may swap without changing P@k, a pair that can flip in
the ball need not flip at :math:`w^*`). Unknown measure keys get the full graded rule, the
most conservative one: it fixes the whole sequence of grades, so it covers any measure that
reads the ranking only through the ranked grades and the tie rule (not, e.g., Kendall's tau,
which counts ties of scores between documents of equal grade).

*Rounding.* Decisions are floating-point comparisons on the scores. In exact arithmetic
identical documents have equal scores; ``X @ w`` through a BLAS may give them scores that
differ in the last bit (its kernels treat some rows differently), and the ranking, hence the
measure, then depends on rounding: such a pair is not fixed (score differences below the
rounding bound of ``X @ w`` in float64 are always examined). Without ``scores``,
:func:`certify_measures` computes them row by row (``np.einsum``, or the CSR product), the
same arithmetic for equal rows; evaluate the measures on scores computed the same way.

Cost
----
One ranking (``evaluate``'s sort) and :math:`O(nd)` for the bounds
:math:`\|x_i - x_j\| \le \rho_i + \rho_j \le D_q`, with :math:`\rho_i = \|x_i - c\|` the
distance to the mean document :math:`c` and :math:`D_q = 2 \max_{i \in q} \rho_i`. A checked
pair with :math:`s_i - s_j > r D_q` is fixed without its norm: only documents within
:math:`r D_q` in score of the other side of a checked set are candidates (found by bisection
in the sorted scores), those with :math:`s_i - s_j > r(\rho_i + \rho_j)` are dropped too,
and the norms of the rest are computed closest pairs first, in rounds of growing size,
stopping a set of pairs at its first failing pair and dropping the sets that no measure
still certified needs. In the certified regime (:math:`r D_q` below most score gaps) that
is :math:`O(n \log n + nd)` per query; when :math:`r` is large the first, closest pairs
fail and stop the query. Everything is vectorized over the sets of all queries.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from cvxrank.data.ranking_data import row_scores
from cvxrank.metrics import Convention, _as_convention, _rank, _Ranking
from cvxrank.utils.lazy_sparse import sp

__all__ = ["RULE", "MeasureCertificate", "certify_measures"]

#: The rule of :func:`certify_measures`, in one sentence (see the module docstring).
RULE = (
    "A query's measure is certified when, in its ranking at w split into blocks of equal label "
    "(grades for NDCG and unknown keys, binary relevance for P@k, MAP and MRR), every pair "
    "between adjacent blocks up to the one holding position k (all blocks for full-list "
    "measures), and between those last blocks and the lower documents that could enter the "
    "top k, has s_i - s_j > r ||x_i - x_j|| or x_i = x_j."
)

#: Keys of :func:`cvxrank.cli.evaluate.measure_scores`'s report that are not measures.
REPORT_KEYS = frozenset({"k", "k_requested", "ties", "per_query"})

#: Values of the dense pair differences formed at once (CHUNK / d pairs of d features).
CHUNK = 1 << 20

#: Growth of the number of pairs checked per set from one round to the next (1, 8, 64, ...).
GROWTH = 8

_EPS = float(np.finfo(np.float64).eps)
_TOP_K = re.compile(r"(ndcg|p)@([1-9][0-9]*)")

# A measure's rule: (labels, cutoff, k). labels: "graded" or "binary"; cutoff: "full"
# (whole list), "top" (position k) or "first" (first relevant document).
_Spec = tuple[str, str, int]


@dataclass(frozen=True)
class MeasureCertificate:
    """Which queries have a measure value certified for the whole ball of radius ``radius``.

    Attributes
    ----------
    radius : float
        Radius r of the ball around w (``inf`` allowed).
    rule : str
        The rule used, in one sentence (:data:`RULE`).
    certified_queries : Mapping of str to numpy.ndarray of bool
        Per measure key, per query (in the order of ``query_ptr``): True when the value is
        the same for every w' in the ball (read-only arrays).
    """

    radius: float
    rule: str
    certified_queries: Mapping[str, np.ndarray]

    def _queries(self, measure: str) -> np.ndarray:
        try:
            return self.certified_queries[measure]
        except KeyError:
            raise KeyError(
                f"no certificate for {measure!r}; certified measures: "
                f"{', '.join(self.certified_queries)}"
            ) from None

    def certified(self, measure: str) -> bool:
        """Whether every query's value of ``measure`` is certified."""
        return bool(self._queries(measure).all())

    def uncertified(self, measure: str) -> int:
        """Number of queries whose value of ``measure`` could not be certified."""
        return int(np.count_nonzero(~self._queries(measure)))

    @property
    def all_certified(self) -> bool:
        """Whether every measure is certified on every query."""
        return all(v.all() for v in self.certified_queries.values())

    def as_dict(self) -> dict[str, dict]:
        """``{measure: {"certified": bool, "uncertified_queries": int}}`` (JSON types)."""
        return {
            m: {"certified": self.certified(m), "uncertified_queries": self.uncertified(m)}
            for m in self.certified_queries
        }


def certify_measures(
    X: np.ndarray | sp.spmatrix | sp.sparray,
    y: npt.ArrayLike,
    query_ptr: npt.ArrayLike,
    w: npt.ArrayLike,
    radius: float,
    *,
    measures: Iterable[str],
    convention: Convention | str = "letor3",
    scores: npt.ArrayLike | None = None,
    docid: npt.ArrayLike | None = None,
) -> MeasureCertificate:
    r"""Certify, per query, that ranking measures are constant on the ball ``||w' - w|| <= r``.

    Applies the rule of the module docstring: per query, ranked at ``w`` as
    :func:`cvxrank.metrics.evaluate` ranks it, the pairs of documents whose order decides
    the labels a measure reads must satisfy :math:`s_i - s_j > r\|x_i - x_j\|` or
    :math:`x_i = x_j`; then the measure has the same value for every :math:`w'` in the ball
    (with :math:`r = \sqrt{2g}` from a certified gap :math:`g`, the optimum's value).

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix, shape (n, d)
        Features (CSR is used as is; only a few row differences are densified).
    y : array_like, shape (n,)
        Grades.
    query_ptr : array_like of int, shape (n_queries + 1,)
        Query offsets, as :attr:`cvxrank.data.ranking_data.RankingData.query_ptr`.
    w : array_like, shape (d,)
        Weights (used for the scores when ``scores`` is None).
    radius : float
        Radius :math:`r \ge 0` of the ball (``inf`` allowed; 0 certifies everything).
    measures : iterable of str
        Measure keys of :func:`cvxrank.metrics.evaluate`: ``"ndcg@K"``, ``"p@K"``, ``"map"``,
        ``"mrr"``, ``"mean_ndcg"``. Any other key gets the full graded rule (the most
        conservative); the non-measure keys of ``cvxrank evaluate``'s report (``k``,
        ``k_requested``, ``ties``, ``per_query``) are refused.
    convention : Convention or str
        The :class:`~cvxrank.metrics.Convention` (or preset name) of the measures: its
        ``relevance_threshold`` and tie rule are used.
    scores : array_like, shape (n,), optional
        ``X @ w`` in float64 if already computed (equal rows must have equal scores: see
        *Rounding* in the module docstring). By default they are computed row by row.
    docid : array_like of str, optional
        Document ids, for ``ties="docid_descending"`` as in ``evaluate``.

    Returns
    -------
    MeasureCertificate

    Raises
    ------
    ValueError
        For a negative or NaN radius, inconsistent shapes, a string or non-measure key in
        ``measures``, and the input errors of ``evaluate`` (an empty query, ...).

    References
    ----------
    The rule and its argument: this module's docstring. Strong convexity and the gap:
    S. Boyd and L. Vandenberghe, *Convex Optimization*, 2004, Sect. 9.1.2.
    """
    conv = _as_convention(convention)
    specs = _specs(measures)
    radius = _check_radius(radius)
    X = _as_matrix(X)
    w = np.asarray(w, dtype=np.float64)
    scores = _scores(X, w, scores, np.asarray(y).shape)
    ranking = _rank(y, scores, query_ptr, conv.ties, docid)
    n_queries = ranking.sizes.size
    if radius == 0.0 or not specs:  # the ball is the point w, or nothing to certify
        certified = {spec: np.ones(n_queries, dtype=bool) for spec in set(specs.values())}
    else:
        slots = _slots(X, w, ranking, scores[ranking.order])
        certified = _certify(X, ranking, slots, radius, conv, set(specs.values()))
    out = {}
    for key, spec in specs.items():
        values = certified[spec].copy()
        values.flags.writeable = False
        out[key] = values
    return MeasureCertificate(radius, RULE, MappingProxyType(out))


def _specs(measures: Iterable[str]) -> dict[str, _Spec]:
    if isinstance(measures, str):
        raise ValueError(f"measures must be a collection of keys, got the string {measures!r}")
    specs = {}
    for key in measures:
        if key in REPORT_KEYS:
            raise ValueError(f"{key!r} is a key of the evaluate report, not a measure")
        match = _TOP_K.fullmatch(key)
        if match:
            labels = "graded" if match[1] == "ndcg" else "binary"
            specs[key] = (labels, "top", int(match[2]))
        elif key == "map":
            specs[key] = ("binary", "full", 0)
        elif key == "mrr":
            specs[key] = ("binary", "first", 0)
        else:  # mean_ndcg, and the conservative rule for unknown keys
            specs[key] = ("graded", "full", 0)
    return specs


def _check_radius(radius: float) -> float:
    radius = float(radius)
    if not radius >= 0:
        raise ValueError(f"radius must be >= 0 (inf allowed), got {radius}")
    return radius


def _as_matrix(X: object) -> np.ndarray | sp.csr_matrix:
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    A = np.asarray(X, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"X must be 2-D (documents x features), got shape {A.shape}")
    return A


def _scores(
    X: np.ndarray | sp.csr_matrix,
    w: np.ndarray,
    scores: npt.ArrayLike | None,
    y_shape: tuple[int, ...],
) -> np.ndarray:
    n, d = X.shape
    if y_shape != (n,):
        raise ValueError(f"X has {n} rows but y has shape {y_shape}")
    if w.shape != (d,):
        raise ValueError(f"w has shape {w.shape} but X has {d} columns")
    if scores is not None:
        s = np.asarray(scores, dtype=np.float64)
        if s.shape != (n,):
            raise ValueError(f"scores has shape {s.shape}, expected ({n},)")
        return s
    return row_scores(X, w)


@dataclass(frozen=True)
class _Slots:
    """Documents in ranking order: slot ``t`` is row ``rows[t]`` of X."""

    rows: np.ndarray
    s: np.ndarray  # scores, non-increasing within each query
    query: np.ndarray
    ptr: np.ndarray
    rho: np.ndarray  # upper bound on the distance to the mean document
    diameter: np.ndarray  # per query, an upper bound on ||x_i - x_j||
    noise: np.ndarray  # per query, a bound on the rounding of a difference of scores


@dataclass(frozen=True)
class _Blocks:
    """Maximal runs of equal label in ranking order (within queries)."""

    start: np.ndarray
    end: np.ndarray
    of_slot: np.ndarray
    label: np.ndarray
    first: np.ndarray  # per query, its first block


@dataclass(frozen=True)
class _Checks:
    """Sets of pairs to check: every slot of [ua, ub) above every slot of [la, lb) whose
    label (in the label array ``labels``) passes the filter ``mode``."""

    ua: np.ndarray
    ub: np.ndarray
    la: np.ndarray
    lb: np.ndarray
    mode: np.ndarray  # 0: every lower slot; 1: label == value; 2: label != value
    value: np.ndarray
    labels: np.ndarray


class _SetBuilder:
    """Collects the sets of pairs and which items (spec, query) need each set."""

    def __init__(self) -> None:
        self._columns: list[list[np.ndarray]] = [[] for _ in range(7)]
        self._rows: list[np.ndarray] = []
        self._cols: list[np.ndarray] = []
        self._n = 0

    def add(self, label_index: int, ua: np.ndarray, ub: np.ndarray, la: np.ndarray,
            lb: np.ndarray, mode: int, value: np.ndarray | float) -> np.ndarray:
        """Add sets (the fields of ``_Checks``, arrays or scalars); return their ids."""
        n = ua.size
        fields = (ua, ub, la, lb, np.full(n, mode), np.broadcast_to(value, n),
                  np.full(n, label_index))
        for column, field in zip(self._columns, fields, strict=True):
            column.append(field)
        ids = self._n + np.arange(n)
        self._n += n
        return ids

    def need(self, ids: np.ndarray, items: np.ndarray) -> None:
        """Item ``items[i]`` needs set ``ids[i]``."""
        self._rows.append(ids)
        self._cols.append(items)

    def finish(self, n_items: int) -> tuple[_Checks, _Needs]:
        """The sets and which items need them."""
        ua, ub, la, lb, mode, value, labels = (
            np.concatenate(column).astype(np.float64 if i == 5 else np.int64)
            for i, column in enumerate(self._columns))
        needs = _Needs(np.concatenate(self._rows), np.concatenate(self._cols), self._n, n_items)
        return _Checks(ua, ub, la, lb, mode, value, labels), needs


@dataclass(frozen=True)
class _Needs:
    """Item ``item[i]`` (a measure on a query) needs the set of pairs ``set[i]``."""

    set: np.ndarray
    item: np.ndarray
    n_sets: int
    n_items: int

    def failed_items(self, failed_sets: np.ndarray) -> np.ndarray:
        """Items that need a failed set."""
        return np.bincount(self.item, weights=failed_sets[self.set], minlength=self.n_items) > 0

    def needed_sets(self, failed_items: np.ndarray) -> np.ndarray:
        """Sets needed by an item that has not failed."""
        return np.bincount(self.set, weights=~failed_items[self.item], minlength=self.n_sets) > 0


def _certify(
    X: np.ndarray | sp.csr_matrix,
    ranking: _Ranking,
    slots: _Slots,
    radius: float,
    conv: Convention,
    specs: set[_Spec],
) -> dict[_Spec, np.ndarray]:
    """Per spec, per query: certified (the rule of the module docstring, radius > 0)."""
    n_queries = slots.ptr.size - 1
    graded = ranking.y[ranking.order]
    relevant = graded >= conv.relevance_threshold
    cutoffs = _Cutoffs(np.diff(slots.ptr), _first_relevant(slots, relevant))
    average = conv.ties == "average"
    order = sorted(specs)
    builder, label_arrays = _SetBuilder(), []
    for name, values in (("graded", graded), ("binary", relevant.astype(np.float64))):
        mine = [i for i, spec in enumerate(order) if spec[0] == name]
        if not mine:
            continue
        labels = _merge_mixed_ties(values, slots) if average else values
        item = np.concatenate([i * n_queries + np.arange(n_queries) for i in mine])
        cutoff = np.concatenate([cutoffs.of(order[i]) for i in mine])
        _add_sets(builder, len(label_arrays), _blocks(labels, slots), slots, item[cutoff > 0],
                  cutoff[cutoff > 0], average)
        label_arrays.append(labels)
    checks, needs = builder.finish(len(order) * n_queries)
    failed = _run_checks(X, slots, np.vstack(label_arrays), checks, needs, radius)
    return {spec: ~failed[i * n_queries:(i + 1) * n_queries] for i, spec in enumerate(order)}


def _slots(X: np.ndarray | sp.csr_matrix, w: np.ndarray, ranking: _Ranking,
           s: np.ndarray) -> _Slots:
    r"""The documents in ranking order, with the bounds of the module docstring.

    ``noise`` bounds the rounding of ``x_i w - x_j w`` for equal rows computed in any
    order: :math:`2\gamma_d \|x\| \|w\|`, :math:`\gamma_d = (d + 2)\epsilon`
    (Higham, Sect. 3.1); score differences below it are always examined.
    """
    ptr = ranking.ptr
    rho, norm = (v[ranking.order] for v in _center_distances(X))
    diameter = 2.0 * np.maximum.reduceat(rho, ptr[:-1])
    noise = 2.0 * (X.shape[1] + 2) * _EPS * np.linalg.norm(w) * np.maximum.reduceat(norm,
                                                                                    ptr[:-1])
    return _Slots(ranking.order, s, ranking.query, ptr, rho, diameter, noise)


def _center_distances(X: np.ndarray | sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    r"""Per row, an upper bound on :math:`\|x_i - c\|`, :math:`c` the mean row, and
    :math:`\|x_i\|`.

    Any center gives :math:`\|x_i - x_j\| \le \rho_i + \rho_j`; the mean row removes the
    offset all documents share at the cost of two products (no n x d temporary, CSR kept
    sparse). :math:`\rho^2 = \|x\|^2 - 2x^\top c + \|c\|^2` may cancel: an absolute
    allowance of :math:`2(d + 4)\epsilon(\|x\| + \|c\|)^2` covers the rounding (N. J.
    Higham, *Accuracy and Stability of Numerical Algorithms*, 2002, Sect. 3.1).
    """
    n, d = X.shape
    if sp.issparse(X):
        x_sq = sp.csr_matrix((X.data * X.data, X.indices, X.indptr), shape=X.shape) @ np.ones(d)
    else:
        x_sq = np.einsum("ij,ij->i", X, X)
    center = X.T @ np.full(n, 1.0 / n)
    c_sq = float(center @ center)
    allowance = 2.0 * (d + 4) * _EPS * (np.sqrt(x_sq) + math.sqrt(c_sq)) ** 2
    rho = np.sqrt(np.maximum(x_sq - 2.0 * (X @ center) + c_sq, 0.0) + allowance)
    return rho, np.sqrt(x_sq)


def _merge_mixed_ties(labels: np.ndarray, slots: _Slots) -> np.ndarray:
    """Under ``ties="average"``: each group of equal scores holding several labels gets a
    label of its own (negative, unlike any grade), which makes it one block."""
    s, q = slots.s, slots.query
    new = np.r_[True, (s[1:] != s[:-1]) | (q[1:] != q[:-1])]
    group = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    mixed = np.minimum.reduceat(labels, starts) != np.maximum.reduceat(labels, starts)
    return np.where(mixed[group], -1.0 - group, labels)


def _blocks(labels: np.ndarray, slots: _Slots) -> _Blocks:
    q = slots.query
    new = np.r_[True, (labels[1:] != labels[:-1]) | (q[1:] != q[:-1])]
    start = np.flatnonzero(new)
    of_slot = np.cumsum(new) - 1
    end = np.r_[start[1:], labels.size]
    return _Blocks(start, end, of_slot, labels[start], of_slot[slots.ptr[:-1]])


@dataclass(frozen=True)
class _Cutoffs:
    """Per query, the last position (1-based) whose label a measure reads; 0: none."""

    sizes: np.ndarray
    first_relevant: np.ndarray

    def of(self, spec: _Spec) -> np.ndarray:
        _, kind, k = spec
        if kind == "full":
            return self.sizes
        if kind == "top":
            return np.minimum(k, self.sizes)
        return self.first_relevant


def _first_relevant(slots: _Slots, relevant: np.ndarray) -> np.ndarray:
    """Per query, the position of its first relevant document (0 if none)."""
    hits = np.flatnonzero(relevant)
    queries, at = np.unique(slots.query[hits], return_index=True)
    first = np.zeros(slots.ptr.size - 1, dtype=np.int64)
    first[queries] = hits[at] - slots.ptr[queries] + 1
    return first


def _add_sets(
    builder: _SetBuilder,
    label_index: int,
    blocks: _Blocks,
    slots: _Slots,
    item: np.ndarray,
    cutoff: np.ndarray,
    average: bool,
) -> None:
    """The sets of pairs of one label function, and the items (with a positive cutoff,
    item id ``spec * n_queries + query``) that need them."""
    ptr = slots.ptr
    start, end, label = blocks.start, blocks.end, blocks.label
    has_next = np.ones(start.size, dtype=bool)
    has_next[blocks.of_slot[ptr[1:] - 1]] = False
    left = np.flatnonzero(has_next)
    boundary = np.full(start.size, -1)
    boundary[left] = builder.add(label_index, start[left], end[left], start[left + 1],
                                 end[left + 1], 0, 0.0)
    mixed = np.flatnonzero((label < 0) & (end - start > 1)) if average else np.zeros(0, int)
    mixed_ids = builder.add(label_index, start[mixed], start[mixed] + 1, start[mixed] + 1,
                            end[mixed], 0, 0.0)
    q = item % (ptr.size - 1)
    pos = ptr[q] + cutoff - 1
    T, first = blocks.of_slot[pos], blocks.first[q]
    b, owner = _ranges(first, T)  # boundaries B_t | B_t+1 before B_T
    builder.need(boundary[b], item[owner])
    m, owner = _ranges(np.searchsorted(mixed, first), np.searchsorted(mixed, T, "right"))
    builder.need(mixed_ids[m], item[owner])  # mixed tie groups up to B_T
    below = end[T] < ptr[q + 1]
    # H x {v in V: label != label(B_T)}: one set per cutoff slot.
    at, inverse = np.unique(pos[below], return_inverse=True)
    B = blocks.of_slot[at]
    ids = builder.add(label_index, start[B], at + 1, end[B], ptr[slots.query[at] + 1], 2,
                      label[B])
    builder.need(ids[inverse], item[below])
    # B_T-1 x {v in V: label == label(B_T)}: one set per block B_T.
    below &= T > first
    B, inverse = np.unique(T[below], return_inverse=True)
    ids = builder.add(label_index, start[B - 1], end[B - 1], end[B],
                      ptr[slots.query[start[B]] + 1], 1, label[B])
    builder.need(ids[inverse], item[below])


def _ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The concatenated ranges ``lo[i]:hi[i]`` and, for each element, its ``i``."""
    count = np.maximum(hi - lo, 0)
    owner = np.repeat(np.arange(count.size), count)
    start = np.cumsum(count) - count
    return np.arange(owner.size) - start[owner] + lo[owner], owner


def _first_slot(s: np.ndarray, lo: np.ndarray, hi: np.ndarray, threshold: np.ndarray,
                strict: bool) -> np.ndarray:
    """Per range, the first slot of ``lo:hi`` (non-increasing ``s``) with ``s <= threshold``
    (``s < threshold`` if ``strict``), or ``hi``: a bisection vectorized over the ranges."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = np.where(active, (lo + hi) // 2, 0)
        below = s[mid] < threshold if strict else s[mid] <= threshold
        hi = np.where(active & below, mid, hi)
        lo = np.where(active & ~below, mid + 1, lo)


def _run_checks(
    X: np.ndarray | sp.csr_matrix,
    slots: _Slots,
    labels: np.ndarray,
    c: _Checks,
    needs: _Needs,
    radius: float,
) -> np.ndarray:
    """Check the sets of pairs; return, per item (spec, query), whether one of its failed.

    Only the window of each set within ``r D_q`` in score is enumerated (the upper slots
    from the bottom, the lower ones from the top: closest pairs first), in rounds of
    growing size (:data:`GROWTH`); a set stops at its first failing pair, and the sets
    whose items have all failed are dropped.
    """
    s = slots.s
    q = slots.query[c.ua]
    reach = _times(radius, slots.diameter[q]) + slots.noise[q]
    top, bottom = s[c.la] + reach, s[c.ub - 1] - reach
    tail_start, head_end = c.ub.copy(), c.la.copy()
    near = np.flatnonzero(~(s[c.ub - 1] > top))  # else every pair is farther than r D_q
    tail_start[near] = _first_slot(s, c.ua[near], c.ub[near], top[near], strict=False)
    head_end[near] = _first_slot(s, c.la[near], c.lb[near], bottom[near], strict=True)
    head = head_end - c.la
    total = (c.ub - tail_start) * head
    cursor = np.zeros(total.size, dtype=np.int64)
    failed = np.zeros(total.size, dtype=bool)
    item_failed = np.zeros(needs.n_items, dtype=bool)
    budget = 1
    while True:
        needed = needs.needed_sets(item_failed)
        active = np.flatnonzero(needed & ~failed & (cursor < total))
        if not active.size:
            return item_failed
        count = np.minimum(budget, total[active] - cursor[active])
        t, owner = _ranges(cursor[active], cursor[active] + count)
        owner = active[owner]
        upper = c.ub[owner] - 1 - t // head[owner]
        lower = c.la[owner] + t % head[owner]
        bad = _failing_pairs(X, slots, labels, c, owner, upper, lower, radius)
        failed[owner[bad]] = True
        item_failed = needs.failed_items(failed)
        cursor[active] += count
        budget *= GROWTH


def _failing_pairs(
    X: np.ndarray | sp.csr_matrix,
    slots: _Slots,
    labels: np.ndarray,
    c: _Checks,
    owner: np.ndarray,
    upper: np.ndarray,
    lower: np.ndarray,
    radius: float,
) -> np.ndarray:
    """Mask of the pairs (upper, lower) that are checked by their set and not fixed."""
    label = labels[c.labels[owner], lower]
    mode = c.mode[owner]
    checked = (mode == 0) | ((mode == 1) & (label == c.value[owner])) | (
        (mode == 2) & (label != c.value[owner]))
    gap = slots.s[upper] - slots.s[lower]
    # Fixed without a norm: gap > r (rho_u + rho_l) >= r ||x_u - x_l||, and not rounding.
    bound = _times(radius, slots.rho[upper] + slots.rho[lower]) + slots.noise[slots.query[upper]]
    candidate = np.flatnonzero(checked & ~(gap > bound))
    bad = np.zeros(upper.size, dtype=bool)
    if not candidate.size:
        return bad
    norm, identical = _pair_distances(X, slots.rows[upper[candidate]],
                                      slots.rows[lower[candidate]])
    gap = gap[candidate]
    bad[candidate] = ~np.where(identical, gap == 0, gap > _times(radius, norm))
    return bad


def _times(radius: float, length: np.ndarray) -> np.ndarray:
    """``radius * length`` with ``inf * 0 = 0`` (a zero length bounds identical rows)."""
    return np.multiply(radius, length, out=np.zeros_like(length), where=length > 0)


def _pair_distances(
    X: np.ndarray | sp.csr_matrix, i: np.ndarray, j: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``||x_i - x_j||`` and whether the rows are identical, a chunk of pairs at a time
    (about :data:`CHUNK` values of the dense differences; CSR rows are densified only
    there)."""
    norm = np.empty(i.size)
    identical = np.empty(i.size, dtype=bool)
    step = max(1, CHUNK // X.shape[1])
    for lo in range(0, i.size, step):
        part = slice(lo, lo + step)
        if sp.issparse(X):
            rows, where = np.unique(np.r_[i[part], j[part]], return_inverse=True)
            dense = X[rows].toarray()
            diff = dense[where[:where.size // 2]] - dense[where[where.size // 2:]]
        else:
            diff = X[i[part]] - X[j[part]]
        identical[part] = ~diff.any(axis=1)
        norm[part] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    return norm, identical
