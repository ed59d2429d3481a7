"""The benchmark's objective: cvxrank's linear RankSVM, measured against a certified optimum.

``P(w) = (1/2)||w||^2 + C sum_k loss(1 - w.(x_i - x_j))`` over the preference pairs ``(i, j)``
of the training data (``y_i > y_j``, same query; unit weights and margins), ``loss`` the
hinge ``max(0, r)`` or the squared hinge ``max(0, r)^2`` (Chapelle & Keerthi 2010, eq. (1):
the loss term is multiplied by C, :class:`cvxrank.formulations.ranksvm.RankSVM`).

Every solver's ``w`` is evaluated by the same formulation's ``primal_value`` (O(n log n), by
sorting), so that all are measured identically, and against the certified optimum of
:mod:`benchmark_utils.optimum`, computed once per (dataset, loss, C) in ``set_data``. The
result columns (benchopt prefixes them with ``objective_``):

* ``value``: P(w), the key benchopt's stopping criterion watches, and ``value_error``, a bound
  on its rounding;
* ``suboptimality``: ``P(w) - P(w_ref)``, at least ``-(reference_gap + reference_value_error
  + value_error)`` (:mod:`benchmark_utils.optimum`), and ``relative_suboptimality`` (divided
  by ``P(w_ref)``);
* ``duality_gap``: ``P(w) - D(alpha(w))`` with the dual point that w induces (squared hinge:
  a certified bound on ``P(w) - p*`` from w alone, one more loss evaluation); NaN for the
  hinge, whose primal point certifies no dual bound;
* ``distance``: ``||w - w_ref||`` (``||w - w*||`` to within ``reference_radius``);
* ``reference_gap``, ``reference_value_error``, ``reference_radius``: the optimum's
  certificate (``P(w_ref) - p*``, the rounding of ``P(w_ref)``, ``||w_ref - w*||``).
"""

from __future__ import annotations

import numpy as np
from benchmark_utils.optimum import CertifiedOptimum, certified_optimum, is_cached
from benchopt import BaseObjective

from cvxrank.data import RankingData
from cvxrank.formulations.ranksvm import RankSVM


class Objective(BaseObjective):
    """RankSVM with the hinge or squared-hinge loss at C."""

    name = "RankSVM"
    min_benchopt_version = "1.10"

    parameters = {
        "loss": ["squared_hinge", "hinge"],
        "C": [5e-5, 1e-3, 1e-2],
    }
    #: ``benchopt test``: the squared hinge at C = 0.01 on the small simulated data.
    test_config = {"loss": "squared_hinge", "C": 1e-2}

    def skip(self, data: RankingData | None, missing: str | None = None
             ) -> tuple[bool, str | None]:
        """Skip a dataset whose file is missing (:mod:`datasets.letor`)."""
        if data is None:
            return True, missing or "no data"
        return False, None

    def set_data(self, data: RankingData, missing: str | None = None) -> None:
        """Build the formulation and its certified optimum (cached per data, loss and C)."""
        self.data = data
        self.formulation = RankSVM(data, C=self.C, loss=self.loss)
        fresh = not is_cached(self.formulation)
        self.optimum: CertifiedOptimum = certified_optimum(self.formulation)
        if fresh:  # the certificate, once per process and problem
            print(f"{self.formulation.name} C={self.C:g}: {self.optimum.describe()}")

    def get_objective(self) -> dict[str, RankingData | float | str]:
        """What the solvers need: the data, C and the loss (each builds its own problem)."""
        return {"data": self.data, "C": self.C, "loss": self.loss}

    def evaluate_result(self, w: np.ndarray) -> dict[str, float]:
        """The objective and its distances to the certified optimum at ``w``."""
        f, opt = self.formulation, self.optimum
        w = np.asarray(w, dtype=float).ravel()
        value, value_error = f.primal_bounds(w)  # primal_value(w) and its rounding bound
        suboptimality = value - opt.value
        return {
            "value": value,
            "value_error": value_error,
            "suboptimality": suboptimality,
            "relative_suboptimality": suboptimality / abs(opt.value),
            "duality_gap": value - f.dual_value_at(w),
            "distance": float(np.linalg.norm(w - opt.w)),
            "reference_gap": opt.gap,
            "reference_value_error": opt.value_error,
            "reference_radius": opt.radius,
        }

    def get_one_result(self) -> dict[str, np.ndarray]:
        """The zero model."""
        return {"w": np.zeros(self.data.n_features)}
