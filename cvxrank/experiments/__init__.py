"""Experiments as a protocol: tasks, grids, backends, selection, reports; paper reproductions.

* :mod:`~cvxrank.experiments.sources`: data sets named by paths (:class:`LetorFold`) or
  numbers (:class:`Synthetic`), read once per process.
* :mod:`~cvxrank.experiments.tasks`: :class:`Task` (data source, method, loss,
  hyper-parameters, solver, seed, what to evaluate) and :func:`run_task` (``Task.run()``),
  which any process can run, returning a plain :class:`TaskResult`. A reproduction's own
  tasks carry their own ``run()`` too: that method is the one dispatch of every backend.
* :mod:`~cvxrank.experiments.grid`: :class:`Grid`, hyper-parameters over named axes.
* :mod:`~cvxrank.experiments.backends`: :func:`run_tasks` sequentially, on local processes
  (joblib) or on Dask, streaming results as they finish, with a progress bar;
  :class:`~cvxrank.experiments.backends.Execution`, those choices as one frozen value.
* :mod:`~cvxrank.experiments.config`: what every reproduction's frozen configuration shares
  (the ``--quick`` preset, the LETOR folder, the option checks).
* :mod:`~cvxrank.experiments.selection`: :func:`select_best` by a validation measure,
  ties to the first grid point; the points, choices and means every reproduction reports.
* :mod:`~cvxrank.experiments.letor`: the LETOR protocol (:func:`run_letor_grid`: train at
  every grid point, select on vali, report test per fold and the mean), behind
  ``cvxrank grid``.
* :mod:`~cvxrank.experiments.timing` and :mod:`~cvxrank.experiments.reports`: clocks;
  markdown, CSV and JSON writers.
* The reproductions behind ``cvxrank reproduce``, each a package with its configuration,
  run, reports and figures: :mod:`~cvxrank.experiments.chapelle` (Chapelle & Keerthi 2010,
  Table 3 and Fig. 3), :mod:`~cvxrank.experiments.agarwal_collins` (Agarwal & Collins 2010,
  Fig. 1), :mod:`~cvxrank.experiments.rankmm_convergence` (RankMM's duals against certified
  optima), :mod:`~cvxrank.experiments.conerank` (Tran & Pham, Table 1 on LETOR 4.0 MQ2008
  with Figs. 3 and 4's analogues), :mod:`~cvxrank.experiments.le_smola` (Le & Smola, DORM
  on OHSUMED and on load_digits).

Experiments return dataclasses with ``to_dict()``; the command line only parses arguments
into a configuration, calls the run and prints.
"""

from cvxrank.experiments.backends import BACKENDS, run_tasks
from cvxrank.experiments.grid import Grid
from cvxrank.experiments.letor import GridResult, run_letor_grid
from cvxrank.experiments.selection import select_best
from cvxrank.experiments.sources import LetorFold, Synthetic
from cvxrank.experiments.tasks import Task, TaskResult, run_task

__all__ = [
    "BACKENDS",
    "Grid",
    "GridResult",
    "LetorFold",
    "Synthetic",
    "Task",
    "TaskResult",
    "run_letor_grid",
    "run_task",
    "run_tasks",
    "select_best",
]
