r"""Agarwal & Collins (2010), Sect. 4, Fig. 1: RankMM-1/2/3 against RankSVM on OHSUMED.

The paper trains its three RankMM algorithms (:class:`~cvxrank.formulations.rankmm.RankMM`
with ``loss="average"``, ``"max"``, ``"max_average"``; Sects. 3.1-3.3) with its stochastic
dual solvers (:func:`~cvxrank.solvers.rankmm.solve_sgp` on the box and on the
:math:`\ell_{1,\infty}` ball, :func:`~cvxrank.solvers.rankmm.solve_seg` exponentiated gradient
on the simplices) on the five LETOR 3.0 OHSUMED folds, selecting, per fold, C in
:data:`C_GRID`, :math:`\eta_0` in :data:`ETA0_GRID` and the number of steps T in
:data:`T_GRID` by validation MAP, and reports the five-fold means of test NDCG@1..10,
Prec@1..10 and MAP beside LETOR's baselines (Fig. 1). Its stated findings
(:data:`PAPER_FINDINGS`): RankMM-1 and RankMM-3 well above RankSVM, RankMM-1 best overall,
RankMM-2 the weakest of the three.

* :mod:`~cvxrank.experiments.agarwal_collins.snapshots`: one run of ``max(T_GRID)`` steps
  per (fold, loss, C, :math:`\eta_0`, seed) with the weights kept at every T of the grid.
* :mod:`~cvxrank.experiments.agarwal_collins.protocol`: the tasks, their parallel run
  (sequential, local processes or Dask), the selection and :func:`run_fig1`.
* :mod:`~cvxrank.experiments.agarwal_collins.zero_optimality`: whether w = 0 is optimal
  for a loss on a data set (exact, no solver: a minimum-norm subgradient).
* :mod:`~cvxrank.experiments.agarwal_collins.report`: markdown, CSV, JSON and the figure.

What the paper could not show, added here: each RankMM at its *certified* optimum for the
selected C (:func:`cvxrank.fitting.fit_formulation`, relative duality gap
:data:`CERTIFIED_TOL`), so the table shows what early stopping contributes, and the exact
test of whether w = 0 is optimal.

References
----------
.. [1] S. Agarwal and M. Collins, "Maximum Margin Ranking Algorithms for Information
   Retrieval", ECIR 2010, Sects. 3-4 and Fig. 1.
"""

#: RankMM's losses in the paper's order and their names in Fig. 1.
LABELS = {"average": "RankMM-1", "max": "RankMM-2", "max_average": "RankMM-3"}

#: The paper's grids (Sect. 4), in increasing order (the order that breaks ties).
C_GRID = (0.1, 1.0, 10.0, 100.0, 1000.0)
ETA0_GRID = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
T_GRID = (100, 250, 500, 750, 1000)

#: C of the hinge RankSVM baseline (loss term C times the sum of the pair hinges
#: ``max(0, 1 - w.(x_j - x_k))``, :class:`~cvxrank.formulations.ranksvm.RankSVM`), selected
#: by validation MAP like the paper's LETOR baselines.
RANKSVM_C_GRID = (1e-6, 1e-5, 1e-4, 1e-3)

#: Certified relative duality gap of the optimum fits (and of the RankSVM baseline).
CERTIFIED_TOL = 1e-6

#: What Sect. 4 says about Fig. 1 (the paper gives the figure, not a table of numbers).
PAPER_FINDINGS = (
    "RankMM-1 and RankMM-3 considerably above RankSVM and the other pair-wise methods, "
    "comparable to the list-wise methods that optimize MAP or NDCG; RankMM-2 less suited "
    "(the weakest of the three); RankMM-3 particularly suited to MAP; best overall: RankMM-1"
)
