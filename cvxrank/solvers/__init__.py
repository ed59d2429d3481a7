"""Hand-written fast solvers, one module per algorithm family.

Every solver is a plain function ``solve_x(formulation, *, tol, max_iter, time_budget, seed,
callback, ...) -> Run`` (see :mod:`cvxrank.trace`); :mod:`cvxrank.registry` lists
which (formulation, solver) pairs exist and the rate each is expected to reach.
"""

from cvxrank.solvers.cutting_plane import solve_cutting_plane
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient, solve_projected_gradient
from cvxrank.solvers.kernel_newton import solve_kernel_newton
from cvxrank.solvers.newton import solve_prsvm, solve_prsvm_plus, solve_truncated_newton
from cvxrank.solvers.rankmm import solve_seg, solve_seg_pairs, solve_sgp
from cvxrank.solvers.stochastic import solve_sgd_pairs, solve_sgd_queries

__all__ = [
    "solve_accelerated_gradient",
    "solve_cutting_plane",
    "solve_kernel_newton",
    "solve_projected_gradient",
    "solve_prsvm",
    "solve_prsvm_plus",
    "solve_seg",
    "solve_seg_pairs",
    "solve_sgd_pairs",
    "solve_sgd_queries",
    "solve_sgp",
    "solve_truncated_newton",
]
