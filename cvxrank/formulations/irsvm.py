r"""IR SVM: RankSVM with cost-sensitive pair weights for document retrieval (Cao et al. 2006).

Li (2011), Sect. 4.2: IR SVM minimizes

.. math::

    \sum_{k} \tau_{t(k)}\, \mu_{q(k)}\, [1 - w^\top (x_i - x_j)]_+ + \lambda \|w\|^2,
    \qquad \lambda = \frac{1}{2C},

which, multiplied by C, is :class:`~cvxrank.formulations.ranksvm.RankSVM` with the pair
weight :math:`c_k = \tau_{t(k)} \mu_{q(k)}`:

* :math:`\tau_t`, one per type t = (higher grade, lower grade) of pair: "the average drop in
  NDCG@1 when randomly changing the positions of documents belonging to the grade pair"
  (:func:`ndcg1_swap_drop`);
* :math:`\mu_q = 1 / n_q`, with :math:`n_q` the number of pairs of query q.

Both are structured weights (per query x per grade pair), so the O(n log n) PRSVM+ engine
applies to IR SVM as it does to RankSVM (Chapelle & Keerthi 2010, Sect. 6.2, case 2).
"""

from __future__ import annotations

import numpy as np

from cvxrank.data.pairs import DEFAULT_MAX_PAIRS, count_pairs
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.ranksvm import GradeTable, Loss, RankSVM


def ndcg1_swap_drop(data: RankingData, *, zero_floor: float | None = None
                    ) -> dict[tuple[float, float], float]:
    r"""IR SVM's :math:`\tau`: expected drop of NDCG@1 when a random pair of a type is swapped.

    Take a query's perfect ranking (grades in decreasing order, ties in random order) and
    swap a document of grade a with one of grade b < a, both drawn uniformly. NDCG@1 (gain
    :math:`2^y - 1`) changes only when the grade-a document is the one at position 1, which
    needs a to be the query's top grade :math:`g^*` and has probability :math:`1 / n^*`
    (:math:`n^*` documents have the top grade); the drop is then :math:`1 - (2^b - 1) /
    (2^{g^*} - 1)`. The expected drop is computed exactly (no sampling), per query, and
    :math:`\tau_{(a, b)}` is its mean over the queries where both grades occur. A query whose
    top grade has gain <= 0 (grade 0) has NDCG@1 = 0 whatever the order (the LETOR
    convention for a query without relevant documents): its drops are 0.

    Parameters
    ----------
    data : RankingData
    zero_floor : float or None
        A grade pair whose documents are never at the top of any query has tau = 0 (swapping
        them never changes NDCG@1), which would give its pairs weight zero. With None that is
        an error; with a number in (0, 1], such a tau becomes ``zero_floor`` times the
        smallest positive tau (there is one whenever the data has pairs: the top grade of a
        query beats the others).

    Returns
    -------
    dict
        ``{(a, b): tau}`` for every pair of grades a > b that occur together in a query.

    Raises
    ------
    ValueError
        If no query has two grades (no pairs), or a grade pair's tau is 0 and ``zero_floor``
        is None (pass ``tau=`` explicitly to :class:`IRSVM`, or a floor).

    References
    ----------
    .. [1] H. Li, "A Short Introduction to Learning to Rank", IEICE 2011, Sect. 4.2.
    .. [2] Y. Cao, J. Xu, T.-Y. Liu, H. Li, Y. Huang and H.-W. Hon, "Adapting ranking SVM to
       document retrieval", SIGIR 2006.
    """
    return swap_drop_tau(swap_drops(data), zero_floor=zero_floor)


def swap_drops(data: RankingData) -> dict[tuple[float, float], list[float]]:
    """Every query's expected NDCG@1 drop per grade pair (a > b) that occurs in it, in query
    order (:func:`ndcg1_swap_drop`'s terms): the lists of several query-aligned parts of a
    data set, joined in order, are the whole set's (a sharded fit reduces them,
    :class:`cvxrank.distributed.ranksvm.ShardedIRSVM`)."""
    drops: dict[tuple[float, float], list[float]] = {}
    ptr = data.query_ptr
    for q in range(data.n_queries):
        grades, counts = np.unique(data.y[ptr[q]:ptr[q + 1]], return_counts=True)
        if grades.size < 2:
            continue
        top, n_top = float(grades[-1]), int(counts[-1])
        top_gain = 2.0 ** top - 1.0
        for hi in range(1, grades.size):
            for lo in range(hi):
                a, b = float(grades[hi]), float(grades[lo])
                changes = a == top and top_gain > 0  # else NDCG@1 is 0 before and after
                drop = (1.0 - (2.0 ** b - 1.0) / top_gain) / n_top if changes else 0.0
                drops.setdefault((a, b), []).append(drop)
    return drops


def swap_drop_tau(drops: dict[tuple[float, float], list[float]], *,
                  zero_floor: float | None = None) -> dict[tuple[float, float], float]:
    """:func:`ndcg1_swap_drop` of the per-query drops of :func:`swap_drops`: each grade
    pair's mean, with its refusals and floor."""
    if zero_floor is not None and not 0 < zero_floor <= 1:
        raise ValueError(f"zero_floor must be in (0, 1], got {zero_floor}")
    if not drops:
        raise ValueError("no query has documents of two different grades: IR SVM has no pairs")
    tau = {key: float(np.mean(v)) for key, v in sorted(drops.items())}
    zero = [key for key, v in tau.items() if not v > 0]
    if zero and zero_floor is not None:
        floor = zero_floor * min(v for v in tau.values() if v > 0)
        return {key: (v if v > 0 else floor) for key, v in tau.items()}
    if zero:
        listed = ", ".join(f"({a:g}, {b:g})" for a, b in zero)
        raise ValueError(f"IR SVM's tau is 0 for the grade pairs {listed}: in no query are "
                         "those documents at the top, so swapping them never changes NDCG@1; "
                         "pass tau= explicitly or a zero_floor")
    return tau


class IRSVM(RankSVM):
    r"""IR SVM (Li 2011, Sect. 4.2): RankSVM with pair weights :math:`\tau_t \mu_q`.

    .. math::

        P(w) = \tfrac12 \|w\|^2 + C \sum_{k=(i,j)} \tau_{t(k)}\, \mu_{q(k)}\,
        \ell\big(1 - w^\top (x_i - x_j)\big),

    with :math:`\ell` the hinge (the paper's loss), squared hinge or Huber loss; the dual is
    :class:`~cvxrank.formulations.ranksvm.RankSVM`'s with :math:`c_k = \tau_{t(k)}
    \mu_{q(k)}`.

    Parameters
    ----------
    data : RankingData
    C : float
        Loss weight (:math:`C = 1/(2\lambda)` in the paper's notation), finite and > 0.
    loss : {"hinge", "squared_hinge", "huber"}
    tau : mapping or callable, optional
        :math:`\tau` per pair of grades; default :func:`ndcg1_swap_drop` of ``data``.
    max_pairs : int
        Refusal limit for building the pairs.

    Attributes
    ----------
    tau : mapping or callable
        The grade-pair weights used.
    mu : ndarray of shape (n_queries,)
        :math:`1 / n_q` (1 for a query without pairs, whose weight is never used).

    References
    ----------
    .. [1] H. Li, "A Short Introduction to Learning to Rank", IEICE 2011, Sect. 4.2.
    .. [2] Y. Cao et al., "Adapting ranking SVM to document retrieval", SIGIR 2006.
    """

    #: The row of :data:`cvxrank.methods.METHODS` whose solvers ``"auto"`` tries.
    method = "irsvm"

    def __init__(self, data: RankingData, *, C: float = 1.0, loss: Loss = "hinge",
                 tau: GradeTable | None = None, max_pairs: int = DEFAULT_MAX_PAIRS) -> None:
        self.tau = ndcg1_swap_drop(data) if tau is None else tau
        n_q = count_pairs(data)
        self.mu = 1.0 / np.maximum(n_q, 1).astype(np.float64)
        super().__init__(data, C=C, loss=loss, query_weight=self.mu, level_weight=self.tau,
                         max_pairs=max_pairs)
        self.name = f"irsvm-{self.loss.name}"
