"""What a user would otherwise pick: scikit-learn's ``LinearSVC`` on explicit pair differences.

The squared-hinge RankSVM (Chapelle & Keerthi 2010, eq. (1)) is a linear SVM without bias
on the p difference vectors ``x_i - x_j``, all labelled +1 (Herbrich et al.; Joachims). LIBLINEAR
needs two classes, so every other difference is negated together with its label, which leaves
every term ``max(0, 1 - y_k w . z_k)^2`` unchanged. ``LinearSVC(C, loss="squared_hinge",
fit_intercept=False)`` then minimizes exactly ``(1/2)||w||^2 + C sum_k c_k max(0, 1 - w .
(x_i - x_j))^2`` (pair weights as sample weights). This materializes the p x d matrix of
differences, which is the O(n^2) cost that PRSVM+ avoids.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.svm import LinearSVC

from cvxrank.formulations.ranksvm import RankSVM


@dataclass
class BaselineFit:
    """Outcome of :func:`fit_linearsvc_pairs`.

    Attributes
    ----------
    w : ndarray
        Fitted weights.
    objective : float
        The RankSVM primal objective at ``w``.
    build_time : float
        Seconds to materialize the pair differences.
    fit_time : float
        Seconds inside ``LinearSVC.fit``.
    n_iter : int
        LIBLINEAR's iteration count.
    """

    w: np.ndarray
    objective: float
    build_time: float
    fit_time: float
    n_iter: int

    @property
    def time(self) -> float:
        """Total seconds: building the differences plus fitting."""
        return self.build_time + self.fit_time


def pair_differences(formulation: RankSVM) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray]:
    """The p x d differences ``x_i - x_j``, every other one negated, and the +-1 labels."""
    Z = formulation.pairs.A @ formulation.data.X
    labels = np.ones(formulation.pairs.n_pairs)
    labels[1::2] = -1.0
    if sp.issparse(Z):
        return sp.diags(labels) @ sp.csr_matrix(Z), labels
    return np.asarray(Z) * labels[:, None], labels


def fit_linearsvc_pairs(
    formulation: RankSVM, *, tol: float = 1e-6, max_iter: int = 100_000, dual: bool = True
) -> BaselineFit:
    """Fit the squared-hinge RankSVM with ``sklearn.svm.LinearSVC`` on explicit pairs.

    Parameters
    ----------
    formulation : RankSVM
        A squared-hinge RankSVM with unit margins (``LinearSVC`` has no per-pair margin).
    tol : float
        LIBLINEAR's stopping tolerance.
    max_iter : int
        LIBLINEAR's iteration limit.
    dual : bool
        LIBLINEAR's dual coordinate descent (True) or primal trust-region Newton (False).

    Raises
    ------
    ValueError
        For the hinge loss or margins other than 1.
    """
    start = time.perf_counter()  # building the pairs (for the check below) counts
    if formulation.loss != "squared_hinge":
        raise ValueError("the LinearSVC baseline fits the squared hinge; got "
                         f"{formulation.loss}")
    if not np.all(formulation.margin == 1.0):
        raise ValueError("LinearSVC has no per-pair margins; the formulation's margins "
                         "must all be 1")
    Z, labels = pair_differences(formulation)
    built = time.perf_counter()
    model = LinearSVC(C=formulation.C, loss="squared_hinge", fit_intercept=False, dual=dual,
                      tol=tol, max_iter=max_iter)
    model.fit(Z, labels, sample_weight=formulation.pair_weight)
    done = time.perf_counter()
    w = model.coef_.ravel().copy()
    return BaselineFit(w=w, objective=formulation.primal_value(w), build_time=built - start,
                       fit_time=done - built, n_iter=int(np.max(model.n_iter_)))
