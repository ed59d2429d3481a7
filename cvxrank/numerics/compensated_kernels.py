r"""Compiled double-word kernels of the compensated gradient certificate.

* :func:`dot2_columns` and :func:`dot2_rows`: the products :math:`X^\top \beta` and
  :math:`X w` of a dense row-major X by Ogita, Rump & Oishi's Dot2 ("Accurate sum and dot
  product", SIAM J. Sci. Comput. 26(6), 2005, Alg. 5.3), in one pass over X's rows: each
  product split exactly by Dekker's TwoProduct (Veltkamp's split, no fused multiply-add
  needed), the running sum by Knuth's TwoSum, the rounding errors gathered in a second
  sum. The pair (sum, correction) stands for the inner product to within
  :math:`\gamma_{n}^2 \sum_i |x_{ij} \beta_i|` (their Prop. 5.5 without the final
  rounding; :math:`\gamma_n = nu / (1 - nu)`, :math:`u = 2^{-53}`), with O(nd) work and
  O(d) memory: no copy of X.
* :func:`block_gradient`: the sorted passes of the squared-hinge block loss
  (:mod:`cvxrank.formulations.sorted_kernels`) in double-word arithmetic (Joldes, Muller &
  Popescu's AccurateDWPlusDW and DWTimesFP3, :mod:`cvxrank.numerics.compensated`), with a
  rigorous bound per document: O(E) after the sort, no pairs.

Only IEEE-754 float64 additions and multiplications, in an order fixed by the loops, so the
results are the same on every machine. Compiled ahead of time by ``make install``
(:mod:`cvxrank.compiled.aot`), else just in time by numba; no numpy method (a certificate
asks for them once per fit, where their compilation is paid at most once per machine).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cvxrank.compiled.kernels import KernelFile, inline_helpers

#: Veltkamp's splitting constant for float64, :math:`2^{27} + 1`.
_SPLIT = 134217729.0

#: :data:`cvxrank.numerics.compensated.ADD_ERROR` and ``TIMES_FLOAT_ERROR`` (as plain floats,
#: which the compiled kernels take as constants).
_ADD_ERROR = 3.0 * 2.0 ** -106 / (1.0 - 4.0 * 2.0 ** -53)
_TIMES_ERROR = 4.0 * 2.0 ** -106
_U = 2.0 ** -53


def _two_sum(a: float, b: float) -> tuple[float, float]:
    """Knuth's TwoSum: ``fl(a + b)`` and its exact error."""
    s = a + b
    z = s - a
    return s, (a - (s - z)) + (b - z)


def _fast_two_sum(a: float, b: float) -> tuple[float, float]:
    """Dekker's FastTwoSum (``|a| >= |b|``)."""
    s = a + b
    return s, b - (s - a)


def _two_product(a: float, b: float) -> tuple[float, float]:
    """Dekker's TwoProduct with Veltkamp's split: ``fl(a b)`` and its exact error."""
    p = a * b
    ca = _SPLIT * a
    a_hi = ca - (ca - a)
    a_lo = a - a_hi
    cb = _SPLIT * b
    b_hi = cb - (cb - b)
    b_lo = b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def _dw_add(xh: float, xl: float, yh: float, yl: float) -> tuple[float, float]:
    """AccurateDWPlusDW (:func:`cvxrank.numerics.compensated.add`)."""
    sh, sl = _two_sum(xh, yh)
    th, tl = _two_sum(xl, yl)
    vh, vl = _fast_two_sum(sh, sl + th)
    return _fast_two_sum(vh, tl + vl)


def _dw_times_float(xh: float, xl: float, y: float) -> tuple[float, float]:
    """DWTimesFP3 (:func:`cvxrank.numerics.compensated.times_float`)."""
    ch, cl1 = _two_product(xh, y)
    return _fast_two_sum(ch, xl * y + cl1)


def _dot2_columns(X: np.ndarray, beta: np.ndarray, beta_lo: np.ndarray, beta_err: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per column j of ``X`` (n x d, C-contiguous): the Dot2 sum and correction of
    ``X[:, j] @ beta`` with ``X[:, j] @ beta_lo`` added into the correction, the computed
    :math:`\\sum_i |fl(x_{ij} \\beta_i)|`, :math:`\\sum_i |x_{ij} \\beta^{lo}_i|` and
    :math:`\\sum_i |x_{ij}| \\epsilon_i` (``beta_err``)."""
    n, d = X.shape
    total = np.zeros(d)
    correction = np.zeros(d)
    size = np.zeros(d)
    lo_size = np.zeros(d)
    spread = np.zeros(d)
    for i in range(n):
        b = beta[i]
        bl = beta_lo[i]
        eb = beta_err[i]
        if b == 0.0 and bl == 0.0 and eb == 0.0:
            continue
        for j in range(d):
            a = X[i, j]
            p, q = _two_product(a, b)
            s, r = _two_sum(total[j], p)
            total[j] = s
            low = a * bl
            correction[j] += (q + r) + low
            size[j] += abs(p)
            lo_size[j] += abs(low)
            spread[j] += abs(a) * eb
    return total, correction, size, lo_size, spread


def _dot2_rows(X: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row i of ``X`` (n x d, C-contiguous): the Dot2 sum and correction of
    ``X[i] @ w`` and the computed :math:`\\sum_j |fl(x_{ij} w_j)|`."""
    n, d = X.shape
    total = np.zeros(n)
    correction = np.zeros(n)
    size = np.zeros(n)
    for i in range(n):
        t = 0.0
        c = 0.0
        m = 0.0
        for j in range(d):
            p, q = _two_product(X[i, j], w[j])
            t, r = _two_sum(t, p)
            c += q + r
            m += abs(p)
        total[i] = t
        correction[i] = c
        size[i] = m
    return total, correction, size


def _block_gradient(v_hi: np.ndarray, v_lo: np.ndarray, v_err: np.ndarray, order: np.ndarray,
                    doc: np.ndarray, upper: np.ndarray, weight: np.ndarray, ptr: np.ndarray,
                    n_documents: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The squared-hinge block loss's gradient in the scores in double-word arithmetic,
    with a bound per document (see :func:`block_gradient`)."""
    g_hi = np.zeros(n_documents)
    g_lo = np.zeros(n_documents)
    g_err = np.zeros(n_documents)
    size = order.size
    uppers = np.zeros(size + 1)  # upper entries among the sorted positions before each
    for t in range(size):
        uppers[t + 1] = uppers[t] + (1.0 if upper[order[t]] else 0.0)
    for b in range(ptr.size - 1):
        lo, hi = ptr[b], ptr[b + 1]
        if hi == lo:
            continue
        c2 = 2.0 * weight[b]
        a2 = abs(c2)
        widest = 0.0
        for t in range(lo, hi):
            widest = max(widest, v_err[order[t]])
        # forward: the lower entry at t, with the upper entries before it
        count = 0.0
        sh, sl, s_abs, s_err = 0.0, 0.0, 0.0, 0.0
        near = lo  # past the last position whose value may exceed v_t by rounding only
        for t in range(lo, hi):
            e = order[t]
            if upper[e]:
                sh, sl = _dw_add(sh, sl, v_hi[e], v_lo[e])
                count += 1.0
                s_abs += abs(v_hi[e])
                s_err += v_err[e]
                continue
            ph, pl = _dw_times_float(v_hi[e], v_lo[e], count)
            dh, dl = _dw_add(ph, pl, -sh, -sl)
            th, tl = _dw_times_float(dh, dl, c2)
            d = doc[e]
            before = abs(g_hi[d])
            g_hi[d], g_lo[d] = _dw_add(g_hi[d], g_lo[d], th, tl)
            while near < hi and _close_above(v_hi[order[near]], v_hi[e], widest):
                near += 1
            # upper entries after t that the exact values may put before it
            missed = uppers[near] - uppers[t + 1] if near > t + 1 else 0.0
            g_err[d] += _term_error(a2, count, abs(v_hi[e]), s_abs, v_err[e], s_err, missed,
                                    widest, before, abs(th))
        # backward: the upper entry at t, with the lower entries after it
        count = 0.0
        sh, sl, s_abs, s_err = 0.0, 0.0, 0.0, 0.0
        near = hi - 1
        for t in range(hi - 1, lo - 1, -1):
            e = order[t]
            if not upper[e]:
                sh, sl = _dw_add(sh, sl, v_hi[e], v_lo[e])
                count += 1.0
                s_abs += abs(v_hi[e])
                s_err += v_err[e]
                continue
            ph, pl = _dw_times_float(v_hi[e], v_lo[e], count)
            dh, dl = _dw_add(sh, sl, -ph, -pl)
            th, tl = _dw_times_float(dh, dl, -c2)
            d = doc[e]
            before = abs(g_hi[d])
            g_hi[d], g_lo[d] = _dw_add(g_hi[d], g_lo[d], th, tl)
            while near >= lo and _close_above(v_hi[e], v_hi[order[near]], widest):
                near -= 1
            # lower entries before t that the exact values may put after it
            lowers = (t - near - 1) - (uppers[t] - uppers[near + 1]) if near < t - 1 else 0.0
            g_err[d] += _term_error(a2, count, abs(v_hi[e]), s_abs, v_err[e], s_err, lowers,
                                    widest, before, abs(th))
    return g_hi, g_lo, g_err


def _close_above(a: float, b: float, widest: float) -> bool:
    """Whether ``a`` (a double-word's high part) may lie at most ``2 widest`` above ``b``'s
    once both low parts (at most :math:`u` of their high parts each) are counted."""
    return a - b <= 2.0 * widest + 4.0 * _U * (abs(a) + abs(b))


def _term_error(a2: float, count: float, v: float, s_abs: float, v_err: float, s_err: float,
                missed: float, widest: float, before: float, term: float) -> float:
    """The error bound of one entry's term :math:`2c(k v - S)` added to its document's
    gradient (:func:`block_gradient`)."""
    return (a2 * (count * _ADD_ERROR * s_abs + 3.0 * _ADD_ERROR * (count * v + s_abs)
                  + count * v_err + s_err + missed * 2.0 * widest)
            + _ADD_ERROR * (before + term) + _TIMES_ERROR * term)


#: The kernels' helpers, inlined into them by numba.
_HELPERS = ("_two_sum", "_fast_two_sum", "_two_product", "_dw_add", "_dw_times_float",
            "_close_above", "_term_error")


def _compile_helpers() -> None:
    """Make the kernels' helpers numba functions, inlined into them
    (:func:`~cvxrank.compiled.kernels.inline_helpers`)."""
    inline_helpers(globals(), _HELPERS)


#: The kernels and their argument types, for the ahead-of-time module (C-contiguous arrays).
_KERNELS = {
    "dot2_columns": (_dot2_columns, "Tuple((f8[::1], f8[::1], f8[::1], f8[::1], f8[::1]))("
                                    "f8[:, ::1], f8[::1], f8[::1], f8[::1])"),
    "dot2_rows": (_dot2_rows, "Tuple((f8[::1], f8[::1], f8[::1]))(f8[:, ::1], f8[::1])"),
    "block_gradient": (_block_gradient, "Tuple((f8[::1], f8[::1], f8[::1]))(f8[::1], f8[::1], "
                                        "f8[::1], i8[::1], i8[::1], b1[::1], f8[::1], "
                                        "i8[::1], i8)"),
}


def _warm(kernels: dict[str, Any]) -> None:
    """Call each kernel once, for the argument types its wrapper passes."""
    one, index = np.ones(1), np.zeros(1, dtype=np.int64)
    kernels["dot2_columns"](np.ones((1, 1)), one, one, one)
    kernels["dot2_rows"](np.ones((1, 1)), one)
    kernels["block_gradient"](one, one, one, index, index, np.ones(1, dtype=np.bool_), one,
                              np.array([0, 1], dtype=np.int64), 1)


#: The kernel file (:class:`~cvxrank.compiled.kernels.KernelFile`); no numpy method.
KERNELS = KernelFile(__file__, _KERNELS, _warm, prepare=_compile_helpers)


def _gamma(n: int) -> float:
    r""":math:`\gamma_n = nu / (1 - nu)`."""
    return n * _U / (1.0 - n * _U)


def _normalized(total: np.ndarray, correction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TwoSum of the pair: the same exact sum as a normalized double-word."""
    hi = total + correction
    z = hi - total
    return hi, (total - (hi - z)) + (correction - z)


def dot2_columns(X: np.ndarray, beta: np.ndarray, beta_lo: np.ndarray | None = None,
                 beta_error: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r""":math:`X^\top \beta` in double-word arithmetic, with its error bound per column.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Dense, float64 (copied to C order if it is not).
    beta : ndarray of shape (n,)
        The vector, or the high part of a double-word one.
    beta_lo : ndarray of shape (n,), optional
        Its low part (added in float64: at most :math:`u |\beta|`, so its products' rounding
        is of order :math:`u^2`).
    beta_error : ndarray of shape (n,), optional
        A bound on the error of each :math:`\beta_i` (``beta + beta_lo`` against the exact
        vector), propagated as :math:`\sum_i |x_{ij}| \epsilon_i`.

    Returns
    -------
    hi, lo : ndarray of shape (d,)
        The products as normalized double-words (``hi = fl(hi + lo)``).
    error : ndarray of shape (d,)
        A bound on ``|hi + lo - X[:, j] @ beta_exact|``: Dot2's :math:`\gamma_n^2` of the
        terms, :math:`\gamma_{n+1}` of the low part's terms and the propagated errors, each
        counted twice (the magnitudes are float64 sums).
    size : ndarray of shape (d,)
        The computed :math:`\sum_i |x_{ij} \beta_i|`.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    beta = np.ascontiguousarray(beta, dtype=np.float64)
    zeros = np.zeros_like(beta)
    beta_lo = zeros if beta_lo is None else np.ascontiguousarray(beta_lo, dtype=np.float64)
    beta_error = (zeros if beta_error is None
                  else np.ascontiguousarray(beta_error, dtype=np.float64))
    total, correction, size, lo_size, spread = KERNELS.dispatchers()["dot2_columns"](
        X, beta, beta_lo, beta_error)
    hi, lo = _normalized(total, correction)
    n = X.shape[0]
    g = _gamma(n + 1)
    return hi, lo, 2.0 * (g * g * size + g * lo_size + spread), size


def dot2_rows(X: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The scores :math:`X w` in double-word arithmetic (Dot2 per row), with a bound per row.

    Returns
    -------
    hi, lo, error : ndarray of shape (n,)
        Normalized double-words and twice Dot2's :math:`\gamma_d^2 \sum_j |x_{ij} w_j|`.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    total, correction, size = KERNELS.dispatchers()["dot2_rows"](
        X, np.ascontiguousarray(w, dtype=np.float64))
    hi, lo = _normalized(total, correction)
    g = _gamma(X.shape[1] + 1)
    return hi, lo, 2.0 * g * g * size


def block_gradient(v_hi: np.ndarray, v_lo: np.ndarray, v_err: np.ndarray, order: np.ndarray,
                   doc: np.ndarray, upper: np.ndarray, weight: np.ndarray, ptr: np.ndarray,
                   n_documents: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The gradient in the scores of the squared-hinge block loss
    :math:`\sum_b c_b \sum_{i \in U_b, j \in L_b} \max(0, v_j - v_i)^2` (the shifted
    scores :math:`v` of :class:`~cvxrank.formulations.pair_losses.SortedPairLoss`'s blocks)
    in double-word arithmetic, with a bound on its error per document.

    The passes are those of the float64 kernel
    (:func:`~cvxrank.formulations.sorted_kernels.block_sums`, Chapelle & Keerthi's eq. (5)):
    after sorting each block, a lower entry's term is :math:`2c(k v_t - S)` over the k upper
    entries before it and an upper entry's :math:`-2c(S - k v_t)` over the lower entries
    after it, here with the running sums S, the products and the document's accumulation
    in double-words. Each term's bound adds (JMP 2017's bounds, :mod:`cvxrank.numerics.
    compensated`) the running sum's k additions, the product's and the difference's
    rounding, the inputs' errors (``v_err``, each pair off by at most the two errors) and the
    pairs that the exact values could order the other way: those within twice the block's
    largest input error, counted from the sorted values (O(E) in all, after the sort).

    Parameters
    ----------
    v_hi, v_lo : ndarray of shape (E,)
        The entries' shifted scores as normalized double-words.
    v_err : ndarray of shape (E,)
        A bound on each one's error.
    order : ndarray of int64 of shape (E,)
        The entry at each position; each block's positions ``ptr[b]:ptr[b+1]`` hold its
        entries in the increasing order of the double-words (``hi``, then ``lo``).
    doc, upper, weight, ptr, n_documents
        As for :func:`~cvxrank.formulations.sorted_kernels.block_sums`.

    Returns
    -------
    hi, lo, error : ndarray of shape (n_documents,)
        The gradient as double-words and twice the bound (the bound's own float64 sums).
    """
    g_hi, g_lo, g_err = KERNELS.dispatchers()["block_gradient"](
        *(np.ascontiguousarray(a, dtype=np.float64) for a in (v_hi, v_lo, v_err)),
        np.ascontiguousarray(order, dtype=np.int64), np.ascontiguousarray(doc, dtype=np.int64),
        np.ascontiguousarray(upper, dtype=np.bool_), np.ascontiguousarray(weight,
                                                                         dtype=np.float64),
        np.ascontiguousarray(ptr, dtype=np.int64), int(n_documents))
    return g_hi, g_lo, 2.0 * g_err
