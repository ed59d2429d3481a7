"""Experiments as a protocol: tasks, grids, backends, selection, reports; paper reproductions.

* :mod:`~cvxrank.experiments.sources`: data sets named by paths (:class:`LetorFold`) or
  numbers (:class:`Synthetic`), read once per process.
* :mod:`~cvxrank.experiments.tasks`: :class:`Task` (data source, method, loss,
  hyper-parameters, solver, seed, what to evaluate) and :func:`run_task`, which any process
  can run, returning a plain :class:`TaskResult`.
* :mod:`~cvxrank.experiments.grid`: :class:`Grid`, hyper-parameters over named axes.
* :mod:`~cvxrank.experiments.backends`: :func:`run_tasks` sequentially, on local processes
  (joblib) or on Dask, streaming results as they finish, with a progress bar.
* :mod:`~cvxrank.experiments.selection`: :func:`select_best` by a validation measure,
  ties to the first grid point.
* :mod:`~cvxrank.experiments.letor`: the LETOR protocol (:func:`run_letor_grid`: train at
  every grid point, select on vali, report test per fold and the mean), behind
  ``cvxrank grid``.
* :mod:`~cvxrank.experiments.timing` and :mod:`~cvxrank.experiments.reports`: clocks and
  BLAS threads; markdown, CSV and JSON writers.
* :mod:`~cvxrank.experiments.chapelle`: Chapelle & Keerthi (2010) Table 3 and Fig. 3 on
  these tasks, behind ``cvxrank reproduce``.
* :mod:`~cvxrank.experiments.conerank`: Tran & Pham (ConeRank) Table 1 on LETOR 4.0 MQ2008
  with Figs. 3 and 4's analogues, behind ``cvxrank reproduce conerank-table1``.

Experiments return dataclasses with ``to_dict()``; the command line only parses arguments,
calls them and prints.
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
