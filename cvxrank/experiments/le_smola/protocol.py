"""The tasks, their run, the selection of C per fold and method, and the Table 2 account.

:class:`LeSmolaConfig` holds every option of the reproduction (``LeSmolaConfig.quick()``:
the small run for checks); :func:`run_le_smola` runs it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from cvxrank.experiments.backends import Log
from cvxrank.experiments.config import LetorConfig, check_grid, normalize
from cvxrank.experiments.le_smola import (
    DEFAULT_DORM_VARIANTS,
    DORM_C_GRID,
    DORM_LOSS,
    DORM_VARIANTS,
    RANKSVM_C_GRID,
    SVMMAP_C_GRID,
)
from cvxrank.experiments.letor import EVALUATED, FoldSelection, folds_certified
from cvxrank.experiments.selection import TIE_BREAK, check_measure, mean_measures, select_best
from cvxrank.experiments.sources import LetorFold
from cvxrank.experiments.tasks import Task, TaskResult

#: The test measures of the table.
MEASURES = ("ndcg@1", "ndcg@10", "map")

#: Certified relative duality gap of every fit.
TOL = 1e-6


@dataclass(frozen=True)
class MethodSpec:
    """One row of the table: a method of :mod:`cvxrank.methods`, its loss, fixed extra
    formulation parameters (DORM's c) and its C grid."""

    label: str
    method: str
    loss: str | None
    extra: tuple[tuple[str, Any], ...]
    C_grid: tuple[float, ...]

    def points(self) -> list[dict[str, Any]]:
        """The grid points, smallest C first (the tie-break's order)."""
        return [{"C": C, **dict(self.extra)} for C in sorted(set(self.C_grid))]


def method_specs(*, dorm_variants: Sequence[str] = DEFAULT_DORM_VARIANTS,
                 dorm_C: Sequence[float] = DORM_C_GRID,
                 svmmap_C: Sequence[float] = SVMMAP_C_GRID,
                 ranksvm_C: Sequence[float] = RANKSVM_C_GRID) -> list[MethodSpec]:
    """DORM (one row per c), SVM MAP and the hinge RankSVM.

    Raises
    ------
    ValueError
        For an unknown DORM variant or a C that is not a finite positive number.
    """
    for name, grid in (("DORM C", dorm_C), ("SVM MAP C", svmmap_C), ("RankSVM C", ranksvm_C)):
        check_grid(name, grid)
    unknown = [v for v in dorm_variants if v not in DORM_VARIANTS]
    if unknown:
        raise ValueError(f"unknown DORM variant {unknown[0]!r}; known: "
                         f"{', '.join(DORM_VARIANTS)}")
    specs = []
    for v in dict.fromkeys(dorm_variants):
        family, d = DORM_VARIANTS[v]
        specs.append(MethodSpec(f"DORM NDCG@10 c={v}", "dorm", DORM_LOSS,
                                (("c_family", family), ("d", d)), tuple(dorm_C)))
    specs.append(MethodSpec("SVM MAP", "svmmap", None, (), tuple(svmmap_C)))
    specs.append(MethodSpec("RankSVM (hinge)", "ranksvm", "hinge", (), tuple(ranksvm_C)))
    return specs


def table2_stats(result: TaskResult) -> dict[str, Any]:
    """Support vectors, cuts, column-generation iterations, master share, time, ``w = 0``.

    n-slack runs (DORM, SVM MAP): support vectors are ``info["n_cuts"]``, the working set at
    the end (pieces whose multiplier stayed zero are pruned); 1-slack runs (RankSVM): the
    cuts with a nonzero multiplier in the final master (the trivial cut 0 excluded).
    """
    run = result.run
    info = run.info
    if "n_cuts" in info:
        sv, cuts = int(info["n_cuts"]), int(info.get("cuts_added", info["n_cuts"]))
        master = float(info.get("master_time", float("nan")))
    else:
        cuts = info.get("cuts")  # the 1-slack's final cut set (CutSet)
        lam = np.asarray(cuts.lam[1:]) if cuts is not None else np.zeros(0)
        sv, cuts = int(np.count_nonzero(lam > 0)), int(lam.size)
        master = float(np.sum(run.trace.extra.get("master_time", [np.nan])))
    total = float(run.time)
    return {"support_vectors": sv, "cuts": cuts, "iterations": int(run.n_iter),
            "master_time": master, "time": total,
            "master_share": master / total if total > 0 else float("nan"),
            "objective": float(run.objective), "gap": float(run.relative_gap),
            "converged": bool(run.converged), "zero_model": bool(not np.any(run.w))}


@dataclass
class MethodResult:
    """One method's folds (selections reuse :class:`~cvxrank.experiments.letor.FoldSelection`)."""

    spec: MethodSpec
    folds: list[FoldSelection]

    def mean(self) -> dict[str, float]:
        """Five-fold mean of the selected models' test measures."""
        return mean_measures([{m: f.test[m] for m in MEASURES} for f in self.folds])

    def certified(self) -> dict[str, dict[str, Any]]:
        """Per measure of :data:`MEASURES`: certified on every fold, and the uncertified
        test queries summed over the folds (:func:`~cvxrank.experiments.letor.
        folds_certified`)."""
        return folds_certified(self.folds, MEASURES)

    def stats(self) -> list[dict[str, Any]]:
        """Table 2's columns of each fold's selected fit."""
        return [table2_stats(f.best) for f in self.folds]

    def mean_stats(self) -> dict[str, float]:
        """Fold means of the Table 2 columns (``zero_model``: the number of folds)."""
        rows = self.stats()
        out = {k: float(np.mean([r[k] for r in rows]))
               for k in ("support_vectors", "cuts", "iterations", "master_share", "time")}
        out["zero_model_folds"] = int(sum(r["zero_model"] for r in rows))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.spec.label, "method": self.spec.method, "loss": self.spec.loss,
                "extra": dict(self.spec.extra), "C_grid": sorted(set(self.spec.C_grid)),
                "mean": self.mean(), "certified": self.certified(),
                "table2": self.mean_stats(),
                "selected_C": [f.selected_params["C"] for f in self.folds],
                "folds": [{**f.to_dict(), "table2": s}
                          for f, s in zip(self.folds, self.stats(), strict=True)]}


@dataclass
class LeSmolaResult:
    """The experiment's outcome."""

    data_dir: str
    select: str
    preset: str
    fold_numbers: list[int]
    methods: list[MethodResult]
    max_train_queries: int | None
    backend: str
    elapsed: float

    def to_dict(self) -> dict[str, Any]:
        return {"experiment": "le-smola-ohsumed", "data": self.data_dir,
                "select": self.select, "tie_break": TIE_BREAK, "preset": self.preset,
                "folds": self.fold_numbers, "max_train_queries": self.max_train_queries,
                "tol": TOL, "backend": self.backend, "elapsed": self.elapsed,
                "methods": [m.to_dict() for m in self.methods]}


def build_tasks(root: str | Path, folds: Sequence[int], specs: Sequence[MethodSpec], *,
                preset: str = "letor3", max_train_queries: int | None = None) -> list[Task]:
    """Method-major, then fold, then C (smallest first)."""
    root = str(Path(root).resolve())
    return [Task(source=LetorFold(root, int(fold)), method=s.method, loss=s.loss,
                 params=point, tol=TOL, evaluate_on=EVALUATED, preset=preset, k=10,
                 max_train_queries=max_train_queries)
            for s in specs for fold in folds for point in s.points()]


@dataclass(frozen=True)
class LeSmolaConfig(LetorConfig):
    """Every option of :func:`run_le_smola` (beside the folder, folds, training queries and
    execution of :class:`~cvxrank.experiments.config.LetorConfig`).

    Attributes
    ----------
    select : str
        The validation measure that selects C (``map`` or ``ndcg@10``).
    preset : str
        Metric conventions.
    dorm_variants : tuple of str
        DORM's c of (20), one row each (:data:`~cvxrank.experiments.le_smola.DORM_VARIANTS`).
    dorm_C, svmmap_C, ranksvm_C : tuple of float
        The C grids of DORM, SVM MAP and the hinge RankSVM.

    Raises
    ------
    ValueError
        For an unknown measure or DORM variant, a C that is not finite and positive, bad
        training queries or backend options.
    """

    #: ``--quick``: two C per method, the first 20 training queries, one DORM c.
    QUICK: ClassVar[dict[str, Any]] = {"dorm_C": (1.0, 10.0), "svmmap_C": (1.0, 100.0),
                                       "ranksvm_C": (1e-3, 1e-1),
                                       "dorm_variants": ("power-0.5",),
                                       "max_train_queries": 20}

    select: str = "map"
    preset: str = "letor3"
    dorm_variants: tuple[str, ...] = DEFAULT_DORM_VARIANTS
    dorm_C: tuple[float, ...] = DORM_C_GRID
    svmmap_C: tuple[float, ...] = SVMMAP_C_GRID
    ranksvm_C: tuple[float, ...] = RANKSVM_C_GRID

    def __post_init__(self) -> None:
        super().__post_init__()
        normalize(self, select=check_measure(self.select, preset=self.preset, k=10),
                  dorm_variants=tuple(self.dorm_variants), dorm_C=tuple(self.dorm_C),
                  svmmap_C=tuple(self.svmmap_C), ranksvm_C=tuple(self.ranksvm_C))
        self.specs()

    def specs(self) -> list[MethodSpec]:
        """The table's rows (:func:`method_specs`)."""
        return method_specs(dorm_variants=self.dorm_variants, dorm_C=self.dorm_C,
                            svmmap_C=self.svmmap_C, ranksvm_C=self.ranksvm_C)


def run_le_smola(config: LeSmolaConfig, *, log: Log | None = None,
                 progress_bar: bool = False) -> LeSmolaResult:
    """Run every method's grid on every fold, select C on validation, gather the results.

    Parameters
    ----------
    config : LeSmolaConfig
    log : callable or None
        Called with one line per finished fit.
    progress_bar : bool
        A progress bar on stderr while tasks run.

    Raises
    ------
    FileNotFoundError, CvxrankError
        As :func:`cvxrank.experiments.letor.run_letor_grid`.
    """
    specs, measure = config.specs(), config.select
    root, folds = config.letor_folds()
    tasks = build_tasks(root, folds, specs, preset=config.preset,
                        max_train_queries=config.max_train_queries)

    def done(result: TaskResult) -> None:
        if log is not None:
            t = result.task
            log(f"fold {t.source.fold} {t.method} {t.params}: "
                + ("failed: " + str(result.error) if not result.ok
                   else f"vali {measure} {result.measures['vali'][measure]:.4f}"))

    start = time.perf_counter()
    results = config.execution.run(tasks, on_result=done, progress=progress_bar,
                                   desc="le-smola")
    elapsed = time.perf_counter() - start
    methods, i = [], 0
    for s in specs:
        points = s.points()
        selections = []
        for fold in folds:
            fold_results = results[i:i + len(points)]
            i += len(points)
            selections.append(FoldSelection(fold=fold, params=points, results=fold_results,
                                            selected=select_best(fold_results, measure)))
        methods.append(MethodResult(s, selections))
    return LeSmolaResult(data_dir=str(root), select=measure, preset=config.preset,
                         fold_numbers=folds, methods=methods,
                         max_train_queries=config.max_train_queries,
                         backend=config.execution.backend, elapsed=elapsed)
