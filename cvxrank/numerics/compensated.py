r"""Double-word (double-double) arithmetic on numpy arrays, for certificates that float64
cannot give: a value is a pair ``(hi, lo)`` of float64 arrays whose exact sum it stands
for, about 106 bits.

The building blocks are the error-free transformations (Knuth's TwoSum, Dekker's
FastTwoSum and TwoProduct with Veltkamp's split: ``a + b`` and ``a * b`` as two floats whose
sum is exact) and the double-word algorithms of Joldes, Muller & Popescu, "Tight and
rigorous error bounds for basic building blocks of double-word arithmetic", ACM TOMS 44,
2017: AccurateDWPlusDW (Alg. 6, relative error at most :math:`3u^2/(1 - 4u)`), and the
products DWTimesFP3 (Alg. 9, :math:`2u^2`) and DWTimesDW3 (Alg. 12, :math:`5u^2`) with
their fused multiply-adds written as a product and a sum (one more rounding of a term of
order :math:`u |xy|`: at most :math:`u^2 |xy|` more each, :data:`TIMES_FLOAT_ERROR` and
:data:`TIMES_ERROR`), with :math:`u = 2^{-53}`. They use only IEEE-754 float64 additions
and multiplications, so their results are the same on every machine. Overflow is excluded
by the magnitude check every formulation runs (:func:`cvxrank.data.scales.check_magnitude`);
underflow is ignored.

:func:`tree_sum` adds an array of double-words pairwise: its error is at most
:math:`3u^2 \lceil \log_2 n \rceil (1 - 4u)^{-1}` times the sum of the magnitudes of its
partial sums, at most that times :math:`\sum |x_i|` per level (:data:`SUM_ERROR`).
"""

from __future__ import annotations

import numpy as np

#: Veltkamp's splitting constant for float64, :math:`2^{27} + 1`.
_SPLIT = 134217729.0

_U = 2.0 ** -53

#: Relative error bound of one AccurateDWPlusDW (JMP 2017, Thm. 3.2).
ADD_ERROR = 3.0 * _U * _U / (1.0 - 4.0 * _U)

#: Relative error bound of one :func:`times_float` (JMP 2017, Thm. 5.3, plus the product's
#: rounding without a fused multiply-add).
TIMES_FLOAT_ERROR = 4.0 * _U * _U

#: Relative error bound of one :func:`times` (JMP 2017, Thm. 5.5, plus the two products'
#: rounding without fused multiply-adds).
TIMES_ERROR = 8.0 * _U * _U


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``s, e`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly (Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fast_two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TwoSum for ``|a| >= |b|`` (Dekker's FastTwoSum)."""
    s = a + b
    return s, b - (s - a)


def two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``p, e`` with ``p = fl(a b)`` and ``p + e = a b`` exactly (Dekker's TwoProduct,
    Veltkamp's split)."""
    p = a * b
    ca = _SPLIT * a
    a_hi = ca - (ca - a)
    a_lo = a - a_hi
    cb = _SPLIT * b
    b_hi = cb - (cb - b)
    b_lo = b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def add(x: tuple[np.ndarray, np.ndarray], y: tuple[np.ndarray, np.ndarray]
        ) -> tuple[np.ndarray, np.ndarray]:
    """``x + y`` of two double-words (AccurateDWPlusDW)."""
    sh, sl = two_sum(x[0], y[0])
    th, tl = two_sum(x[1], y[1])
    vh, vl = fast_two_sum(sh, sl + th)
    return fast_two_sum(vh, tl + vl)


def times_float(x: tuple[np.ndarray, np.ndarray], y: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """``x y`` of a double-word and a float (DWTimesFP3)."""
    ch, cl1 = two_product(x[0], y)
    cl3 = x[1] * y + cl1
    return fast_two_sum(ch, cl3)


def times(x: tuple[np.ndarray, np.ndarray], y: tuple[np.ndarray, np.ndarray]
          ) -> tuple[np.ndarray, np.ndarray]:
    """``x y`` of two double-words (DWTimesDW3)."""
    ch, cl1 = two_product(x[0], y[0])
    tl0 = x[1] * y[1]
    tl1 = x[0] * y[1] + tl0
    cl2 = x[1] * y[0] + tl1
    return fast_two_sum(ch, cl1 + cl2)


def tree_sum(x: tuple[np.ndarray, np.ndarray], axis: int = 0
             ) -> tuple[np.ndarray, np.ndarray]:
    """The sum of double-words along ``axis``, added pairwise (module docstring's bound)."""
    hi, lo = np.moveaxis(x[0], axis, 0), np.moveaxis(x[1], axis, 0)
    while hi.shape[0] > 1:
        if hi.shape[0] % 2:
            pad = np.zeros((1,) + hi.shape[1:])
            hi, lo = np.concatenate([hi, pad]), np.concatenate([lo, pad])
        hi, lo = add((hi[0::2], lo[0::2]), (hi[1::2], lo[1::2]))
    if hi.shape[0] == 0:
        return np.zeros(hi.shape[1:]), np.zeros(hi.shape[1:])
    return hi[0], lo[0]


def segment_sums(x: tuple[np.ndarray, np.ndarray], segment: np.ndarray, n_segments: int
                 ) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """The sums of the double-words ``x`` by ``segment`` (an index in ``[0, n_segments)``
    per term), each added pairwise as :func:`tree_sum` does, in O(n) in all; and the
    number of terms of each segment (for :func:`sum_error`)."""
    order = np.argsort(segment, kind="stable")
    hi, lo, seg = x[0][order], x[1][order], np.asarray(segment)[order]
    counts = np.bincount(seg, minlength=n_segments)
    start = np.cumsum(counts) - counts
    position = np.arange(seg.size) - start[seg]
    while seg.size and int(position.max()) > 0:
        partner = np.flatnonzero(position % 2 == 0)
        has = partner + 1 < seg.size
        has[has] = seg[partner[has] + 1] == seg[partner[has]]
        first = partner[has]
        sh, sl = add((hi[first], lo[first]), (hi[first + 1], lo[first + 1]))
        hi, lo = hi[partner].copy(), lo[partner].copy()
        hi[has], lo[has] = sh, sl
        seg, position = seg[partner], position[partner] // 2
    out_hi, out_lo = np.zeros(n_segments), np.zeros(n_segments)
    out_hi[seg], out_lo[seg] = hi, lo
    return (out_hi, out_lo), counts


def sum_error(n_terms: int | np.ndarray, absolute_sum: np.ndarray | float) -> np.ndarray | float:
    r"""The error bound of :func:`tree_sum` over ``n_terms`` terms whose magnitudes sum to
    ``absolute_sum``: :math:`\lceil \log_2 n \rceil` levels of AccurateDWPlusDW, each off
    by at most :data:`ADD_ERROR` times the level's partial sums, at most the absolute sum
    (counted twice for safety: the magnitudes are themselves computed in float64)."""
    levels = np.maximum(np.ceil(np.log2(np.maximum(n_terms, 1))), 1.0)
    return 2.0 * levels * ADD_ERROR * np.asarray(absolute_sum)
