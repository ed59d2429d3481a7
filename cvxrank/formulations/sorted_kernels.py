r"""Compiled passes of the O(n log n) pairwise loss (PRSVM+, Chapelle & Keerthi 2010, Sect. 4).

:class:`~cvxrank.formulations.pair_losses.SortedPairLoss` sorts the block entries with numpy
and hands the order to these two numba kernels, which walk each block once forward (the
upper entries before each position) and once backward (the lower entries after it):

* :func:`block_sums`: the loss, its gradient in the scores and the margin-weighted hinge
  sum, plus the number of active partners of every entry (the paper's :math:`\alpha_k`);
* :func:`block_hessp`: the Hessian-vector product of eq. (6), :math:`z_k = \alpha_k
  \delta_k - \gamma_k`, with the order and counts of the last :func:`block_sums`.

A numpy version of the same passes needs some thirty full-length temporaries (segmented
cumulative sums, masks, gathers); ``benchmarks/bench_gradient.py`` measured it at 7x the cost
of the two matrix-vector products of a gradient on OHSUMED, which is why these two loops are
compiled. Values are centred on each block's mean before the sums, so that
:math:`S_2 - 2 u S_1 + n u^2` does not lose the digits of a common offset of the scores.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def block_sums(values: np.ndarray, order: np.ndarray, doc: np.ndarray, upper: np.ndarray,
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
    doc, upper, weight, margin : (E,)
        Document, role, block weight and block margin of each entry.
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
        centre = 0.0
        for t in range(lo, hi):
            centre += values[t]
        centre /= hi - lo
        c, m = weight[lo], margin[lo]
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
                excess = up_count * v - up_sum
                grad[doc[e]] += 2.0 * c * excess if squared else c * up_count
        lo_count = 0.0
        lo_sum = 0.0
        lo_sq = 0.0
        for t in range(hi - 1, lo - 1, -1):  # backward: lower entries after each upper entry
            e = order[t]
            v = values[e] - centre
            if upper[e]:
                count[t] = lo_count
                excess = lo_sum - lo_count * v
                if squared:
                    value += c * (lo_sq - v * (2.0 * lo_sum - lo_count * v))
                    margin_hinge += c * m * excess
                    grad[doc[e]] -= 2.0 * c * excess
                else:
                    value += c * excess
                    grad[doc[e]] -= c * lo_count
            else:
                lo_count += 1.0
                lo_sum += v
                lo_sq += v * v
    return value, grad, margin_hinge, count


@njit(cache=True, nogil=True)
def block_hessp(delta: np.ndarray, order: np.ndarray, count: np.ndarray, doc: np.ndarray,
                upper: np.ndarray, weight: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Hessian of the squared-hinge block loss in s times ``delta`` (eq. (6))."""
    out = np.zeros(delta.size)
    for b in range(ptr.size - 1):
        lo, hi = ptr[b], ptr[b + 1]
        if hi == lo:
            continue
        c2 = 2.0 * weight[lo]
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


def warm_up() -> None:
    """Compile (or load from numba's cache) both kernels for the argument types
    :class:`~cvxrank.formulations.pair_losses.SortedPairLoss` uses.

    The first call of a kernel in a process costs its compilation (once per source change)
    or its loading from ``__pycache__`` (a few tenths of a second); experiments call this
    before they time anything, so that the cost is not charged to the first timed run.
    """
    values = np.array([0.0, 1.0])
    order = np.argsort(values)
    doc = np.array([0, 1], dtype=np.int64)
    upper = np.array([True, False])
    ones = np.ones(2)
    ptr = np.array([0, 2], dtype=np.int64)
    _, _, _, count = block_sums(values, order, doc, upper, ones, ones, ptr, 2, True)
    block_sums(values, order, doc, upper, ones, ones, ptr, 2, False)
    block_hessp(ones, order, count, doc, upper, ones, ptr)
