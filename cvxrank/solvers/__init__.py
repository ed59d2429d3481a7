"""Hand-written fast solvers, one module per algorithm family.

Every solver is declared with :func:`cvxrank.core.capabilities.solver` and called as
``solve(formulation, options=None, *, tol, max_iter, time_budget, seed, callback, until,
**own) -> Run`` (:class:`cvxrank.core.trace.SolverOptions`, :class:`cvxrank.core.trace.Run`). Solver
names are unique: :func:`get_solver` finds any of them (those of a notebook too, once
declared); :mod:`cvxrank.registry` lists which (formulation, solver) pairs ``verify`` checks
and the rate each is expected to reach.
"""

from collections.abc import Callable
from typing import Any

from cvxrank.core.capabilities import SOLVERS, can_run
from cvxrank.solvers.conerank import (
    solve_alternation_eg,
    solve_alternation_sg,
    solve_block_apg,
    solve_block_eg,
    solve_stochastic_eg,
    solve_stochastic_sg,
)
from cvxrank.solvers.cutting_plane import solve_cutting_plane
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient, solve_projected_gradient
from cvxrank.solvers.kernel_newton import solve_kernel_newton
from cvxrank.solvers.newton import solve_prsvm, solve_prsvm_plus, solve_truncated_newton
from cvxrank.solvers.one_slack import solve_one_slack
from cvxrank.solvers.rankmm import solve_seg, solve_seg_pairs, solve_sgp
from cvxrank.solvers.stochastic import solve_sgd_pairs, solve_sgd_queries


def get_solver(name: str) -> Callable[..., Any]:
    """The declared solver ``name`` (KeyError if there is none)."""
    return SOLVERS[name]


def solver_names() -> list[str]:
    """The names of every declared solver, sorted."""
    return sorted(SOLVERS)


def solvers_for(formulation: Any) -> list[str]:
    """The declared solvers (the package's and any declared since) that can run on the
    formulation (:func:`cvxrank.core.capabilities.can_run`: needs and loss), sorted."""
    return sorted(n for n, fn in SOLVERS.items() if can_run(fn, formulation))


__all__ = [
    "get_solver",
    "solve_accelerated_gradient",
    "solve_alternation_eg",
    "solve_alternation_sg",
    "solve_block_apg",
    "solve_block_eg",
    "solve_cutting_plane",
    "solve_kernel_newton",
    "solve_one_slack",
    "solve_projected_gradient",
    "solve_prsvm",
    "solve_prsvm_plus",
    "solve_seg",
    "solve_seg_pairs",
    "solve_sgd_pairs",
    "solve_sgd_queries",
    "solve_sgp",
    "solve_stochastic_eg",
    "solve_stochastic_sg",
    "solve_truncated_newton",
    "solver_names",
    "solvers_for",
]
