"""Kernels for non-linear RankSVM: Gram matrices and the kernel PCA map.

Chapelle & Keerthi (2010), Sect. 6.3: a kernel RankSVM trained on n documents lives in the
span E of the mapped training points, of dimension at most n. With the eigendecomposition
``K = U Lambda U^T`` and ``A = U Lambda^{-1/2}`` (an orthonormal basis of E, the *kernel PCA
map* of Schoelkopf & Smola 2002, Sect. 14.2), the map

.. math::

    \\psi_p(x) = \\sum_{i=1}^n A_{ip}\\, k(x, x_i), \\qquad 1 \\le p \\le n,

satisfies ``psi(x_i) . psi(x_j) = k(x_i, x_j)``, so the linear solvers applied to
``psi(X)`` solve the kernel problem exactly, and the expansion coefficients of the kernel
solution ``f(x) = sum_i beta_i k(x, x_i)`` (the paper's eq. (10)) are ``beta = A w``.

Kernel functions are scikit-learn's (:func:`sklearn.metrics.pairwise.pairwise_kernels`:
``"linear"``, ``"rbf"``, ``"poly"``, ...), or a precomputed Gram matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cvxrank.utils.lazy_sparse import sp
from cvxrank.utils.threads import blas_threads, level3_threads

#: Eigenvalues of K below ``-PSD_TOLERANCE * max(1, lambda_max)`` mean K is not positive
#: semidefinite (beyond rounding): the kernel PCA map refuses it.
PSD_TOLERANCE = 1e-8

#: Eigenvalues at most ``RANK_TOLERANCE * lambda_max`` are treated as zero: their
#: directions are dropped from the map (they carry no function values on the training set
#: beyond rounding).
RANK_TOLERANCE = 1e-12


def gram_matrix(X: Any, Y: Any | None = None, kernel: str = "rbf", **params: Any) -> np.ndarray:
    """``K[i, j] = k(X[i], Y[j])`` with scikit-learn's pairwise kernels (dense ndarray), a
    level-3 product on :func:`~cvxrank.utils.threads.level3_threads` threads."""
    from sklearn.metrics.pairwise import pairwise_kernels  # imported on use: start-up time

    Y = X if Y is None else Y
    with blas_threads(level3_threads(2.0 * X.shape[0] * Y.shape[0] * X.shape[1])):
        K = pairwise_kernels(X, Y, metric=kernel, **params)
    return np.asarray(K.toarray() if sp.issparse(K) else K, dtype=np.float64)


class KernelPCAMap:
    """The kernel PCA map ``psi`` of Chapelle & Keerthi (2010), Sect. 6.3.

    Parameters
    ----------
    kernel : str
        A kernel of :func:`sklearn.metrics.pairwise.pairwise_kernels` (``"rbf"``,
        ``"poly"``, ``"linear"``, ...) or ``"precomputed"`` (then :meth:`fit` takes the Gram
        matrix and :meth:`transform` the cross-kernel matrix ``k(x_new, x_train)``).
    **params
        Kernel parameters (``gamma``, ``degree``, ``coef0``).

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (r,)
        The kept eigenvalues of K (descending), r = numerical rank.
    basis_ : ndarray of shape (n, r)
        ``A = U_r Lambda_r^{-1/2}``: the coefficients of the orthonormal basis of E.
    n_dropped_ : int
        Eigenvalues treated as zero (rank deficiency of K).

    Raises
    ------
    ValueError
        From :meth:`fit` when K is not square, not symmetric, not finite, or not positive
        semidefinite (its smallest eigenvalue is reported).
    """

    def __init__(self, kernel: str = "rbf", **params: Any) -> None:
        self.kernel = kernel
        self.params = params

    def fit(self, X: Any) -> KernelPCAMap:
        """Eigendecompose the Gram matrix of the training documents ``X``."""
        if self.kernel == "precomputed":
            K = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
            self._X = None
        else:
            K = gram_matrix(X, kernel=self.kernel, **self.params)
            self._X = X
        self.gram_ = check_gram(K)
        n = self.gram_.shape[0]
        with blas_threads(level3_threads(4.0 * n**3)):  # a symmetric eigensolver: ~4 n^3 flops
            eigenvalues, vectors = np.linalg.eigh(0.5 * (self.gram_ + self.gram_.T))
        top = float(eigenvalues[-1]) if eigenvalues.size else 0.0
        if eigenvalues.size and eigenvalues[0] < -PSD_TOLERANCE * max(1.0, top):
            raise ValueError(
                f"the kernel matrix is not positive semidefinite: smallest eigenvalue "
                f"{eigenvalues[0]:.3e} (largest {top:.3e}); a kernel RankSVM needs a PSD kernel"
            )
        keep = eigenvalues > RANK_TOLERANCE * max(top, 0.0)
        if not keep.any():
            raise ValueError("the kernel matrix is zero: no direction to learn")
        order = np.flatnonzero(keep)[::-1]
        self.eigenvalues_ = eigenvalues[order]
        self._vectors = vectors[:, order]
        self.basis_ = self._vectors / np.sqrt(self.eigenvalues_)
        self.n_dropped_ = int((~keep).sum())
        return self

    def training_features(self) -> np.ndarray:
        """``psi(x_i)`` for the training documents: ``K A = U_r Lambda_r^{1/2}`` (n x r)."""
        return self._vectors * np.sqrt(self.eigenvalues_)

    def transform(self, X: Any) -> np.ndarray:
        """``psi(X)``: ``k(X, X_train) @ A`` (for ``"precomputed"``, X is that cross-kernel)."""
        if self.kernel == "precomputed":
            cross = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
        else:
            cross = gram_matrix(X, self._X, kernel=self.kernel, **self.params)
        if cross.shape[1] != self.basis_.shape[0]:
            raise ValueError(
                f"cross-kernel has {cross.shape[1]} columns; expected one per training "
                f"document ({self.basis_.shape[0]})"
            )
        return cross @ self.basis_

    def coefficients(self, w: np.ndarray) -> np.ndarray:
        """Expansion coefficients ``beta = A w`` of ``f(x) = sum_i beta_i k(x, x_i)``."""
        return self.basis_ @ np.asarray(w, dtype=np.float64)


def check_gram(K: np.ndarray) -> np.ndarray:
    """Validate a Gram matrix: square, finite, symmetric (to 1e-10 relative)."""
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"a kernel matrix must be square, got shape {K.shape}")
    if not np.all(np.isfinite(K)):
        raise ValueError("the kernel matrix has non-finite entries")
    scale = max(1.0, float(np.abs(K).max(initial=0.0)))
    asym = float(np.abs(K - K.T).max(initial=0.0))
    if asym > 1e-10 * scale:
        raise ValueError(f"the kernel matrix is not symmetric (largest |K - K^T| = {asym:.3e})")
    return K
