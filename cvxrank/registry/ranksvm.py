"""RankSVM's entries: dual projected gradient, truncated Newton (PRSVM, PRSVM+), SGD and the
1-slack cutting plane (the hinge).

References
----------
.. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010 (eq. (1), Alg. 1, Sects. 3-4, Algs. 2-3).
.. [2] A. Beck and M. Teboulle, SIAM J. Imaging Sci. 2(1), 2009 (PG Thm. 3.1, FISTA Thm. 4.4).
"""

from __future__ import annotations

from cvxrank import tolerances
from cvxrank.certificates.validate import RateSpec
from cvxrank.registry import Entry, register, with_options
from cvxrank.registry.rates import (
    FIRST_ORDER_LIMITS,
    NEWTON_RATE,
    ONE_SLACK_DESCRIPTION,
    SGD_RATE,
    SGD_SEEDS,
    apg_linear_rate,
    one_slack_rate,
    pg_linear_rate,
)
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient, solve_projected_gradient
from cvxrank.solvers.newton import solve_prsvm, solve_prsvm_plus
from cvxrank.solvers.one_slack import solve_one_slack
from cvxrank.solvers.stochastic import solve_sgd_pairs, solve_sgd_queries

register(Entry(
    "ranksvm-hinge", "ranksvm", solve_projected_gradient, RateSpec.sublinear(-1),
    loss="hinge", limits=FIRST_ORDER_LIMITS,
    description="projected gradient on the box-constrained dual, O(1/k) (Beck-Teboulle Thm 3.1)",
))
register(Entry(
    "ranksvm-hinge", "ranksvm", solve_accelerated_gradient, RateSpec.sublinear(-2),
    loss="hinge", limits=FIRST_ORDER_LIMITS,
    description="FISTA on the box-constrained dual, O(1/k^2) (Beck-Teboulle Thm 4.4)",
))
register(Entry(
    "ranksvm-hinge", "ranksvm", solve_one_slack, one_slack_rate, loss="hinge",
    limits={"max_iter": 10_000, "time_budget": 120.0}, description=ONE_SLACK_DESCRIPTION,
))
register(Entry(
    "ranksvm-squared_hinge", "ranksvm", solve_projected_gradient, pg_linear_rate,
    loss="squared_hinge", limits=FIRST_ORDER_LIMITS,
    description="projected gradient on the strongly concave dual, (1 - mu/L)^k",
))
register(Entry(
    "ranksvm-squared_hinge", "ranksvm", solve_accelerated_gradient, apg_linear_rate,
    loss="squared_hinge", limits=FIRST_ORDER_LIMITS,
    description="constant-momentum Nesterov on the strongly concave dual, (1 - sqrt(mu/L))^k",
))
for _smooth in ("squared_hinge", "huber"):
    register(Entry(
        f"ranksvm-{_smooth}", "ranksvm", solve_prsvm, NEWTON_RATE, loss=_smooth,
        tol=tolerances.NEWTON_GAP,
        description="truncated Newton through the pair operator A, O(nd + p) (C&K Sect. 3)",
    ))
    register(Entry(
        f"ranksvm-{_smooth}", "ranksvm", solve_prsvm_plus, NEWTON_RATE, loss=_smooth,
        tol=tolerances.NEWTON_GAP,
        description="truncated Newton with sorted O(nd + n log n) gradients (C&K Sect. 4)",
    ))
register(Entry(
    "ranksvm-huber", "ranksvm", solve_accelerated_gradient, apg_linear_rate, loss="huber",
    limits=FIRST_ORDER_LIMITS,
    description="constant-momentum Nesterov on the box-constrained strongly concave dual",
))
register(Entry(
    "ranksvm-squared_hinge", "ranksvm", with_options(solve_sgd_pairs, batch_size=16),
    SGD_RATE, loss="squared_hinge", stochastic=True, seeds=SGD_SEEDS,
    tol=tolerances.STOCHASTIC_GAP, limits={"tol": tolerances.ZERO_MODEL_GAP, "max_iter": 30_000},
    description="SGD on pairs (C&K Alg. 2, 16 pairs a step), O(1/t)",
))
register(Entry(
    "ranksvm-squared_hinge", "ranksvm", solve_sgd_queries, SGD_RATE, loss="squared_hinge",
    stochastic=True, seeds=SGD_SEEDS, tol=tolerances.STOCHASTIC_GAP,
    limits={"tol": tolerances.ZERO_MODEL_GAP, "max_iter": 20_000},
    description="SGD on queries with O(n_q log n_q) query gradients (C&K Alg. 3), O(1/t)",
))
