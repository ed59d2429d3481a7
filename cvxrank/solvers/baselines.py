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

import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from cvxrank.core.trace import Run, Status, Trace, certified_radius
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.utils.lazy_sparse import sp


def pair_differences(formulation: RankSVM) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray]:
    """The p x d differences ``x_i - x_j``, every other one negated, and the +-1 labels."""
    Z = formulation.pairs.A @ formulation.data.X
    labels = np.ones(formulation.pairs.n_pairs)
    labels[1::2] = -1.0
    if sp.issparse(Z):
        return sp.diags(labels) @ sp.csr_matrix(Z), labels
    return np.asarray(Z) * labels[:, None], labels


def in_thread(call: Callable[[], Any]) -> Any:
    """``call()`` in a daemon thread, waited for in short joins, so that the main thread
    keeps handling signals (Ctrl-C) while a C library runs; its result, or its exception
    raised again here."""
    result: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as error:  # re-raised in the caller's thread
            failure.append(error)

    worker = threading.Thread(target=run, name="cvxrank-baseline", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.05)
    if failure:
        raise failure[0]
    return result[0]


def fit_linearsvc_pairs(
    formulation: RankSVM, *, tol: float = 1e-6, max_iter: int = 100_000, dual: bool = True
) -> Run:
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

    Returns
    -------
    Run
        ``solver="linearsvc"``; its clock: :attr:`~cvxrank.core.trace.Run.setup_time` is building
        the pairs and the p x d differences, :attr:`~cvxrank.core.trace.Run.time` that plus
        ``LinearSVC.fit`` (the objective at ``w`` is evaluated afterwards, off the clock).
        The trace has one row: LIBLINEAR's iteration count, the time, the primal objective
        :math:`P(w)` of the formulation, the dual bound its w certifies
        (:meth:`~cvxrank.formulations.ranksvm.RankSVM.dual_value_at`, evaluated off the
        clock) and no step (NaN); ``gap`` and ``w_radius`` follow from them. ``status`` is
        ``max_iter``, with the message saying so, when LIBLINEAR raised a
        ``ConvergenceWarning`` (its iteration limit). ``info["dual"]`` is ``dual``.

    Raises
    ------
    ValueError
        For the hinge loss or margins other than 1.
    """
    start = time.perf_counter()  # building the pairs (for the check below) counts
    ramp = formulation.ramp
    if ramp.linear or ramp.capped:
        raise ValueError("the LinearSVC baseline fits the squared hinge; got "
                         f"{formulation.loss.name}")
    if not np.all(formulation.margin == 1.0):
        raise ValueError("LinearSVC has no per-pair margins; the formulation's margins "
                         "must all be 1")
    Z, labels = pair_differences(formulation)
    built = time.perf_counter() - start
    model = LinearSVC(C=formulation.C, loss="squared_hinge", fit_intercept=False, dual=dual,
                      tol=tol, max_iter=max_iter)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        # LIBLINEAR runs for seconds without returning to Python: in a thread, so that a
        # Ctrl-C reaches the command at once (the thread is abandoned with the process)
        in_thread(lambda: model.fit(Z, labels, sample_weight=formulation.pair_weight))
    elapsed = time.perf_counter() - start
    converged = True
    for c in caught:  # the ConvergenceWarning becomes the run's verdict; others pass on
        if issubclass(c.category, ConvergenceWarning):
            converged = False
        else:
            warnings.warn_explicit(c.message, c.category, c.filename, c.lineno)
    w = model.coef_.ravel().copy()
    n_iter = int(np.max(model.n_iter_))
    primal, bound = formulation.primal_value(w), formulation.dual_value_at(w)
    gap_error = formulation.rounding_error(w, primal, bound)
    trace = Trace()
    trace.append(n_iter, elapsed, primal, bound, float("nan"), gap_error=gap_error,
                 radius=certified_radius(primal - bound, formulation.strong_convexity,
                                         gap_error))
    return Run(w=w, alpha=None, trace=trace,
               status=Status.CONVERGED if converged else Status.MAX_ITER,
               message="converged" if converged else "LIBLINEAR hit its iteration limit",
               n_iter=n_iter, solver="linearsvc", formulation=formulation.name,
               setup_time=built, w_radius=trace.radius[-1], tol=tol, info={"dual": dual})
