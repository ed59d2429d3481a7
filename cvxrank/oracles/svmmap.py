r"""SVM MAP (Yue et al. 2007): the most violated ranking for 1 - average precision.

SVM MAP (Li's survey, Sect. 5.1, QP (10) and hinge form (11)) bounds
:math:`E(\pi^*, y) - E(\pi, y)` with :math:`E` the average precision of a query whose
documents are relevant or not. Following Yue et al., a ranking enters only through the
order it puts on the (relevant, irrelevant) pairs, with the joint feature map

.. math::

    \Psi(x, \pi) = \frac{1}{|R|\,|I|} \sum_{i \in R} \sum_{j \in I} y_{ij}\,(x_i - x_j),
    \qquad y_{ij} = \begin{cases} +1 & i \text{ ranked above } j,\\ -1 & \text{else,}
    \end{cases}

(:math:`R` the relevant documents, :math:`I` the irrelevant ones), the loss
:math:`\Delta(\pi) = 1 - \mathrm{AP}(\pi)` and the constraint of query :math:`i`'s slack

.. math::

    \xi \ge \Delta(\pi) + \langle w, \Psi(x, \pi) - \Psi(x, \pi^*)\rangle \quad
    \text{for every ranking } \pi,

with :math:`\pi^*` any perfect ranking (every relevant document first: :math:`y_{ij} = +1`
for all pairs, so :math:`\Psi(x, \pi^*)` is the mean relevant document minus the mean
irrelevant one, whatever the order inside each class).

Rankings are ``order`` arrays, ``order[p]`` the document at position ``p``, as in
:mod:`cvxrank.oracles.dorm`.

**Normalization.** Li's survey writes the scoring function of the general framework (Xu et
al.) as :math:`\sigma(x, \pi) = \frac{2}{n(n-1)} \sum_{k<l} z_{kl}(x_k - x_l)` over *all*
pairs of the query; SVM MAP as Yue et al. define it uses only the (relevant, irrelevant)
pairs with the factor :math:`1/(|R|\,|I|)`, which is what is implemented here. Pairs inside a
class do not change AP, and with all pairs the oracle would have to rank each class
backwards in the perfect ranking :math:`\pi^*` of (10), a different (larger) loss.

References
----------
.. [1] Y. Yue, T. Finley, F. Radlinski and T. Joachims, "A Support Vector Method for
   Optimizing Average Precision", SIGIR 2007 (the joint feature map, and the greedy search
   for the most violated constraint with its proof of exactness).
.. [2] H. Li, "A Short Introduction to Learning to Rank", IEICE Transactions on Information
   and Systems, E94-D(10), 2011, Sect. 5.1, Eqs. (8)-(11).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cvxrank.oracles.dorm import Violation, _order, _query_matrix, _vector
from cvxrank.utils.lazy_sparse import sp

__all__ = ["ap_loss", "joint_feature_map", "most_violated_ranking"]


def _relevant(relevant: npt.ArrayLike, size: int | None = None) -> np.ndarray:
    mask = np.asarray(relevant)
    if mask.ndim != 1 or mask.size == 0 or (size is not None and mask.size != size):
        expected = "a non-empty 1-D array" if size is None else f"shape ({size},)"
        raise ValueError(f"relevant must be {expected}, got shape {mask.shape}")
    if not np.all((mask == 0) | (mask == 1)):
        raise ValueError("relevant must hold booleans (or 0/1): relevant or not")
    return mask.astype(bool)


def ap_loss(order: npt.ArrayLike, relevant: npt.ArrayLike) -> float:
    r"""SVM MAP's loss :math:`\Delta(\pi) = \mathrm{AP}(\pi^*) - \mathrm{AP}(\pi)`.

    .. math::

        \mathrm{AP}(\pi) = \frac{1}{|R|} \sum_{k=1}^{|R|} \frac{k}{\mathrm{pos}_k},

    with :math:`\mathrm{pos}_k` the 1-based position of the :math:`k`-th relevant document
    of the ranking. :math:`\mathrm{AP}(\pi^*) = 1`, so the loss is :math:`1 - \mathrm{AP}`;
    a query without relevant document has loss 0 (every ranking is as good as any).

    Parameters
    ----------
    order : array_like of int, shape (l,)
        ``order[p]`` is the document at position ``p``.
    relevant : array_like of bool, shape (l,)
        Which documents are relevant.

    Returns
    -------
    float

    References
    ----------
    H. Li, "A Short Introduction to Learning to Rank", Sect. 1.3 (MAP) and Eq. (8).
    """
    relevant = _relevant(relevant)
    hits = relevant[_order(order, relevant.size)]
    if not hits.any():
        return 0.0
    position = np.flatnonzero(hits) + 1.0
    return float(1.0 - np.mean(np.arange(1, position.size + 1) / position))


def _pair_coefficients(order: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """Coefficient of each document in Psi: (opposite class below - above) / (|R| |I|)."""
    n_relevant = int(relevant.sum())
    n_irrelevant = relevant.size - n_relevant
    if n_relevant == 0 or n_irrelevant == 0:
        return np.zeros(relevant.size)
    hits = relevant[order]
    relevant_above = np.cumsum(hits) - hits
    irrelevant_above = np.cumsum(~hits) - ~hits
    coefficient = np.where(
        hits, n_irrelevant - 2.0 * irrelevant_above, n_relevant - 2.0 * relevant_above
    )
    result = np.empty(relevant.size)
    result[order] = coefficient / (n_relevant * n_irrelevant)
    return result


def joint_feature_map(
    X: npt.ArrayLike | sp.spmatrix, order: npt.ArrayLike, relevant: npt.ArrayLike
) -> np.ndarray:
    r"""SVM MAP's joint feature map of a ranking.

    .. math::

        \Psi(x, \pi) = \frac{1}{|R|\,|I|} \sum_{i \in R} \sum_{j \in I} y_{ij}\,(x_i - x_j),

    :math:`y_{ij} = +1` if relevant document :math:`i` is ranked above irrelevant document
    :math:`j`, else :math:`-1`; computed in :math:`O(l d)` (each document's coefficient is
    the number of documents of the other class below it minus those above it, over
    :math:`|R|\,|I|`). A query without relevant or without irrelevant document has no pair:
    :math:`\Psi = 0`.

    Parameters
    ----------
    X : array_like or scipy.sparse matrix, shape (l, d)
        The query's documents.
    order : array_like of int, shape (l,)
        ``order[p]`` is the document at position ``p``.
    relevant : array_like of bool, shape (l,)
        Which documents are relevant.

    Returns
    -------
    numpy.ndarray, shape (d,)

    References
    ----------
    Y. Yue et al., SIGIR 2007 (the feature map of SVM MAP); H. Li, Sect. 5.1.
    """
    X = _query_matrix(X)
    relevant = _relevant(relevant, X.shape[0])
    coefficient = _pair_coefficients(_order(order, relevant.size), relevant)
    return np.asarray(X.T @ coefficient, dtype=np.float64).ravel()


def most_violated_ranking(
    X: npt.ArrayLike | sp.spmatrix, w: npt.ArrayLike, relevant: npt.ArrayLike
) -> Violation:
    r"""SVM MAP's most violated ranking of one query, exactly, by Yue et al.'s greedy search.

    Finds :math:`\hat\pi = \operatorname{argmax}_\pi\, 1 - \mathrm{AP}(\pi) + \langle w,
    \Psi(x, \pi) - \Psi(x, \pi^*)\rangle` with the scores :math:`s = X w`:

    1. The relevant documents are ranked by descending score, and so are the irrelevant ones
       (Yue et al.: any optimal ranking can be taken so; the pair term is then at its best for
       any interleaving, which alone determines AP).
    2. The :math:`j`-th irrelevant document (1-based, in score order) goes below the first
       :math:`i_j` relevant ones, with :math:`i_j` maximizing, on its own,

       .. math::

           h_j(i) = \sum_{k=i+1}^{|R|} \Big(\frac{1}{|R|}\,\frac{k}{(k+j-1)(k+j)}
           - \frac{2\,(s^R_k - s^I_j)}{|R|\,|I|}\Big),

       its share of the objective: a relevant document :math:`k` below it loses
       :math:`k/(k+j-1) - k/(k+j)` of precision (so that :math:`1 - \mathrm{AP}` is the sum
       of these terms over the (relevant below irrelevant) pairs, by telescoping), and the
       pair flips from :math:`+1` to :math:`-1` in :math:`\Psi`.

    The independent maximizers are non-decreasing in :math:`j` (each summand strictly
    decreases in :math:`j`, so :math:`h_j` has strictly increasing differences: every
    maximizer of :math:`h_{j+1}` is at least every maximizer of :math:`h_j`), so they form
    a ranking and the search is exact; it takes :math:`O(l \log l + |R|\,|I|)` time.

    Parameters
    ----------
    X : array_like or scipy.sparse matrix, shape (l, d)
        The query's documents.
    w : array_like, shape (d,)
        Current weights.
    relevant : array_like of bool, shape (l,)
        Which documents are relevant.

    Returns
    -------
    Violation
        ``loss`` is :math:`1 - \mathrm{AP}(\hat\pi)` and ``feature_difference`` is
        :math:`\Psi(x, \hat\pi) - \Psi(x, \pi^*)`, ``solver`` is ``"greedy"``. A query
        without relevant or without irrelevant document has a single class of rankings: its
        piece is 0, with ``order`` the relevant documents first (input order otherwise).

    References
    ----------
    Y. Yue, T. Finley, F. Radlinski and T. Joachims, SIGIR 2007 (the greedy algorithm for the
    most violated constraint and its optimality); H. Li, Sect. 5.1, Eqs. (10)-(11).
    """
    X = _query_matrix(X)
    w = _vector(w, "w", X.shape[1])
    relevant = _relevant(relevant, X.shape[0])
    scores = np.asarray(X @ w, dtype=np.float64).ravel()
    rel = np.flatnonzero(relevant)
    irr = np.flatnonzero(~relevant)
    if rel.size == 0 or irr.size == 0:
        order = np.r_[rel, irr].astype(np.int64)
        return Violation(order, 0.0, np.zeros(X.shape[1]), 0.0, "greedy")
    rel = rel[np.argsort(-scores[rel], kind="stable")]
    irr = irr[np.argsort(-scores[irr], kind="stable")]
    n_rel, n_irr = rel.size, irr.size
    k = np.arange(1, n_rel + 1, dtype=np.float64)
    j = np.arange(1, n_irr + 1, dtype=np.float64)[:, None]
    term = k / ((k + j - 1.0) * (k + j)) / n_rel - 2.0 * (
        scores[rel][None, :] - scores[irr][:, None]
    ) / (n_rel * n_irr)
    share = np.zeros((n_irr, n_rel + 1))
    share[:, :n_rel] = np.cumsum(term[:, ::-1], axis=1)[:, ::-1]  # h_j(i), i = 0..|R|
    above = np.argmax(share, axis=1)  # relevant documents above the j-th irrelevant one
    # Interleave: relevant k (0-based) in slot 2k + 1, irrelevant j in slot 2 i_j.
    slot = np.r_[2 * np.arange(n_rel) + 1, 2 * above]
    order = np.r_[rel, irr][np.argsort(slot, kind="stable")].astype(np.int64)
    coefficient = _pair_coefficients(order, relevant) - _pair_coefficients(
        np.r_[rel, irr].astype(np.int64), relevant
    )
    difference = np.asarray(X.T @ coefficient, dtype=np.float64).ravel()
    loss = ap_loss(order, relevant)
    return Violation(order, loss, difference, float(loss + w @ difference), "greedy")
