"""Chapelle & Keerthi (2010), Sect. 5.1, Table 3: OHSUMED, PRSVM / PRSVM+ / LinearSVC.

:func:`run_table3` trains, on the five LETOR 3.0 OHSUMED folds, the squared-hinge RankSVM of
eq. (1) on ``train.txt`` with PRSVM (:func:`~cvxrank.solvers.newton.solve_prsvm`, Sect. 3),
PRSVM+ (:func:`~cvxrank.solvers.newton.solve_prsvm_plus`, Sect. 4) and scikit-learn's
``LinearSVC`` on the explicit pair differences
(:func:`~cvxrank.solvers.baselines.fit_linearsvc_pairs`, the same objective), and reports test
NDCG@10 (LETOR 3.0 conventions), training time and final objective per fold, and how closely
the three objectives agree. Each (fold, method) is one
:class:`~cvxrank.experiments.tasks.Task`, run in this process in order; :class:`Table3Config`
holds every option.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from cvxrank import tolerances
from cvxrank.core.trace import Run
from cvxrank.errors import CvxrankError
from cvxrank.experiments.backends import Log
from cvxrank.experiments.chapelle import DEFAULT_C, LABELS
from cvxrank.experiments.config import LetorConfig, check_sequential, normalize
from cvxrank.experiments.sources import LetorFold
from cvxrank.experiments.tasks import Task, TaskResult
from cvxrank.tolerances import relative_gap

#: Table 3 of the paper, Ohsumed row: NDCG@10 and total training time of the five folds
#: (seconds on the authors' machine).
PAPER_TABLE3 = {"ndcg@10": 0.454, "time": {"prsvm": 9.6, "prsvm+": 1.5}}

#: Mean test NDCG@10 of the five folds with C = 5e-5 in eq. (1)'s convention
#: (``../shared/papers/README.md``).
EXPECTED_MEAN_NDCG10 = 0.4541

#: The methods (solvers) of :func:`run_table3`, in table order.
TABLE3_METHODS = ("prsvm", "prsvm+", "linearsvc")

#: Largest relative difference ``|P_a - P_b| / max(1, |P_a|)`` allowed between the final
#: objectives of two methods of Table 3.
OBJECTIVE_AGREEMENT = 1e-6

#: LETOR 3.0 folds.
FOLDS = (1, 2, 3, 4, 5)

#: LIBLINEAR's stopping tolerance for the LinearSVC baseline (tight: it must reach the
#: optimum that PRSVM and PRSVM+ certify).
LINEARSVC_TOL = 1e-8


@dataclass(frozen=True)
class Table3Config(LetorConfig):
    """Every option of :func:`run_table3` (beside the folder, folds, training queries and
    BLAS threads of :class:`~cvxrank.experiments.config.LetorConfig`; the backend is
    sequential: the fits are timed one after the other).

    Attributes
    ----------
    folds : tuple of int
        Fold numbers (default :data:`FOLDS`).
    C : float
        C of eq. (1). The default 5e-5 is the paper's C = 1e-4 in its published code's
        convention (loss term times C/2).
    methods : tuple of str
        Among :data:`TABLE3_METHODS`.
    tol : float
        Certified relative duality gap at which PRSVM and PRSVM+ stop.
    linearsvc_tol : float
        LIBLINEAR's tolerance (tight, so that it reaches the same optimum).

    Raises
    ------
    ValueError
        For an unknown method, C <= 0, bad training queries or a parallel backend.
    """

    #: Table 3 reads no validation split.
    SPLITS: ClassVar[tuple[str, ...]] = ("train", "test")

    #: ``--quick``: Fold1's first 20 training queries (a check of the protocol in seconds,
    #: not the paper's table).
    QUICK: ClassVar[Mapping[str, Any]] = {"folds": (1,), "max_train_queries": 20}

    folds: tuple[int, ...] | None = FOLDS
    C: float = DEFAULT_C
    methods: tuple[str, ...] = TABLE3_METHODS
    tol: float = tolerances.NEWTON_GAP
    linearsvc_tol: float = LINEARSVC_TOL

    def __post_init__(self) -> None:
        super().__post_init__()
        unknown = [m for m in self.methods if m not in TABLE3_METHODS]
        if unknown or not self.methods:
            raise ValueError(f"methods must be among {', '.join(TABLE3_METHODS)}; got "
                             f"{list(self.methods)}")
        if not (math.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be finite and > 0, got {self.C}")
        check_sequential(self.execution, "chapelle-table3")
        normalize(self, methods=tuple(self.methods), C=float(self.C), tol=float(self.tol),
                  linearsvc_tol=float(self.linearsvc_tol))


@dataclass
class MethodRun:
    """One method on one fold: the training run and its test NDCG@10.

    The clocks of Table 3 (:mod:`cvxrank.experiments.timing`):

    * ``time``: wall-clock seconds of the training call, set-up included (the task's
      :attr:`~cvxrank.experiments.tasks.TaskResult.wall_time`);
    * ``setup_time``: the run's :attr:`~cvxrank.core.trace.Run.setup_time` (pairs and A for
      PRSVM, sorted blocks for PRSVM+, each with the loss and certificate at ``w = 0``;
      pairs and p x d differences for LinearSVC);
    * ``solver_time``: the run's :attr:`~cvxrank.core.trace.Run.solve_time`, the solver clock
      after the set-up (Newton iterations with their certified gaps; LIBLINEAR's fit).

    Attributes
    ----------
    method : str
        ``"prsvm"``, ``"prsvm+"`` or ``"linearsvc"``.
    run : Run
        The training run.
    time : float
        Wall-clock seconds, set-up included.
    ndcg10 : float
        Test NDCG@10 of ``X_test @ w`` under the ``letor3`` preset
        (:func:`cvxrank.metrics.evaluate`).
    certified : dict
        Whether the NDCG@10 is the exact optimum's (``certified``) and how many test
        queries are not certified (:func:`cvxrank.certificates.certify.measure_report`); the Newton
        methods go on until it is, LinearSVC stops at LIBLINEAR's tolerance.
    """

    method: str
    run: Run
    time: float
    ndcg10: float
    certified: dict[str, Any]

    @property
    def objective(self) -> float:
        """:math:`P(w)` of eq. (1) at the returned weights."""
        return self.run.objective

    @property
    def setup_time(self) -> float:
        """The solver clock's set-up (:attr:`~cvxrank.core.trace.Run.setup_time`)."""
        return self.run.setup_time

    @property
    def solver_time(self) -> float:
        """The solver clock after the set-up (:attr:`~cvxrank.core.trace.Run.solve_time`)."""
        return self.run.solve_time

    @property
    def cg_iterations(self) -> list[int]:
        """CG iterations of each Newton step (empty for LinearSVC)."""
        return [int(c) for c in self.run.info.get("cg_iterations", [])]

    @property
    def certified_gap(self) -> float:
        """Final certified relative duality gap (Newton methods; NaN for LinearSVC)."""
        return self.run.relative_gap

    def to_dict(self) -> dict[str, Any]:
        """Plain values (weights included)."""
        r = self.run
        return {
            "method": self.method, "ndcg@10": self.ndcg10, "objective": self.objective,
            "time": self.time, "setup_time": self.setup_time, "solver_time": self.solver_time,
            "n_iter": r.n_iter, "cg_iterations": self.cg_iterations, "converged": r.converged,
            "certified_gap": self.certified_gap, "w_radius": r.w_radius,
            "ndcg@10_certified": self.certified, "message": r.message, "w": r.w,
        }


@dataclass
class FoldResult:
    """Table 3 on one fold.

    Attributes
    ----------
    fold : int
        Fold number K (``FoldK``).
    n_documents, n_queries, n_pairs : int
        Size of the training set used (after ``max_train_queries``).
    n_test_documents, n_test_queries : int
        Size of the test set.
    runs : dict of str to MethodRun
        By method name.
    """

    fold: int
    n_documents: int
    n_queries: int
    n_pairs: int
    n_test_documents: int
    n_test_queries: int
    runs: dict[str, MethodRun]

    def objective_differences(self) -> dict[str, float]:
        """``relative_gap`` of the final objectives of every pair of methods."""
        names = list(self.runs)
        out = {}
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                out[f"{a} vs {b}"] = relative_gap(self.runs[b].objective,
                                                  self.runs[a].objective)
        return out

    @property
    def max_objective_difference(self) -> float:
        """Largest relative difference between two methods' objectives (0 for one method)."""
        return max(self.objective_differences().values(), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        """Plain values."""
        return {
            "fold": self.fold, "n_documents": self.n_documents, "n_queries": self.n_queries,
            "n_pairs": self.n_pairs, "n_test_documents": self.n_test_documents,
            "n_test_queries": self.n_test_queries,
            "runs": {m: r.to_dict() for m, r in self.runs.items()},
            "objective_differences": self.objective_differences(),
            "max_objective_difference": self.max_objective_difference,
        }


@dataclass
class Table3Result:
    """Chapelle & Keerthi (2010), Sect. 5.1, Table 3, as measured.

    Attributes
    ----------
    data_dir : str
        The QueryLevelNorm folder.
    C : float
        C of eq. (1).
    tol : float
        Certified relative duality gap of PRSVM and PRSVM+.
    linearsvc_tol : float
        LIBLINEAR's tolerance.
    methods : tuple of str
    folds : list of FoldResult
    max_train_queries : int or None
        Training restricted to the first this many queries of each fold (None: all).
    """

    data_dir: str
    C: float
    tol: float
    linearsvc_tol: float
    methods: tuple[str, ...]
    folds: list[FoldResult]
    max_train_queries: int | None = None

    def mean_ndcg10(self, method: str) -> float:
        """Mean over the folds of the test NDCG@10 of ``method``."""
        return float(np.mean([f.runs[method].ndcg10 for f in self.folds]))

    def uncertified(self, method: str) -> int | None:
        """Test queries whose NDCG@10 of ``method`` is not certified, summed over the folds
        (None when a run has no certificate)."""
        counts = [f.runs[method].certified["uncertified_queries"] for f in self.folds]
        return None if None in counts else int(sum(counts))

    def total_time(self, method: str) -> float:
        """Training time of ``method`` summed over the folds (the paper's Table 3 time)."""
        return float(sum(f.runs[method].time for f in self.folds))

    @property
    def max_objective_difference(self) -> float:
        """Largest relative objective difference between two methods over all folds."""
        return max((f.max_objective_difference for f in self.folds), default=0.0)

    @property
    def objectives_agree(self) -> bool:
        """Whether every fold's objectives agree to :data:`OBJECTIVE_AGREEMENT`."""
        return self.max_objective_difference <= OBJECTIVE_AGREEMENT

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for ``--json``)."""
        return {
            "experiment": "chapelle-table3",
            "data_dir": self.data_dir,
            "C": self.C,
            "C_published_code": 2.0 * self.C,
            "tol": self.tol,
            "linearsvc_tol": self.linearsvc_tol,
            "max_train_queries": self.max_train_queries,
            "methods": list(self.methods),
            "folds": [f.to_dict() for f in self.folds],
            "mean_ndcg@10": {m: self.mean_ndcg10(m) for m in self.methods},
            "uncertified_queries": {m: self.uncertified(m) for m in self.methods},
            "total_time": {m: self.total_time(m) for m in self.methods},
            "max_objective_difference": self.max_objective_difference,
            "objective_agreement_required": OBJECTIVE_AGREEMENT,
            "objectives_agree": self.objectives_agree,
            "expected_mean_ndcg@10": EXPECTED_MEAN_NDCG10,
            "paper": PAPER_TABLE3,
        }


def table3_tasks(data_dir: str | Path, *, C: float = DEFAULT_C,
                 folds: Sequence[int] = FOLDS, methods: Sequence[str] = TABLE3_METHODS,
                 tol: float = tolerances.NEWTON_GAP, linearsvc_tol: float = LINEARSVC_TOL,
                 max_train_queries: int | None = None) -> list[Task]:
    """One task per (fold, method), fold-major: train on ``train.txt``, evaluate NDCG@10 on
    ``test.txt`` (``letor3``)."""
    root = str(Path(data_dir).resolve())
    return [Task(source=LetorFold(root, int(k)), method="ranksvm", loss="squared_hinge",
                 params={"C": float(C)}, solver=m,
                 tol=linearsvc_tol if m == "linearsvc" else tol, evaluate_on=("test",),
                 preset="letor3", k=10, max_train_queries=max_train_queries)
            for k in folds for m in methods]


def fold_result(results: Sequence[TaskResult]) -> FoldResult:
    """Table 3's row of one fold from its tasks' results (one per method).

    Raises
    ------
    CvxrankError
        When a method failed on the fold (did not converge, or too many pairs).
    """
    failed = [r for r in results if not r.ok]
    if failed:
        r = failed[0]
        raise CvxrankError(f"{LABELS[r.task.solver]} failed on fold {r.task.source.fold}: "
                           f"{r.error}")
    first = results[0]
    train, test = first.sizes["train"], first.sizes["test"]
    return FoldResult(
        fold=first.task.source.fold, n_documents=train["n_documents"],
        n_queries=train["n_queries"], n_pairs=train["n_pairs"],
        n_test_documents=test["n_documents"], n_test_queries=test["n_queries"],
        runs={r.task.solver: MethodRun(method=r.task.solver, run=r.run, time=r.wall_time,
                                       ndcg10=r.measures["test"]["ndcg@10"],
                                       certified=r.certified["test"]["ndcg@10"])
              for r in results},
    )


def run_table3(config: Table3Config, *, log: Log | None = None,
               progress_bar: bool = False) -> Table3Result:
    """Chapelle & Keerthi (2010), Sect. 5.1, Table 3 on LETOR 3.0 OHSUMED.

    For each fold, trains the squared-hinge RankSVM of eq. (1) on ``FoldK/train.txt`` with
    PRSVM (Sect. 3), PRSVM+ (Sect. 4) and LinearSVC on explicit pairs, and evaluates NDCG@10
    on ``FoldK/test.txt`` with LETOR 3.0's conventions. The paper fixes C for all folds
    ("setting 1" of Sect. 5.1) and reports the mean NDCG@10 and the total training time.

    Parameters
    ----------
    config : Table3Config
    log : callable, optional
        Called with one line of text after each fold.
    progress_bar : bool
        A progress bar on stderr while the fits run.

    Returns
    -------
    Table3Result

    Raises
    ------
    FileNotFoundError
        Naming a missing folder or split file (checked before any training).
    ValueError
        For a malformed data file (file and line).
    CvxrankError
        When a method fails on a fold.
    """
    root, folds = config.letor_folds()
    methods = config.methods
    tasks = table3_tasks(root, C=config.C, folds=folds, methods=methods, tol=config.tol,
                         linearsvc_tol=config.linearsvc_tol,
                         max_train_queries=config.max_train_queries)
    results: list[TaskResult] = []
    folds_done = []

    def done(result: TaskResult) -> None:  # sequential: a fold's methods arrive together
        results.append(result)
        if len(results) % len(methods) == 0:
            fold = fold_result(results[-len(methods):])
            folds_done.append(fold)
            if log is not None:
                log(f"fold {fold.fold}: " + ", ".join(
                    f"{LABELS[m]} NDCG@10 {r.ndcg10:.4f} in {r.time:.2f}s"
                    for m, r in fold.runs.items()))

    config.execution.run(tasks, on_result=done, progress=progress_bar, desc="chapelle-table3")
    return Table3Result(data_dir=str(root), C=config.C, tol=config.tol,
                        linearsvc_tol=config.linearsvc_tol, methods=methods,
                        folds=folds_done, max_train_queries=config.max_train_queries)
