r"""Chapelle & Keerthi (2010), Sect. 5: the OHSUMED table (Table 3) and the AUC scaling (Fig. 3).

Both experiments train the squared-hinge RankSVM of the paper's eq. (1),

.. math::

    \min_w \; \tfrac12 \|w\|^2 + C \sum_{(i, j) \in \mathcal P} \max(0, 1 - w^\top (x_i - x_j))^2,

with cvxrank's :class:`~cvxrank.formulations.ranksvm.RankSVM`, as tasks of
:mod:`cvxrank.experiments.tasks` run in this process, one after the other (they are timing
experiments). **Convention for C:** C multiplies the loss term as in eq. (1). The published
Matlab code multiplies it by C/2, so the paper's "C = 1e-4 for Ohsumed" (Sect. 5.1) is
``C = 5e-5`` here (:data:`DEFAULT_C`).

* :mod:`~cvxrank.experiments.chapelle.table3` (Sect. 5.1, Table 3): the five LETOR 3.0
  OHSUMED folds, PRSVM, PRSVM+ and LinearSVC on explicit pairs; test NDCG@10, times,
  objectives.
* :mod:`~cvxrank.experiments.chapelle.fig3` (Sect. 5.2, Fig. 3): training time against n
  for the one-query, two-grade (AUC) problem, PRSVM against PRSVM+.
* :mod:`~cvxrank.experiments.chapelle.reports`: their markdown tables, CSV files and the
  figure's PNG (drawn by :func:`~cvxrank.experiments.chapelle.reports.plot_auc_scaling`).

Times are wall-clock seconds of the whole training call *including its set-up* (building
the pairs and the operator A for PRSVM, the sorted blocks for PRSVM+, the pairs and the
explicit p x d differences for LinearSVC); beside them, the :class:`~cvxrank.core.trace.Run`'s
solver clock split into ``setup_time`` (:attr:`~cvxrank.core.trace.Run.setup_time`) and
``solver_time`` (:attr:`~cvxrank.core.trace.Run.solve_time`: the Newton iterations with their
certified duality gaps, or LIBLINEAR's fit). PRSVM+'s compiled kernels are loaded before the
first timed run (:func:`cvxrank.experiments.tasks.prepare_process`).

References
----------
.. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010: eq. (1), Alg. 1, Sects. 3-4, Sect. 5.1 (Table 3) and
   Sect. 5.2 (Fig. 3).
"""

#: C of Table 3 in cvxrank's (eq. (1)) convention: the published code's C = 1e-4 halved.
DEFAULT_C = 5e-5

#: The paper's C for Ohsumed in its published code's convention (loss term times C/2).
PUBLISHED_CODE_C = 1e-4

#: Display names of the methods (solvers) of both experiments.
LABELS = {"prsvm": "PRSVM", "prsvm+": "PRSVM+", "linearsvc": "LinearSVC"}
