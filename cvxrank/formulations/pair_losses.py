r"""The pairwise loss of RankSVM on document scores, its gradient and Hessian-vector products.

Every RankSVM-type primal is :math:`\tfrac12\|w\|^2 + C\,L(Xw)` with the pairwise loss of the
document scores :math:`s = Xw`,

.. math::

    L(s) = \sum_{(i,j) \in \mathcal P} c_{ij}\, \ell\big(m_{ij} - (s_i - s_j)\big),

where :math:`\ell(r) = \max(0, r)` (hinge), :math:`\max(0, r)^2` (squared hinge) or the Huber
loss of Chapelle & Keerthi (2010), Sect. 4.1, of width :math:`\delta`, :math:`\ell(r) =
\max(0, r)^2 - \max(0, r - \delta)^2` (0 for r <= 0, r^2 on :math:`[0, \delta]`,
:math:`2\delta r - \delta^2` above; their width is 1): the unit ramps of
:class:`~cvxrank.losses.pieces.Ramp`, a loss's knot and scale being folded into the margins and
weights. The Newton solvers need L, its gradient in s and products with its (generalized)
Hessian in s; two engines compute them:

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

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from cvxrank.formulations import sorted_kernels
from cvxrank.losses import PairLoss, Ramp, ramp_of
from cvxrank.numerics import rounding
from cvxrank.numerics.rounding import LossRounding
from cvxrank.utils.lazy_sparse import sp


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
    rounding_of : callable or None
        ``rounding_of()`` bounds the rounding of ``value`` and ``grad``
        (:class:`~cvxrank.numerics.rounding.LossRounding`, computed on demand: only a certificate
        needs it); None where the engine gives no bound.
    """

    value: float
    grad: np.ndarray
    margin_hinge: float
    hessp: Callable[[np.ndarray], np.ndarray] | None
    rounding_of: Callable[[], LossRounding] | None = field(default=None, repr=False)

    def rounding(self) -> LossRounding:
        """The rounding bound of this evaluation (:attr:`rounding_of`)."""
        if self.rounding_of is None:
            raise ValueError("this loss evaluation carries no rounding bound")
        return self.rounding_of()


def _unit(ramp: Ramp | PairLoss | str) -> Ramp:
    """``ramp`` (or a loss's, :meth:`~cvxrank.losses.PairLoss.ramp`), which must be at knot 1
    and scale 1: what the engines evaluate."""
    if not isinstance(ramp, Ramp):
        ramp = ramp_of(ramp)[1]
    if (ramp.knot, ramp.scale) != (1.0, 1.0):
        raise ValueError(f"the engines evaluate unit ramps (knot 1, scale 1; the formulation "
                         f"folds the rest into margins and weights), got {ramp}")
    return ramp


class ExplicitPairLoss:
    """The pairwise loss through the sparse pair operator A (PRSVM, Chapelle & Keerthi Sect. 3).

    Parameters
    ----------
    A : sparse matrix of shape (p, n)
        Row k has +1 at the preferred document and -1 at the other.
    weight, margin : ndarray of shape (p,)
        Per-pair weights :math:`c_k > 0` and margins :math:`m_k`.
    ramp : Ramp
        The unit ramp :math:`\\ell` (knot 1, scale 1), or a unit loss or its name.

    Notes
    -----
    With :math:`r = m - A s`: squared hinge :math:`\\nabla L = -2 A^\\top (c \\odot r_+)` and
    :math:`H_L \\delta = 2 A^\\top (c \\odot [r > 0] \\odot A\\delta)`, i.e. the paper's
    :math:`A^\\top D A` with D the active pairs; O(p) each, the pair differences of features
    never formed.
    """

    def __init__(self, A: sp.csr_matrix, weight: np.ndarray, margin: np.ndarray,
                 ramp: Ramp | PairLoss | str) -> None:
        self.ramp = _unit(ramp)
        self.A = sp.csr_matrix(A)
        self.AT = self.A.T.tocsr()
        self.weight = np.asarray(weight, dtype=np.float64)
        self.margin = np.asarray(margin, dtype=np.float64)

    @functools.cached_property
    def _static(self) -> tuple[float, float, int]:
        """Total pair weight, largest margin and largest number of pairs of a document (the
        rounding bound's constants)."""
        degree = np.diff(self.AT.indptr)
        return (float(np.abs(self.weight).sum()),
                float(np.abs(self.margin).max(initial=0.0)),
                int(degree.max(initial=0)))

    def evaluate(self, s: np.ndarray) -> LossEvaluation:
        """Value, gradient and Hessian-vector product of L at the scores ``s``."""
        r = self.margin - self.A @ s
        pos = np.maximum(r, 0.0)
        c = self.weight
        if self.ramp.linear:
            active = (r > 0).astype(np.float64)
            value = float(c @ pos)
            return LossEvaluation(value, -(self.AT @ (c * active)), float("nan"), None,
                                  self._rounding(s, value, c * active))
        if not self.ramp.capped:
            value = float(c @ (pos * pos))
            slope = 2.0 * pos
            curvature = 2.0 * c * (r > 0)
            margin_hinge = float((c * self.margin) @ pos)
        else:  # huber: r^2 on [0, width], 2 width r - width^2 above
            width = self.ramp.width
            clipped = np.minimum(pos, width)
            value = float(c @ np.where(r > width, (2.0 * r - width) * width, pos * pos))
            slope = 2.0 * clipped
            # r = width on the quadratic side (as the sorted engine's difference of two
            # squared hinges): at w = 0 every r is 1, and H = I there scales nothing
            curvature = 2.0 * c * ((r > 0) & (r <= width))
            margin_hinge = float("nan")
        weighted_slope = c * slope
        grad = -(self.AT @ weighted_slope)

        def hessp(delta: np.ndarray) -> np.ndarray:
            return self.AT @ (curvature * (self.A @ delta))

        return LossEvaluation(value, grad, margin_hinge, hessp,
                              self._rounding(s, value, weighted_slope))

    def _rounding(self, s: np.ndarray, value: float, weighted_slope: np.ndarray
                  ) -> Callable[[], LossRounding]:
        r"""The rounding bound of an evaluation at ``s`` (:class:`LossEvaluation`).

        A pair's residual :math:`m - (s_i - s_j)` is two roundings, so off by
        :math:`\delta_0 = 2u(m + 2\|s\|_\infty)` plus :math:`2\delta` for scores off by
        :math:`\delta`; the value is a dot product of p nonnegative terms
        (:math:`\gamma_{p+3} L`) and moves by at most :math:`\sum_k c_k |\ell'| \le
        2\sqrt{W L}` (W the total pair weight; W for the hinge) per unit of residual, plus
        :math:`W` times its square (:math:`(a + b)^2 \le 2a^2 + 2b^2` splits the two); each
        document's gradient entry sums its pairs' terms
        (:math:`\gamma_{deg+3}`), whose slopes move by at most 2 per unit of residual
        (none for the hinge's subgradient).
        """
        total, largest_margin, degree = self._static
        smooth = not self.ramp.linear

        def bound() -> LossRounding:
            u = rounding.UNIT_ROUNDOFF
            base = 2.0 * u * (largest_margin + 2.0 * float(np.abs(s).max(initial=0.0)))
            slope = 2.0 * np.sqrt(total * max(value, 0.0)) if smooth else total
            curvature = total if smooth else 0.0
            grad_slope = 4.0 * total if smooth else 0.0
            return LossRounding(
                value=(rounding.gamma(self.weight.size + 3) * abs(value) + slope * base
                       + 2.0 * curvature * base * base),
                value_slope=2.0 * slope, value_curvature=8.0 * curvature,
                grad=(rounding.gamma(degree + 3) * 2.0 * float(np.abs(weighted_slope).sum())
                      + grad_slope * base),
                grad_slope=2.0 * grad_slope)

        return bound


@dataclass(frozen=True)
class _Blocks:
    """Block entries of :class:`SortedPairLoss`, stored block after block.

    ``doc[e]`` is the document of entry e, ``upper[e]`` whether it plays the preferred role,
    ``shift[e]`` is ``-m/2`` (upper) or ``+m/2`` (lower); ``ptr`` delimits the blocks and
    ``block_weight``, ``block_margin`` give each block's weight c and margin m (per entry:
    :attr:`block`, :attr:`weight`, :attr:`margin`, built on first use, as the compiled
    passes and a large problem never need them).

    Each block is a few *segments* (its upper documents, then its documents of each lower
    level), each a *run* of ``runs.doc``, the documents by query, level and row:
    ``runs.start``/``runs.length`` delimit the runs, and segment j of block b
    (``segments.ptr[b] <= j < segments.ptr[b+1]``) holds the entries ``segments.entry[j]``
    onwards, the documents ``runs.doc[segments.run[j]:][:segments.length[j]]`` in order.
    """

    doc: np.ndarray
    upper: np.ndarray
    shift: np.ndarray
    block_weight: np.ndarray
    block_margin: np.ndarray
    ptr: np.ndarray
    runs: sorted_kernels.Runs
    segments: sorted_kernels.Segments

    @functools.cached_property
    def block(self) -> np.ndarray:
        """The block of each entry."""
        return np.repeat(np.arange(self.ptr.size - 1, dtype=np.int64), np.diff(self.ptr))

    @functools.cached_property
    def weight(self) -> np.ndarray:
        """The weight c of each entry's block."""
        return self.block_weight[self.block]

    @functools.cached_property
    def margin(self) -> np.ndarray:
        """The margin m of each entry's block."""
        return self.block_margin[self.block]


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
    ramp : Ramp
        The unit ramp (knot 1, scale 1), or a unit loss or its name.

    Notes
    -----
    A pair (i, j) of query q with levels hi > lo has weight ``query_weight[q] *
    weight_table[hi, lo]`` and margin ``margin_table[hi, lo]``. For each (q, hi), the lower
    levels with equal (weight, margin) share one block, so with constant tables the blocks are
    exactly the sets :math:`\\mathcal P_{qr}` of the paper's eq. (7). The Huber loss of width
    :math:`\\delta` adds, per block, a block of weight -c and margin :math:`m - \\delta` (Sect.
    4.1: :math:`\\ell_{Huber}(t) = \\max(0, 1-t)^2 - \\max(0, -t)^2` at width 1).

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
                 ramp: Ramp | PairLoss | str) -> None:
        self.ramp = _unit(ramp)
        self.n_documents = int(np.asarray(query_index).size)
        self.blocks = _build_blocks(np.asarray(query_index, dtype=np.int64),
                                    np.asarray(grade_index, dtype=np.int64),
                                    np.asarray(query_weight, dtype=np.float64),
                                    np.asarray(weight_table, dtype=np.float64),
                                    np.asarray(margin_table, dtype=np.float64),
                                    capped_at=self.ramp.width if self.ramp.capped else None)
        sizes = np.diff(self.blocks.ptr)
        # cells of the numpy passes' table (BlockLayout), which is built only if they run
        self._cells = sizes.size * (int(sizes.max()) + 1 if sizes.size else 1)
        self._layout: sorted_kernels.BlockLayout | None = None
        # the runs' sorted positions at the last compiled evaluation (the next one's start)
        self._run_rank: np.ndarray | None = None

    @functools.cached_property
    def _block_key(self) -> np.ndarray:
        """Each entry's block, as uint16 where that holds them (the numpy sort's key)."""
        block = self.blocks.block
        return block.astype(np.uint16) if self.blocks.ptr.size - 1 <= 2**16 else block

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

    def _sort(self, values: np.ndarray, scores: np.ndarray, compiled: bool) -> np.ndarray:
        """Permutation sorting ``values`` (the shifted ``scores`` of the entries) inside each
        block (blocks keep their positions), ties by :func:`sorted_kernels.tie_rank`, then in
        entry order.

        With the compiled passes it sorts by merging (:func:`sorted_kernels.merged_order`:
        each query's documents of each level sorted once, from the last evaluation's order,
        each block a merge of its levels, O(n log n + E x levels) and O(n + E x levels)
        between close iterates; on MQ2008's folds half the time of numpy's sorts); else
        with numpy (stable sorts of all entries by value, then by block). Both give the one
        order by block, value, tie rank and entry, so neither depends on a CPU's sorting
        kernels (numpy's default sort orders ties by whichever SIMD kernel the CPU has) and
        the passes give the same results, bit for bit, whichever runs.
        """
        b = self.blocks
        if compiled:
            order, self._run_rank = sorted_kernels.merged_order(
                values, scores, b.runs, b.segments, b.block_weight, self._run_rank)
            return order
        order = self._tie_order  # entries by tie rank, then position
        order = order[np.argsort(values[order], kind="stable")]
        if b.ptr.size > 2:
            # Stable sort by block id: a radix sort for uint16 keys, so O(E).
            order = order[np.argsort(self._block_key[order], kind="stable")]
        return order

    @functools.cached_property
    def _tie_order(self) -> np.ndarray:
        """The entries by :func:`sorted_kernels.tie_rank`, then position (the numpy sorts'
        start)."""
        b = self.blocks
        late = sorted_kernels.tie_rank(b.upper, b.weight < 0)
        return np.concatenate([np.flatnonzero(~late), np.flatnonzero(late)])

    def evaluate(self, s: np.ndarray) -> LossEvaluation:
        """Value, gradient and Hessian-vector product of L at the scores ``s``."""
        b = self.blocks
        scores = np.ascontiguousarray(s, dtype=np.float64)
        values = scores[b.doc] + b.shift
        compiled = sorted_kernels.use_compiled(self.n_entries, self._cells)
        order = self._sort(values, scores, compiled)
        squared = not self.ramp.linear
        if compiled:
            value, grad, margin_hinge, count = sorted_kernels.block_sums(
                values, order, b.doc, b.upper, b.block_weight, b.block_margin, b.ptr,
                self.n_documents, squared)

            def hessp(delta: np.ndarray) -> np.ndarray:
                delta = np.ascontiguousarray(delta, dtype=np.float64)
                return sorted_kernels.block_hessp(delta, order, count, b.doc, b.upper,
                                                  b.block_weight, b.ptr)
        else:
            start = time.perf_counter()
            value, grad, margin_hinge, count = sorted_kernels.numpy_block_sums(
                values, order, b.doc, b.upper, b.weight, b.margin, self.layout,
                self.n_documents, squared)
            sorted_kernels.KERNELS.charge_numpy(time.perf_counter() - start)
            numpy_hessp = sorted_kernels.NumpyHessp(b.doc, b.upper, order, count, b.weight,
                                                    self.layout)

            def hessp(delta: np.ndarray) -> np.ndarray:
                start = time.perf_counter()
                out = numpy_hessp(np.asarray(delta, dtype=np.float64))
                sorted_kernels.KERNELS.charge_numpy(time.perf_counter() - start)
                return out

        bound = self._rounding(values, order, value)
        if not squared:
            return LossEvaluation(value, grad, float("nan"), None, bound)
        return LossEvaluation(value, grad,
                              float("nan") if self.ramp.capped else margin_hinge,
                              hessp, bound)

    def accurate_gradient(self, s_hi: np.ndarray, s_lo: np.ndarray, s_error: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""The gradient in the scores in double-word arithmetic, with a bound per document
        (a squared hinge or Huber loss: a piecewise-quadratic ramp).

        The scores are double-words ``s_hi + s_lo`` within ``s_error`` of exact; each entry's
        shifted score :math:`s_{doc} \pm m/2` is formed in double-words (its bound grows by
        the addition's), the blocks sorted by the double-words (``np.lexsort``: exactly their
        order) and the passes run in double-words
        (:func:`~cvxrank.numerics.compensated_kernels.block_gradient`): O(n log n) and
        O(E) memory, no pairs.

        Returns
        -------
        hi, lo, error : ndarray of shape (n_documents,)
        """
        from cvxrank.numerics import compensated
        from cvxrank.numerics.compensated_kernels import block_gradient

        if self.ramp.linear:
            raise ValueError("a piecewise-linear loss has no gradient")
        b = self.blocks
        hi, lo = s_hi[b.doc], s_lo[b.doc]
        v_hi, v_lo = compensated.add((hi, lo), (b.shift, np.zeros_like(b.shift)))
        v_error = (s_error[b.doc]
                   + 2.0 * compensated.ADD_ERROR * (np.abs(hi) + np.abs(b.shift)) * 2.0)
        order = np.lexsort((v_lo, v_hi, b.block))
        return block_gradient(v_hi, v_lo, v_error, order, b.doc, b.upper, b.block_weight,
                              b.ptr, self.n_documents)

    @functools.cached_property
    def _static(self) -> tuple[np.ndarray, float, float, int]:
        r"""The rounding bound's constants: per block :math:`4 |c_b| n_b^2` (n_b entries,
        weight c_b), the total pair weight :math:`W = \sum_b |c_b| n_b^{up} n_b^{low}`, the
        largest margin and the most blocks a document is in."""
        b = self.blocks
        sizes = np.diff(b.ptr)
        if not sizes.size:
            return np.zeros(0), 0.0, 0.0, 0
        c = np.abs(b.block_weight)
        n_upper = np.add.reduceat(b.upper.astype(np.float64), b.ptr[:-1])
        return (4.0 * c * sizes.astype(np.float64) ** 2,
                float(c @ (n_upper * (sizes - n_upper))),
                float(np.abs(b.block_margin).max()), int(np.bincount(b.doc).max()))

    def _rounding(self, values: np.ndarray, order: np.ndarray,
                  value: float) -> Callable[[], LossRounding]:
        r"""The rounding bound of an evaluation (:class:`LossEvaluation`) at the scores
        whose shifted ``values`` are given, sorted by ``order`` in each block.

        A block's centred values lie within its spread :math:`V_b` (its largest sorted
        value minus its smallest); the shift and the centring round a pair's residual by at
        most :math:`\delta_0 = 6uV` (:math:`V = 2\|s\|_\infty + m`, at most twice the
        largest shifted value plus 2m), plus :math:`2\delta`
        for scores off by :math:`\delta`. Squared hinge and Huber
        (:func:`~cvxrank.formulations.sorted_kernels.block_sums`): an upper entry's term
        :math:`c(S^2 - v(2S^1 - n v))` adds prefix sums of at most :math:`n_b` terms, its
        magnitudes at most :math:`4 c n_b V_b^2`, into one running value over all E
        entries (:math:`\gamma_{E + n_b + 8} \sum_b 4 c_b n_b^2 V_b^2`); an entry's
        gradient :math:`2c(n v - S^1)` has magnitudes at most :math:`4 c n_b V_b` and is
        added into its document's over at most G blocks (:math:`\gamma_{n_b + G + 6}` of
        :math:`\sum_b 4 c_b n_b^2 V_b`). A residual moved by :math:`\epsilon` moves the
        value by at most :math:`2\sqrt{W L}\epsilon + W \epsilon^2` and the gradient by
        :math:`2c\epsilon` per pair and entry (:math:`4 W \epsilon` in the 1-norm).
        Hinge: the value :math:`\sum_t c\, n_t (v_t - v_{mid})` has magnitudes at most
        :math:`c n_b^2 V_b` per block
        (:math:`\gamma_{E+4}`) and moves by :math:`W \epsilon`; its gradient entries are
        counts times c, added over at most G blocks.
        """
        quadratic, W, largest_margin, blocks_per_doc = self._static
        ptr = self.blocks.ptr
        n_entries = self.n_entries
        squared = not self.ramp.linear

        def bound() -> LossRounding:
            u = rounding.UNIT_ROUNDOFF
            if not quadratic.size:
                return LossRounding(0.0, 0.0, 0.0, 0.0, 0.0)
            first, last = values[order[ptr[:-1]]], values[order[ptr[1:] - 1]]
            spread = last - first
            sizes = np.diff(ptr).astype(np.float64)
            # |s| <= |value| + m/2, and the largest |value| is a block's first or last
            largest = max(float(np.abs(first).max()), float(np.abs(last).max()))
            base = 6.0 * u * (2.0 * largest + 2.0 * largest_margin)
            total = float(quadratic.sum())
            if not squared:
                return LossRounding(
                    value=rounding.gamma(n_entries + 4) * float(quadratic @ spread) / 4.0
                    + W * base, value_slope=2.0 * W, value_curvature=0.0,
                    grad=rounding.gamma(blocks_per_doc + 2) * total / 4.0, grad_slope=0.0)
            slope = 2.0 * math.sqrt(W * max(value, 0.0))
            chains = (sizes + blocks_per_doc + 6.0) * u
            return LossRounding(
                value=(rounding.gamma(n_entries + sizes.max() + 8)
                       * float(quadratic @ (spread * spread)) + slope * base
                       + 2.0 * W * base * base),
                value_slope=2.0 * slope, value_curvature=8.0 * W,
                grad=float((chains / (1.0 - chains)) @ (quadratic * spread)) + 4.0 * W * base,
                grad_slope=8.0 * W)

        return bound


def _build_blocks(query: np.ndarray, grade: np.ndarray, query_weight: np.ndarray,
                  weight_table: np.ndarray, margin_table: np.ndarray, *,
                  capped_at: float | None) -> _Blocks:
    """The blocks of :class:`SortedPairLoss`, in whole-array operations.

    For an upper level h the lower levels split into groups of equal (weight, margin) in
    ``weight_table[h]``, ``margin_table[h]``; each (h, group) gives one block per query that
    has documents at level h and at some level of the group: the query's level-h documents
    (upper) then its documents at the group's levels (lower), each level's documents in
    increasing row order. Blocks follow each other by query, then upper level, then the
    lowest level present in the block (for the Huber loss of width ``capped_at`` each block
    is followed by its block of weight -c and margin m - capped_at). The work is one pass
    over the documents plus O(queries x levels^2), without a Python loop over queries.
    """
    n_levels = weight_table.shape[0]
    n_queries = int(query.max()) + 1 if query.size else 0
    order = np.lexsort((grade, query))  # documents by query, then level, then row
    cells = np.bincount(query * n_levels + grade, minlength=n_queries * n_levels)
    count = cells.reshape(n_queries, n_levels)
    # first position in ``order`` of each (query, level) run of documents
    start = (np.cumsum(cells) - cells).reshape(n_queries, n_levels)
    keys: list[np.ndarray] = []          # (query, upper level, lowest lower level present)
    seg_start: list[np.ndarray] = []     # per block, its segments: upper, then each lower level
    seg_count: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    margins: list[np.ndarray] = []
    for h in range(1, n_levels):
        groups: dict[tuple[float, float], list[int]] = {}
        for lo in range(h):
            groups.setdefault((float(weight_table[h, lo]), float(margin_table[h, lo])),
                              []).append(lo)
        for (c, m), levels in groups.items():
            lower = count[:, levels]
            has = (count[:, h] > 0) & (lower.sum(axis=1) > 0)
            q = np.flatnonzero(has)
            lowest = np.asarray(levels)[np.argmax(lower[q] > 0, axis=1)]
            keys.append(np.stack([q, np.full(q.size, h), lowest], axis=1))
            seg_start.append(np.column_stack([start[q, h], start[q][:, levels]]))
            seg_count.append(np.column_stack([count[q, h], count[q][:, levels]]))
            weights.append(query_weight[q] * c)
            margins.append(np.full(q.size, m))
    present = cells > 0
    runs = sorted_kernels.Runs(doc=order.astype(np.int64),
                               start=start.ravel()[present].astype(np.int64),
                               length=cells[present].astype(np.int64))
    if not keys:
        none = np.zeros(0, np.int64)
        return _Blocks(doc=none, upper=np.zeros(0, bool), shift=np.zeros(0),
                       block_weight=np.zeros(0), block_margin=np.zeros(0),
                       ptr=np.zeros(1, np.int64),
                       runs=runs, segments=sorted_kernels.Segments(
                           ptr=np.zeros(1, np.int64), entry=none, run=none, length=none))
    key = np.concatenate(keys)
    rank = np.lexsort((key[:, 2], key[:, 1], key[:, 0]))
    weight = np.concatenate(weights)[rank]
    margin = np.concatenate(margins)[rank]
    # segments of every block, block after block (blocks have different segment counts)
    width = np.concatenate([np.full(k.shape[0], s.shape[1]) for k, s in zip(keys, seg_start,
                                                                            strict=True)])
    starts = np.concatenate([s.ravel() for s in seg_start])
    counts = np.concatenate([s.ravel() for s in seg_count])
    seg_block = np.repeat(np.arange(width.size), width)
    seg_index = _offsets(width)
    seg_order = np.lexsort((seg_index, np.argsort(rank)[seg_block]))
    starts, counts, is_upper = starts[seg_order], counts[seg_order], seg_index[seg_order] == 0
    width = width[rank]
    if capped_at is not None:  # each block twice: (c, m), then (-c, m - width)
        first_segment = np.repeat(np.cumsum(width) - width, 2)
        width = np.repeat(width, 2)
        twice = np.repeat(first_segment, width) + _offsets(width)
        starts, counts, is_upper = starts[twice], counts[twice], is_upper[twice]
        weight = np.column_stack([weight, -weight]).ravel()
        margin = np.column_stack([margin, margin - capped_at]).ravel()
    # entry e of segment j is document order[starts[j] + e - entry[j]]
    entry = np.cumsum(counts) - counts
    position = np.repeat(starts - entry, counts)
    position += np.arange(position.size)
    doc = order[position]
    del position
    upper = np.repeat(is_upper, counts)
    seg_block = np.repeat(np.arange(width.size), width)
    sizes = np.bincount(seg_block, weights=counts, minlength=width.size).astype(np.int64)
    shift = np.repeat(margin / 2, sizes)  # -m/2 for an upper entry, +m/2 for a lower one
    np.negative(shift, out=shift, where=upper)
    return _Blocks(
        doc=doc.astype(np.int64, copy=False),
        upper=upper,
        shift=shift,
        block_weight=np.asarray(weight, dtype=np.float64),
        block_margin=np.asarray(margin, dtype=np.float64),
        ptr=np.r_[0, np.cumsum(sizes)].astype(np.int64),
        runs=runs,
        segments=sorted_kernels.Segments(
            ptr=np.r_[0, np.cumsum(width)].astype(np.int64),
            entry=entry.astype(np.int64), run=starts.astype(np.int64),
            length=counts.astype(np.int64)),
    )


def _offsets(sizes: np.ndarray) -> np.ndarray:
    """``0, 1, ..., sizes[0] - 1, 0, 1, ..., sizes[1] - 1, ...``: each position's offset in
    its run, for runs of the given sizes."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
