"""Proven convergence rates and verification limits shared by the family modules.

References
----------
.. [1] Y. Nesterov, *Introductory Lectures on Convex Optimization*, 2004, Sect. 2.2.
.. [2] R. S. Dembo and T. Steihaug, Math. Programming 26, 1983 (truncated Newton).
.. [3] S. Lacoste-Julien, M. Schmidt and F. Bach, arXiv:1212.2002, 2012 (SGD, O(1/t)).
"""

from __future__ import annotations

import math

from cvxrank import tolerances
from cvxrank.certificates.validate import RateSpec
from cvxrank.formulations.base import Formulation


def pg_linear_rate(formulation: Formulation) -> RateSpec:
    """PG on a mu-strongly concave, L-smooth dual: ``(1 - mu/L)^k`` (Nesterov 2004, 2.2)."""
    mu, L = formulation.dual_strong_convexity(), formulation.dual_lipschitz()
    return RateSpec.linear(1.0 - mu / L)


def apg_linear_rate(formulation: Formulation) -> RateSpec:
    """Constant-momentum APG: ``(1 - sqrt(mu/L))^k`` (Nesterov 2004, Thm. 2.2.3)."""
    mu, L = formulation.dual_strong_convexity(), formulation.dual_lipschitz()
    return RateSpec.linear(1.0 - math.sqrt(mu / L))


#: Verification limits of the first-order dual solvers (a safety net; the instances are
#: chosen so that they converge well within them).
FIRST_ORDER_LIMITS = {"max_iter": 100_000, "time_budget": 120.0}

#: A Newton method takes "a handful" of outer iterations (Chapelle & Keerthi 2010, Sect. 2:
#: constant in practice) and ends superlinearly (truncated Newton with a forcing sequence,
#: Dembo & Steihaug 1983).
NEWTON_RATE = RateSpec.newton(15)

#: SGD's proven rate with the step 2/(mu (t+1)) and t-weighted averaging (Lacoste-Julien
#: et al. 2012): E[P(w_bar_t)] - p* = O(1/t). The expectation is estimated by the mean over
#: five seeded runs (with three, one run's fluctuations can still tilt the fitted slope).
SGD_RATE = RateSpec.sublinear(-1, measure="primal")
SGD_SEEDS = (0, 1, 2, 3, 4)


def one_slack_rate(formulation) -> RateSpec:
    """The 1-slack cutting plane's iteration bound (Joachims, Finley & Yu 2009, Thm. 5;
    :func:`~cvxrank.solvers.cutting_plane.iteration_bound` with one block) at the certified
    optimum (the reference ``verify`` computes anyway, cached)."""
    from cvxrank.certificates.reference import solve_reference
    from cvxrank.solvers.cutting_plane import iteration_bound

    return RateSpec.bounded(iteration_bound(formulation, tolerances.FAST_SOLVER_GAP,
                                            p_star=solve_reference(formulation).p_star))


#: Description of the 1-slack entries.
ONE_SLACK_DESCRIPTION = ("1-slack cutting plane, O(nd + n log n) oracle without pairs, "
                         "hand-written active-set master, certified gap (Joachims 2006; "
                         "iterations <= Joachims-Finley-Yu Thm. 5)")
