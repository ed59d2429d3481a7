"""The tasks, their run, the selection of C per fold and method, and the Table 2 account."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cvxrank.experiments.backends import check_backend, run_tasks
from cvxrank.experiments.le_smola import (
    DEFAULT_DORM_VARIANTS,
    DORM_C_GRID,
    DORM_LOSS,
    DORM_VARIANTS,
    RANKSVM_C_GRID,
    SVMMAP_C_GRID,
)
from cvxrank.experiments.letor import EVALUATED, FoldSelection, check_letor_dir, find_folds
from cvxrank.experiments.selection import TIE_BREAK, check_C_grids, check_measure, select_best
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
    check_C_grids(**{"DORM": dorm_C, "SVM MAP": svmmap_C, "RankSVM": ranksvm_C})
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
        ws = info.get("working_set")
        lam = np.asarray(ws.lam[1:]) if ws is not None else np.zeros(0)
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
        return {m: float(np.mean([f.test[m] for f in self.folds])) for m in MEASURES}

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
                "mean": self.mean(), "table2": self.mean_stats(),
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


def run_le_smola(data_dir: str | Path, *, specs: Sequence[MethodSpec] | None = None,
                 folds: Sequence[int] | None = None, select: str = "map",
                 preset: str = "letor3", max_train_queries: int | None = None,
                 backend: str = "sequential", workers: int | None = None,
                 scheduler: str | None = None, blas_threads: int | None = 1,
                 progress: bool = False,
                 log: Callable[[str], None] | None = None) -> LeSmolaResult:
    """Run every method's grid on every fold, select C on validation, gather the results.

    Raises
    ------
    FileNotFoundError, ValueError, CvxrankError
        As :func:`cvxrank.experiments.letor.run_letor_grid`.
    """
    specs = list(specs) if specs is not None else method_specs()
    measure = check_measure(select, preset=preset, k=10)
    check_backend(backend, workers=workers, scheduler=scheduler)
    folds = find_folds(data_dir) if folds is None else [int(f) for f in folds]
    root = check_letor_dir(data_dir, folds)
    tasks = build_tasks(root, folds, specs, preset=preset, max_train_queries=max_train_queries)
    by_index: dict[int, TaskResult] = {}
    start = time.perf_counter()
    for i, result in run_tasks(tasks, backend=backend, workers=workers, scheduler=scheduler,
                               blas_threads=blas_threads, progress=progress,
                               desc="le-smola"):
        by_index[i] = result
        if log is not None:
            t = result.task
            log(f"fold {t.source.fold} {t.method} {t.params}: "
                + ("failed: " + str(result.error) if not result.ok
                   else f"vali {measure} {result.measures['vali'][measure]:.4f}"))
    elapsed = time.perf_counter() - start
    methods, i = [], 0
    for s in specs:
        points = s.points()
        selections = []
        for fold in folds:
            results = [by_index[i + j] for j in range(len(points))]
            i += len(points)
            selections.append(FoldSelection(fold=fold, params=points, results=results,
                                            selected=select_best(results, measure)))
        methods.append(MethodResult(s, selections))
    return LeSmolaResult(data_dir=str(root), select=measure, preset=preset,
                         fold_numbers=folds, methods=methods,
                         max_train_queries=max_train_queries, backend=backend,
                         elapsed=elapsed)

