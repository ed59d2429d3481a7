r"""The two passes of the O(n log n) pairwise loss (PRSVM+, Chapelle & Keerthi 2010, Sect. 4).

:class:`~cvxrank.formulations.pair_losses.SortedPairLoss` sorts the block entries (by
merging the sorted grades of each query, :func:`merged_order`, with the compiled passes;
with numpy's stable sorts with the numpy ones: one order, ties by :func:`tie_rank`) and
hands the order to two passes, which walk each block once forward (the upper entries before
each position) and once backward (the lower entries after it):

* :func:`block_sums`: the loss, its gradient in the scores and the margin-weighted hinge
  sum, plus the number of active partners of every entry (the paper's :math:`\alpha_k`);
* :func:`block_hessp`: the Hessian-vector product of eq. (6), :math:`z_k = \alpha_k
  \delta_k - \gamma_k`, with the order and counts of the last :func:`block_sums`.

Values are centred on each block's mean before the sums, so that :math:`S_2 - 2 u S_1 + n
u^2` does not lose the digits of a common offset of the scores.

The hinge needs no sums. An active pair's term :math:`c(v_l - v_u)` is the gradient entries
:math:`c` (of the lower entry) and :math:`-c` (of the upper) times the entries' values, so
the block's loss is :math:`\sum_t g_t v_t` with :math:`g_t = c\,n^{\uparrow}_t` for a lower
entry (upper entries before it) and :math:`-c\,n^{\downarrow}_t` for an upper one (lower
entries after it): one walk of counts per block (Joachims 2006's 1-slack oracle), the values
centred on the block's middle sorted value (the :math:`g_t` of a block sum to 0, so the
centre changes only rounding).

Two implementations, bit for bit the same
------------------------------------------
* **compiled** (:func:`block_sums`, :func:`block_hessp`): the loops below, compiled by numba.
  ``make install`` compiles them ahead of time (:mod:`cvxrank.compiled.aot`) into an extension
  module beside this file, which a process loads in well under a millisecond without importing
  numba: they then run from a process's first call, whatever the problem's size. Without
  that module (no C compiler, ``CVXRANK_AOT=0``, or this file edited since the install) they
  are compiled just in time (``nogil``) and cached on disk (``__pycache__``); a process then
  pays a fixed cost before the first call: importing numba and loading the cached machine
  code, during which numba builds its typing and lowering registries. Measured on the
  reference machine at 0.55-0.6 s of CPU and about 110 MB (``benchmarks/bench_startup.py``
  times it); compiling, after a change of this file, costs some seconds once.
* **numpy** (:func:`numpy_block_sums`, :class:`NumpyHessp`): the same arithmetic on
  whole arrays. Each running sum of a block is a ``cumsum`` along the rows of a table with
  one row per block (:class:`BlockLayout`: a leading 0, the block's values, zeros after), so
  it adds the same numbers in the same order as the loop, starting from 0; per-document sums
  are ``bincount``, which adds in array order (block after block, as the loop does); the
  loss is the last element of a ``cumsum`` in the loop's order. The results are therefore
  identical to the compiled passes' (``tests/formulations/test_pair_losses.py`` checks
  equality, ties included), and which one runs never changes a number.

On OHSUMED Fold1 (E = 16,736 entries in 122 blocks; a 122 x 321 table) a numpy call costs
1.4 ms (sums) and 0.53 ms (Hessian product), against 0.11 ms and 0.10 ms compiled and 0.16
ms for the two matrix-vector products of a gradient (best of 200 calls; the five folds
within 10 %). A whole PRSVM+ fit there (7 sums, 23 products) spends about 22 ms in the numpy
passes, against 3 ms in the compiled ones plus their fixed cost.

Which one runs (:func:`use_compiled`)
-------------------------------------
The compiled passes whenever the ahead-of-time module is there. Without it, the rule weighs
numba's fixed cost. First, the problem's size: a problem with more than
:data:`NUMPY_MAX_ENTRIES` block entries (or whose numpy table would be mostly padding,
:data:`MAX_PADDING`: one long query among many short ones) loads the compiled passes before
its first pass, as one fit of it costs more in numpy than loading them. Otherwise the
compiled passes once they are loaded in the process (:func:`warm_up` was called, as the
benchmarks and the experiment workers do, or an earlier problem loaded them); before that,
the numpy passes, until they have spent :data:`NUMPY_BUDGET` seconds in the process (about
the compiled passes' fixed cost): then :func:`warm_up` loads the compiled passes, which run
from then on. This is the rule of ski rental for a process of many small problems (a grid,
or the hundreds of passes of a cutting plane): a process whose passes cost less in numpy than
the fixed cost (one fit on a LETOR fold: 0.1 s) never imports numba; a longer one pays at
most the budget on top of what the compiled passes from the start would have cost, so at
most about twice the better choice, whatever its length.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from cvxrank.compiled.kernels import KernelFile

#: Seconds the numpy passes may spend in a process before the just-in-time passes are loaded
#: (about the fixed cost of importing numba and loading the cached passes, 0.55-1.0 s here,
#: taken on the low side so that a long run does not pay much for starting in numpy).
NUMPY_BUDGET = 0.5

#: Largest ratio of table cells (blocks x (longest block + 1)) to entries for which the
#: numpy passes are used (on OHSUMED it is 2.3; 64 cells more are always allowed, for tiny
#: problems).
MAX_PADDING = 8.0

#: Most entries for which the numpy passes are used without the ahead-of-time module: a larger
#: problem loads the compiled passes before its first pass, decided from its size alone (and
#: sorts by merging, :func:`merged_order`, as the compiled passes do). Loading them just in
#: time costs 0.55-0.6 s
#: of CPU and about 110 MB of resident memory (numba and LLVM). A squared-hinge fit at C = 1
#: on OHSUMED Fold1 (16,736 entries) spends about 0.1 s in the numpy passes; on 10^5
#: synthetic documents x 46 features with 5 grades (280,000 entries; C = 5e-5 to 100,
#: 5-6 Newton steps) 0.42-0.59 s, as much as loading the compiled passes, for 110 MB less
#: memory; at 10^6 documents (2.8 million entries) a numpy evaluation alone costs about
#: 0.5 s. Between, the budget rule below switches a long fit to the compiled passes.
NUMPY_MAX_ENTRIES = 2**19


# --------------------------------------------------------------------------- compiled passes
# Plain Python functions, compiled ahead of time at install (``build_ahead``) or, without that
# module, by numba (``njit(cache=True, nogil=True)``) the first time ``block_sums`` or
# ``block_hessp`` is looked up in this module, so that importing this module (and every
# formulation) does not import numba.


def _block_sums(values: np.ndarray, order: np.ndarray, doc: np.ndarray, upper: np.ndarray,
                weight: np.ndarray, margin: np.ndarray, ptr: np.ndarray, n_documents: int,
                squared: bool) -> tuple[float, np.ndarray, float, np.ndarray]:
    """Loss, gradient in s, margin-weighted hinge sum and active counts (see module).

    Parameters
    ----------
    values : float64 (E,)
        Shifted scores of the entries (``s[doc] - m/2`` upper, ``+ m/2`` lower).
    order : int64 (E,)
        Entry at each sorted position; each block's positions ``ptr[b]:ptr[b+1]`` hold its
        own entries in increasing ``values``.
    doc, upper : (E,)
        Document and role of each entry.
    weight, margin : float64 (n_blocks,)
        Weight c and margin m of each block.
    ptr : int64 (n_blocks + 1,)
        Block boundaries.
    n_documents : int
    squared : bool
        Squared hinge terms (else hinge).

    Returns
    -------
    value, grad, margin_hinge, count
        ``count[t]`` is the number of active partners of the entry at sorted position t.
    """
    grad = np.zeros(n_documents)
    count = np.zeros(order.size)
    value = 0.0
    margin_hinge = 0.0
    for b in range(ptr.size - 1):
        lo, hi = ptr[b], ptr[b + 1]
        if hi == lo:
            continue
        c, m = weight[b], margin[b]
        if not squared:  # hinge: counts only (module docstring), one forward walk
            centre = values[order[(lo + hi) // 2]]
            n_lower = 0.0
            for t in range(lo, hi):
                if not upper[order[t]]:
                    n_lower += 1.0
            up_count = 0.0
            lo_before = 0.0
            for t in range(lo, hi):
                e = order[t]
                if upper[e]:
                    count[t] = n_lower - lo_before
                    step = -(c * count[t])
                    up_count += 1.0
                else:
                    count[t] = up_count
                    step = c * up_count
                    lo_before += 1.0
                value += step * (values[e] - centre)
                grad[doc[e]] += step
            continue
        centre = 0.0
        for t in range(lo, hi):
            centre += values[t]
        centre /= hi - lo
        up_count = 0.0
        up_sum = 0.0
        for t in range(lo, hi):  # forward: upper entries before each lower entry
            e = order[t]
            v = values[e] - centre
            if upper[e]:
                up_count += 1.0
                up_sum += v
            else:
                count[t] = up_count
                grad[doc[e]] += 2.0 * c * (up_count * v - up_sum)
        lo_count = 0.0
        lo_sum = 0.0
        lo_sq = 0.0
        for t in range(hi - 1, lo - 1, -1):  # backward: lower entries after each upper entry
            e = order[t]
            v = values[e] - centre
            if upper[e]:
                count[t] = lo_count
                excess = lo_sum - lo_count * v
                value += c * (lo_sq - v * (2.0 * lo_sum - lo_count * v))
                margin_hinge += c * m * excess
                grad[doc[e]] -= 2.0 * c * excess
            else:
                lo_count += 1.0
                lo_sum += v
                lo_sq += v * v
    return value, grad, margin_hinge, count


def _block_hessp(delta: np.ndarray, order: np.ndarray, count: np.ndarray, doc: np.ndarray,
                 upper: np.ndarray, weight: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Hessian of the squared-hinge block loss in s times ``delta`` (eq. (6)); ``weight`` per
    block, the other arrays as in :func:`_block_sums`."""
    out = np.zeros(delta.size)
    for b in range(ptr.size - 1):
        lo, hi = ptr[b], ptr[b + 1]
        if hi == lo:
            continue
        c2 = 2.0 * weight[b]
        up_sum = 0.0
        for t in range(lo, hi):
            e = order[t]
            d = delta[doc[e]]
            if upper[e]:
                up_sum += d
            else:
                out[doc[e]] += c2 * (count[t] * d - up_sum)
        lo_sum = 0.0
        for t in range(hi - 1, lo - 1, -1):
            e = order[t]
            d = delta[doc[e]]
            if upper[e]:
                out[doc[e]] += c2 * (count[t] * d - lo_sum)
            else:
                lo_sum += d
    return out


#: Runs of at most this many documents are sorted by insertion from the last evaluation's
#: order; a longer run too while its moves stay within :data:`ADAPTIVE_MOVES` per document,
#: else afresh by numpy's merge sort.
SHORT_RUN = 32

#: Moves per document of a long run's insertion sort before it is sorted afresh: the last
#: order is kept where the scores changed little (successive iterates of a cutting plane or
#: a Newton method), and a run whose order changed much costs O(c log c) all the same.
ADAPTIVE_MOVES = 8


class Runs(NamedTuple):
    """Documents by query, grade level and row (``doc``), in runs of one query and level:
    ``doc[start[r]:start[r] + length[r]]`` (see ``pair_losses._Blocks``)."""

    doc: np.ndarray
    start: np.ndarray
    length: np.ndarray


class Segments(NamedTuple):
    """The segments of the blocks: segment j of block b (``ptr[b] <= j < ptr[b+1]``) holds
    the entries from ``entry[j]`` on, the documents of the ``length[j]`` positions of
    :class:`Runs` ``doc`` from ``run[j]`` (see ``pair_losses._Blocks``)."""

    ptr: np.ndarray
    entry: np.ndarray
    run: np.ndarray
    length: np.ndarray


def _merged_order(values: np.ndarray, scores: np.ndarray, run_doc: np.ndarray,
                  run_start: np.ndarray, run_length: np.ndarray, seg_ptr: np.ndarray,
                  seg_entry: np.ndarray, seg_run: np.ndarray, seg_length: np.ndarray,
                  block_weight: np.ndarray, last_rank: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Permutation sorting ``values`` inside each block, by merging, and the runs' sorted
    positions (:func:`merged_order`)."""
    rank = last_rank.copy()  # rank[p + i]: the run position in place i of the sorted run
    for r in range(run_start.size):
        p, c = run_start[r], run_length[r]
        limit = c * c if c <= SHORT_RUN else ADAPTIVE_MOVES * c
        moves = 0
        for t in range(1, c):  # insertion by (score, position): one order from any start
            current = rank[p + t]
            key = scores[run_doc[p + current]]
            i = t
            while i > 0:
                before = rank[p + i - 1]
                other = scores[run_doc[p + before]]
                if other < key or (other == key and before < current):
                    break
                rank[p + i] = before
                i -= 1
            rank[p + i] = current
            moves += t - i
            if moves > limit:
                break
        if moves > limit:  # far from the last order: afresh (stable, ties by position)
            keys = np.empty(c)
            for t in range(c):
                keys[t] = scores[run_doc[p + t]]
            inside = np.argsort(keys, kind="mergesort")
            for t in range(c):
                rank[p + t] = inside[t]
    order = np.empty(values.size, dtype=np.int64)
    widest = 0
    for b in range(seg_ptr.size - 1):
        widest = max(widest, seg_ptr[b + 1] - seg_ptr[b])
    head = np.zeros(widest, dtype=np.int64)  # next position of each segment of the block
    head_entry = np.zeros(widest, dtype=np.int64)  # its entry and value (inf: exhausted)
    head_value = np.zeros(widest)
    out = 0
    for b in range(seg_ptr.size - 1):
        first, k = seg_ptr[b], seg_ptr[b + 1] - seg_ptr[b]
        total = 0
        for j in range(k):
            s = first + j
            head[j] = 0
            total += seg_length[s]
            head_value[j] = np.inf
            if seg_length[s] > 0:
                head_entry[j] = seg_entry[s] + rank[seg_run[s]]
                head_value[j] = values[head_entry[j]]
        end = out + total
        lower_first = block_weight[b] < 0  # ties: the lower segments, then the upper one
        while out < end:
            best = -1
            for i in range(k):
                j = (i + 1) % k if lower_first else i
                if best < 0 or head_value[j] < head_value[best]:
                    best = j
            # the segment's entries of this value, in entry order (distinct scores that
            # the shift rounds to one value are in score order in the run)
            s, value = first + best, head_value[best]
            tie = out
            while True:
                entry = head_entry[best]
                i = out
                while i > tie and order[i - 1] > entry:
                    order[i] = order[i - 1]
                    i -= 1
                order[i] = entry
                out += 1
                head[best] += 1
                if head[best] == seg_length[s]:
                    head_value[best] = np.inf
                    break
                head_entry[best] = seg_entry[s] + rank[seg_run[s] + head[best]]
                head_value[best] = values[head_entry[best]]
                if head_value[best] != value:
                    break
    return order, rank


def tie_rank(upper: np.ndarray, negative: np.ndarray) -> np.ndarray:
    r"""The order of tied entries of a block (equal values), after which entry order decides:
    False (first) for every entry of a block of positive weight (the upper entries, which
    come first in a block, before the lower ones), and in a block of negative weight (the
    second block of a capped ramp, weight -c) True for its upper entries (after the lower
    ones).

    A tie of an upper and a lower entry is a pair at a kink of the ramp, where the passes
    count the pair as below its margin when the lower entry comes later: its generalized
    Hessian entry is then the ramp's curvature there from the left (2c for a squared ramp
    of weight c), else 0. With this order every block takes the larger of the two, so at
    the cap of a Huber loss (the block of weight -c) the quadratic side: at w = 0 with a
    margin equal to the width, where every pair of that block is tied, its Hessian is that
    of the squared hinge, not the regularizer's alone.

    Parameters
    ----------
    upper : ndarray of bool, shape (E,)
    negative : ndarray of bool, shape (E,)
        Whether each entry's block has a negative weight.
    """
    return upper & negative


def merged_order(values: np.ndarray, scores: np.ndarray, runs: Runs, segments: Segments,
                 block_weight: np.ndarray, last_rank: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Permutation sorting ``values`` inside each block, blocks in place, by merging.

    Every entry of a segment has the same shift (``values = scores[doc] + shift``), so a
    segment in the order of its documents' scores is sorted; the documents of each run (one
    query, one level) are sorted once, by score and then position, and each block's order
    is the merge of its segments (:func:`tie_rank`'s order at equal values: the upper
    segment first, or last in a block of negative weight, and within a segment in entry
    order; the order of numpy's stable sorts by block, value and :func:`tie_rank`, bit for
    bit, also where the shift rounds distinct scores to one value). The blocks of a query
    at levels 1, ..., R share its runs, so this costs O(n log(run) + E x segments per block)
    instead of sorting all E >= n entries.

    The runs are sorted by insertion from ``last_rank``, the sorted positions an earlier
    call returned (the runs' own order without it): O(n + moves) where the scores changed
    little, as between the iterates of a cutting plane, and O(n log(run)) at worst (a long
    run that needs more than :data:`ADAPTIVE_MOVES` moves per document is sorted afresh).
    The order is the same whatever the start: (score, position) orders each run totally.

    Returns
    -------
    order : ndarray of int64, shape (E,)
    rank : ndarray of int64, shape (n_run_documents,)
        The runs' sorted positions: ``runs.doc[runs.start[r] + rank[runs.start[r] + i]]``
        is the i-th document of run r by score (the next call's ``last_rank``).
    """
    if last_rank is None:
        last_rank = np.arange(runs.doc.size) - np.repeat(runs.start, runs.length)
    return KERNELS.dispatchers()["merged_order"](values, scores, runs.doc, runs.start,
                                                 runs.length, segments.ptr, segments.entry,
                                                 segments.run, segments.length, block_weight,
                                                 last_rank)


#: The compiled kernels, by the module attribute under which they are looked up.
_KERNELS = {"block_sums": _block_sums, "block_hessp": _block_hessp,
            "merged_order": _merged_order}

#: Their argument types, for the ahead-of-time module (every array C-contiguous).
_SIGNATURES = {
    "block_sums": "Tuple((f8, f8[::1], f8, f8[::1]))(f8[::1], i8[::1], i8[::1], b1[::1], "
                  "f8[::1], f8[::1], i8[::1], i8, b1)",
    "block_hessp": "f8[::1](f8[::1], i8[::1], f8[::1], i8[::1], b1[::1], f8[::1], i8[::1])",
    "merged_order": "Tuple((i8[::1], i8[::1]))(f8[::1], f8[::1], i8[::1], i8[::1], i8[::1], "
                    "i8[::1], i8[::1], i8[::1], i8[::1], f8[::1], i8[::1])",
}


def _warm(kernels: dict[str, Any]) -> None:
    """Call each pass once, for the argument types :class:`~cvxrank.formulations.pair_losses.
    SortedPairLoss` passes."""
    block_sums, block_hessp = kernels["block_sums"], kernels["block_hessp"]
    values = np.array([0.0, 1.0])
    ptr = np.array([0, 2], dtype=np.int64)
    doc = np.array([0, 1], dtype=np.int64)
    runs, segments = Runs(doc, doc, np.array([1, 1])), Segments(np.array([0, 2]), doc, doc,
                                                                np.array([1, 1]))
    order, _ = kernels["merged_order"](values, values, runs.doc, runs.start, runs.length,
                                       segments.ptr, segments.entry, segments.run,
                                       segments.length, np.ones(1), np.zeros(2, dtype=np.int64))
    upper = np.array([True, False])
    ones = np.ones(2)
    _, _, _, count = block_sums(values, order, doc, upper, ones, ones, ptr, 2, True)
    block_sums(values, order, doc, upper, ones, ones, ptr, 2, False)
    block_hessp(ones, order, count, doc, upper, ones, ptr)


#: The kernel file (:class:`~cvxrank.compiled.kernels.KernelFile`): ahead of time, numba or
#: the numpy passes, with the process's account of the numpy passes' time.
KERNELS = KernelFile(__file__, {name: (kernel, _SIGNATURES[name])
                                for name, kernel in _KERNELS.items()}, _warm,
                     numpy_budget=NUMPY_BUDGET)


def __getattr__(name: str) -> Any:
    """``block_sums`` and ``block_hessp``: the compiled passes."""
    if name in ("block_sums", "block_hessp"):
        return KERNELS.dispatchers()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def warm_up() -> None:
    """Load the compiled passes (the ahead-of-time module's, or numba's, compiled or loaded
    from its cache, for the argument types
    :class:`~cvxrank.formulations.pair_losses.SortedPairLoss` uses) and call each once; from
    then on this process uses them (:func:`use_compiled`).

    Without the ahead-of-time module, the first call of a compiled pass in a process costs
    its compilation (once per source change) or its loading from ``__pycache__`` (with
    importing numba, 0.55-1.0 s); experiments call this before they time anything, so that
    the cost is not charged to the first timed run.
    """
    KERNELS.warm_up()


def use_compiled(n_entries: int, cells: int) -> bool:
    """Whether the next pass should be the compiled one (the rule of the module docstring).

    Parameters
    ----------
    n_entries, cells : int
        Entries of the blocks and cells of their numpy table (:class:`BlockLayout`).

    Returns
    -------
    bool
        True when the ahead-of-time passes are built, or once the compiled passes are
        loaded; when the numpy passes do not apply
        (more than :data:`NUMPY_MAX_ENTRIES` entries, or a table more than
        :data:`MAX_PADDING` times the entries); or once the numpy passes have spent
        :data:`NUMPY_BUDGET` seconds in this process. In the last two cases the compiled
        passes are loaded here (:meth:`~cvxrank.compiled.kernels.KernelFile.warm_up`).
    """
    return KERNELS.use_compiled(needed=n_entries > NUMPY_MAX_ENTRIES
                                or cells > MAX_PADDING * n_entries + 64)



# --------------------------------------------------------------------------- numpy passes


class BlockLayout:
    """Where each position of the blocks goes in the table of the numpy passes.

    The table has one row per block and ``longest block + 1`` columns; position t of block
    b (``ptr[b] <= t < ptr[b+1]``) goes to column ``1 + t - ptr[b]`` (:attr:`forward`) or,
    read backward, ``ptr[b+1] - t`` (:attr:`backward`); column 0 and the columns after a
    block's end hold 0. A ``cumsum`` along the rows then gives, at each position, the sum of
    the block's values up to it (or from the end down to it), added in the order of the
    compiled loops, starting from 0.

    Parameters
    ----------
    ptr : int64 (n_blocks + 1,)
        Block boundaries.
    """

    def __init__(self, ptr: np.ndarray) -> None:
        ptr = np.asarray(ptr, dtype=np.int64)
        sizes = np.diff(ptr)
        n_blocks = sizes.size
        self.n_entries = int(ptr[-1] - ptr[0]) if ptr.size else 0
        width = int(sizes.max()) + 1 if n_blocks else 1
        block = np.repeat(np.arange(n_blocks, dtype=np.int64), sizes)
        offset = np.arange(self.n_entries, dtype=np.int64) - np.repeat(ptr[:-1] - ptr[0], sizes)
        row = block * width
        #: Block of each position.
        self.block = block
        #: Flat table index of each position, forward and backward.
        self.forward = row + 1 + offset
        self.backward = row + sizes[block] - offset
        #: Table shape and number of cells.
        self.shape = (n_blocks, width)
        self.cells = n_blocks * width
        #: Block sizes as float64 (the divisor of the block means; 1 for an empty block).
        self.divisor = np.maximum(sizes, 1).astype(np.float64)
        #: Positions in the order of the compiled backward loops: block after block, each
        #: from its last position to its first.
        self.reverse = np.lexsort((-offset, block))
        #: First and one-past-last position of each position's block, and the number of
        #: positions after each one in its block.
        self.start = np.repeat(ptr[:-1] - ptr[0], sizes)
        self.stop = np.repeat(ptr[1:] - ptr[0], sizes)
        self.after = self.stop - np.arange(self.n_entries, dtype=np.int64) - 1

    @functools.cached_property
    def middle(self) -> np.ndarray:
        """The middle position of each position's block (the hinge pass's centre; made on
        first use, the squared hinge never needs it)."""
        return (self.start + self.stop) // 2

    def forward_sums(self, a: np.ndarray) -> np.ndarray:
        """At each position, ``a`` summed over its block's positions up to it (inclusive)."""
        table = np.zeros(self.cells)
        table[self.forward] = a
        np.cumsum(table.reshape(self.shape), axis=1, out=table.reshape(self.shape))
        return table[self.forward]

    def backward_sums(self, a: np.ndarray) -> np.ndarray:
        """At each position, ``a`` summed over its block's positions from the last down to it."""
        table = np.zeros(self.cells)
        table[self.backward] = a
        np.cumsum(table.reshape(self.shape), axis=1, out=table.reshape(self.shape))
        return table[self.backward]

    def block_means(self, values: np.ndarray) -> np.ndarray:
        """Mean of ``values`` (in stored entry order) over each block, summed in order."""
        table = np.zeros(self.cells)
        table[self.forward] = values
        totals = np.cumsum(table.reshape(self.shape), axis=1)[:, -1]
        return totals / self.divisor

    def counts(self, up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Upper positions before each position and lower positions after it, in its block
        (float64; ``up`` is the role of each position)."""
        ups = np.concatenate(([0], np.cumsum(up, dtype=np.int64)))  # uppers before t
        ups_before = ups[:-1] - ups[self.start]
        lows_after = self.after - (ups[self.stop] - ups[1:])
        return ups_before.astype(np.float64), lows_after.astype(np.float64)


def numpy_block_sums(values: np.ndarray, order: np.ndarray, doc: np.ndarray,
                     upper: np.ndarray, weight: np.ndarray, margin: np.ndarray,
                     layout: BlockLayout, n_documents: int,
                     squared: bool) -> tuple[float, np.ndarray, float, np.ndarray]:
    """:func:`block_sums` with numpy, the same numbers (``layout``: :class:`BlockLayout` of
    the blocks' ``ptr``; the other arguments and the results as :func:`block_sums`)."""
    up = upper[order]
    d = doc[order]
    c = weight  # constant over a block: weight[t] is the weight of position t's block
    up_count, lo_count = layout.counts(up)
    count = np.where(up, lo_count, up_count)
    if not squared:  # hinge: counts only (module docstring)
        sorted_values = values[order]
        step = np.where(up, -(c * lo_count), c * up_count)
        value = _sum_in_order(step * (sorted_values - sorted_values[layout.middle]))
        grad = np.bincount(d, weights=step, minlength=n_documents).astype(np.float64,
                                                                          copy=False)
        return value, grad, 0.0, count
    # each temporary of E entries is dropped once used (the peak memory of a pass)
    centre = layout.block_means(values)
    v = values[order] - centre[layout.block]
    del centre
    up_excess = up_count * v - layout.forward_sums(np.where(up, v, 0.0))  # lower entries
    del up_count
    lo_sum = layout.backward_sums(np.where(up, 0.0, v))
    lo_excess = lo_sum - lo_count * v  # of an upper entry (backward loop)
    two_c = 2.0 * c
    step = np.where(up, -(two_c * lo_excess), two_c * up_excess)
    del up_excess, two_c
    grad = np.bincount(d, weights=step, minlength=n_documents).astype(np.float64, copy=False)
    del step, d
    hinge_terms = np.where(up, c * margin * lo_excess, 0.0)
    del lo_excess
    margin_hinge = _sum_in_order(hinge_terms[layout.reverse])
    del hinge_terms
    lo_sq = layout.backward_sums(np.where(up, 0.0, v * v))
    terms = np.where(up, c * (lo_sq - v * (2.0 * lo_sum - lo_count * v)), 0.0)
    value = _sum_in_order(terms[layout.reverse])
    return value, grad, margin_hinge, count


class NumpyHessp:
    """:func:`block_hessp` with numpy, the same numbers, for the order and counts of one
    evaluation: ``NumpyHessp(...)(delta)``.

    Both running sums of the compiled loop (upper entries before a lower one, lower entries
    after an upper one) come from one table of :class:`BlockLayout`'s rows twice over: the
    forward rows hold the upper entries, the backward rows the lower ones, and one
    ``cumsum`` along the rows gives each entry the sum it needs from the other half. A cell
    no entry writes holds 0, as the loop adds nothing there. The positions are worked out at
    the first product: a line search's rejected points and a run's last evaluation never
    need one.

    Parameters
    ----------
    doc, upper : ndarray of shape (E,)
        Document and role of each entry.
    order : ndarray of shape (E,)
        The entry at each sorted position.
    count : ndarray of shape (E,)
        Active partners at each sorted position (from :func:`numpy_block_sums`).
    weight : ndarray of shape (E,)
        The block weight c of each position.
    layout : BlockLayout
    """

    def __init__(self, doc: np.ndarray, upper: np.ndarray, order: np.ndarray,
                 count: np.ndarray, weight: np.ndarray, layout: BlockLayout) -> None:
        self._entries = (doc, upper, order)
        self._count = count
        self._weight = weight
        self._layout = layout
        self._shape = (2 * layout.shape[0], layout.shape[1])

    @functools.cached_property
    def _positions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Each sorted position's document, own cell and partners' cell, and 2c."""
        doc, upper, order = self._entries
        layout = self._layout
        order_upper = upper[order]
        backward = layout.backward + layout.cells
        return (doc[order], np.where(order_upper, layout.forward, backward),
                np.where(order_upper, backward, layout.forward), 2.0 * self._weight)

    def __call__(self, delta: np.ndarray) -> np.ndarray:
        """The Hessian of the block loss in s times ``delta`` (eq. (6))."""
        doc, own, partners, two_c = self._positions
        x = delta[doc]
        table = np.zeros(self._shape)
        table.ravel()[own] = x
        np.cumsum(table, axis=1, out=table)
        step = two_c * (self._count * x - table.ravel()[partners])
        return np.bincount(doc, weights=step, minlength=delta.size).astype(
            np.float64, copy=False)


def _sum_in_order(terms: np.ndarray) -> float:
    """``terms`` added one after the other from 0 (a ``cumsum``, not numpy's pairwise sum)."""
    return 0.0 + float(np.cumsum(terms)[-1]) if terms.size else 0.0
