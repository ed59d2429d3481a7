"""An open sandbox: a user's own loss, feasible set, formulation and solver, first-class.

What the package's families get (a certified CVXPY reference, the built-in solvers whose
capabilities a formulation offers, verify's checks against a rate, the convergence
figures), a method written in a notebook gets too, in a few dozen lines::

    import cvxpy as cp, numpy as np
    from scipy.special import expit
    from cvxrank.data import make_synthetic
    from cvxrank.certificates.reference import solve_reference
    from cvxrank.sandbox import PairLoss, PairwiseFormulation, check, solvers_for
    from cvxrank.solvers import solve_prsvm
    from cvxrank.certificates.validate import RateSpec

    ranknet = PairLoss("ranknet", lambda t: cp.logistic(-t),       # CVXPY, for the reference
                       lambda t: np.logaddexp(0, -t),               # numpy, for the solvers
                       lambda t: -expit(-t), lambda t: expit(t) * expit(-t),
                       slope_range=(-1, 0), curvature_range=(0, 0.25))   # checked, here
    f = PairwiseFormulation(make_synthetic(n_queries=10, seed=0), ranknet, C=0.01)
    solve_reference(f).p_star        # primal and dual by Clarabel, certified
    solvers_for(f)                   # ['prsvm']: truncated Newton through the pair operator
    result = check(solve_prsvm, f, RateSpec.newton(15))
    result.passed, result.rel_gap, result.fitted, result.figure

* :class:`PairLoss` (:mod:`cvxrank.losses`, the one loss type of the package): a pair loss
  given as a CVXPY atom and as numpy value and derivatives; the two are compared when it is
  made. The library: :func:`logistic`, :func:`exponential`, :data:`squared_hinge`,
  :func:`smoothed_hinge`; a piecewise loss (:meth:`PairLoss.piecewise`) also runs on every
  solver of the RankSVM family (:class:`cvxrank.formulations.RankSVM`).
* :class:`ConstraintSet` (:mod:`~cvxrank.sandbox.sets`): CVXPY constraints plus a numpy
  projection, compared with CVXPY's projection.
* :class:`PairwiseFormulation` (:mod:`~cvxrank.sandbox.pairwise`): RankSVM with any such
  loss (and a set of weights): CVXPY primal, CVXPY dual through conjugates CVXPY derives
  from the atom (:mod:`~cvxrank.sandbox.conic`), numpy evaluators, and the capabilities of
  PRSVM (``prsvm``) and, with a smooth conjugate, of the dual gradient solvers.
* :func:`check`, :func:`register`, :func:`registered` (:mod:`~cvxrank.sandbox.checking`):
  any solver, a user's generator of iterates included, judged against the certified
  reference and a claimed rate, alone or inside ``cvxrank verify``'s engine.

``notebooks/06_your_own_method.ipynb`` walks through all of it; ``docs/adding-a-method.md``
says how a method moves from the sandbox into the package.
"""

from cvxrank.losses import (
    ExpressionMismatchError,
    PairLoss,
    check_agreement,
    exponential,
    logistic,
    smoothed_hinge,
    squared_hinge,
)
from cvxrank.sandbox.checking import (
    Check,
    as_solver,
    check,
    figure,
    register,
    registered,
    verify_entry,
)
from cvxrank.sandbox.pairwise import PairwiseFormulation
from cvxrank.sandbox.sets import ConstraintSet
from cvxrank.solvers import solvers_for

__all__ = [
    "Check",
    "ConstraintSet",
    "ExpressionMismatchError",
    "PairLoss",
    "PairwiseFormulation",
    "as_solver",
    "check",
    "check_agreement",
    "exponential",
    "figure",
    "logistic",
    "register",
    "registered",
    "smoothed_hinge",
    "solvers_for",
    "squared_hinge",
    "verify_entry",
]
