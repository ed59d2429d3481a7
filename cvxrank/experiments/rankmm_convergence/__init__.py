r"""RankMM's three duals side by side: how the paper's stochastic solvers converge.

Agarwal & Collins (2010) solve each RankMM dual with a stochastic method that updates one
query's block per step and prove, in expectation, an :math:`\epsilon`-optimal dual objective
after :math:`O(1/\epsilon^2)` projection steps (box, Sect. 3.1; :math:`\ell_{1,\infty}` ball,
Sect. 3.3) or :math:`O(1/\epsilon)` exponentiated-gradient steps (simplex, Sect. 3.2), i.e.
suboptimality :math:`O(1/\sqrt T)` and :math:`O(1/T)`. Their experiments stop after at most
1000 steps (Sect. 4), never at a certified optimum.
:func:`~cvxrank.experiments.rankmm_convergence.protocol.run_convergence` runs, on one data set
and one C, every solver of the three duals against the certified CVXPY optimum
(:func:`cvxrank.certificates.reference.solve_reference`) over several seeds:

===============  ===================  ==================================================
loss             dual set             series
===============  ===================  ==================================================
``average``      box                  ``sgp`` (Sect. 3.1), ``apg``
``max``          simplex per query    ``seg`` (factored EG), ``seg-pairs`` (plain EG,
                                      Sect. 3.2), ``apg``
``max_average``  l1,inf ball          ``sgp`` with the exact projection, ``sgp`` with the
                                      paper's order (project, then clip; Sect. 3.3),
                                      ``apg``
===============  ===================  ==================================================

``apg`` (accelerated projected gradient on the same dual, :math:`O(1/k^2)`) is the
deterministic baseline. Every stochastic run takes ``steps`` steps at one step size per dual:
by default the solvers' own default, the pilot of :func:`cvxrank.solvers.rankmm.pilot_eta0`
(run once per dual with the first seed, before the timed runs, so that the factored and
plain EG steps and the two projections share it), or ``step_scale`` times the theory's
worst-case step (:func:`cvxrank.solvers.rankmm.default_eta0`); ``apg``
runs as many passes over the data: a stochastic step touches one of the B queries with
pairs, an ``apg`` iteration all of them, so the iteration axis of the figures is in passes
(steps / B for the stochastic solvers). Each formulation's per-query blocks and Lipschitz
constants are made once before the runs, so the solver times compare the iterations.

For the :math:`\ell_{1,\infty}` dual the result also says, at the iterates of the exact
runs, how often and by how much the paper's order would differ from the projection on the
step it is about to take
(:attr:`~cvxrank.experiments.rankmm_convergence.protocol.DualRun.projection_difference`).

* :mod:`~cvxrank.experiments.rankmm_convergence.protocol`: the series, the runs against the
  references, :func:`~cvxrank.experiments.rankmm_convergence.protocol.run_convergence`;
* :mod:`~cvxrank.experiments.rankmm_convergence.figures`: the three figures (drawn with
  :mod:`cvxrank.plots`);
* :mod:`~cvxrank.experiments.rankmm_convergence.report`: ``rankmm-duals.png``,
  ``rankmm-eg.png``, ``rankmm-projection.png``, the CSV of the records behind each and the
  summary (:func:`~cvxrank.experiments.rankmm_convergence.report.write_convergence`);
  ``cvxrank reproduce rankmm-convergence`` runs both.

References
----------
.. [1] S. Agarwal and M. Collins, "Maximum Margin Ranking Algorithms for Information
   Retrieval", ECIR 2010, Sects. 3.1-3.3 (solvers and rates) and 4 (protocol).
.. [2] M. Collins et al., JMLR 9, 2008 (EG on max-margin duals, O(1/T)).
.. [3] A. Beck and M. Teboulle, SIAM J. Imaging Sci. 2(1), 2009 (FISTA, O(1/k^2)).
"""

#: Default C (the middle of the paper's grid 0.1 ... 1000, Sect. 4).
DEFAULT_C = 10.0

#: Default number of seeds of each stochastic solver.
DEFAULT_SEEDS = 5

#: Default number of stochastic steps per run.
DEFAULT_STEPS = 20_000

#: ``reproduce rankmm-convergence --quick``: two seeds of 2,000 steps (a check in seconds).
QUICK = {"seeds": 2, "steps": 2_000}
