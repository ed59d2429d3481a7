r"""RankMM's entries (Agarwal & Collins 2010): the paper's stochastic dual solvers, the
deterministic baselines and the certified cutting plane.

* ``sgp`` on RankMM-1's box dual (Sect. 3.1) and RankMM-3's l1,inf dual (Sect. 3.3, the exact
  projection), ``seg`` and ``seg-pairs`` (factored and plain exponentiated gradient) on
  RankMM-2's simplex dual (Sect. 3.2): stochastic, judged as ``verify`` judges stochastic
  solvers (median over five seeds, :data:`~cvxrank.tolerances.STOCHASTIC_GAP`, the rate fitted
  to the mean dual suboptimality) against the rates the paper cites: expected dual
  suboptimality :math:`O(1/\sqrt T)` for the projection methods (Sects. 3.1, 3.3) and
  :math:`O(1/T)` for EG (Sect. 3.2, Collins et al. 2008). They run with their default step
  (the pilot of :func:`cvxrank.solvers.rankmm.pilot_eta0`, on the solver's clock).
* ``apg`` (FISTA, Beck & Teboulle Thm. 4.4) on the box dual, :math:`O(1/k^2)`, to
  :data:`~cvxrank.tolerances.FAST_SOLVER_GAP`. On the simplex and l1,inf duals FISTA does not
  reach 1e-6 within verify's time on the larger instances (the primal gap at
  :math:`w(\alpha)` falls like the square root of the dual gap there), so it is not
  registered for them; :func:`~cvxrank.solvers.dual_gradient.solve_accelerated_gradient`
  runs on them all the same (the convergence figures use it as their baseline).
* ``cutting-plane`` (:mod:`cvxrank.solvers.cutting_plane`) on all three losses, the default
  solver: certified gap :data:`~cvxrank.tolerances.FAST_SOLVER_GAP`, iterations checked
  against the n-slack bound of Tsochantaridis et al. (Thm. 18,
  :func:`~cvxrank.solvers.cutting_plane.iteration_bound`).

The instances' C is rescaled for RankMM (:func:`matched_weight`); on every verify
instance the optimum is not w = 0 (``tests/verification/test_rankmm_registry.py``).

References
----------
.. [1] S. Agarwal and M. Collins, "Maximum Margin Ranking Algorithms for Information
   Retrieval", ECIR 2010, Sects. 3.1-3.3.
.. [2] A. Beck and M. Teboulle, SIAM J. Imaging Sci. 2(1), 2009 (FISTA, Thm. 4.4).
.. [3] M. Collins et al., JMLR 9, 2008 (EG, O(1/T)).
.. [4] I. Tsochantaridis et al., JMLR 6, 2005, Thm. 18; Q. V. Le and A. J. Smola, Alg. 2.
"""

from __future__ import annotations

import math

import numpy as np

from cvxrank import tolerances
from cvxrank.certificates.validate import RateSpec
from cvxrank.data.pairs import count_pairs
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.rankmm import RANKMM_LOSSES
from cvxrank.registry import Entry, register, scale_C
from cvxrank.registry.rates import FIRST_ORDER_LIMITS, SGD_SEEDS
from cvxrank.solvers.cutting_plane import iteration_bound, solve_cutting_plane
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient
from cvxrank.solvers.rankmm import solve_seg, solve_seg_pairs, solve_sgp


def matched_weight(data: RankingData) -> float:
    """p m / m' rounded to a power of ten, over 10: RankMM's C multiplies (1/m) times a sum
    over queries of per-query losses (Agarwal & Collins 2010, Sect. 2), each an average or a
    maximum of pair hinges, so a query weighs C/m where RankSVM's C weighs every pair; the
    total weights match (C/m per query of the m' with pairs against C per pair of p) at
    p m / m'. The instances' C is multiplied by it.

    The match is only an order of magnitude (margins y_j - y_k instead of 1, a maximum
    instead of a sum), hence the rounding, which gives round C. The tenth of it (C = 0.5 to
    2 on the instances, inside the paper's grid 0.1 ... 1000, Sect. 4) keeps the stochastic
    duals within reach of ``verify``'s time: at C = 5 to 20 EG is still at a relative gap of
    1e-3 to 3e-2 after 100 passes. At these C no RankMM optimum of the instances is w = 0
    (``tests/verification/test_rankmm_registry.py``): (P(0) - p*) / p* is 0.019 to 1.5, except the
    max-average loss of ``noisy-30q-20f``, nearly flat at 0 for every C (1.7e-4, ||w*|| =
    0.017), where the dual side of the check carries the test.
    """
    per_query = count_pairs(data)
    matched = per_query.sum() * data.n_queries / np.count_nonzero(per_query)
    return float(10.0 ** round(math.log10(matched))) / 10.0


scale_C("rankmm", matched_weight)


#: Steps of a stochastic verify run (10 to 60 queries with pairs: 250 to 1,500 passes),
#: recorded every 25 steps: the box dual falls below the noise floor within a few hundred
#: steps on the quick instances, and the rate needs five points above it. A run stops
#: earlier only at the optimum to rounding (a certified relative gap of ZERO_MODEL_GAP).
STOCHASTIC_LIMITS = {"tol": tolerances.ZERO_MODEL_GAP, "max_iter": 15_000,
                     "record_every": 25}

#: The paper's rates on the dual objective (Sects. 3.1-3.3).
PROJECTION_RATE = RateSpec.sublinear(-0.5, measure="dual")
EG_RATE = RateSpec.sublinear(-1, measure="dual")

register(Entry(
    "rankmm-average", "rankmm", solve_accelerated_gradient,
    RateSpec.sublinear(-2, measure="dual"), loss="average", limits=FIRST_ORDER_LIMITS,
    description="FISTA on RankMM-1's box dual (A&C Sect. 3.1), O(1/k^2) (Beck-Teboulle Thm 4.4)",
))

for _loss, _solve, _rate, _what in (
    ("average", solve_sgp, PROJECTION_RATE, "SGP on the box dual (A&C Sect. 3.1), O(1/sqrt T)"),
    ("max_average", solve_sgp, PROJECTION_RATE,
     "SGP on the l1,inf dual, exact projection (A&C Sect. 3.3), O(1/sqrt T)"),
    ("max", solve_seg, EG_RATE, "EG on the simplex dual, factored O(n_i) step (Sect. 3.2), O(1/T)"),
    ("max", solve_seg_pairs, EG_RATE, "EG on the simplex dual, plain O(|R_i|) step, O(1/T)"),
):
    register(Entry(
        f"rankmm-{_loss}", "rankmm", _solve, _rate, loss=_loss, stochastic=True,
        seeds=SGD_SEEDS, tol=tolerances.STOCHASTIC_GAP, limits=STOCHASTIC_LIMITS,
        description=_what,
    ))

for _loss in RANKMM_LOSSES:
    register(Entry(
        f"rankmm-{_loss}", "rankmm", solve_cutting_plane,
        lambda f: RateSpec.bounded(iteration_bound(f)), loss=_loss,
        limits={"max_iter": 2000, "time_budget": 120.0},
        description="n-slack cutting plane, master QP in CVXPY, certified gap "
                    "(Le & Smola Alg. 2; iterations <= Tsochantaridis et al. Thm. 18)",
    ))
