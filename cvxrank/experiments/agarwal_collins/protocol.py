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
   loss at the selected C solved by :func:`cvxrank.fitting.fit_formulation` (``"auto"``)
   to a certified relative gap of ``CERTIFIED_TOL``, evaluated the same way; if that solver
   fails where the zero test proved w = 0 optimal, the optimum is w = 0 and is reported so
   (with the solver's message). **A w = 0 model scores every document alike**, so its
   measures are those of LETOR's tie rule (file order, ``letor3``), not of a learned
   ranking.

Every task runs in any process (:func:`~cvxrank.experiments.backends.run_tasks` with this
module's runner); the certified fits run after the grid, for the selected C.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

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
from cvxrank.experiments.backends import check_backend, run_tasks
from cvxrank.experiments.letor import check_letor_dir, find_folds
from cvxrank.experiments.selection import TIE_BREAK, select_best
from cvxrank.experiments.sources import LetorFold
from cvxrank.experiments.tasks import Task, TaskResult, prepare_process, run_task, training_data

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

Progress = Callable[[str], None]


# -- tasks -------------------------------------------------------------------------------
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


@dataclass(frozen=True)
class ZeroTask:
    """The zero test of one loss on one fold's training data."""

    source: LetorFold
    loss: str
    max_train_queries: int | None = None


@dataclass
class StochasticResult:
    """What :func:`run_stochastic` returns (plain values).

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
    """What :func:`run_certified` returns (plain values).

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

    @property
    def ok(self) -> bool:
        """Whether there is a certified model."""
        return self.error is None


@dataclass
class ZeroResult:
    """What :func:`run_zero` returns: the check's plain values and its seconds."""

    task: ZeroTask
    check: dict[str, Any]
    time: float


def _evaluate(source: LetorFold, w: np.ndarray, d: int) -> dict[str, dict[str, float]]:
    from cvxrank.metrics import evaluate

    out = {}
    for split in ("vali", "test"):
        data = source.load(split).pad_features(d)
        scores = np.asarray(data.X @ w[:d])
        out[split] = {key: float(v) for key, v in
                      evaluate(data.y, scores, data.query_ptr, preset=PRESET, k=K).items()}
    return out


def run_stochastic(task: StochasticTask) -> StochasticResult:
    """Build RankMM on the task's training data, run the paper's solver once for
    ``max(horizons)`` steps and evaluate the weights after each T."""
    from cvxrank.formulations.rankmm import RankMM

    train = training_data(task)
    formulation = RankMM(train, C=task.C, loss=task.loss)
    start = time.perf_counter()
    try:
        snapshots, _ = run_snapshots(formulation, eta0=task.eta0, horizons=task.horizons,
                                     seed=task.seed)
    except (SolverError, PairLimitError, FloatingPointError) as exc:
        return StochasticResult(task, {}, {}, {}, time.perf_counter() - start, error=str(exc),
                                pid=os.getpid())
    elapsed = time.perf_counter() - start
    bad = [s.T for s in snapshots if not np.all(np.isfinite(s.w))]
    if bad:
        return StochasticResult(task, {}, {}, {}, elapsed, pid=os.getpid(),
                                error=f"weights not finite after T = {bad[0]} steps")
    d = train.n_features
    return StochasticResult(
        task, measures={s.T: _evaluate(task.source, s.w, d) for s in snapshots},
        gaps={s.T: s.relative_gap for s in snapshots},
        w_norms={s.T: float(np.linalg.norm(s.w)) for s in snapshots}, time=elapsed,
        pid=os.getpid())


def run_certified(task: CertifiedTask) -> CertifiedResult:
    """Fit the loss at C with :func:`cvxrank.fitting.fit_formulation` to ``task.tol``;
    fall back to w = 0 when the solver fails and the zero test proved w = 0 optimal."""
    from cvxrank.fitting import fit_formulation
    from cvxrank.formulations.rankmm import RankMM

    prepare_process()
    train = training_data(task)
    formulation = RankMM(train, C=task.C, loss=task.loss)
    d = train.n_features
    start = time.perf_counter()
    try:
        run = fit_formulation(formulation, task.solver, tol=task.tol,
                              time_budget=task.time_budget)
    except (CvxrankError, ValueError, MemoryError) as exc:  # not certified, refused
        elapsed = time.perf_counter() - start
        reason = f"{task.solver}: {exc}"
        if not task.zero_optimal:
            return CertifiedResult(task, {}, math.nan, math.nan, task.solver, 0, elapsed,
                                   math.nan, error=reason)
        zero = np.zeros(d)
        return CertifiedResult(task, _evaluate(task.source, zero, d),
                               formulation.primal_value(zero), 0.0, "zero test", 0, elapsed,
                               0.0, note=f"w = 0 proved optimal by the zero test; {reason}")
    elapsed = time.perf_counter() - start
    return CertifiedResult(task, _evaluate(task.source, run.w, d), run.objective,
                           run.relative_gap, run.solver, run.n_iter, elapsed,
                           float(np.linalg.norm(run.w[:d])), note=run.message)


def run_zero(task: ZeroTask) -> ZeroResult:
    """:func:`~cvxrank.experiments.agarwal_collins.zero_optimality.zero_optimality` on the
    task's training data."""
    from cvxrank.experiments.agarwal_collins.zero_optimality import zero_optimality

    start = time.perf_counter()
    check = zero_optimality(training_data(task), task.loss)
    return ZeroResult(task, check.to_dict(), time.perf_counter() - start)


def run_one(task: Any) -> Any:
    """Run any task of this reproduction (the runner given to
    :func:`~cvxrank.experiments.backends.run_tasks`)."""
    if isinstance(task, StochasticTask):
        return run_stochastic(task)
    if isinstance(task, CertifiedTask):
        return run_certified(task)
    if isinstance(task, ZeroTask):
        return run_zero(task)
    if isinstance(task, Task):
        return run_task(task)
    raise TypeError(f"not a task of this reproduction: {type(task).__name__}")


# -- selection ---------------------------------------------------------------------------
@dataclass
class GridPoint:
    """One grid point of one fold, its measures averaged over the seeds.

    Attributes
    ----------
    params : dict
        ``{"C", "eta0", "T"}`` (RankMM) or ``{"C"}`` (RankSVM).
    measures : dict
        ``{"vali": ..., "test": ...}``, each the mean over the seeds that ran.
    relative_gap : float
        Mean relative duality gap of the model (RankSVM: its certified gap).
    w_norm : float
        Mean ``||w||``.
    n_runs : int
        Seeds that ran (0: the point failed).
    error : str or None
    """

    params: dict[str, float]
    measures: dict[str, dict[str, float]]
    relative_gap: float
    w_norm: float
    n_runs: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether any seed ran (what :func:`~cvxrank.experiments.selection.select_best`
        reads)."""
        return self.n_runs > 0

    def to_dict(self) -> dict[str, Any]:
        """Plain values."""
        return {"params": self.params, "ok": self.ok, "n_runs": self.n_runs,
                "relative_gap": self.relative_gap, "w_norm": self.w_norm,
                "error": self.error, **self.measures}


def _mean_measures(items: Sequence[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {split: {key: float(np.mean([m[split][key] for m in items]))
                    for key in items[0][split]} for split in items[0]}


def rankmm_points(results: Sequence[StochasticResult], C_grid: Sequence[float],
                  eta0_grid: Sequence[float], T_grid: Sequence[int]) -> list[GridPoint]:
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
                    error = runs[0].error if runs else "not run"
                    points.append(GridPoint(params, {}, math.nan, math.nan, 0, error))
                    continue
                points.append(GridPoint(
                    params, _mean_measures([r.measures[T] for r in good]),
                    float(np.mean([r.gaps[T] for r in good])),
                    float(np.mean([r.w_norms[T] for r in good])), len(good)))
    return points


def ranksvm_points(results: Sequence[TaskResult]) -> list[GridPoint]:
    """RankSVM's grid points (C increasing) from the standard task results."""
    points = []
    for r in results:
        if not r.ok:
            points.append(GridPoint(dict(r.task.params), {}, math.nan, math.nan, 0, r.error))
            continue
        d = r.sizes["train"]["n_features"]
        points.append(GridPoint(dict(r.task.params), dict(r.measures), r.run.relative_gap,
                                float(np.linalg.norm(r.run.w[:d])), 1))
    return points


@dataclass
class Choice:
    """One method's selected model on one fold.

    Attributes
    ----------
    method : str
        ``"RankMM-1"`` ... or ``"RankSVM"``.
    fold : int
    selected : int
        Position of the selected point in ``points``.
    points : list of GridPoint
        Every grid point of the fold, in the grid's order.
    """

    method: str
    fold: int
    selected: int
    points: list[GridPoint]

    @property
    def best(self) -> GridPoint:
        """The selected point."""
        return self.points[self.selected]

    def to_dict(self, *, with_points: bool = True) -> dict[str, Any]:
        """Plain values (the selection, its measures and, by default, every point)."""
        out = {"method": self.method, "fold": self.fold, "selected": self.best.params,
               "validation": self.best.measures["vali"], "test": self.best.measures["test"],
               "relative_gap": self.best.relative_gap, "w_norm": self.best.w_norm}
        if with_points:
            out["points"] = [p.to_dict() for p in self.points]
        return out


def choose(method: str, fold: int, points: list[GridPoint]) -> Choice:
    """Select by validation MAP (:data:`TIE_BREAK`)."""
    return Choice(method, fold, select_best(points, SELECT), points)  # type: ignore[arg-type]


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

    def mean(self, method: str) -> dict[str, float]:
        """Five-fold (all folds') mean of the selected models' test measures."""
        tests = [c.best.measures["test"] for c in self.choices[method]]
        return {key: float(np.mean([t[key] for t in tests])) for key in tests[0]}

    def certified_mean(self, loss: str) -> dict[str, float] | None:
        """Mean test measures of the certified optima (None when a fold has none)."""
        runs = self.certified.get(loss, [])
        if not runs or not all(r.ok for r in runs):
            return None
        return {key: float(np.mean([r.measures["test"][key] for r in runs]))
                for key in runs[0].measures["test"]}

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for ``--json`` and the JSON file)."""
        from dataclasses import asdict

        return {
            "experiment": "agarwal-collins-fig1", "data": self.data_dir, "folds": self.folds,
            "seeds": self.seeds, "grid": self.grid, "select": SELECT, "tie_break": TIE_BREAK,
            "preset": PRESET, "k": K, "max_train_queries": self.max_train_queries,
            "methods": {m: {"folds": [c.to_dict() for c in cs], "mean": self.mean(m)}
                        for m, cs in self.choices.items()},
            "certified": {LABELS[loss]: {"solver": self.certified_solver,
                                         "folds": [asdict(r) for r in runs],
                                         "mean": self.certified_mean(loss)}
                          for loss, runs in self.certified.items()},
            "zero_optimality": {LABELS[loss]: checks for loss, checks in self.zero.items()},
            "backend": self.backend, "workers": self.workers, "n_tasks": self.n_tasks,
            "elapsed": self.elapsed,
        }


def check_fig1_options(*, C_grid: Sequence[float], eta0_grid: Sequence[float],
                       T_grid: Sequence[int], ranksvm_C: Sequence[float],
                       seeds: Sequence[int], certified_solver: str = "auto") -> None:
    """Refuse empty grids, values that are not finite and positive, negative seeds and an
    unknown certified solver.

    Raises
    ------
    ValueError
        Naming the option.
    """
    for name, values in (("C", C_grid), ("eta0", eta0_grid), ("T", T_grid),
                         ("RankSVM C", ranksvm_C)):
        if not values:
            raise ValueError(f"the {name} grid is empty")
        bad = [v for v in values if not (math.isfinite(float(v)) and float(v) > 0)]
        if bad:
            raise ValueError(f"the {name} grid needs finite values > 0, got {bad[0]}")
    record_interval([int(t) for t in T_grid])
    if not seeds or min(seeds) < 0:
        raise ValueError(f"seeds must be >= 0, got {list(seeds)}")
    from cvxrank.fitting import available_solvers

    known = available_solvers()
    if certified_solver.lower() != "auto" and certified_solver.lower() not in known:
        raise ValueError(f"unknown certified solver {certified_solver!r}; expected auto or one "
                         f"of {', '.join(known)}")


def run_fig1(
    data_dir: str | Path,
    *,
    folds: Sequence[int] | None = None,
    seeds: Sequence[int] = (0,),
    C_grid: Sequence[float] = C_GRID,
    eta0_grid: Sequence[float] = ETA0_GRID,
    T_grid: Sequence[int] = T_GRID,
    ranksvm_C: Sequence[float] = RANKSVM_C_GRID,
    certified: bool = True,
    certified_solver: str = "auto",
    certified_time_budget: float | None = None,
    max_train_queries: int | None = None,
    backend: str = "sequential",
    workers: int | None = None,
    scheduler: str | None = None,
    blas_threads: int | None = 1,
    progress: Progress | None = None,
    progress_bar: bool = False,
) -> Fig1Result:
    """Fig. 1's protocol on the folds of ``data_dir`` (module docstring).

    Parameters
    ----------
    data_dir : path
        The LETOR 3.0 OHSUMED ``QueryLevelNorm`` folder holding ``Fold1`` ...
    folds : sequence of int or None
        Fold numbers (None: every ``FoldK`` folder).
    seeds : sequence of int
        Seeds of the stochastic runs; a grid point's measures are their mean.
    C_grid, eta0_grid, T_grid : sequences
        The paper's grids by default.
    ranksvm_C : sequence of float
        The RankSVM baseline's C grid.
    certified : bool
        Also fit each RankMM at its certified optimum for the selected C.
    certified_solver : str
        The solver of those fits (``"auto"``: :func:`cvxrank.fitting.default_solver`).
    certified_time_budget : float or None
        Solver seconds per certified fit.
    max_train_queries : int or None
        Train on each fold's first this many queries (quick checks).
    backend, workers, scheduler, blas_threads :
        As in :func:`cvxrank.experiments.backends.run_tasks`.
    progress : callable or None
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
    ValueError
        For bad grids, seeds, backend options.
    CvxrankError
        For a malformed data file, or when every point of a fold failed.
    """
    check_fig1_options(C_grid=C_grid, eta0_grid=eta0_grid, T_grid=T_grid,
                       ranksvm_C=ranksvm_C, seeds=seeds, certified_solver=certified_solver)
    check_backend(backend, workers=workers, scheduler=scheduler)
    if max_train_queries is not None and max_train_queries < 1:
        raise ValueError(f"max_train_queries must be >= 1, got {max_train_queries}")
    C_grid, eta0_grid = sorted({float(c) for c in C_grid}), sorted({float(e) for e in eta0_grid})
    T_grid, ranksvm_C = sorted({int(t) for t in T_grid}), sorted({float(c) for c in ranksvm_C})
    seeds = sorted({int(s) for s in seeds})
    folds = find_folds(data_dir) if folds is None else [int(f) for f in folds]
    root = check_letor_dir(data_dir, folds)
    sources = {k: LetorFold(str(root.resolve()), k) for k in folds}
    say = progress or (lambda line: None)
    options = {"backend": backend, "workers": workers, "scheduler": scheduler,
               "blas_threads": blas_threads, "progress": progress_bar}

    tasks: list[Any] = []
    for k in folds:  # fold-major, so that a worker runs one fold's tasks together
        tasks += [ZeroTask(sources[k], loss, max_train_queries) for loss in LABELS]
        tasks += [StochasticTask(sources[k], loss, C, eta0, seed, tuple(T_grid),
                                 max_train_queries)
                  for loss in LABELS for C in C_grid for eta0 in eta0_grid for seed in seeds]
        tasks += [Task(source=sources[k], method="ranksvm", loss="hinge", params={"C": C},
                       solver="auto", tol=CERTIFIED_TOL, evaluate_on=("vali", "test"),
                       preset=PRESET, k=K, max_train_queries=max_train_queries)
                  for C in ranksvm_C]
    n_runs = len(folds) * len(LABELS) * len(C_grid) * len(eta0_grid) * len(seeds)
    say(f"grid: {len(tasks)} tasks ({n_runs} stochastic runs of {T_grid[-1]} steps, "
        f"{len(folds) * len(ranksvm_C)} RankSVM fits, {len(folds) * len(LABELS)} zero tests) "
        f"on the {backend} backend")
    start = time.perf_counter()
    results: list[Any] = [None] * len(tasks)
    for i, result in run_tasks(tasks, runner=run_one, max_chunk=CHUNK_TASKS,
                               desc="agarwal-collins grid", **options):
        results[i] = result
    grid_time = time.perf_counter() - start

    choices: dict[str, list[Choice]] = {label: [] for label in LABELS.values()}
    choices[RANKSVM] = []
    zero: dict[str, list[dict[str, Any]]] = {loss: [] for loss in LABELS}
    for k in folds:
        mine = [r for r in results if r.task.source == sources[k]]
        for loss, label in LABELS.items():
            runs = [r for r in mine if isinstance(r, StochasticResult) and r.task.loss == loss]
            choices[label].append(choose(label, k, rankmm_points(runs, C_grid, eta0_grid,
                                                                 T_grid)))
            check = next(r for r in mine if isinstance(r, ZeroResult) and r.task.loss == loss)
            zero[loss].append({"fold": k, **check.check, "time": check.time})
        svm = sorted((r for r in mine if isinstance(r, TaskResult)),
                     key=lambda r: r.task.params["C"])
        choices[RANKSVM].append(choose(RANKSVM, k, ranksvm_points(svm)))
    say(f"grid done in {grid_time:.1f} s")

    certified_runs: dict[str, list[CertifiedResult]] = {}
    cert_time = 0.0
    if certified:
        cert_tasks = [CertifiedTask(sources[k], loss, choices[label][j].best.params["C"],
                                    certified_solver, CERTIFIED_TOL, certified_time_budget,
                                    bool(zero[loss][j]["zero_optimal"]), max_train_queries)
                      for j, k in enumerate(folds) for loss, label in LABELS.items()]
        say(f"certified optima: {len(cert_tasks)} fits ({certified_solver}, relative gap "
            f"{CERTIFIED_TOL:g}) at the selected C")
        start = time.perf_counter()
        fitted: list[Any] = [None] * len(cert_tasks)
        for i, result in run_tasks(cert_tasks, runner=run_one, max_chunk=CHUNK_TASKS,
                                   desc="agarwal-collins certified", **options):
            fitted[i] = result
            say(f"  fold {result.task.source.fold} {LABELS[result.task.loss]} C="
                f"{result.task.C:g}: " + (f"{result.solver}, {result.time:.1f} s" if result.ok
                                          else f"failed ({result.error})"))
        cert_time = time.perf_counter() - start
        certified_runs = {loss: [r for r in fitted if r.task.loss == loss] for loss in LABELS}

    started = None if backend == "sequential" or scheduler else workers or os.cpu_count()
    return Fig1Result(
        data_dir=str(root), folds=folds, seeds=seeds,
        grid={"C": C_grid, "eta0": eta0_grid, "T": T_grid, "ranksvm_C": ranksvm_C},
        choices=choices, certified=certified_runs, zero=zero, backend=backend,
        workers=started, elapsed={"grid": grid_time, "certified": cert_time,
                                  "total": grid_time + cert_time},
        max_train_queries=max_train_queries, certified_solver=certified_solver,
        n_tasks=len(tasks) + (len(folds) * len(LABELS) if certified else 0))

