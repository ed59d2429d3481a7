"""The LETOR protocol: per fold, a grid on ``train.txt``, selection on ``vali.txt``, test.

For each fold ``FoldK`` of a LETOR folder, train the method at every point of the grid on
``train.txt``, evaluate every model on ``vali.txt`` and ``test.txt``, select the point with
the best validation measure (:func:`cvxrank.experiments.selection.select_best`, ties to the
first grid point) and report its test measures; then average the selected models' test
measures over the folds. This is how LETOR's published baselines were made (QueryLevelNorm,
MAP on the validation set selects) and how later reproductions choose their
hyper-parameters.

:func:`run_letor_grid` builds the tasks (:mod:`cvxrank.experiments.tasks`; fold-major, the
grid's order inside a fold), runs them on a backend (:mod:`cvxrank.experiments.backends`)
and gathers the results as they arrive into a :class:`GridResult`.
"""

from __future__ import annotations

import inspect
import itertools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cvxrank.experiments.backends import Execution
from cvxrank.experiments.grid import Grid
from cvxrank.experiments.selection import TIE_BREAK, check_measure, select_best
from cvxrank.experiments.sources import LetorFold, SplitFiles
from cvxrank.experiments.tasks import Task, TaskResult, run_task, training_data

#: The splits every LETOR grid task evaluates.
EVALUATED = ("vali", "test")


def find_folds(data_dir: str | Path) -> list[int]:
    """The fold numbers K of the ``FoldK`` folders in ``data_dir``, sorted.

    Raises
    ------
    FileNotFoundError
        When ``data_dir`` is not a folder or holds no ``FoldK`` folder.
    """
    from cvxrank.data.letor import list_folds

    folds = list_folds(_existing_dir(data_dir))
    if not folds:
        raise FileNotFoundError(f"{data_dir}: no Fold1, Fold2, ... folders in it")
    return folds


def check_letor_dir(data_dir: str | Path, folds: Sequence[int],
                    splits: Sequence[str] = ("train", "vali", "test")) -> Path:
    """Check that ``data_dir/FoldK/<split>.txt`` exists for every fold; return the folder.

    Raises
    ------
    FileNotFoundError
        One line naming the missing folder or file.
    ValueError
        For an empty fold list or a fold number below 1.
    """
    if not folds:
        raise ValueError("no folds given")
    if any(int(k) < 1 for k in folds):
        raise ValueError(f"fold numbers are 1-based; got {list(folds)}")
    root = _existing_dir(data_dir)
    for k in folds:
        folder = root / f"Fold{k}"
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder}: no such fold directory in {root}")
        for split in splits:
            path = folder / f"{split}.txt"
            if not path.is_file():
                raise FileNotFoundError(f"{path}: no such LETOR split file (fold {k})")
    return root


def _existing_dir(data_dir: str | Path) -> Path:
    root = Path(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(
            f"{root}: no such directory (expected a LETOR folder holding Fold1, Fold2, ..., "
            "e.g. letor3_ohsumed/QueryLevelNorm)")
    return root


def check_params(method: str, loss: Any, grid: Grid) -> Any:
    """Check the method, its loss and that every grid axis is a numeric hyper-parameter of
    the method's formulation (a keyword argument with a float default, such as ``C``);
    return the loss (:meth:`cvxrank.methods.Method.check_loss`: the method's default when
    None, the object a ``"module:object"`` name imports).

    Raises
    ------
    ValueError
        For an unknown method or loss, or an axis the formulation does not take.
    """
    from cvxrank.methods import get

    m = get(method)
    loss = m.check_loss(loss)
    signature = inspect.signature(m.formulation_class())
    numeric = [name for name, p in signature.parameters.items()
               if isinstance(p.default, float) and p.kind is p.KEYWORD_ONLY]
    unknown = [name for name in grid.names if name not in numeric]
    if unknown:
        raise ValueError(f"method {method} has no numeric hyper-parameter "
                         f"{', '.join(unknown)}; its hyper-parameters: {', '.join(numeric)}")
    return loss


@dataclass
class FoldSelection:
    """One fold of the protocol: every grid point's result and the selected one.

    Attributes
    ----------
    fold : int
    params : list of dict
        The grid points, in the grid's order.
    results : list of TaskResult
        Their results, in the same order.
    selected : int
        Position of the selected point.
    """

    fold: int
    params: list[dict[str, float]]
    results: list[TaskResult]
    selected: int

    @property
    def best(self) -> TaskResult:
        """The selected point's result."""
        return self.results[self.selected]

    @property
    def selected_params(self) -> dict[str, float]:
        """The selected hyper-parameters."""
        return self.params[self.selected]

    @property
    def validation(self) -> dict[str, float]:
        """The selected model's measures on ``vali.txt``."""
        return self.best.measures["vali"]

    @property
    def test(self) -> dict[str, float]:
        """The selected model's measures on ``test.txt``."""
        return self.best.measures["test"]

    @property
    def test_certified(self) -> dict[str, dict[str, Any]]:
        """Per test measure of the selected model: whether it is the optimum's and how many
        queries are not certified (:func:`cvxrank.certificates.certify.measure_report`)."""
        return self.best.certified.get("test", {})

    def to_dict(self) -> dict[str, Any]:
        """Plain values: the selection, its validation and test measures with their
        certificates, the run's status and radius, every point."""
        run = self.best.run
        return {
            "fold": self.fold, "selected": self.selected_params,
            "validation": self.validation, "test": self.test,
            "certified": self.best.certified,
            "objective": run.objective, "n_iter": run.n_iter, "solver": run.solver,
            "status": run.status.value, "w_radius": run.w_radius,
            "sizes": self.best.sizes,
            "points": [point_dict(p, r, selected=(i == self.selected))
                       for i, (p, r) in enumerate(zip(self.params, self.results, strict=True))],
        }


def folds_certified(folds: Sequence[FoldSelection],
                    measures: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Per test measure of the selected models, over the folds
    (:func:`cvxrank.certificates.certify.combined_report`)."""
    from cvxrank.certificates.certify import combined_report

    return combined_report([f.test_certified for f in folds], measures)


def point_dict(params: dict[str, float], result: TaskResult, *,
               selected: bool) -> dict[str, Any]:
    """One grid point: parameters, the run's summary (or its failure), its measures and how
    many of their queries are not certified (``uncertified``, per split and measure).

    ``time`` is the solver clock (set-up included), ``wall_time`` the whole fit call.
    """
    out: dict[str, Any] = {"params": params, "selected": selected, "ok": result.ok,
                           "error": result.error}
    if result.ok:
        run = result.run
        out.update({"solver": run.solver, "objective": run.objective, "n_iter": run.n_iter,
                    "status": run.status.value, "converged": run.converged,
                    "relative_gap": run.relative_gap, "w_radius": run.w_radius,
                    "time": run.time, "setup_time": run.setup_time,
                    "wall_time": result.wall_time, "pid": result.pid})
    out.update({split: result.measures.get(split, {}) for split in EVALUATED})
    out["uncertified"] = {split: {m: c["uncertified_queries"] for m, c in cert.items()
                                  if not c["certified"]}
                          for split, cert in result.certified.items()}
    return out


@dataclass
class GridResult:
    """The LETOR protocol's outcome (:func:`run_letor_grid`).

    Attributes
    ----------
    data_dir : str
    method, loss, solver : str
    grid : Grid
    measure : str
        The validation measure that selects.
    preset : str
    k : int
    folds : list of FoldSelection
        In the order of the fold numbers given.
    backend : str
    workers : int or None
        Worker processes started for the run (None: sequential, or a Dask scheduler's own).
    elapsed : float
        Wall-clock seconds of running the tasks: from starting the workers (loky processes,
        a local Dask cluster) to the last result (and the local cluster's shut-down).
    max_train_queries : int or None
    """

    data_dir: str
    method: str
    loss: str
    solver: str
    grid: Grid
    measure: str
    preset: str
    k: int
    folds: list[FoldSelection]
    backend: str
    workers: int | None
    elapsed: float
    max_train_queries: int | None = None

    def mean(self) -> dict[str, float]:
        """Mean over the folds of the selected models' test measures (``evaluate``'s keys)."""
        keys = self.folds[0].test.keys()
        return {key: float(np.mean([f.test[key] for f in self.folds])) for key in keys}

    def certified(self) -> dict[str, dict[str, Any]]:
        """Per test measure, over the folds (:func:`folds_certified`)."""
        return folds_certified(self.folds, self.folds[0].test)

    def at_edges(self) -> list[str]:
        """One line per fold and axis whose selected value is the smallest or the largest
        of an axis of three values or more (two have no inside): the validation measure may
        go on improving beyond the grid (extend it)."""
        lines = []
        for fold in self.folds:
            for name, values in self.grid.axes:
                value = fold.selected_params[name]
                if len(values) > 2 and value in (values[0], values[-1]):
                    end = "smallest" if value == values[0] else "largest"
                    lines.append(f"fold {fold.fold} selected {name} = {value:g}, the {end} "
                                 f"value of the grid")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for ``--json`` and ``grid.json``)."""
        return {
            "protocol": "letor", "data": self.data_dir, "method": self.method,
            "loss": self.loss, "solver": self.solver, "grid": self.grid.to_dict(),
            "select": self.measure, "tie_break": TIE_BREAK, "preset": self.preset,
            "k": self.k, "max_train_queries": self.max_train_queries,
            "folds": [f.to_dict() for f in self.folds], "mean": self.mean(),
            "certified": self.certified(), "at_edges": self.at_edges(),
            "backend": self.backend, "workers": self.workers,
            "n_tasks": sum(len(f.results) for f in self.folds), "elapsed": self.elapsed,
        }


def letor_tasks(sources: Sequence[LetorFold | SplitFiles], *, method: str, loss: Any,
                grid: Grid, solver: str = "auto", tol: float | None = None,
                seed: int | None = 0, preset: str = "letor3", k: int = 10,
                max_train_queries: int | None = None) -> list[Task]:
    """The protocol's tasks: every fold (in the given order) times every grid point."""
    return [Task(source=source, method=method, loss=loss, params=point,
                 solver=solver, tol=tol, seed=seed, evaluate_on=EVALUATED, preset=preset,
                 k=k, max_train_queries=max_train_queries)
            for source in sources for point in grid.points()]


def split_files(train: str | Path, vali: str | Path, test: str | Path) -> SplitFiles:
    """The three files of a grid's one fold, checked to exist (resolved paths).

    Raises
    ------
    FileNotFoundError
        One line naming the missing file.
    """
    paths = {}
    for split, path in (("train", train), ("vali", vali), ("test", test)):
        resolved = Path(path).resolve()
        if not resolved.is_file():
            raise FileNotFoundError(f"{path}: no such {split} file")
        paths[split] = str(resolved)
    return SplitFiles(**paths)


def run_letor_grid(
    data_dir: str | Path | SplitFiles,
    *,
    method: str,
    grid: Grid,
    loss: Any = None,
    select: str = "map",
    preset: str = "letor3",
    k: int = 10,
    folds: Sequence[int] | None = None,
    solver: str = "auto",
    tol: float | None = None,
    seed: int | None = 0,
    max_train_queries: int | None = None,
    backend: str = "sequential",
    workers: int | None = None,
    scheduler: str | None = None,
    blas_threads: int | None = 1,
    progress: bool = False,
    shards: int | None = None,
) -> GridResult:
    """The LETOR protocol (module docstring) on the folds of ``data_dir``.

    Parameters
    ----------
    data_dir : path or SplitFiles
        The folder holding ``Fold1`` ... (``QueryLevelNorm`` for LETOR 3.0 OHSUMED), or three
        files as one fold (:func:`split_files`: any SVMlight/LETOR or LightGBM files).
    method : str
        A method of :mod:`cvxrank.methods`.
    grid : Grid
        Hyper-parameters of the method's formulation (``Grid.parse(["C=1e-5,1e-4"])``).
    loss : str, loss object or None
        The method's loss (None: its default): a name, a ``"module:object"`` name or a loss
        object (:mod:`cvxrank.losses`); the result reports the name given, or the object's.
    select : str
        The validation measure that selects (a key of :func:`cvxrank.metrics.evaluate`:
        ``map``, ``ndcg@10``, ...).
    preset : str
        Metric conventions (``letor3``, ``letor4``, ...).
    k : int
        Largest cut-off of NDCG@k and P@k.
    folds : sequence of int or None
        Fold numbers (None: every ``FoldK`` folder of ``data_dir``).
    solver, tol, seed :
        As in :class:`~cvxrank.experiments.tasks.Task`.
    max_train_queries : int or None
        Train on each fold's first this many queries only (quick checks).
    backend, workers, scheduler, blas_threads, progress :
        As in :func:`~cvxrank.experiments.backends.run_tasks`.
    shards : int or None
        With ``backend="dask"``: fit every grid point of a fold over its training data split
        by query into this many shards on the cluster (:func:`grid_over_shards`), instead of
        one task per point on one worker each.

    Returns
    -------
    GridResult

    Raises
    ------
    FileNotFoundError
        For a missing folder or split file (checked before any task runs).
    ValueError
        For an unknown method, loss, parameter, measure, preset or backend.
    CvxrankError
        When every point of a fold failed, for a malformed data file, or when the Dask
        scheduler does not answer.
    """
    loss_object = check_params(method, loss, grid)  # a name, or the loss a module:object names
    label = loss if isinstance(loss, str) else getattr(loss_object, "name", loss_object)
    measure = check_measure(select, preset=preset, k=k)
    execution = Execution(backend, workers, scheduler, blas_threads)
    if max_train_queries is not None and max_train_queries < 1:
        raise ValueError(f"max_train_queries must be >= 1, got {max_train_queries}")
    if isinstance(data_dir, SplitFiles):
        if folds is not None:
            raise ValueError("folds are for a folder of FoldK folders, not for three files")
        sources: list[LetorFold | SplitFiles] = [data_dir]
        root: str | Path = data_dir.key
    else:
        folds = find_folds(data_dir) if folds is None else [int(f) for f in folds]
        root = check_letor_dir(data_dir, folds)
        sources = [LetorFold(str(Path(root).resolve()), int(fold)) for fold in folds]
    tasks = letor_tasks(sources, method=method, loss=loss_object, grid=grid, solver=solver,
                        tol=tol, seed=seed, preset=preset, k=k,
                        max_train_queries=max_train_queries)
    start = time.perf_counter()
    if shards is None:
        results = execution.run(tasks, progress=progress)
    elif backend != "dask":
        raise ValueError(f"shards are for the dask backend, not {backend!r}")
    else:
        results = grid_over_shards(tasks, shards, workers=workers, scheduler=scheduler)
    elapsed = time.perf_counter() - start
    points = list(grid.points())
    selections = []
    for j, source in enumerate(sources):
        fold_results = results[j * len(points):(j + 1) * len(points)]
        selections.append(FoldSelection(fold=source.fold, params=points, results=fold_results,
                                        selected=select_best(fold_results, measure)))
    return GridResult(data_dir=str(root), method=method, loss=label, solver=solver, grid=grid,
                      measure=measure, preset=preset, k=k, folds=selections, backend=backend,
                      workers=execution.started_workers, elapsed=elapsed,
                      max_train_queries=max_train_queries)


def grid_over_shards(tasks: Sequence[Task], n_shards: int, *, workers: int | None = None,
                     scheduler: str | None = None) -> list[TaskResult]:
    """Every task's fit over its fold's training data on a Dask cluster, in order.

    Each fold's training data (:func:`~cvxrank.experiments.tasks.training_data`) is read
    once here, split by query into ``n_shards`` shards held on the workers
    (:meth:`cvxrank.distributed.ShardedRankingData.from_data`), and every grid point of the
    fold is fitted on them (:func:`~cvxrank.experiments.tasks.run_task` with the shards:
    the in-memory solvers and certificates, each shard's part computed where it lives);
    the fold's shards are released before the next fold's are made.

    Parameters
    ----------
    tasks : sequence of Task
        The grid's tasks, fold by fold (:func:`letor_tasks`).
    n_shards : int
    workers, scheduler :
        The cluster (:func:`cvxrank.distributed.connect`: a running scheduler, or a local
        cluster of ``workers`` processes, 2 by default).
    """
    from cvxrank.distributed import ShardedRankingData, connect

    results: list[TaskResult] = []
    with connect(scheduler, workers or 2) as client:
        for _, fold in itertools.groupby(tasks, key=lambda task: task.source.key):
            fold_tasks = list(fold)
            shards = ShardedRankingData.from_data(training_data(fold_tasks[0]), client,
                                                  n_shards)
            results += [run_task(task, shards) for task in fold_tasks]
            client.cancel(shards.futures)
    return results
