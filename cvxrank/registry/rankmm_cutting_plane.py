"""RankMM's certified solver: the n-slack cutting plane on the three losses.

References
----------
.. [1] S. Agarwal and M. Collins, ECIR 2010, Sects. 3.1-3.3 (the slack QPs).
.. [2] Q. V. Le and A. J. Smola, Alg. 2; I. Tsochantaridis et al., JMLR 6, 2005, Thm. 18.
"""

from __future__ import annotations

from cvxrank.formulations.rankmm import RANKMM_LOSSES
from cvxrank.registry import Entry, register
from cvxrank.solvers.cutting_plane import iteration_bound, solve_cutting_plane
from cvxrank.validate import RateSpec

for _loss in RANKMM_LOSSES:
    register(Entry(
        f"rankmm-{_loss}", "rankmm", solve_cutting_plane,
        lambda f: RateSpec.bounded(iteration_bound(f)), loss=_loss,
        limits={"max_iter": 2000, "time_budget": 120.0},
        description="n-slack cutting plane, master QP in CVXPY, certified gap "
                    "(Le & Smola Alg. 2; iterations <= Tsochantaridis et al. Thm. 18)",
    ))
