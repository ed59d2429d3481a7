"""scikit-learn's ``LinearSVC`` (LIBLINEAR's dual coordinate descent) on the explicit pair
differences: what a user would otherwise write, for small problems only.

RankSVM's primal is ``(1/2)||w||^2 + C sum_k loss(1 - w.(x_i - x_j))`` over the preference
pairs (unit weights and margins, ``cvxrank/formulations/ranksvm.py``), and ``LinearSVC(C,
loss, fit_intercept=False)`` minimizes ``(1/2)||w||^2 + C sum_k loss(1 - y_k w.z_k)``, with
``loss`` the hinge or the squared hinge of both: on the differences ``z_k = x_i - x_j``, every
other one negated with its label ``y_k = -1`` (LIBLINEAR needs two classes; the terms are
unchanged, :func:`cvxrank.solvers.baselines.pair_differences`), the two objectives are the
same function of w with the same C. benchopt samples the curve by LIBLINEAR's iteration limit;
each run builds the pairs and the p x d differences on the clock, as a user's fit would.
"""

from __future__ import annotations

import warnings

import numpy as np
from benchmark_utils.cvxrank_solver import progress_criterion, unsupported
from benchopt import BaseSolver
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from cvxrank.data import RankingData
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.solvers.baselines import pair_differences

#: Largest number of preference pairs the explicit differences are built for.
MAX_PAIRS = 100_000


class Solver(BaseSolver):
    """``LinearSVC(C=C, loss=loss, fit_intercept=False, dual=True)`` on the pair differences,
    sampled by ``max_iter``."""

    name = "linearsvc"
    sampling_strategy = "iteration"
    stopping_criterion = progress_criterion("iteration")

    def skip(self, data: RankingData, C: float, loss: str) -> tuple[bool, str | None]:
        """Both losses; not above :data:`MAX_PAIRS` pairs (the p x d differences)."""
        skip, reason = unsupported(loss, ("squared_hinge", "hinge"), self.name)
        if skip:
            return skip, reason
        pairs = RankSVM(data, C=C, loss=loss).n_dual
        if pairs > MAX_PAIRS:
            return True, f"{pairs:,} pairs: explicit differences only up to {MAX_PAIRS:,}"
        return False, None

    def set_objective(self, data: RankingData, C: float, loss: str) -> None:
        """Keep the problem; the differences are built by each run."""
        self.data, self.C, self.loss = data, float(C), loss
        self.w = np.zeros(data.n_features)

    def run(self, n_iter: int) -> None:
        """``LinearSVC`` with ``max_iter = max(n_iter, 1)`` from w = 0 (its tolerance out of
        reach, so the iteration limit decides; its coordinate order seeded)."""
        formulation = RankSVM(self.data, C=self.C, loss=self.loss)
        Z, labels = pair_differences(formulation)
        model = LinearSVC(C=self.C, loss=self.loss, fit_intercept=False, dual=True,
                          tol=1e-15, max_iter=max(int(n_iter), 1), random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(Z, labels)
        self.w = model.coef_.ravel()

    def get_result(self) -> dict[str, np.ndarray]:
        """The weights."""
        return {"w": np.array(self.w, dtype=float, copy=True)}
