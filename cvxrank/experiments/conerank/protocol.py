r"""Table 1 (MQ2008), Fig. 3 and Fig. 4 of Tran & Pham as tasks, selection and results.

For each fold of the LETOR 4.0 folder, on the z-scored splits
(:mod:`~cvxrank.experiments.conerank.standardize`):

1. **ConeRank** (:class:`ConeTask`): :class:`~cvxrank.formulations.conerank.ConeRank` at K
   basis vectors with the paper's normalization (:math:`\alpha = 1`, :math:`\rho = \sqrt N`,
   :math:`c = 2\rho`), trained on ``train.txt`` by Sect. 4.1's stochastic Alg. 1
   (:func:`~cvxrank.solvers.conerank.solve_stochastic`, ``variant="sg"`` or ``"eg"``, the
   paper's :math:`\mu`) for ``passes`` passes over the queries, one run per seed. After every
   pass the basis U is evaluated on ``vali.txt`` and ``test.txt`` (``letor4``, the
   conventions of LETOR 4.0's ``Eval-Score-4.0.pl``) through the linear scorer
   :func:`~cvxrank.formulations.conerank.linear_direction` (Alg. 2's ranking up to ties), and on
   ``test.txt`` also through Alg. 2 literally (:func:`~cvxrank.formulations.conerank.vote_scores`)
   as a check. A run of t passes is the prefix of the run of ``passes`` passes with the same
   seed (the start and the query orders are drawn from one generator, pass after pass, and
   nothing in a pass depends on the number of passes), so one run serves every t.
2. **Selection**: per fold, variant and K, the number of passes t in 1..``passes`` of largest
   validation MAP, a point's measures being their mean over the seeds;
   :data:`~cvxrank.experiments.selection.TIE_BREAK` (the fewest passes).
3. **RankSVM**: the hinge RankSVM (LETOR 4.0's RankSVM-struct is the hinge RankSVM), the
   standard :class:`~cvxrank.experiments.tasks.Task` of ``cvxrank grid`` on the same z-scored
   folds, C over :data:`~cvxrank.experiments.conerank.RANKSVM_C_GRID`, solved to a certified
   relative duality gap of :data:`~cvxrank.experiments.conerank.RANKSVM_TOL` by the default
   solver, selected by validation MAP the same way.
4. **Fig. 3** (``K_grid``): step 1-2 for every K of the grid (variants ``sweep_variants``,
   the first seed only unless ``sweep_all_seeds``), the test measures of the selected pass.
5. **Fig. 4** (:class:`SpectrumTask`): the eigenvalues of :math:`Z^\top Z / p`, the
   second-moment (non-centred) matrix of the p normalized ordered pair differences (5) of the
   training set, sorted decreasingly, and their cumulative energy.

Every task runs in any process (:func:`~cvxrank.experiments.backends.run_tasks` with
:func:`run_one`); the ConeRank runs are the long ones.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cvxrank.errors import PairLimitError, SolverError
from cvxrank.experiments.backends import check_backend, run_tasks
from cvxrank.experiments.conerank import (
    ENERGY_LEVELS,
    K_GRID,
    LABELS,
    PAPER_ALPHA,
    PAPER_K,
    PAPER_MU,
    PASSES,
    RANKSVM,
    RANKSVM_C_GRID,
    RANKSVM_LOSS,
    RANKSVM_TOL,
    SWEEP_VARIANTS,
)
from cvxrank.experiments.conerank.standardize import StandardizedFold
from cvxrank.experiments.letor import check_letor_dir, find_folds
from cvxrank.experiments.selection import TIE_BREAK, select_best
from cvxrank.experiments.tasks import Task, TaskResult, run_task

#: The measure that selects (validation MAP, as LETOR's baselines).
SELECT = "map"

#: LETOR 4.0's conventions (``Eval-Score-4.0.pl``) and the largest cut-off.
PRESET = "letor4"
K_CUT = 10

#: Splits evaluated after every pass: the linear scorer on vali and test, Alg. 2's votes on
#: test.
SPLITS = ("vali", "test", "test_votes")

Progress = Callable[[str], None]


# -- tasks -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConeTask:
    """One stochastic run of Alg. 1, evaluated after every pass.

    Attributes
    ----------
    source : StandardizedFold
    variant : str
        ``"sg"`` or ``"eg"``.
    K : int
    seed : int
    passes : int
    mu : float
        The step of both blocks.
    max_train_queries : int or None
        Train on the fold's first this many queries (quick checks).
    """

    source: StandardizedFold
    variant: str
    K: int
    seed: int
    passes: int
    mu: float
    max_train_queries: int | None = None


@dataclass(frozen=True)
class SpectrumTask:
    """The spectrum of the training set's normalized ordered pair differences."""

    source: StandardizedFold
    max_train_queries: int | None = None


@dataclass
class ConeResult:
    """What :func:`run_cone` returns (plain values).

    Attributes
    ----------
    task : ConeTask
    measures : dict
        ``{t: {"vali": ..., "test": ..., "test_votes": ...}}`` for t = 0 (the random start)
        .. passes: :func:`cvxrank.metrics.evaluate` (``letor4``) of the basis after t passes.
    objective : dict
        ``{t: objective (18)}``.
    n_pairs, n_queries : int
        Ordered pairs and queries with pairs of the training set.
    time : float
        Solver seconds of the run (the per-pass evaluation excluded).
    wall_time : float
        Wall-clock seconds of the run, evaluations included.
    error : str or None
    pid : int
    """

    task: ConeTask
    measures: dict[int, dict[str, dict[str, float]]]
    objective: dict[int, float]
    n_pairs: int
    n_queries: int
    time: float
    wall_time: float
    error: str | None = None
    pid: int = 0


@dataclass
class SpectrumResult:
    """What :func:`run_spectrum` returns.

    Attributes
    ----------
    task : SpectrumTask
    eigenvalues : ndarray
        Of :math:`Z^\\top Z / p`, decreasing.
    n_pairs : int
    rho : float
        The normalization's :math:`\\rho`.
    constant_features : list of int
        Features (1-based) constant on the training set (0 after the z-scoring).
    time : float
    """

    task: SpectrumTask
    eigenvalues: np.ndarray
    n_pairs: int
    rho: float
    constant_features: list[int]
    time: float

    @property
    def energy(self) -> np.ndarray:
        """Cumulative energy: the share of the trace in the i largest eigenvalues."""
        lam = np.clip(self.eigenvalues, 0.0, None)
        return np.cumsum(lam) / lam.sum()

    def components_for(self, level: float) -> int:
        """The fewest eigenvalues whose energy reaches ``level``."""
        return int(np.searchsorted(self.energy, level - 1e-12) + 1)

    def to_dict(self) -> dict[str, Any]:
        return {"fold": self.task.source.fold, "n_pairs": self.n_pairs, "rho": self.rho,
                "constant_features": self.constant_features,
                "eigenvalues": self.eigenvalues.tolist(), "energy": self.energy.tolist(),
                "components": {f"{level:g}": self.components_for(level)
                               for level in ENERGY_LEVELS}, "time": self.time}


def training_data(task: ConeTask | SpectrumTask) -> Any:
    """The task's z-scored training data (its first ``max_train_queries`` queries)."""
    train = task.source.load("train")
    if task.max_train_queries is not None and task.max_train_queries < train.n_queries:
        train = train.subset(np.arange(task.max_train_queries))
    return train


def _evaluate(data: Any, scores: np.ndarray) -> dict[str, float]:
    from cvxrank.metrics import evaluate

    return {key: float(v) for key, v in
            evaluate(data.y, scores, data.query_ptr, preset=PRESET, k=K_CUT).items()}


def evaluate_basis(source: StandardizedFold, U: np.ndarray) -> dict[str, dict[str, float]]:
    """The basis U on ``vali.txt`` and ``test.txt`` by the linear scorer, and on
    ``test.txt`` by Alg. 2's votes."""
    from cvxrank.formulations.conerank import linear_direction, vote_scores

    v = linear_direction(U)
    vali, test = source.load("vali"), source.load("test")
    return {"vali": _evaluate(vali, np.asarray(vali.X @ v)),
            "test": _evaluate(test, np.asarray(test.X @ v)),
            "test_votes": _evaluate(test, vote_scores(U, test.X, test.query_ptr))}


def run_cone(task: ConeTask) -> ConeResult:
    """Build ConeRank on the task's training data, run Alg. 1 for ``passes`` passes and
    evaluate the basis after each."""
    from cvxrank.formulations.conerank import ConeRank
    from cvxrank.solvers.conerank import solve_stochastic
    from cvxrank.trace import SolverOptions

    train = training_data(task)
    start = time.perf_counter()
    try:
        f = ConeRank(train, K=task.K, alpha=PAPER_ALPHA)
    except (PairLimitError, ValueError) as exc:
        return ConeResult(task, {}, {}, 0, 0, 0.0, time.perf_counter() - start,
                          error=str(exc), pid=os.getpid())
    measures: dict[int, dict[str, dict[str, float]]] = {}
    objective: dict[int, float] = {}

    def record(k: int, w: np.ndarray, alpha: Any, trace: Any) -> bool:
        U, _ = f.split(w)
        objective[k] = float(trace.primal[-1])
        if not np.all(np.isfinite(U)):
            raise FloatingPointError(f"basis not finite after {k} passes")
        measures[k] = evaluate_basis(task.source, U)
        return False

    try:
        # The recorder calls back after every pass but the last; the last is the run's point.
        run = solve_stochastic(f, SolverOptions(max_iter=task.passes, seed=task.seed,
                                                callback=record),
                               variant=task.variant, mu=task.mu)  # type: ignore[arg-type]
        if run.n_iter != task.passes:
            raise SolverError(f"{run.n_iter} passes made, {task.passes} asked ({run.message})")
        record(task.passes, run.w, None, run.trace)
    except (SolverError, FloatingPointError) as exc:
        return ConeResult(task, {}, {}, f.pairs.n_pairs, f.pairs.n_queries, 0.0,
                          time.perf_counter() - start, error=str(exc), pid=os.getpid())
    return ConeResult(task, measures, objective, f.pairs.n_pairs, f.pairs.n_queries,
                      float(run.time), time.perf_counter() - start, pid=os.getpid())


def pair_spectrum(data: Any, *, alpha: float = PAPER_ALPHA,
                  rho: float | None = None) -> tuple[np.ndarray, int, float]:
    """Eigenvalues (decreasing) of :math:`Z^\\top Z / p` of the normalized ordered pair
    differences of ``data`` (:func:`~cvxrank.formulations.conerank.cone_pairs`), with p and
    :math:`\\rho`."""
    from cvxrank.formulations.conerank import cone_pairs

    pairs = cone_pairs(data, alpha=alpha, rho=rho)
    second = pairs.Z.T @ pairs.Z / pairs.n_pairs
    return np.linalg.eigvalsh(second)[::-1].copy(), pairs.n_pairs, pairs.rho


def run_spectrum(task: SpectrumTask) -> SpectrumResult:
    """:func:`pair_spectrum` of the task's training data."""
    start = time.perf_counter()
    lam, p, rho = pair_spectrum(training_data(task))
    constant = [int(j) + 1 for j in task.source.standardization().constant]
    return SpectrumResult(task, lam, p, rho, constant, time.perf_counter() - start)


def run_one(task: Any) -> Any:
    """Run any task of this reproduction (the runner of
    :func:`~cvxrank.experiments.backends.run_tasks`)."""
    if isinstance(task, ConeTask):
        return run_cone(task)
    if isinstance(task, SpectrumTask):
        return run_spectrum(task)
    if isinstance(task, Task):
        return run_task(task)
    raise TypeError(f"not a task of this reproduction: {type(task).__name__}")


# -- selection ---------------------------------------------------------------------------
@dataclass
class Point:
    """One candidate model of one fold, its measures averaged over the seeds.

    Attributes
    ----------
    params : dict
        ``{"passes": t}`` (ConeRank) or ``{"C": C}`` (RankSVM).
    measures : dict
        ``{"vali": ..., "test": ...}`` (ConeRank also ``"test_votes"``).
    objective : float
        Mean objective (ConeRank: (18); RankSVM: its primal).
    n_runs : int
        Seeds that ran.
    error : str or None
    """

    params: dict[str, float]
    measures: dict[str, dict[str, float]]
    objective: float
    n_runs: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the point has measures (the selection skips the others)."""
        return self.error is None and bool(self.measures)

    def to_dict(self) -> dict[str, Any]:
        return {"params": self.params, "objective": self.objective, "n_runs": self.n_runs,
                "error": self.error, **self.measures}


def _mean_measures(items: Sequence[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {split: {key: float(np.mean([m[split][key] for m in items]))
                    for key in items[0][split]}
            for split in items[0]}


def cone_points(results: Sequence[ConeResult], passes: int) -> list[Point]:
    """The points t = 1..passes of one fold, variant and K, each averaged over the seeds of
    ``results`` that ran."""
    good = [r for r in results if r.error is None]
    points = []
    for t in range(1, passes + 1):
        if not good:
            error = results[0].error if results else "not run"
            points.append(Point({"passes": t}, {}, math.nan, 0, error))
            continue
        points.append(Point({"passes": t}, _mean_measures([r.measures[t] for r in good]),
                            float(np.mean([r.objective[t] for r in good])), len(good)))
    return points


def ranksvm_points(results: Sequence[TaskResult]) -> list[Point]:
    """RankSVM's points (C increasing) from the standard task results."""
    points = []
    for r in sorted(results, key=lambda r: r.task.params["C"]):
        if not r.ok:
            points.append(Point(dict(r.task.params), {}, math.nan, 0, r.error))
            continue
        points.append(Point(dict(r.task.params), dict(r.measures), r.run.objective, 1))
    return points


@dataclass
class Choice:
    """One method's selected model on one fold.

    Attributes
    ----------
    method : str
        ``"ConeRank-SG"``, ``"ConeRank-EG"`` or ``"RankSVM"``.
    fold : int
    K : int or None
        ConeRank's number of basis vectors (None for RankSVM).
    selected : int
        Position of the selected point in ``points``.
    points : list of Point
    time : float
        Solver seconds of the runs behind the points (all seeds, all C).
    """

    method: str
    fold: int
    K: int | None
    selected: int
    points: list[Point]
    time: float = 0.0

    @property
    def best(self) -> Point:
        """The selected point."""
        return self.points[self.selected]

    def to_dict(self, *, with_points: bool = True) -> dict[str, Any]:
        out = {"method": self.method, "fold": self.fold, "K": self.K,
               "selected": self.best.params, "validation": self.best.measures["vali"],
               "test": self.best.measures["test"], "objective": self.best.objective,
               "n_runs": self.best.n_runs, "time": self.time}
        if "test_votes" in self.best.measures:
            out["test_votes"] = self.best.measures["test_votes"]
        if with_points:
            out["points"] = [p.to_dict() for p in self.points]
        return out


def choose(method: str, fold: int, K: int | None, points: list[Point],
           time_: float = 0.0) -> Choice:
    """Select by validation MAP (:data:`TIE_BREAK`)."""
    return Choice(method, fold, K, select_best(points, SELECT), points,  # type: ignore[arg-type]
                  time_)


def mean_test(choices: Sequence[Choice], split: str = "test") -> dict[str, float]:
    """Mean over the folds of the selected models' measures on ``split``."""
    tests = [c.best.measures[split] for c in choices]
    return {key: float(np.mean([t[key] for t in tests])) for key in tests[0]}


# -- the whole experiment ----------------------------------------------------------------
@dataclass
class Table1Result:
    """The reproduction's outcome (:func:`run_table1`).

    Attributes
    ----------
    data_dir : str
    folds, seeds : list of int
    settings : dict
        ``K``, ``mu``, ``alpha``, ``rho``, ``c``, ``passes``, ``K_grid``,
        ``sweep_variants``, ``sweep_seeds``, ``ranksvm_C``, ``ranksvm_loss``,
        ``ranksvm_tol``.
    choices : dict
        ``{method: [Choice per fold]}`` for the table's methods (ConeRank at ``settings["K"]``).
    sweep : dict
        ``{variant: {K: [Choice per fold]}}`` (Fig. 3).
    spectrum : list of SpectrumResult
        One per fold (Fig. 4).
    runs : list of dict
        One row per ConeRank run (fold, variant, K, seed, passes, seconds, pairs, error).
    backend : str
    workers : int or None
    elapsed : float
        Wall-clock seconds of all tasks (workers' start-up included).
    n_tasks : int
    max_train_queries : int or None
    """

    data_dir: str
    folds: list[int]
    seeds: list[int]
    settings: dict[str, Any]
    choices: dict[str, list[Choice]]
    sweep: dict[str, dict[int, list[Choice]]]
    spectrum: list[SpectrumResult]
    runs: list[dict[str, Any]] = field(default_factory=list)
    backend: str = "sequential"
    workers: int | None = None
    elapsed: float = 0.0
    n_tasks: int = 0
    max_train_queries: int | None = None

    def mean(self, method: str, split: str = "test") -> dict[str, float]:
        """Fold mean of the selected models' measures."""
        return mean_test(self.choices[method], split)

    def sweep_mean(self, variant: str, K: int) -> dict[str, float]:
        """Fold mean of the test measures at K (Fig. 3)."""
        return mean_test(self.sweep[variant][K])

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for ``--json`` and the JSON file)."""
        from cvxrank.experiments.conerank import (
            PAPER_ROW,
            PAPER_SOURCE,
            PAPER_TABLE1_MQ2008,
        )

        methods = {}
        for m, cs in self.choices.items():
            methods[m] = {"folds": [c.to_dict() for c in cs], "mean": self.mean(m),
                          "paper": PAPER_TABLE1_MQ2008[PAPER_ROW[m]]}
            if m in LABELS.values():
                methods[m]["mean_votes"] = self.mean(m, "test_votes")
        return {
            "experiment": "conerank-table1", "data": self.data_dir, "folds": self.folds,
            "seeds": self.seeds, "settings": self.settings, "select": SELECT,
            "tie_break": TIE_BREAK, "preset": PRESET, "k": K_CUT,
            "max_train_queries": self.max_train_queries,
            "paper": {"source": PAPER_SOURCE, "mq2008": PAPER_TABLE1_MQ2008},
            "methods": methods,
            "fig3": {v: {str(K): {"folds": [c.to_dict(with_points=False) for c in cs],
                                  "mean": self.sweep_mean(v, K)}
                         for K, cs in by_K.items()} for v, by_K in self.sweep.items()},
            "fig4": [s.to_dict() for s in self.spectrum],
            "runs": self.runs, "backend": self.backend, "workers": self.workers,
            "n_tasks": self.n_tasks, "elapsed": self.elapsed,
        }


def check_table1_options(*, K: int, K_grid: Sequence[int], passes: int, seeds: Sequence[int],
                         mu: dict[str, float], ranksvm_C: Sequence[float],
                         sweep_variants: Sequence[str]) -> None:
    """Refuse bad numbers of basis vectors or passes, seeds, steps, C grid or variants.

    Raises
    ------
    ValueError
        Naming the option.
    """
    for name, value in [("K", K), ("passes", passes)] + [("K grid", k) for k in K_grid]:
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not seeds or min(seeds) < 0:
        raise ValueError(f"seeds must be >= 0, got {list(seeds)}")
    for variant, step in mu.items():
        if variant not in LABELS:
            raise ValueError(f"unknown variant {variant!r}; expected sg or eg")
        if not (math.isfinite(step) and step > 0):
            raise ValueError(f"mu ({variant}) must be finite and > 0, got {step}")
    if not ranksvm_C:
        raise ValueError("the RankSVM C grid is empty")
    bad = [c for c in ranksvm_C if not (math.isfinite(float(c)) and float(c) > 0)]
    if bad:
        raise ValueError(f"the RankSVM C grid needs finite values > 0, got {bad[0]}")
    unknown = [v for v in sweep_variants if v not in LABELS]
    if unknown:
        raise ValueError(f"unknown sweep variant {unknown[0]!r}; expected sg or eg")


def run_table1(
    data_dir: str | Path,
    *,
    folds: Sequence[int] | None = None,
    seeds: Sequence[int] = (0,),
    K: int = PAPER_K,
    mu: dict[str, float] | None = None,
    passes: int = PASSES,
    K_grid: Sequence[int] = K_GRID,
    sweep_variants: Sequence[str] = SWEEP_VARIANTS,
    sweep_all_seeds: bool = False,
    ranksvm_C: Sequence[float] = RANKSVM_C_GRID,
    spectrum: bool = True,
    max_train_queries: int | None = None,
    backend: str = "sequential",
    workers: int | None = None,
    scheduler: str | None = None,
    blas_threads: int | None = 1,
    progress: Progress | None = None,
    progress_bar: bool = False,
) -> Table1Result:
    """Table 1's MQ2008 row, Fig. 3 and Fig. 4 on the folds of ``data_dir`` (module
    docstring).

    Parameters
    ----------
    data_dir : path
        The LETOR 4.0 folder holding ``Fold1`` ... (MQ2008).
    folds : sequence of int or None
        Fold numbers (None: every ``FoldK`` folder).
    seeds : sequence of int
        Seeds of the ConeRank runs of the table; a pass's measures are their mean.
    K : int
        Basis vectors of the table's ConeRank (the paper: 10).
    mu : dict or None
        ``{"sg": step, "eg": step}`` (default the paper's 0.001 and 0.005).
    passes : int
        Passes of every run; the number of passes is selected in 1..passes.
    K_grid : sequence of int
        Fig. 3's K axis (empty: no sweep).
    sweep_variants : sequence of str
        Variants run at every K of ``K_grid``.
    sweep_all_seeds : bool
        Run the sweep with every seed (default: the first seed only).
    ranksvm_C : sequence of float
        The hinge RankSVM's C grid.
    spectrum : bool
        Compute Fig. 4.
    max_train_queries : int or None
        Train on each fold's first this many queries (quick checks).
    backend, workers, scheduler, blas_threads :
        As in :func:`cvxrank.experiments.backends.run_tasks`.
    progress : callable or None
        Called with one line per phase and per finished ConeRank run.
    progress_bar : bool

    Returns
    -------
    Table1Result
    """
    mu = {**PAPER_MU, **(mu or {})}
    check_table1_options(K=K, K_grid=K_grid, passes=passes, seeds=seeds, mu=mu,
                         ranksvm_C=ranksvm_C, sweep_variants=sweep_variants)
    check_backend(backend, workers=workers, scheduler=scheduler)
    if max_train_queries is not None and max_train_queries < 1:
        raise ValueError(f"max_train_queries must be >= 1, got {max_train_queries}")
    seeds = sorted({int(s) for s in seeds})
    K_grid = sorted({int(k) for k in K_grid})
    ranksvm_C = sorted({float(c) for c in ranksvm_C})
    sweep_variants = [v for v in LABELS if v in set(sweep_variants)] if K_grid else []
    sweep_seeds = seeds if sweep_all_seeds else seeds[:1]
    folds = find_folds(data_dir) if folds is None else [int(f) for f in folds]
    root = check_letor_dir(data_dir, folds)
    sources = {k: StandardizedFold(str(root.resolve()), k) for k in folds}
    say = progress or (lambda line: None)

    # Every (fold, variant, K, seed) run once: the table's and the sweep's share K.
    wanted: dict[tuple[int, str, int], list[int]] = {}
    for k in folds:
        for variant in LABELS:
            wanted[(k, variant, K)] = list(seeds)
        for variant in sweep_variants:
            for kk in K_grid:
                have = wanted.setdefault((k, variant, kk), [])
                wanted[(k, variant, kk)] = sorted(set(have) | set(sweep_seeds))
    tasks: list[Any] = []
    for k in folds:  # fold-major; inside a fold the long runs first (EG, then large K)
        cone = [ConeTask(sources[k], variant, kk, seed, passes, mu[variant], max_train_queries)
                for (fold, variant, kk), ss in wanted.items() if fold == k for seed in ss]
        cone.sort(key=lambda t: (t.variant != "eg", -t.K, t.seed))
        tasks += cone
        tasks += [Task(source=sources[k], method="ranksvm", loss=RANKSVM_LOSS,
                       params={"C": C}, solver="auto", tol=RANKSVM_TOL,
                       evaluate_on=("vali", "test"), preset=PRESET, k=K_CUT,
                       max_train_queries=max_train_queries) for C in ranksvm_C]
        if spectrum:
            tasks.append(SpectrumTask(sources[k], max_train_queries))
    n_cone = sum(isinstance(t, ConeTask) for t in tasks)
    say(f"{len(tasks)} tasks on the {backend} backend: {n_cone} ConeRank runs of {passes} "
        f"passes (K = {K}, seeds {seeds}; Fig. 3: K in {K_grid}, {sweep_variants}, seeds "
        f"{sweep_seeds}), {len(folds) * len(ranksvm_C)} RankSVM fits"
        + (f", {len(folds)} spectra" if spectrum else ""))
    start = time.perf_counter()
    results: list[Any] = [None] * len(tasks)
    for i, result in run_tasks(tasks, runner=run_one, max_chunk=1, backend=backend,
                               workers=workers, scheduler=scheduler, blas_threads=blas_threads,
                               progress=progress_bar, desc="conerank-table1"):
        results[i] = result
        say(_done_line(result, time.perf_counter() - start))
    elapsed = time.perf_counter() - start

    cone_results = [r for r in results if isinstance(r, ConeResult)]

    def runs_of(k: int, variant: str, kk: int, ss: Sequence[int]) -> list[ConeResult]:
        return [r for r in cone_results if r.task.source.fold == k and r.task.variant == variant
                and r.task.K == kk and r.task.seed in ss]

    def cone_choice(k: int, variant: str, kk: int, ss: Sequence[int]) -> Choice:
        rs = runs_of(k, variant, kk, ss)
        return choose(LABELS[variant], k, kk, cone_points(rs, passes),
                      sum(r.time for r in rs))

    choices: dict[str, list[Choice]] = {label: [] for label in LABELS.values()}
    choices[RANKSVM] = []
    for k in folds:
        for variant, label in LABELS.items():
            choices[label].append(cone_choice(k, variant, K, seeds))
        svm = [r for r in results if isinstance(r, TaskResult) and r.task.source.fold == k]
        choices[RANKSVM].append(choose(RANKSVM, k, None, ranksvm_points(svm),
                                       sum(sum(x.wall_times) for x in svm)))
    sweep = {v: {kk: [cone_choice(k, v, kk, sweep_seeds) for k in folds] for kk in K_grid}
             for v in sweep_variants}
    spectra = sorted((r for r in results if isinstance(r, SpectrumResult)),
                     key=lambda r: r.task.source.fold)
    runs = [{"fold": r.task.source.fold, "variant": r.task.variant, "K": r.task.K,
             "seed": r.task.seed, "passes": r.task.passes, "mu": r.task.mu, "time": r.time,
             "wall_time": r.wall_time, "n_pairs": r.n_pairs, "n_queries": r.n_queries,
             "error": r.error} for r in cone_results]
    data = sources[folds[0]].load("train")
    N = data.n_features
    rho = math.sqrt(N)
    started = None if backend == "sequential" or scheduler else workers or os.cpu_count()
    settings = {"K": K, "mu": mu, "alpha": PAPER_ALPHA, "rho": rho, "c": 2.0 * rho,
                "n_features": N, "passes": passes, "K_grid": K_grid,
                "sweep_variants": sweep_variants, "sweep_seeds": sweep_seeds,
                "ranksvm_C": ranksvm_C, "ranksvm_loss": RANKSVM_LOSS,
                "ranksvm_tol": RANKSVM_TOL,
                "constant_features": {k: [int(j) + 1 for j in
                                          sources[k].standardization().constant]
                                      for k in folds}}
    return Table1Result(data_dir=str(root), folds=folds, seeds=seeds, settings=settings,
                        choices=choices, sweep=sweep, spectrum=spectra, runs=runs,
                        backend=backend, workers=started, elapsed=elapsed,
                        n_tasks=len(tasks), max_train_queries=max_train_queries)


def _done_line(result: Any, elapsed: float) -> str:
    """One progress line for a finished task."""
    head = f"[{elapsed:7.1f} s] fold {result.task.source.fold} "
    if isinstance(result, ConeResult):
        t = result.task
        if result.error:
            return head + f"{LABELS[t.variant]} K={t.K} seed {t.seed}: failed ({result.error})"
        best = max(range(1, t.passes + 1), key=lambda p: result.measures[p]["vali"][SELECT])
        return (head + f"{LABELS[t.variant]} K={t.K} seed {t.seed}: {t.passes} passes in "
                f"{result.time:.1f} s, best vali MAP {result.measures[best]['vali'][SELECT]:.4f}"
                f" at pass {best}")
    if isinstance(result, SpectrumResult):
        return head + (f"spectrum of {result.n_pairs} pairs: 90% of the energy in "
                       f"{result.components_for(0.9)} eigenvalues")
    if isinstance(result, TaskResult):
        C = result.task.params["C"]
        if not result.ok:
            return head + f"RankSVM C={C:g}: failed ({result.error})"
        return (head + f"RankSVM C={C:g}: {result.run.solver} in {result.wall_time:.1f} s, "
                f"vali MAP {result.measures['vali'][SELECT]:.4f}")
    return head + type(result).__name__
