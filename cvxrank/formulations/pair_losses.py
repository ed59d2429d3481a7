r"""The pairwise loss of RankSVM on document scores, its gradient and Hessian-vector products.

Every RankSVM-type primal is :math:`\tfrac12\|w\|^2 + C\,L(Xw)` with the pairwise loss of the
document scores :math:`s = Xw`,

.. math::

    L(s) = \sum_{(i,j) \in \mathcal P} c_{ij}\, \ell\big(m_{ij} - (s_i - s_j)\big),

where :math:`\ell(r) = \max(0, r)` (hinge), :math:`\max(0, r)^2` (squared hinge) or the Huber
loss of Chapelle & Keerthi (2010), Sect. 4.1, :math:`\ell(r) = \max(0, r)^2 - \max(0, r -
1)^2` (0 for r <= 0, r^2 on [0, 1], 2r - 1 above). The Newton solvers need L, its gradient in
s and products with its (generalized) Hessian in s; two engines compute them:

* :class:`ExplicitPairLoss` works on the sparse p x n pair operator A of Chapelle & Keerthi,
  Sect. 3 (PRSVM): O(p) per evaluation and per Hessian-vector product, any per-pair weight
  and margin;
* :class:`SortedPairLoss` never builds the pairs (PRSVM+, Sects. 4.1-4.2): documents are
  grouped into *blocks* (query q, upper grade r, a set of lower grades with the same weight
  and margin); inside a block with upper set U and lower set B every pair term is
  :math:`c\,\ell(\tilde v_j - \tilde u_i)` with :math:`\tilde u_i = s_i - m/2` and
  :math:`\tilde v_j = s_j + m/2`, active when :math:`\tilde v_j > \tilde u_i`. After one sort
  of the shifted scores, the sums over active pairs are prefix and suffix sums, so one
  evaluation costs O(E log E) for E <= (number of grades) x n block entries (twice that for
  the Huber loss), and each
  Hessian-vector product O(E) with the order of the last evaluation. Weights may depend on
  the query and on the pair of grades (Sect. 6.2, case 2), margins on the pair of grades.

Both return a :class:`LossEvaluation` with the value, the gradient ``dL/ds`` and a
Hessian-vector product in s (for the smooth losses), plus the margin-weighted hinge sum
:math:`\sum c_{ij} m_{ij} \max(0, m_{ij} - (s_i - s_j))` that the squared-hinge dual
certificate needs (see :meth:`cvxrank.formulations.ranksvm.RankSVM.dual_value_at`).

References
----------
.. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010: Sect. 3 (operator A), Sect. 4.1 (eqs. (4)-(6), hinge and
   Huber losses), Sect. 4.2 (eq. (7), many queries and levels), Sect. 6.2 (weights).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from cvxrank.formulations import sorted_kernels
from cvxrank.methods import PAIR_LOSSES


@dataclass
class LossEvaluation:
    """The pairwise loss and its derivatives at one score vector s.

    Attributes
    ----------
    value : float
        :math:`L(s)`.
    grad : ndarray of shape (n,)
        :math:`\\partial L / \\partial s` (a subgradient for the hinge loss).
    margin_hinge : float
        :math:`\\sum c_{ij} m_{ij} \\max(0, m_{ij} - (s_i - s_j))` (used by the squared-hinge
        dual certificate; NaN for the other losses).
    hessp : callable or None
        ``hessp(delta)`` is the (generalized) Hessian of L in s times ``delta`` (n-vectors);
        None for the hinge loss, which has no Hessian.
    """

    value: float
    grad: np.ndarray
    margin_hinge: float
    hessp: Callable[[np.ndarray], np.ndarray] | None


def _check_loss(loss: str) -> str:
    if loss not in PAIR_LOSSES:
        raise ValueError(f"loss must be one of {', '.join(PAIR_LOSSES)}; got {loss!r}")
    return loss


class ExplicitPairLoss:
    """The pairwise loss through the sparse pair operator A (PRSVM, Chapelle & Keerthi Sect. 3).

    Parameters
    ----------
    A : sparse matrix of shape (p, n)
        Row k has +1 at the preferred document and -1 at the other.
    weight, margin : ndarray of shape (p,)
        Per-pair weights :math:`c_k > 0` and margins :math:`m_k`.
    loss : {"hinge", "squared_hinge", "huber"}

    Notes
    -----
    With :math:`r = m - A s`: squared hinge :math:`\\nabla L = -2 A^\\top (c \\odot r_+)` and
    :math:`H_L \\delta = 2 A^\\top (c \\odot [r > 0] \\odot A\\delta)`, i.e. the paper's
    :math:`A^\\top D A` with D the active pairs; O(p) each, the pair differences of features
    never formed.
    """

    def __init__(self, A: sp.csr_matrix, weight: np.ndarray, margin: np.ndarray,
                 loss: str) -> None:
        self.loss = _check_loss(loss)
        self.A = sp.csr_matrix(A)
        self.AT = self.A.T.tocsr()
        self.weight = np.asarray(weight, dtype=np.float64)
        self.margin = np.asarray(margin, dtype=np.float64)

    def evaluate(self, s: np.ndarray) -> LossEvaluation:
        """Value, gradient and Hessian-vector product of L at the scores ``s``."""
        r = self.margin - self.A @ s
        pos = np.maximum(r, 0.0)
        c = self.weight
        if self.loss == "hinge":
            active = (r > 0).astype(np.float64)
            return LossEvaluation(float(c @ pos), -(self.AT @ (c * active)), float("nan"), None)
        if self.loss == "squared_hinge":
            value = float(c @ (pos * pos))
            slope = 2.0 * pos
            curvature = 2.0 * c * (r > 0)
            margin_hinge = float((c * self.margin) @ pos)
        else:  # huber: r^2 on [0, 1], 2r - 1 above
            clipped = np.minimum(pos, 1.0)
            value = float(c @ np.where(r > 1.0, 2.0 * r - 1.0, pos * pos))
            slope = 2.0 * clipped
            # r = 1 on the quadratic side (as the sorted engine's difference of two
            # squared hinges): at w = 0 every r is 1, and H = I there scales nothing
            curvature = 2.0 * c * ((r > 0) & (r <= 1.0))
            margin_hinge = float("nan")
        grad = -(self.AT @ (c * slope))

        def hessp(delta: np.ndarray) -> np.ndarray:
            return self.AT @ (curvature * (self.A @ delta))

        return LossEvaluation(value, grad, margin_hinge, hessp)


@dataclass(frozen=True)
class _Blocks:
    """Block entries of :class:`SortedPairLoss`, stored block after block.

    ``doc[e]`` is the document of entry e, ``upper[e]`` whether it plays the preferred role,
    ``shift[e]`` is ``-m/2`` (upper) or ``+m/2`` (lower); ``ptr`` delimits the blocks and
    ``block``, ``weight``, ``margin`` give each entry's block, its weight c and margin m.
    """

    doc: np.ndarray
    upper: np.ndarray
    shift: np.ndarray
    block: np.ndarray
    weight: np.ndarray
    margin: np.ndarray
    ptr: np.ndarray


class SortedPairLoss:
    """The pairwise loss in O(n log n) without building the pairs (PRSVM+, Sects. 4.1-4.2).

    Parameters
    ----------
    query_index : ndarray of int of shape (n,)
        Query of each document (0-based, rows of a query need not be contiguous).
    grade_index : ndarray of int of shape (n,)
        Grade level of each document, 0 = least relevant, as an index into ``weight_table``.
    query_weight : ndarray of shape (n_queries,)
        Per-query weight factor.
    weight_table, margin_table : ndarray of shape (R, R)
        ``weight_table[hi, lo]`` and ``margin_table[hi, lo]`` for grade levels hi > lo: the
        weight factor and margin of a pair whose preferred document has level hi.
    loss : {"hinge", "squared_hinge", "huber"}

    Notes
    -----
    A pair (i, j) of query q with levels hi > lo has weight ``query_weight[q] *
    weight_table[hi, lo]`` and margin ``margin_table[hi, lo]``. For each (q, hi), the lower
    levels with equal (weight, margin) share one block, so with constant tables the blocks are
    exactly the sets :math:`\\mathcal P_{qr}` of the paper's eq. (7). The Huber loss adds, per
    block, a block of weight -c and margin m - 1 (Sect. 4.1: :math:`\\ell_{Huber}(t) = \\max(0,
    1-t)^2 - \\max(0, -t)^2`).

    Inside a block, after sorting the shifted scores, an upper entry at position t is active
    with every lower entry after it: with the counts and sums :math:`n_t, S^1_t, S^2_t` of the
    lower entries after t, its squared-hinge terms are :math:`S^2_t - 2\\tilde u_t S^1_t + n_t
    \\tilde u_t^2` and their derivative in :math:`s_t` is :math:`-2(S^1_t - n_t \\tilde u_t)`
    (the paper's :math:`2(\\alpha_k \\tilde y_k - \\beta_k)`, eq. (5)); a lower entry uses the
    counts and sums of the upper entries before it. Hessian-vector products (eq. (6),
    :math:`z_k = \\alpha_k \\delta_k - \\gamma_k`) reuse the order and counts. The sort is
    numpy's; the two passes over each block (:mod:`cvxrank.formulations.sorted_kernels`) are
    compiled with numba, or run in numpy with the same results, bit for bit, while loading
    the compiled ones does not pay in the process
    (:func:`~cvxrank.formulations.sorted_kernels.use_compiled`).
    """

    def __init__(self, query_index: np.ndarray, grade_index: np.ndarray,
                 query_weight: np.ndarray, weight_table: np.ndarray, margin_table: np.ndarray,
                 loss: str) -> None:
        self.loss = _check_loss(loss)
        self.n_documents = int(np.asarray(query_index).size)
        self.blocks = _build_blocks(np.asarray(query_index, dtype=np.int64),
                                    np.asarray(grade_index, dtype=np.int64),
                                    np.asarray(query_weight, dtype=np.float64),
                                    np.asarray(weight_table, dtype=np.float64),
                                    np.asarray(margin_table, dtype=np.float64),
                                    huber=self.loss == "huber")
        n_blocks = self.blocks.ptr.size - 1
        self._block_key = (self.blocks.block.astype(np.uint16) if n_blocks <= 2**16
                           else self.blocks.block)
        sizes = np.diff(self.blocks.ptr)
        # cells of the numpy passes' table (BlockLayout), which is built only if they run
        self._cells = sizes.size * (int(sizes.max()) + 1 if sizes.size else 1)
        self._layout: sorted_kernels.BlockLayout | None = None

    @property
    def layout(self) -> sorted_kernels.BlockLayout:
        """The table layout of the numpy passes (built on first use)."""
        if self._layout is None:
            self._layout = sorted_kernels.BlockLayout(self.blocks.ptr)
        return self._layout

    @property
    def n_entries(self) -> int:
        """Number of block entries E (each document once per block it belongs to): at most
        (number of grades - 1) x n, twice that for the Huber loss."""
        return int(self.blocks.doc.size)

    def _sort(self, values: np.ndarray) -> np.ndarray:
        """Permutation sorting ``values`` inside each block (blocks keep their positions)."""
        order = np.argsort(values)
        if self.blocks.ptr.size > 2:
            # Stable sort by block id: a radix sort for uint16 keys, so O(E).
            order = order[np.argsort(self._block_key[order], kind="stable")]
        return order

    def evaluate(self, s: np.ndarray) -> LossEvaluation:
        """Value, gradient and Hessian-vector product of L at the scores ``s``."""
        b = self.blocks
        values = np.asarray(s, dtype=np.float64)[b.doc] + b.shift
        order = self._sort(values)
        squared = self.loss != "hinge"
        if sorted_kernels.use_compiled(self.n_entries, self._cells):
            value, grad, margin_hinge, count = sorted_kernels.block_sums(
                values, order, b.doc, b.upper, b.weight, b.margin, b.ptr, self.n_documents,
                squared)

            def hessp(delta: np.ndarray) -> np.ndarray:
                return sorted_kernels.block_hessp(np.asarray(delta, dtype=np.float64), order,
                                                  count, b.doc, b.upper, b.weight, b.ptr)
        else:
            start = time.perf_counter()
            value, grad, margin_hinge, count = sorted_kernels.numpy_block_sums(
                values, order, b.doc, b.upper, b.weight, b.margin, self.layout,
                self.n_documents, squared)
            sorted_kernels.charge_numpy(time.perf_counter() - start)
            order_doc, order_upper = (b.doc[order], b.upper[order]) if squared else (None, None)

            def hessp(delta: np.ndarray) -> np.ndarray:
                start = time.perf_counter()
                out = sorted_kernels.numpy_block_hessp(
                    np.asarray(delta, dtype=np.float64), order_doc, order_upper, count,
                    b.weight, self.layout)
                sorted_kernels.charge_numpy(time.perf_counter() - start)
                return out

        if not squared:
            return LossEvaluation(value, grad, float("nan"), None)
        return LossEvaluation(value, grad,
                              margin_hinge if self.loss == "squared_hinge" else float("nan"),
                              hessp)


def _build_blocks(query: np.ndarray, grade: np.ndarray, query_weight: np.ndarray,
                  weight_table: np.ndarray, margin_table: np.ndarray, *,
                  huber: bool) -> _Blocks:
    """The blocks of :class:`SortedPairLoss` (one pass over queries and their grade levels)."""
    order = np.lexsort((grade, query))
    q_sorted, g_sorted = query[order], grade[order]
    cut = np.flatnonzero(np.r_[True, (q_sorted[1:] != q_sorted[:-1])
                               | (g_sorted[1:] != g_sorted[:-1]), True])
    level_query = q_sorted[cut[:-1]]
    level_grade = g_sorted[cut[:-1]]
    docs, uppers, shifts, weights, margins, sizes = [], [], [], [], [], []

    def add(up_docs: np.ndarray, lo_docs: np.ndarray, c: float, m: float) -> None:
        docs.extend((up_docs, lo_docs))
        uppers.append(np.r_[np.ones(up_docs.size, bool), np.zeros(lo_docs.size, bool)])
        shifts.append(np.r_[np.full(up_docs.size, -m / 2), np.full(lo_docs.size, m / 2)])
        weights.append(c)
        margins.append(m)
        sizes.append(up_docs.size + lo_docs.size)

    query_start = np.flatnonzero(np.r_[True, level_query[1:] != level_query[:-1]])
    query_end = np.r_[query_start[1:], level_query.size]
    for first, last in zip(query_start, query_end, strict=True):
        qw = query_weight[level_query[first]]
        for hi in range(first + 1, last):
            up_docs = order[cut[hi]:cut[hi + 1]]
            groups: dict[tuple[float, float], list[np.ndarray]] = {}
            for lo in range(first, hi):
                key = (float(weight_table[level_grade[hi], level_grade[lo]]),
                       float(margin_table[level_grade[hi], level_grade[lo]]))
                groups.setdefault(key, []).append(order[cut[lo]:cut[lo + 1]])
            for (c, m), parts in groups.items():
                lo_docs = np.concatenate(parts)
                add(up_docs, lo_docs, qw * c, m)
                if huber:
                    add(up_docs, lo_docs, -qw * c, m - 1.0)
    sizes_arr = np.asarray(sizes, dtype=np.int64)
    block = np.repeat(np.arange(sizes_arr.size, dtype=np.int64), sizes_arr)
    return _Blocks(
        doc=np.concatenate(docs) if docs else np.zeros(0, np.int64),
        upper=np.concatenate(uppers) if uppers else np.zeros(0, bool),
        shift=np.concatenate(shifts) if shifts else np.zeros(0),
        block=block,
        weight=np.repeat(np.asarray(weights, dtype=np.float64), sizes_arr),
        margin=np.repeat(np.asarray(margins, dtype=np.float64), sizes_arr),
        ptr=np.r_[0, np.cumsum(sizes_arr)].astype(np.int64),
    )
