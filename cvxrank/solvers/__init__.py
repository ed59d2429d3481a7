"""Hand-written fast solvers, one module per algorithm family.

Every solver is a plain function ``solve_x(formulation, *, tol, max_iter, time_budget, seed,
callback, ...) -> SolverResult`` (see :mod:`cvxrank.trace`); :mod:`cvxrank.registry` lists
which (formulation, solver) pairs exist and the rate each is expected to reach.
"""

from cvxrank.solvers.dual_gradient import solve_accelerated_gradient, solve_projected_gradient

__all__ = ["solve_accelerated_gradient", "solve_projected_gradient"]
