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

:class:`Table1Config` holds every option of the reproduction (``Table1Config.quick()``: the
small run for checks); :func:`run_table1` runs it. Every task carries its own ``run()`` and
runs in any process (:class:`~cvxrank.experiments.backends.Execution`); the ConeRank runs
are the long ones. The points, choices and means are those of
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

from cvxrank.errors import PairLimitError, SolverError
from cvxrank.experiments.backends import Log
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
from cvxrank.experiments.config import (
    LetorConfig,
    check_grid,
    check_positive_int,
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
    task_points,
)
from cvxrank.experiments.tasks import Task, TaskResult, evaluate_scores, training_data

#: The measure that selects (validation MAP, as LETOR's baselines).
SELECT = "map"

#: LETOR 4.0's conventions (``Eval-Score-4.0.pl``) and the largest cut-off.
PRESET = "letor4"
K_CUT = 10

#: Splits evaluated after every pass: the linear scorer on vali and test, Alg. 2's votes on
#: test.
SPLITS = ("vali", "test", "test_votes")

#: The stats of a point (:class:`~cvxrank.experiments.selection.Point`): ConeRank's
#: objective (18), RankSVM's primal objective.
STATS = ("objective",)

#: How RankSVM's fits give them.
RANKSVM_STATS = {"objective": lambda r: r.run.objective}


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

    def run(self) -> ConeResult:
        """Build ConeRank on the task's training data, run Alg. 1 for ``passes`` passes
        and evaluate the basis after each."""
        from cvxrank.formulations.conerank import ConeRank
        from cvxrank.solvers.conerank import solve_stochastic

        train = training_data(self)
        start = time.perf_counter()
        try:
            f = ConeRank(train, K=self.K, alpha=PAPER_ALPHA)
        except (PairLimitError, ValueError) as exc:
            return ConeResult(self, {}, {}, 0, 0, 0.0, time.perf_counter() - start,
                              error=str(exc), pid=os.getpid())
        measures: dict[int, dict[str, dict[str, float]]] = {}
        objective: dict[int, float] = {}

        def record(k: int, w: np.ndarray, alpha: Any, trace: Any) -> bool:
            U, _ = f.split(w)
            objective[k] = float(trace.primal[-1])
            if not np.all(np.isfinite(U)):
                raise FloatingPointError(f"basis not finite after {k} passes")
            measures[k] = evaluate_basis(self.source, U)
            return False

        try:
            # The recorder calls back after every pass but the last; the last is the run's
            # point.
            run = solve_stochastic(f, max_iter=self.passes, seed=self.seed, callback=record,
                                   variant=self.variant, mu=self.mu)  # type: ignore[arg-type]
            if run.n_iter != self.passes:
                raise SolverError(f"{run.n_iter} passes made, {self.passes} asked "
                                  f"({run.message})")
            record(self.passes, run.w, None, run.trace)
        except (SolverError, FloatingPointError) as exc:
            return ConeResult(self, {}, {}, f.pairs.n_pairs, f.pairs.n_queries, 0.0,
                              time.perf_counter() - start, error=str(exc), pid=os.getpid())
        return ConeResult(self, measures, objective, f.pairs.n_pairs, f.pairs.n_queries,
                          float(run.time), time.perf_counter() - start, pid=os.getpid())


@dataclass(frozen=True)
class SpectrumTask:
    """The spectrum of the training set's normalized ordered pair differences."""

    source: StandardizedFold
    max_train_queries: int | None = None

    def run(self) -> SpectrumResult:
        """:func:`pair_spectrum` of the task's training data."""
        start = time.perf_counter()
        lam, p, rho = pair_spectrum(training_data(self))
        constant = [int(j) + 1 for j in self.source.standardization().constant]
        return SpectrumResult(self, lam, p, rho, constant, time.perf_counter() - start)


@dataclass
class ConeResult:
    """What :meth:`ConeTask.run` returns (plain values).

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

    def summary(self) -> str:
        """One progress line: the run, its time and its best validation MAP."""
        t = self.task
        if self.error:
            return f"{LABELS[t.variant]} K={t.K} seed {t.seed}: failed ({self.error})"
        best = max(range(1, t.passes + 1), key=lambda p: self.measures[p]["vali"][SELECT])
        return (f"{LABELS[t.variant]} K={t.K} seed {t.seed}: {t.passes} passes in "
                f"{self.time:.1f} s, best vali MAP {self.measures[best]['vali'][SELECT]:.4f}"
                f" at pass {best}")


@dataclass
class SpectrumResult:
    """What :meth:`SpectrumTask.run` returns.

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

    def summary(self) -> str:
        """One progress line: the pairs and the eigenvalues holding 90% of the energy."""
        return (f"spectrum of {self.n_pairs} pairs: 90% of the energy in "
                f"{self.components_for(0.9)} eigenvalues")

    def to_dict(self) -> dict[str, Any]:
        return {"fold": self.task.source.fold, "n_pairs": self.n_pairs, "rho": self.rho,
                "constant_features": self.constant_features,
                "eigenvalues": self.eigenvalues.tolist(), "energy": self.energy.tolist(),
                "components": {f"{level:g}": self.components_for(level)
                               for level in ENERGY_LEVELS}, "time": self.time}


def ranksvm_summary(result: TaskResult) -> str:
    """One progress line of a RankSVM fit: its C, solver, time and validation MAP."""
    C = result.task.params["C"]
    if not result.ok:
        return f"RankSVM C={C:g}: failed ({result.error})"
    return (f"RankSVM C={C:g}: {result.run.solver} in {result.wall_time:.1f} s, "
            f"vali MAP {result.measures['vali'][SELECT]:.4f}")


#: The progress line of each kind of task's result.
SUMMARIES = {"cone": ConeResult.summary, "ranksvm": ranksvm_summary,
             "spectrum": SpectrumResult.summary}


def evaluate_basis(source: StandardizedFold, U: np.ndarray) -> dict[str, dict[str, float]]:
    """The basis U on ``vali.txt`` and ``test.txt`` by the linear scorer, and on
    ``test.txt`` by Alg. 2's votes."""
    from cvxrank.formulations.conerank import linear_direction, vote_scores

    v = linear_direction(U)
    vali, test = source.load("vali"), source.load("test")
    return {"vali": evaluate_scores(vali, np.asarray(vali.X @ v), preset=PRESET, k=K_CUT),
            "test": evaluate_scores(test, np.asarray(test.X @ v), preset=PRESET, k=K_CUT),
            "test_votes": evaluate_scores(test, vote_scores(U, test.X, test.query_ptr),
                                          preset=PRESET, k=K_CUT)}


def pair_spectrum(data: Any, *, alpha: float = PAPER_ALPHA,
                  rho: float | None = None) -> tuple[np.ndarray, int, float]:
    """Eigenvalues (decreasing) of :math:`Z^\\top Z / p` of the normalized ordered pair
    differences of ``data`` (:func:`~cvxrank.formulations.conerank.cone_pairs`), with p and
    :math:`\\rho`."""
    from cvxrank.formulations.conerank import cone_pairs

    pairs = cone_pairs(data, alpha=alpha, rho=rho)
    second = pairs.Z.T @ pairs.Z / pairs.n_pairs
    return np.linalg.eigvalsh(second)[::-1].copy(), pairs.n_pairs, pairs.rho


# -- selection ---------------------------------------------------------------------------
def cone_points(results: Sequence[ConeResult], passes: int) -> list[Point]:
    """The points t = 1..passes of one fold, variant and K, each averaged over the seeds of
    ``results`` that ran."""
    good = [r for r in results if r.error is None]
    if not good:
        error = results[0].error if results else "not run"
        return [Point.failed({"passes": t}, error, STATS) for t in range(1, passes + 1)]
    return [Point.mean_of({"passes": t}, [r.measures[t] for r in good],
                          {"objective": [r.objective[t] for r in good]})
            for t in range(1, passes + 1)]


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
        ``{method: [Choice per fold]}`` for the table's methods (ConeRank at
        ``settings["K"]``, its :attr:`~cvxrank.experiments.selection.Choice.setting`).
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
    protocol : str
        Which options made the run (:meth:`~cvxrank.experiments.config.ExperimentConfig.protocol`).
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
    protocol: str = "paper"

    def mean(self, method: str, split: str = "test") -> dict[str, float]:
        """Fold mean of the selected models' measures."""
        return fold_mean(self.choices[method], split)

    def sweep_mean(self, variant: str, K: int) -> dict[str, float]:
        """Fold mean of the test measures at K (Fig. 3)."""
        return fold_mean(self.sweep[variant][K])

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
            "tie_break": TIE_BREAK, "preset": PRESET, "protocol": self.protocol, "k": K_CUT,
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


@dataclass(frozen=True)
class Table1Config(LetorConfig):
    """Every option of :func:`run_table1` (beside the folder, folds, training queries and
    execution of :class:`~cvxrank.experiments.config.LetorConfig`).

    Attributes
    ----------
    seeds : tuple of int
        Seeds of the table's ConeRank runs; a pass's measures are their mean.
    K : int
        Basis vectors of the table's ConeRank (the paper: 10).
    mu_sg, mu_eg : float
        The steps of ConeRank-SG and ConeRank-EG (default the paper's 0.001 and 0.005).
    passes : int
        Passes of every run; the number of passes is selected in 1..passes.
    K_grid : tuple of int
        Fig. 3's K axis (empty: no sweep).
    sweep_variants : tuple of str
        Variants run at every K of ``K_grid`` (none without a ``K_grid``).
    sweep_all_seeds : bool
        Run the sweep with every seed (default: the first seed only).
    ranksvm_C : tuple of float
        The hinge RankSVM's C grid.
    spectrum : bool
        Compute Fig. 4.

    Raises
    ------
    ValueError
        Naming a bad option (K, passes, K grid, seeds, steps, C grid, variants, training
        queries, backend).
    """

    #: ``--quick``: 3 passes, K in 2 4, two C, the first 50 training queries.
    QUICK: ClassVar[dict[str, Any]] = {"passes": 3, "K_grid": (2, 4), "ranksvm_C": (1e-2, 1.0),
                                       "max_train_queries": 50}

    seeds: tuple[int, ...] = (0,)
    K: int = PAPER_K
    mu_sg: float = PAPER_MU["sg"]
    mu_eg: float = PAPER_MU["eg"]
    passes: int = PASSES
    K_grid: tuple[int, ...] = K_GRID
    sweep_variants: tuple[str, ...] = SWEEP_VARIANTS
    sweep_all_seeds: bool = False
    ranksvm_C: tuple[float, ...] = RANKSVM_C_GRID
    spectrum: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, value in [("K", self.K), ("passes", self.passes)] + [("K grid", k) for k
                                                                        in self.K_grid]:
            check_positive_int(name, value)
        check_seeds(self.seeds)
        for variant, step in self.mu.items():
            if not (math.isfinite(step) and step > 0):
                raise ValueError(f"mu ({variant}) must be finite and > 0, got {step}")
        check_grid("RankSVM C", self.ranksvm_C)
        unknown = [v for v in self.sweep_variants if v not in LABELS]
        if unknown:
            raise ValueError(f"unknown sweep variant {unknown[0]!r}; expected sg or eg")
        K_grid = increasing(self.K_grid, int)
        normalize(self, seeds=increasing(self.seeds, int), K_grid=K_grid,
                  ranksvm_C=increasing(self.ranksvm_C),
                  sweep_variants=tuple(v for v in LABELS if v in set(self.sweep_variants))
                  if K_grid else ())

    @property
    def mu(self) -> dict[str, float]:
        """``{"sg": mu_sg, "eg": mu_eg}``."""
        return {"sg": self.mu_sg, "eg": self.mu_eg}

    @property
    def sweep_seeds(self) -> tuple[int, ...]:
        """The seeds of Fig. 3's sweep."""
        return self.seeds if self.sweep_all_seeds else self.seeds[:1]


def table1_tasks(config: Table1Config,
                 sources: dict[int, StandardizedFold]) -> list[tuple[str, Any]]:
    """The ``(kind, task)`` pairs of :func:`run_table1`, fold-major: every (fold, variant,
    K, seed) ConeRank run once (the table's and the sweep's share K; inside a fold the long
    runs first, EG then large K), the RankSVM grid, the spectrum."""
    wanted: dict[tuple[int, str, int], list[int]] = {}
    for k in sources:
        for variant in LABELS:
            wanted[(k, variant, config.K)] = list(config.seeds)
        for variant in config.sweep_variants:
            for kk in config.K_grid:
                have = wanted.setdefault((k, variant, kk), [])
                wanted[(k, variant, kk)] = sorted(set(have) | set(config.sweep_seeds))
    tasks: list[tuple[str, Any]] = []
    for k, source in sources.items():
        cone = [ConeTask(source, variant, kk, seed, config.passes, config.mu[variant],
                         config.max_train_queries)
                for (fold, variant, kk), ss in wanted.items() if fold == k for seed in ss]
        cone.sort(key=lambda t: (t.variant != "eg", -t.K, t.seed))
        tasks += [("cone", t) for t in cone]
        tasks += [("ranksvm", Task(source=source, method="ranksvm", loss=RANKSVM_LOSS,
                                   params={"C": C}, solver="auto", tol=RANKSVM_TOL,
                                   evaluate_on=("vali", "test"), preset=PRESET, k=K_CUT,
                                   max_train_queries=config.max_train_queries))
                  for C in config.ranksvm_C]
        if config.spectrum:
            tasks.append(("spectrum", SpectrumTask(source, config.max_train_queries)))
    return tasks


def run_table1(config: Table1Config, *, log: Log | None = None,
               progress_bar: bool = False) -> Table1Result:
    """Table 1's MQ2008 row, Fig. 3 and Fig. 4 on the folds of ``config.data`` (module
    docstring).

    Parameters
    ----------
    config : Table1Config
    log : callable or None
        Called with one line per phase and per finished task.
    progress_bar : bool
        A progress bar on stderr while tasks run.

    Returns
    -------
    Table1Result

    Raises
    ------
    FileNotFoundError
        For a missing folder or split file (before any task runs).
    CvxrankError
        For a malformed data file, or when every point of a fold failed.
    """
    root, sources = config.fold_sources(StandardizedFold)
    folds = list(sources)
    say = log or (lambda line: None)
    tasks = table1_tasks(config, sources)
    n_cone = sum(kind == "cone" for kind, _ in tasks)
    say(f"{len(tasks)} tasks on the {config.execution.backend} backend: {n_cone} ConeRank "
        f"runs of {config.passes} passes (K = {config.K}, seeds {list(config.seeds)}; Fig. 3: "
        f"K in {list(config.K_grid)}, {list(config.sweep_variants)}, seeds "
        f"{list(config.sweep_seeds)}), "
        f"{len(folds) * len(config.ranksvm_C)} RankSVM fits"
        + (f", {len(folds)} spectra" if config.spectrum else ""))
    start = time.perf_counter()

    def done(kind: str, result: Any) -> None:
        say(f"[{time.perf_counter() - start:7.1f} s] fold {result.task.source.fold} "
            + SUMMARIES[kind](result))

    results = config.execution.run_by_kind(tasks, on_result=done, max_chunk=1,
                                           progress=progress_bar, desc="conerank-table1")
    elapsed = time.perf_counter() - start
    choices, sweep = table1_choices(config, folds, results)
    return Table1Result(
        data_dir=str(root), folds=folds, seeds=list(config.seeds),
        settings=table1_settings(config, sources), choices=choices, sweep=sweep,
        spectrum=sorted(results.get("spectrum", []), key=lambda r: r.task.source.fold),
        runs=[{"fold": r.task.source.fold, "variant": r.task.variant, "K": r.task.K,
               "seed": r.task.seed, "passes": r.task.passes, "mu": r.task.mu, "time": r.time,
               "wall_time": r.wall_time, "n_pairs": r.n_pairs, "n_queries": r.n_queries,
               "error": r.error} for r in results.get("cone", [])],
        backend=config.execution.backend, workers=config.execution.started_workers,
        elapsed=elapsed, n_tasks=len(tasks), max_train_queries=config.max_train_queries,
        protocol=config.protocol())


def table1_choices(config: Table1Config, folds: Sequence[int],
                   results: dict[str, list[Any]]
                   ) -> tuple[dict[str, list[Choice]], dict[str, dict[int, list[Choice]]]]:
    """The table's choices (``{method: [Choice per fold]}``, ConeRank at ``config.K``) and
    Fig. 3's (``{variant: {K: [Choice per fold]}}``, the sweep's seeds) from the results of
    :func:`table1_tasks` by kind."""
    cone_results: list[ConeResult] = results.get("cone", [])

    def cone_choice(k: int, variant: str, kk: int, ss: Sequence[int]) -> Choice:
        rs = [r for r in cone_results if r.task.source.fold == k and r.task.variant == variant
              and r.task.K == kk and r.task.seed in ss]
        return choose(LABELS[variant], k, cone_points(rs, config.passes), SELECT,
                      time=sum(r.time for r in rs), setting={"K": kk})

    choices: dict[str, list[Choice]] = {label: [] for label in LABELS.values()}
    choices[RANKSVM] = []
    for k in folds:
        for variant, label in LABELS.items():
            choices[label].append(cone_choice(k, variant, config.K, config.seeds))
        svm = [r for r in results.get("ranksvm", []) if r.task.source.fold == k]
        choices[RANKSVM].append(choose(RANKSVM, k, task_points(svm, RANKSVM_STATS), SELECT,
                                       time=sum(sum(x.wall_times) for x in svm)))
    sweep = {v: {kk: [cone_choice(k, v, kk, config.sweep_seeds) for k in folds]
                 for kk in config.K_grid} for v in config.sweep_variants}
    return choices, sweep


def table1_settings(config: Table1Config,
                    sources: dict[int, StandardizedFold]) -> dict[str, Any]:
    """:attr:`Table1Result.settings`: the configuration's numbers, the normalization of the
    data (N features, rho, c) and each fold's constant features."""
    N = next(iter(sources.values())).load("train").n_features
    rho = math.sqrt(N)
    return {"K": config.K, "mu": config.mu, "alpha": PAPER_ALPHA, "rho": rho, "c": 2.0 * rho,
            "n_features": N, "passes": config.passes, "K_grid": list(config.K_grid),
            "sweep_variants": list(config.sweep_variants),
            "sweep_seeds": list(config.sweep_seeds), "ranksvm_C": list(config.ranksvm_C),
            "ranksvm_loss": RANKSVM_LOSS, "ranksvm_tol": RANKSVM_TOL,
            "constant_features": {k: [int(j) + 1 for j in source.standardization().constant]
                                  for k, source in sources.items()}}
