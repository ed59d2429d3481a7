"""Named tolerance levels: the one place where cvxrank's numerical thresholds live.

Every test, validation verdict and CLI check reads its threshold from here, so a reader can
see at a glance what "agrees" and "converged" mean.
"""

from __future__ import annotations

#: Relative agreement |p* - d*| / max(1, |p*|) required between the primal and dual
#: optima of a certified reference solve, per CVXPY solver. Interior-point solvers (Clarabel,
#: ECOS) are held to 1e-7; first-order ones (OSQP, SCS) reach about 1e-4 to 1e-6.
REFERENCE_AGREEMENT: dict[str, float] = {
    "CLARABEL": 1e-7,
    "ECOS": 1e-7,
    "OSQP": 1e-4,
    "SCS": 1e-4,
}

#: Default agreement for a CVXPY solver not listed above.
REFERENCE_AGREEMENT_DEFAULT = 1e-5

#: Relative objective gap (f - p*) / max(1, |p*|) a fast first-order solver must reach.
FAST_SOLVER_GAP = 1e-6

#: Relative objective gap a Newton-type solver must reach.
NEWTON_GAP = 1e-8

#: Relative objective gap a stochastic solver must reach (median over seeds).
STOCHASTIC_GAP = 1e-3

#: Tolerance on how much slower than the proven rate a fitted rate may be: a fitted slope
#: of log-gap against log-iteration may exceed the proven exponent by at most this much.
RATE_SLACK = 0.25

#: Largest violation of the dual constraints accepted as feasible.
FEASIBILITY = 1e-9

#: Agreement of CVXPY expressions with the numpy evaluators (no solve involved).
EXPRESSION_MATCH = 1e-9


def reference_agreement(solver: str) -> float:
    """Primal-dual agreement required of a reference solve by ``solver``."""
    return REFERENCE_AGREEMENT.get(solver.upper(), REFERENCE_AGREEMENT_DEFAULT)
