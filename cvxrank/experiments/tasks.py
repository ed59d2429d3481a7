"""A task: one training run (and its evaluation) that any process can rebuild and run.

A :class:`Task` holds only paths and numbers: the data source (a LETOR fold folder or a
synthetic generator's numbers, :mod:`cvxrank.experiments.sources`), the method of
:mod:`cvxrank.methods` with its loss and hyper-parameters, the solver, the seed, which splits
to evaluate and how to time. :func:`run_task` rebuilds the data (read once per process),
builds the formulation, fits it and returns a :class:`TaskResult` of plain picklable values:
the :class:`~cvxrank.core.trace.Run` records (without the dual point, which can be as long as the
pairs), the wall-clock times, the data sizes and the measures of
:func:`cvxrank.metrics.evaluate`. No formulation, CVXPY object or data set leaves the
process that ran the task.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cvxrank.certificates.certify import EvaluationTarget, reported_measures
from cvxrank.core.trace import Run
from cvxrank.errors import PairLimitError, SolverError, UsageError
from cvxrank.experiments.sources import LetorFold, Synthetic
from cvxrank.experiments.timing import peak_memory, repeat_until, timed

#: Solvers that are baselines rather than :func:`cvxrank.fitting.fit_formulation` solvers.
BASELINE_SOLVERS = ("linearsvc",)

#: Failures that make one task (one grid point) fail without stopping the others: a solver
#: that did not reach its tolerance, pairs over the limit. Anything else (a malformed data
#: file, an unknown parameter) stops the whole run.
TASK_FAILURES: tuple[type[Exception], ...] = (SolverError, PairLimitError)

_PROCESS = {"prepared": False}


@dataclass(frozen=True)
class Task:
    """One training run, described by paths and numbers only.

    Attributes
    ----------
    source : LetorFold or Synthetic
        Where the data comes from; the model is trained on its ``train`` split.
    method : str
        A method of :mod:`cvxrank.methods` (``ranksvm``, ``irsvm``, ``ocsvm``).
    loss : str or None
        Its loss (None: the method's default).
    params : dict of str to float
        Hyper-parameters given to the formulation (``{"C": 5e-5}``).
    solver : str
        ``"auto"``, a solver name of :func:`cvxrank.fitting.fit_formulation`, or a baseline
        of :data:`BASELINE_SOLVERS` (``"linearsvc"``: LinearSVC on explicit pairs).
    tol : float or None
        The solver's tolerance (None: its default; LIBLINEAR's ``tol`` for ``linearsvc``).
    seed : int or None
        Seed of a stochastic solver (default 0: a grid gives the same results every run).
    evaluate_on : tuple of str
        Splits on which the fitted model is evaluated (``("vali", "test")``).
    preset : str
        Metric conventions of :func:`cvxrank.metrics.evaluate`.
    k : int
        Largest cut-off of NDCG@k and P@k.
    max_train_queries : int or None
        Train on the first this many queries only (None: all).
    repeat, min_time, max_repeat : int, float, int
        Fit at least ``repeat`` times and until the fits total ``min_time`` seconds (at most
        ``max_repeat`` fits), each on a fresh formulation (for timing; the default fits once).
    measure_memory : bool
        Also fit once more under ``tracemalloc`` and record the peak traced bytes.
    certify : bool
        Go on past the solver's tolerance until every measure reported on ``evaluate_on``
        is certified as the optimum's (:class:`cvxrank.certificates.certify.EvaluationTarget`);
        False stops at the tolerance (a timing that must not include it).
    """

    source: LetorFold | Synthetic
    method: str
    loss: str | None = None
    params: dict[str, float] = field(default_factory=dict)
    solver: str = "auto"
    tol: float | None = None
    seed: int | None = 0
    evaluate_on: tuple[str, ...] = ()
    preset: str = "letor3"
    k: int = 10
    max_train_queries: int | None = None
    repeat: int = 1
    min_time: float = 0.0
    max_repeat: int = 1
    measure_memory: bool = False
    certify: bool = True

    def run(self) -> TaskResult:
        """:func:`run_task` (what every backend calls)."""
        return run_task(self)


@dataclass
class TaskResult:
    """What :func:`run_task` returns: plain values only.

    Attributes
    ----------
    task : Task
    runs : list of Run
        One per timed fit, in order, each without its dual point (``alpha=None``); empty when
        the task failed.
    wall_times : list of float
        Wall-clock seconds of each fit call (set-up included, the formulation's construction
        not); see :mod:`cvxrank.experiments.timing` for the clocks.
    sizes : dict
        ``{"train": {"n_documents", "n_queries", "n_features", "n_pairs"}, <split>:
        {"n_documents", "n_queries"}}`` for the training data and every evaluated split.
    measures : dict
        ``{<split>: evaluate(...)}`` for every split of ``task.evaluate_on``: the keys of
        :func:`cvxrank.metrics.evaluate` (``ndcg@1``..``ndcg@k``, ``p@1``..``p@k``,
        ``map``, ``mrr`` and, for ``letor4``, ``mean_ndcg``).
    certified : dict
        ``{<split>: {measure: {"certified": bool, "uncertified_queries": int or None}}}``
        for every evaluated split: whether the last fit's measure is the exact optimum's
        (:func:`cvxrank.certificates.certify.measure_report`).
    peak_bytes : int or None
        Peak traced memory of one fit (``task.measure_memory``).
    error : str or None
        Why the task failed (one of :data:`TASK_FAILURES`), None when it ran.
    error_type : str or None
        The failure's class name (``"PairLimitError"``, ``"SolverError"``).
    pid : int
        The process that ran the task.
    """

    task: Task
    runs: list[Run]
    wall_times: list[float]
    sizes: dict[str, dict[str, int]]
    measures: dict[str, dict[str, float]]
    certified: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    peak_bytes: int | None = None
    error: str | None = None
    error_type: str | None = None
    pid: int = 0

    @property
    def ok(self) -> bool:
        """Whether the task ran (no failure)."""
        return self.error is None

    @property
    def run(self) -> Run:
        """The last fit."""
        return self.runs[-1]

    @property
    def wall_time(self) -> float:
        """Median wall-clock seconds of the fits."""
        return float(statistics.median(self.wall_times))


def fit_timed(formulation: Any, solver: str = "auto", *, tol: float | None = None,
              seed: int | None = None, certify: EvaluationTarget | None = None,
              sharded: bool = False) -> tuple[Run, float]:
    """Fit ``formulation`` with ``solver``; return the run and the call's wall-clock seconds.

    ``solver`` is ``"linearsvc"`` (:func:`cvxrank.solvers.baselines.fit_linearsvc_pairs`, with
    LIBLINEAR's ``tol`` when given; it stops at its own tolerance) or anything
    :func:`cvxrank.fitting.fit_formulation` accepts, which goes on until ``certify``'s
    measures are certified (or, without one, stops at its tolerance); ``sharded``: the
    formulation is on Dask shards (:func:`cvxrank.distributed.fit_sharded`).
    """
    if solver == "linearsvc":
        if sharded:
            raise UsageError("the linearsvc baseline builds the pairs in one process: it does "
                             "not run on shards")
        from cvxrank.solvers.baselines import fit_linearsvc_pairs

        options = {} if tol is None else {"tol": tol}
        return timed(lambda: fit_linearsvc_pairs(formulation, **options))
    if sharded:
        from cvxrank.distributed import fit_sharded as fit
    else:
        from cvxrank.fitting import fit_formulation as fit

    return timed(lambda: fit(formulation, solver, tol=tol, seed=seed, certify=certify,
                             model_radius=None))


def prepare_process() -> None:
    """Load PRSVM+'s compiled kernels once per process, before anything is timed
    (:func:`cvxrank.formulations.sorted_kernels.warm_up`)."""
    if not _PROCESS["prepared"]:
        from cvxrank.formulations.sorted_kernels import warm_up

        warm_up()
        _PROCESS["prepared"] = True


def training_data(task: Any) -> Any:
    """The training data of a task with a ``source`` and ``max_train_queries`` (its first
    ``max_train_queries`` queries when given)."""
    train = task.source.load("train")
    if task.max_train_queries is not None and task.max_train_queries < train.n_queries:
        train = train.subset(np.arange(task.max_train_queries))
    return train


def evaluate_scores(data: Any, scores: np.ndarray, *, preset: str, k: int) -> dict[str, float]:
    """:func:`cvxrank.metrics.evaluate` of ``scores`` on ``data`` as plain floats."""
    from cvxrank.metrics import evaluate

    return {key: float(value) for key, value in
            evaluate(data.y, scores, data.query_ptr, preset=preset, k=k).items()}


def run_task(task: Task, shards: Any = None) -> TaskResult:
    """Rebuild the task's data, fit (``repeat`` times), evaluate; return plain values.

    The scores of a split are the model's (:meth:`~cvxrank.formulations.base.Objective.
    scores`: ``X @ w`` row by row with the training data's features, a split with fewer
    padded with zero columns; ConeRank's votes), and every measure reported comes with its
    certificate (:class:`cvxrank.certificates.certify.EvaluationTarget`; with ``task.certify`` the
    fit goes on until they are certified).

    ``shards``: the task's training data already on a Dask cluster (a
    :class:`~cvxrank.distributed.ShardedRankingData`, :func:`training_data`'s split by query):
    the method's objective on them (:func:`cvxrank.distributed.methods.
    sharded_formulation`) is fitted there, the splits evaluated here.

    Raises
    ------
    ValueError, CvxrankError, OSError
        For anything but a failure of :data:`TASK_FAILURES` (recorded in the result).
    """
    from cvxrank.methods import get

    prepare_process()
    method = get(task.method)
    if shards is None:
        from cvxrank.data.pairs import count_pairs

        train = training_data(task)
        sizes = {"train": {"n_documents": train.n_documents, "n_queries": train.n_queries,
                           "n_features": train.n_features,
                           "n_pairs": int(count_pairs(train).sum())}}

        def build() -> Any:
            return method.build(train, loss=task.loss, **task.params)
    else:
        from cvxrank.distributed.methods import sharded_formulation

        sizes = {"train": {"n_documents": shards.n_documents, "n_queries": shards.n_queries,
                           "n_features": shards.n_features, "n_pairs": shards.n_pairs}}

        def build() -> Any:
            return sharded_formulation(method, shards, loss=task.loss, **task.params)
    splits = {split: task.source.load(split) for split in task.evaluate_on}
    target = EvaluationTarget(tuple(splits.values()), reported_measures(
        task.k, mean_ndcg=task.preset == "letor4"), task.preset) if splits else None
    built = []

    def fit_once() -> tuple[Run, float]:
        built.append(build())
        return fit_timed(built[-1], task.solver, tol=task.tol, seed=task.seed,
                         certify=target if task.certify else None,
                         sharded=shards is not None)

    try:
        runs, wall_times = repeat_until(fit_once, repeat=task.repeat, min_time=task.min_time,
                                        max_repeat=task.max_repeat)
        peak = peak_memory(fit_once) if task.measure_memory else None
    except TASK_FAILURES as exc:
        return TaskResult(task=task, runs=[], wall_times=[], sizes=sizes, measures={},
                          error=str(exc), error_type=type(exc).__name__, pid=os.getpid())
    formulation, run = built[len(runs) - 1], runs[-1]
    measures = {}
    for split, data in splits.items():
        sizes[split] = {"n_documents": data.n_documents, "n_queries": data.n_queries}
        measures[split] = evaluate_scores(data, formulation.scores(run.w, data),
                                          preset=task.preset, k=task.k)
    reports = target.report(formulation, run) if target is not None else []
    return TaskResult(task=task, runs=[r.replace(alpha=None) for r in runs],
                      wall_times=wall_times, sizes=sizes, measures=measures,
                      certified=dict(zip(splits, reports, strict=True)),
                      peak_bytes=peak, pid=os.getpid())
