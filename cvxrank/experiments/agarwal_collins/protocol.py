r"""Fig. 1's protocol (Agarwal & Collins 2010, Sect. 4) as tasks, selection and results.

For each fold of the LETOR folder and each RankMM loss (RankMM-1/2/3, Sects. 3.1-3.3):

1. **Stochastic grid** (:class:`StochasticTask`): train on ``train.txt`` with the paper's
   solver (``sgp`` for RankMM-1 and -3, ``seg`` for RankMM-2) at every C of the C grid and
   :math:`\eta_0` of the :math:`\eta_0` grid, one run of :math:`\max T` steps per seed whose
   weights after each T of the T grid are the runs of T steps
   (:mod:`~cvxrank.experiments.agarwal_collins.snapshots` says why that is exact); evaluate
   every (C, :math:`\eta_0`, T) on ``vali.txt`` and ``test.txt`` (``letor3``).
2. **Selection**: per fold and loss, the grid point (C, :math:`\eta_0`, T) of largest
   validation MAP, the measures of a point being their mean over the seeds;
   :data:`TIE_BREAK` (:func:`cvxrank.experiments.selection.select_best`).
3. **RankSVM** (LETOR's baseline): the hinge RankSVM, the standard
   :class:`~cvxrank.experiments.tasks.Task` of ``cvxrank grid``, C over
   :data:`~cvxrank.experiments.agarwal_collins.RANKSVM_C_GRID`, solved to a certified
   relative duality gap of :data:`~cvxrank.experiments.agarwal_collins.CERTIFIED_TOL` by the
   default solver (``apg`` on the hinge's box dual: a few seconds per fold at these C),
   selected by validation MAP the same way.
4. **Zero test** (:class:`ZeroTask`): whether w = 0 is optimal for the loss on the fold's
   training data (:mod:`~cvxrank.experiments.agarwal_collins.zero_optimality`; for every C).
5. **Certified optimum** (:class:`CertifiedTask`), what the paper could not show: the same
   loss at the selected C solved by :func:`cvxrank.fitting.fit_formulation` (``"auto"``;
   RankMM-1 as the hinge RankSVM it is, :meth:`~cvxrank.formulations.rankmm.RankMM.as_ranksvm`,
   by the 1-slack, whose exact finish reaches the optimum itself) to a certified relative
   gap of ``CERTIFIED_TOL`` and on until its reported measures are certified, evaluated the
   same way; if that solver
   fails where the zero test proved w = 0 optimal, the optimum is w = 0 and is reported so
   (with the solver's message). **A w = 0 model scores every document alike**, so its
   measures are those of LETOR's tie rule (file order, ``letor3``), not of a learned
   ranking.

:class:`Fig1Config` holds every option of the reproduction (``Fig1Config.quick()``: the small
run for checks); :func:`run_fig1` runs it. Every task carries its own ``run()`` and runs in
any process (:class:`~cvxrank.experiments.backends.Execution`); the certified fits run after
the grid, for the selected C. The points, choices and means are those of
:mod:`cvxrank.experiments.selection`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from cvxrank.certificates.certify import combined_report, measure_report
from cvxrank.errors import CvxrankError, PairLimitError, SolverError
from cvxrank.experiments.agarwal_collins import (
    C_GRID,
    CERTIFIED_TOL,
    ETA0_GRID,
    LABELS,
    RANKSVM_C_GRID,
    T_GRID,
)
from cvxrank.experiments.agarwal_collins.snapshots import record_interval, run_snapshots
from cvxrank.experiments.backends import Log
from cvxrank.experiments.config import (
    LetorConfig,
    check_grid,
    check_seeds,
    increasing,
    normalize,
)
from cvxrank.experiments.selection import (
    TIE_BREAK,
    Choice,
    Point,
    choose,
    fold_mean,
    mean_measures,
    task_points,
)
from cvxrank.experiments.sources import LetorFold
from cvxrank.experiments.tasks import (
    Task,
    evaluate_scores,
    prepare_process,
    training_data,
)

#: Largest number of tasks a worker runs in one go (so that progress moves within a fold).
CHUNK_TASKS = 16

#: The measure that selects (Sect. 4: "the parameters that gave the highest MAP on the
#: validation set").
SELECT = "map"

#: The metric conventions (LETOR 3.0's Eval-Score-3.0.pl) and the largest cut-off.
PRESET = "letor3"
K = 10

#: The RankSVM baseline's loss (and its label in the tables).
RANKSVM = "RankSVM"

#: The stats of a point (:class:`~cvxrank.experiments.selection.Point`): the model's
#: relative duality gap and ``||w||``, means over the seeds.
STATS = ("relative_gap", "w_norm")

#: How RankSVM's fits give them (its certified gap).
RANKSVM_STATS = {
    "relative_gap": lambda r: r.run.relative_gap,
    "w_norm": lambda r: float(np.linalg.norm(r.run.w[:r.sizes["train"]["n_features"]])),
}


# -- tasks -------------------------------------------------------------------------------
def _evaluate(source: LetorFold, w: np.ndarray, d: int) -> dict[str, dict[str, float]]:
    """The scores ``X @ w[:d]`` on ``vali.txt`` and ``test.txt`` (``letor3``)."""
    out = {}
    for split in ("vali", "test"):
        data = source.load(split).pad_features(d)
        out[split] = evaluate_scores(data, np.asarray(data.X @ w[:d]), preset=PRESET, k=K)
    return out


@dataclass(frozen=True)
class StochasticTask:
    """One stochastic run of ``max(horizons)`` steps, evaluated after each T of
    ``horizons``.

    Attributes
    ----------
    source : LetorFold
    loss : str
        ``"average"``, ``"max"`` or ``"max_average"``.
    C, eta0 : float
    seed : int
    horizons : tuple of int
        The T grid.
    max_train_queries : int or None
        Train on the fold's first this many queries (quick checks).
    """

    source: LetorFold
    loss: str
    C: float
    eta0: float
    seed: int
    horizons: tuple[int, ...] = T_GRID
    max_train_queries: int | None = None

    def run(self) -> StochasticResult:
        """Build RankMM on the task's training data, run the paper's solver once for
        ``max(horizons)`` steps and evaluate the weights after each T."""
        from cvxrank.formulations.rankmm import RankMM

        train = training_data(self)
        formulation = RankMM(train, C=self.C, loss=self.loss)
        start = time.perf_counter()
        try:
            snapshots, _ = run_snapshots(formulation, eta0=self.eta0, horizons=self.horizons,
                                         seed=self.seed)
        except (SolverError, PairLimitError, FloatingPointError) as exc:
            return StochasticResult(self, {}, {}, {}, time.perf_counter() - start,
                                    error=str(exc), pid=os.getpid())
        elapsed = time.perf_counter() - start
        bad = [s.T for s in snapshots if not np.all(np.isfinite(s.w))]
        if bad:
            return StochasticResult(self, {}, {}, {}, elapsed, pid=os.getpid(),
                                    error=f"weights not finite after T = {bad[0]} steps")
        d = train.n_features
        return StochasticResult(
            self, measures={s.T: _evaluate(self.source, s.w, d) for s in snapshots},
            gaps={s.T: s.relative_gap for s in snapshots},
            w_norms={s.T: float(np.linalg.norm(s.w)) for s in snapshots}, time=elapsed,
            pid=os.getpid())


@dataclass(frozen=True)
class CertifiedTask:
    """The certified optimum of one loss at one C.

    Attributes
    ----------
    source : LetorFold
    loss : str
    C : float
    solver : str
        A name of :func:`cvxrank.fitting.fit_formulation` (``"auto"``).
    tol : float
        Certified relative duality gap.
    time_budget : float or None
        Solver seconds before it gives up (None: its default).
    zero_optimal : bool
        The zero test proved w = 0 optimal (the fallback when the solver fails).
    max_train_queries : int or None
    """

    source: LetorFold
    loss: str
    C: float
    solver: str = "auto"
    tol: float = CERTIFIED_TOL
    time_budget: float | None = None
    zero_optimal: bool = False
    max_train_queries: int | None = None

    def run(self) -> CertifiedResult:
        """Fit the loss at C with :func:`cvxrank.fitting.fit_formulation` to ``tol`` and on
        until the measures of vali.txt and test.txt are certified; fall back to w = 0 when
        the solver does not converge (or fails) and the zero test proved w = 0 optimal."""
        from cvxrank.certificates.certify import EvaluationTarget, reported_measures
        from cvxrank.fitting import fit_formulation
        from cvxrank.formulations.rankmm import RankMM

        prepare_process()
        train = training_data(self)
        formulation = RankMM(train, C=self.C, loss=self.loss)
        target = EvaluationTarget(tuple(self.source.load(s) for s in ("vali", "test")),
                                  reported_measures(K), PRESET)
        d = train.n_features
        fitted, solver = formulation, self.solver
        if formulation.loss.sum_of_pair_hinges and self.solver == "auto":
            # a hinge RankSVM: the 1-slack and its exact finish
            fitted, solver = formulation.as_ranksvm(), "1-slack"
        start = time.perf_counter()
        try:
            run = fit_formulation(fitted, solver, tol=self.tol,
                                  time_budget=self.time_budget, certify=target)
            reason = "" if run.converged else f"{run.solver}: {run.message}"
        except (CvxrankError, ValueError, MemoryError) as exc:  # a refused problem
            run, reason = None, f"{self.solver}: {exc}"
        elapsed = time.perf_counter() - start
        if run is None or not run.converged:
            if not self.zero_optimal:
                return CertifiedResult(self, {}, math.nan, math.nan, self.solver, 0, elapsed,
                                       math.nan, error=reason)
            zero = np.zeros(d)
            return CertifiedResult(self, _evaluate(self.source, zero, d),
                                   formulation.primal_value(zero), 0.0, "zero test", 0,
                                   elapsed, 0.0,
                                   note=f"w = 0 proved optimal by the zero test; {reason}",
                                   certified=measure_report(None, reported_measures(K)))
        return CertifiedResult(self, _evaluate(self.source, run.w, d), run.objective,
                               run.relative_gap, run.solver, run.n_iter, elapsed,
                               float(np.linalg.norm(run.w[:d])), note=run.message,
                               certified=target.report(fitted, run)[1])


@dataclass(frozen=True)
class ZeroTask:
    """The zero test of one loss on one fold's training data."""

    source: LetorFold
    loss: str
    max_train_queries: int | None = None

    def run(self) -> ZeroResult:
        """:func:`~cvxrank.experiments.agarwal_collins.zero_optimality.zero_optimality` on
        the task's training data."""
        from cvxrank.experiments.agarwal_collins.zero_optimality import zero_optimality

        start = time.perf_counter()
        check = zero_optimality(training_data(self), self.loss)
        return ZeroResult(self, check.to_dict(), time.perf_counter() - start)


@dataclass
class StochasticResult:
    """What :meth:`StochasticTask.run` returns (plain values).

    Attributes
    ----------
    task : StochasticTask
    measures : dict
        ``{T: {"vali": evaluate(...), "test": evaluate(...)}}``.
    gaps : dict
        ``{T: relative duality gap}`` of the model after T steps.
    w_norms : dict
        ``{T: ||w||}``.
    time : float
        Solver seconds of the run (all T).
    error : str or None
    pid : int
    """

    task: StochasticTask
    measures: dict[int, dict[str, dict[str, float]]]
    gaps: dict[int, float]
    w_norms: dict[int, float]
    time: float
    error: str | None = None
    pid: int = 0


@dataclass
class CertifiedResult:
    """What :meth:`CertifiedTask.run` returns (plain values).

    Attributes
    ----------
    task : CertifiedTask
    measures : dict
        ``{"vali": ..., "test": ...}`` (empty when it failed).
    objective, relative_gap : float
        :math:`P(w)` and the certified relative gap (NaN when it failed).
    solver : str
        The solver that ran (``"zero test"`` for the w = 0 fallback).
    n_iter : int
    time : float
        Wall-clock seconds of the fit.
    w_norm : float
    note : str
        The solver's failure when the fallback was used, or its zero-model note.
    error : str or None
    certified : dict
        Per test measure: whether it is the optimum's (``certified``) and the test queries
        that are not (:func:`cvxrank.certificates.certify.measure_report`).
    """

    task: CertifiedTask
    measures: dict[str, dict[str, float]]
    objective: float
    relative_gap: float
    solver: str
    n_iter: int
    time: float
    w_norm: float
    note: str = ""
    error: str | None = None
    certified: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether there is a certified model."""
        return self.error is None


@dataclass
class ZeroResult:
    """What :meth:`ZeroTask.run` returns: the check's plain values and its seconds."""

    task: ZeroTask
    check: dict[str, Any]
    time: float


# -- selection ---------------------------------------------------------------------------
def rankmm_points(results: Sequence[StochasticResult], C_grid: Sequence[float],
                  eta0_grid: Sequence[float], T_grid: Sequence[int]) -> list[Point]:
    """The grid points (C, eta0, T) of one fold and loss in the grid's order (C, then eta0,
    then T increasing), each averaged over the seeds of ``results`` that ran."""
    by_point: dict[tuple[float, float], list[StochasticResult]] = {}
    for r in results:
        by_point.setdefault((r.task.C, r.task.eta0), []).append(r)
    points = []
    for C in C_grid:
        for eta0 in eta0_grid:
            runs = by_point.get((C, eta0), [])
            good = [r for r in runs if r.error is None]
            for T in T_grid:
                params = {"C": C, "eta0": eta0, "T": T}
                if not good:
                    points.append(Point.failed(params, runs[0].error if runs else "not run",
                                               STATS))
                    continue
                points.append(Point.mean_of(params, [r.measures[T] for r in good],
                                            {"relative_gap": [r.gaps[T] for r in good],
                                             "w_norm": [r.w_norms[T] for r in good]}))
    return points


# -- the whole experiment ----------------------------------------------------------------
@dataclass
class Fig1Result:
    """The reproduction's outcome (:func:`run_fig1`).

    Attributes
    ----------
    data_dir : str
    folds : list of int
    seeds : list of int
    grid : dict
        ``{"C", "eta0", "T", "ranksvm_C"}`` value lists.
    choices : dict
        ``{method: [Choice per fold]}`` for ``"RankMM-1"``, ``"RankMM-2"``, ``"RankMM-3"``
        (early-stopped, the paper's protocol) and ``"RankSVM"``.
    certified : dict
        ``{loss: [CertifiedResult per fold]}`` (empty without certified fits).
    zero : dict
        ``{loss: [zero test dict per fold]}``.
    backend : str
    workers : int or None
    elapsed : dict
        Wall-clock seconds of ``"grid"`` (stochastic runs, RankSVM and zero tests),
        ``"certified"`` and ``"total"``.
    max_train_queries : int or None
    certified_solver : str
    n_tasks : int
    protocol : str
        Which options made the run (:meth:`~cvxrank.experiments.config.ExperimentConfig.protocol`).
    """

    data_dir: str
    folds: list[int]
    seeds: list[int]
    grid: dict[str, list[float]]
    choices: dict[str, list[Choice]]
    certified: dict[str, list[CertifiedResult]]
    zero: dict[str, list[dict[str, Any]]]
    backend: str
    workers: int | None
    elapsed: dict[str, float]
    max_train_queries: int | None = None
    certified_solver: str = "auto"
    n_tasks: int = 0
    protocol: str = "paper"

    def mean(self, method: str) -> dict[str, float]:
        """Five-fold (all folds') mean of the selected models' test measures."""
        return fold_mean(self.choices[method])

    def certified_mean(self, loss: str) -> dict[str, float] | None:
        """Mean test measures of the certified optima (None when a fold has none)."""
        runs = self.certified.get(loss, [])
        if not runs or not all(r.ok for r in runs):
            return None
        return mean_measures([r.measures["test"] for r in runs])

    def optimum_certified(self, loss: str) -> dict[str, dict[str, Any]]:
        """Per test measure of the certified optima: certified on every fold, and the
        uncertified test queries summed over the folds (None when a fold has no
        certificate)."""
        runs = self.certified.get(loss, [])
        return combined_report([r.certified for r in runs],
                               runs[0].certified if runs else ())

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for ``--json`` and the JSON file)."""
        from dataclasses import asdict

        return {
            "experiment": "agarwal-collins-fig1", "data": self.data_dir, "folds": self.folds,
            "seeds": self.seeds, "grid": self.grid, "select": SELECT, "tie_break": TIE_BREAK,
            "preset": PRESET, "protocol": self.protocol, "k": K,
            "max_train_queries": self.max_train_queries,
            "methods": {m: {"folds": [c.to_dict() for c in cs], "mean": self.mean(m)}
                        for m, cs in self.choices.items()},
            "certified": {LABELS[loss]: {"solver": self.certified_solver,
                                         "folds": [asdict(r) for r in runs],
                                         "mean": self.certified_mean(loss),
                                         "measures_certified": self.optimum_certified(loss)}
                          for loss, runs in self.certified.items()},
            "zero_optimality": {LABELS[loss]: checks for loss, checks in self.zero.items()},
            "backend": self.backend, "workers": self.workers, "n_tasks": self.n_tasks,
            "elapsed": self.elapsed,
        }


@dataclass(frozen=True)
class Fig1Config(LetorConfig):
    """Every option of :func:`run_fig1` (beside the folder, folds, training queries and
    execution of :class:`~cvxrank.experiments.config.LetorConfig`).

    Attributes
    ----------
    seeds : tuple of int
        Seeds of the stochastic runs; a grid point's measures are their mean.
    C_grid, eta0_grid, T_grid : tuples
        The paper's grids by default (one run of ``max(T_grid)`` steps serves every T).
    ranksvm_C : tuple of float
        The RankSVM baseline's C grid.
    certified : bool
        Also fit each RankMM at its certified optimum for the selected C.
    certified_solver : str
        The solver of those fits (``"auto"``: :func:`cvxrank.fitting.default_solver`).
    certified_time_budget : float or None
        Solver seconds per certified fit (None: the solver's own limits).

    Raises
    ------
    ValueError
        For an empty grid, a value that is not finite and positive, a T grid without a
        common record interval, negative seeds, an unknown certified solver, bad training
        queries or backend options.
    """

    #: ``--quick``: C = 10, two eta0, T in 100 250, one RankSVM C, the first 20 training
    #: queries.
    QUICK: ClassVar[dict[str, Any]] = {"C_grid": (10.0,), "eta0_grid": (1e-3, 1e-2),
                                       "T_grid": (100, 250), "ranksvm_C": (1e-4,),
                                       "max_train_queries": 20}

    seeds: tuple[int, ...] = (0,)
    C_grid: tuple[float, ...] = C_GRID
    eta0_grid: tuple[float, ...] = ETA0_GRID
    T_grid: tuple[int, ...] = T_GRID
    ranksvm_C: tuple[float, ...] = RANKSVM_C_GRID
    certified: bool = True
    certified_solver: str = "auto"
    certified_time_budget: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, values in (("C", self.C_grid), ("eta0", self.eta0_grid), ("T", self.T_grid),
                             ("RankSVM C", self.ranksvm_C)):
            check_grid(name, values)
        record_interval([int(t) for t in self.T_grid])
        check_seeds(self.seeds)
        from cvxrank.fitting import available_solvers

        known = available_solvers()
        solver = self.certified_solver.lower()
        if solver != "auto" and solver not in known:
            raise ValueError(f"unknown certified solver {self.certified_solver!r}; expected "
                             f"auto or one of {', '.join(known)}")
        normalize(self, seeds=increasing(self.seeds, int), C_grid=increasing(self.C_grid),
                  eta0_grid=increasing(self.eta0_grid), T_grid=increasing(self.T_grid, int),
                  ranksvm_C=increasing(self.ranksvm_C))


def grid_tasks(config: Fig1Config, sources: dict[int, LetorFold]) -> list[tuple[str, Any]]:
    """The ``(kind, task)`` pairs of the grid, fold-major (so that a worker runs one fold's
    tasks together): the zero tests, the stochastic runs, the RankSVM fits."""
    tasks: list[tuple[str, Any]] = []
    n = config.max_train_queries
    for source in sources.values():
        tasks += [("zero", ZeroTask(source, loss, n)) for loss in LABELS]
        tasks += [("stochastic", StochasticTask(source, loss, C, eta0, seed, config.T_grid, n))
                  for loss in LABELS for C in config.C_grid for eta0 in config.eta0_grid
                  for seed in config.seeds]
        tasks += [("ranksvm", Task(source=source, method="ranksvm", loss="hinge",
                                   params={"C": C}, solver="auto", tol=CERTIFIED_TOL,
                                   evaluate_on=("vali", "test"), preset=PRESET, k=K,
                                   max_train_queries=n))
                  for C in config.ranksvm_C]
    return tasks


def _by_fold_and_loss(results: list[Any], *, fold: bool = True) -> dict[Any, list[Any]]:
    """``results`` grouped by their task's ``(source, loss)`` (``loss`` alone without
    ``fold``), each group in the order given."""
    groups: dict[Any, list[Any]] = {}
    for r in results:
        key = (r.task.source, r.task.loss) if fold else r.task.loss
        groups.setdefault(key, []).append(r)
    return groups


def grid_choices(config: Fig1Config, sources: dict[int, LetorFold],
                 results: dict[str, list[Any]]
                 ) -> tuple[dict[str, list[Choice]], dict[str, list[dict[str, Any]]]]:
    """Each method's choice per fold (``{method: [Choice per fold]}``) and the zero tests
    (``{loss: [check per fold]}``) from the results of :func:`grid_tasks` by kind."""
    choices: dict[str, list[Choice]] = {label: [] for label in LABELS.values()}
    choices[RANKSVM] = []
    zero: dict[str, list[dict[str, Any]]] = {loss: [] for loss in LABELS}
    stochastic = _by_fold_and_loss(results["stochastic"])
    checks = _by_fold_and_loss(results["zero"])
    for k, source in sources.items():
        for loss, label in LABELS.items():
            runs = stochastic.get((source, loss), [])
            points = rankmm_points(runs, config.C_grid, config.eta0_grid, config.T_grid)
            choices[label].append(choose(label, k, points, SELECT))
            check = checks[source, loss][0]
            zero[loss].append({"fold": k, **check.check, "time": check.time})
        svm = [r for r in results["ranksvm"] if r.task.source == source]
        choices[RANKSVM].append(choose(RANKSVM, k, task_points(svm, RANKSVM_STATS), SELECT))
    return choices, zero


def certified_tasks(config: Fig1Config, sources: dict[int, LetorFold],
                    choices: dict[str, list[Choice]],
                    zero: dict[str, list[dict[str, Any]]]) -> list[CertifiedTask]:
    """The certified optimum of every loss at each fold's selected C, fold-major (w = 0 the
    fallback where the zero test proved it optimal)."""
    return [CertifiedTask(source, loss, choices[label][j].best.params["C"],
                          config.certified_solver, CERTIFIED_TOL, config.certified_time_budget,
                          bool(zero[loss][j]["zero_optimal"]), config.max_train_queries)
            for j, source in enumerate(sources.values()) for loss, label in LABELS.items()]


def run_fig1(config: Fig1Config, *, log: Log | None = None,
             progress_bar: bool = False) -> Fig1Result:
    """Fig. 1's protocol on the folds of ``config.data`` (module docstring).

    Parameters
    ----------
    config : Fig1Config
    log : callable or None
        Called with one line per phase.
    progress_bar : bool
        A progress bar on stderr while tasks run.

    Returns
    -------
    Fig1Result

    Raises
    ------
    FileNotFoundError
        For a missing folder or split file (before any task runs).
    CvxrankError
        For a malformed data file, or when every point of a fold failed.
    """
    root, sources = config.fold_sources()
    folds = list(sources)
    say = log or (lambda line: None)
    execution = config.execution
    tasks = grid_tasks(config, sources)
    n_runs = (len(folds) * len(LABELS) * len(config.C_grid) * len(config.eta0_grid)
              * len(config.seeds))
    say(f"grid: {len(tasks)} tasks ({n_runs} stochastic runs of {config.T_grid[-1]} steps, "
        f"{len(folds) * len(config.ranksvm_C)} RankSVM fits, "
        f"{len(folds) * len(LABELS)} zero tests) on the {execution.backend} backend")
    start = time.perf_counter()
    results = execution.run_by_kind(tasks, max_chunk=CHUNK_TASKS, progress=progress_bar,
                                    desc="agarwal-collins grid")
    grid_time = time.perf_counter() - start
    choices, zero = grid_choices(config, sources, results)
    say(f"grid done in {grid_time:.1f} s")

    certified_runs: dict[str, list[CertifiedResult]] = {}
    cert_time = 0.0
    if config.certified:
        cert_tasks = certified_tasks(config, sources, choices, zero)
        say(f"certified optima: {len(cert_tasks)} fits ({config.certified_solver}, relative "
            f"gap {CERTIFIED_TOL:g}) at the selected C")

        def done(result: CertifiedResult) -> None:
            say(f"  fold {result.task.source.fold} {LABELS[result.task.loss]} C="
                f"{result.task.C:g}: " + (f"{result.solver}, {result.time:.1f} s" if result.ok
                                          else f"failed ({result.error})"))

        start = time.perf_counter()
        fitted = execution.run(cert_tasks, on_result=done, max_chunk=CHUNK_TASKS,
                               progress=progress_bar, desc="agarwal-collins certified")
        cert_time = time.perf_counter() - start
        by_loss = _by_fold_and_loss(fitted, fold=False)
        certified_runs = {loss: by_loss.get(loss, []) for loss in LABELS}

    return Fig1Result(
        data_dir=str(root), folds=folds, seeds=list(config.seeds),
        grid={"C": list(config.C_grid), "eta0": list(config.eta0_grid),
              "T": list(config.T_grid), "ranksvm_C": list(config.ranksvm_C)},
        choices=choices, certified=certified_runs, zero=zero, backend=execution.backend,
        workers=execution.started_workers,
        elapsed={"grid": grid_time, "certified": cert_time, "total": grid_time + cert_time},
        max_train_queries=config.max_train_queries, certified_solver=config.certified_solver,
        n_tasks=len(tasks) + (len(folds) * len(LABELS) if config.certified else 0),
        protocol=config.protocol())
