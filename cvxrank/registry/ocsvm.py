"""OC SVM's entry (Li 2011, Sect. 3.1): FISTA with the exact box + equality projection."""

from __future__ import annotations

from cvxrank.registry import Entry, register
from cvxrank.registry.rates import FIRST_ORDER_LIMITS
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient
from cvxrank.validate import RateSpec

register(Entry(
    "ocsvm-fixed", "ocsvm", solve_accelerated_gradient, RateSpec.sublinear(-2),
    limits=FIRST_ORDER_LIMITS,
    description="FISTA on OC SVM's dual with the exact box + equality projection, O(1/k^2)",
))
