"""CVXPY's RankSVM primal (:meth:`cvxrank.formulations.ranksvm.RankSVM.primal`, the problem
cvxrank's certified reference solves) by the interior-point solver Clarabel.

benchopt samples the curve by tolerance: the run at ``tol`` solves a fresh problem with
Clarabel's ``tol_gap_abs = tol_gap_rel = tol_feas = tol``, CVXPY's compilation on the clock
(each run is a user's solve from nothing). Not above
:data:`cvxrank.fitting.REFERENCE_MAX_VARIABLES` pairs, the limit ``cvxrank fit`` sets for it.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from benchmark_utils.cvxrank_solver import progress_criterion, unsupported
from benchopt import BaseSolver

from cvxrank.data import RankingData
from cvxrank.fitting import REFERENCE_MAX_VARIABLES
from cvxrank.formulations.ranksvm import RankSVM


class Solver(BaseSolver):
    """Clarabel on the CVXPY primal, sampled by its tolerances."""

    name = "clarabel"
    sampling_strategy = "tolerance"
    stopping_criterion = progress_criterion("tolerance")

    def skip(self, data: RankingData, C: float, loss: str) -> tuple[bool, str | None]:
        """Both losses; not above :data:`~cvxrank.fitting.REFERENCE_MAX_VARIABLES` pairs."""
        skip, reason = unsupported(loss, ("squared_hinge", "hinge"), self.name)
        if skip:
            return skip, reason
        pairs = RankSVM(data, C=C, loss=loss).n_dual
        if pairs > REFERENCE_MAX_VARIABLES:
            return True, (f"{pairs:,} pairs: the CVXPY problem only up to "
                          f"{REFERENCE_MAX_VARIABLES:,}")
        return False, None

    def set_objective(self, data: RankingData, C: float, loss: str) -> None:
        """Keep the problem; each run builds and compiles it."""
        self.data, self.C, self.loss = data, float(C), loss
        self.w = np.zeros(data.n_features)

    def get_next(self, stop_val: float) -> float:
        """Tolerances 1, 0.1, 0.01, ... (down to 1e-15)."""
        return max(min(1.0, stop_val / 10.0), 1e-15)

    def run(self, stop_val: float) -> None:
        """Solve the primal with Clarabel at ``tol = min(stop_val, 1)``."""
        tol = min(float(stop_val), 1.0)
        formulation = RankSVM(self.data, C=self.C, loss=self.loss)
        problem = formulation.primal()
        problem.solve(solver=cp.CLARABEL, tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol,
                      max_iter=500)
        value = formulation.w_variable.value
        if value is None:
            raise cp.error.SolverError(f"Clarabel returned no point (status {problem.status})")
        self.w = np.asarray(value, dtype=float).ravel()

    def get_result(self) -> dict[str, np.ndarray]:
        """The weights."""
        return {"w": np.array(self.w, dtype=float, copy=True)}
