r"""The compiled compensated product :math:`X^\top \beta` (Ogita, Rump & Oishi's Dot2).

:func:`dot2_columns` forms, for every column j of a dense row-major X, the inner product
:math:`\sum_i x_{ij} \beta_i` in one pass over X's rows with Ogita, Rump & Oishi's Dot2
("Accurate sum and dot product", SIAM J. Sci. Comput. 26(6), 2005, Alg. 5.3): each
product split exactly by Dekker's TwoProduct (Veltkamp's split, no fused multiply-add
needed), the running sum by Knuth's TwoSum, the rounding errors gathered in a second sum.
The pair (sum, correction) it returns stands for the inner product to within
:math:`\gamma_{n}^2 \sum_i |x_{ij} \beta_i|` (their Prop. 5.5 without the final rounding;
:math:`\gamma_n = nu / (1 - nu)`, :math:`u = 2^{-53}`), with O(nd) work and O(d) memory:
no copy of X, no pair of documents. Only IEEE-754 float64 additions and multiplications, in
an order fixed by the loops, so the result is the same on every machine.

Compiled ahead of time by ``make install`` (:mod:`cvxrank.compiled.aot`), else just in time
by numba; no numpy method (a certificate asks for it once per fit, where its compilation
is paid at most once per machine).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cvxrank.compiled.kernels import KernelFile

#: Veltkamp's splitting constant for float64, :math:`2^{27} + 1`.
_SPLIT = 134217729.0


def _dot2_columns(X: np.ndarray, beta: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column j of ``X`` (n x d, C-contiguous): the Dot2 sum and correction of
    ``X[:, j] @ beta`` and the computed :math:`\\sum_i |fl(x_{ij} \\beta_i)|`."""
    n, d = X.shape
    total = np.zeros(d)
    correction = np.zeros(d)
    size = np.zeros(d)
    for i in range(n):
        b = beta[i]
        if b == 0.0:
            continue
        cb = _SPLIT * b
        b_hi = cb - (cb - b)
        b_lo = b - b_hi
        for j in range(d):
            a = X[i, j]
            p = a * b
            ca = _SPLIT * a
            a_hi = ca - (ca - a)
            a_lo = a - a_hi
            q = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
            s = total[j] + p
            z = s - total[j]
            r = (total[j] - (s - z)) + (p - z)
            total[j] = s
            correction[j] += q + r
            size[j] += abs(p)
    return total, correction, size


#: The kernel's argument types, for the ahead-of-time module (C-contiguous arrays).
_SIGNATURE = "Tuple((f8[::1], f8[::1], f8[::1]))(f8[:, ::1], f8[::1])"


def _warm(kernels: dict[str, Any]) -> None:
    """Call the kernel once, for the argument types of :func:`dot2_columns`."""
    kernels["dot2_columns"](np.ones((1, 1)), np.ones(1))


#: The kernel file (:class:`~cvxrank.compiled.kernels.KernelFile`); no numpy method.
KERNELS = KernelFile(__file__, {"dot2_columns": (_dot2_columns, _SIGNATURE)}, _warm)


def dot2_columns(X: np.ndarray, beta: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r""":math:`X^\top \beta` in double-word arithmetic, with its error bound per column.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Dense, float64 (copied to C order if it is not).
    beta : ndarray of shape (n,)

    Returns
    -------
    hi, lo : ndarray of shape (d,)
        The products as normalized double-words (``hi + lo`` exactly, ``hi = fl(hi + lo)``).
    error : ndarray of shape (d,)
        A bound on ``|hi + lo - X[:, j] @ beta|``: :math:`2 \gamma_n^2` times the computed
        magnitude (twice Prop. 5.5's, the magnitude being itself a float64 sum).
    size : ndarray of shape (d,)
        The computed :math:`\sum_i |x_{ij} \beta_i|`.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    beta = np.ascontiguousarray(beta, dtype=np.float64)
    total, correction, size = KERNELS.dispatchers()["dot2_columns"](X, beta)
    hi = total + correction  # TwoSum: the pair's exact sum, normalized
    z = hi - total
    lo = (total - (hi - z)) + (correction - z)
    n = X.shape[0]
    gamma = n * 2.0 ** -53 / (1.0 - n * 2.0 ** -53)
    return hi, lo, 2.0 * gamma * gamma * size, size
