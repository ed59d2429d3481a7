r"""Chapelle & Keerthi (2010), Sect. 5: the OHSUMED table (Table 3) and the AUC scaling (Fig. 3).

Both experiments train the squared-hinge RankSVM of the paper's eq. (1),

.. math::

    \min_w \; \tfrac12 \|w\|^2 + C \sum_{(i, j) \in \mathcal P} \max(0, 1 - w^\top (x_i - x_j))^2,

with cvxrank's :class:`~cvxrank.formulations.ranksvm.RankSVM`. **Convention for C:** C
multiplies the loss term as in eq. (1). The published Matlab code multiplies it by C/2, so the
paper's "C = 1e-4 for Ohsumed" (Sect. 5.1) is ``C = 5e-5`` here (:data:`DEFAULT_C`).

* :func:`run_table3` (Sect. 5.1, Table 3): on the five LETOR 3.0 OHSUMED folds, train on
  ``train.txt`` with PRSVM (:func:`~cvxrank.solvers.newton.solve_prsvm`, Sect. 3), PRSVM+
  (:func:`~cvxrank.solvers.newton.solve_prsvm_plus`, Sect. 4) and scikit-learn's
  ``LinearSVC`` on the explicit pair differences
  (:func:`~cvxrank.baselines.fit_linearsvc_pairs`, the same objective); report test NDCG@10
  (LETOR 3.0 conventions), training time and final objective per fold, and how closely the
  three objectives agree. :func:`write_table3` writes the markdown table and the CSV.
* :func:`run_fig3` (Sect. 5.2, Fig. 3): training time against the number of documents n for
  the one-query, two-grade problem (AUC optimization), PRSVM against PRSVM+, with the Newton
  and CG iteration counts per n and least-squares slopes of log time against log n;
  :func:`plot_fig3` draws it on an ``ax`` and :func:`write_fig3` writes PNG, CSV and
  markdown.

Times are wall-clock seconds of the whole training call *including its set-up*: building
the pairs and the operator A (PRSVM), the sorted blocks (PRSVM+), the pairs and the explicit
p x d differences (LinearSVC). The solvers' own clocks
(:attr:`cvxrank.trace.SolverResult.time`, which include building the loss engine and the
certified duality gap of every Newton iteration, but not the formulation's construction)
are reported as ``solver_time``. PRSVM+'s compiled kernels are loaded before the first
timed run (:func:`cvxrank.formulations.sorted_kernels.warm_up`).

References
----------
.. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010: eq. (1), Alg. 1, Sects. 3-4, Sect. 5.1 (Table 3) and
   Sect. 5.2 (Fig. 3).
"""

from __future__ import annotations

import contextlib
import csv
import math
import time
import tracemalloc
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.data.letor import read_letor_fold
from cvxrank.data.pairs import DEFAULT_MAX_PAIRS, count_pairs
from cvxrank.data.ranking_data import RankingData
from cvxrank.data.synthetic import make_synthetic
from cvxrank.errors import PairLimitError
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.formulations.sorted_kernels import warm_up
from cvxrank.metrics import evaluate
from cvxrank.reference import relative_difference

#: C of Table 3 in cvxrank's (eq. (1)) convention: the published code's C = 1e-4 halved.
DEFAULT_C = 5e-5

#: The paper's C for Ohsumed in its published code's convention (loss term times C/2).
PUBLISHED_CODE_C = 1e-4

#: Table 3 of the paper, Ohsumed row: NDCG@10 and total training time of the five folds
#: (seconds on the authors' machine).
PAPER_TABLE3 = {"ndcg@10": 0.454, "time": {"prsvm": 9.6, "prsvm+": 1.5}}

#: Mean test NDCG@10 of the five folds with C = 5e-5 in eq. (1)'s convention
#: (``../shared/papers/README.md``).
EXPECTED_MEAN_NDCG10 = 0.4541

#: The methods of :func:`run_table3`, in table order.
TABLE3_METHODS = ("prsvm", "prsvm+", "linearsvc")

#: The methods of :func:`run_fig3`.
FIG3_METHODS = ("prsvm", "prsvm+")

#: Display names.
LABELS = {"prsvm": "PRSVM", "prsvm+": "PRSVM+", "linearsvc": "LinearSVC"}

#: Largest relative difference ``|P_a - P_b| / max(1, |P_a|)`` allowed between the final
#: objectives of two methods of Table 3.
OBJECTIVE_AGREEMENT = 1e-6

#: LETOR 3.0 folds.
FOLDS = (1, 2, 3, 4, 5)

#: LIBLINEAR's stopping tolerance for the LinearSVC baseline (tight: it must reach the
#: optimum that PRSVM and PRSVM+ certify).
LINEARSVC_TOL = 1e-8

#: The training-set sizes of the paper's Fig. 3.
FIG3_SIZES = (1200, 2400, 4800, 9600, 19200)

#: Default feature dimension of the Fig. 3 problem (see :func:`run_fig3`).
FIG3_FEATURES = 20

#: Default noise of the planted model of the Fig. 3 problem.
FIG3_NOISE = 1.0

#: Default ``C * p`` of the Fig. 3 problem (``C = c0 / p``): on OHSUMED, C = 5e-5 with
#: 280,000-420,000 pairs per fold gives C p of 14 to 21.
FIG3_C0 = 10.0

Progress = Callable[[str], None]


# --------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def blas_threads(n: int | None) -> Iterator[None]:
    """Limit the BLAS thread pools to ``n`` threads inside the block (None or <= 0: as is).

    On a shared machine with few cores a multi-threaded BLAS can spin-wait on busy cores and
    make a small matrix-vector product a hundred times slower; timing runs are steadier with
    one thread (``threadpoolctl``, a scikit-learn dependency).
    """
    if n is None or n <= 0:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=int(n), user_api="blas"):
        yield


def fitted_slope(n: Sequence[float], t: Sequence[float]) -> float:
    """Least-squares slope of ``log t`` against ``log n`` (NaN with fewer than two points)."""
    x = np.log(np.asarray(n, dtype=np.float64))
    y = np.log(np.asarray(t, dtype=np.float64))
    keep = np.isfinite(x) & np.isfinite(y)
    if np.unique(x[keep]).size < 2:
        return float("nan")
    return float(np.polyfit(x[keep], y[keep], 1)[0])


@dataclass
class FitOutcome:
    """One training run of one method (no test evaluation).

    Attributes
    ----------
    method : str
        ``"prsvm"``, ``"prsvm+"`` or ``"linearsvc"``.
    w : ndarray
        The weights.
    objective : float
        :math:`P(w)` of eq. (1) at ``w`` (``RankSVM.primal_value``).
    time : float
        Wall-clock seconds, set-up included.
    setup_time : float
        Seconds of the set-up alone: pairs and A (PRSVM), sorted blocks (PRSVM+), pairs and
        p x d differences (LinearSVC).
    solver_time : float
        The solver's own clock (Newton: from building the loss engine to the last
        certificate; LinearSVC: ``LinearSVC.fit``).
    n_iter : int
        Newton iterations (PRSVM, PRSVM+) or LIBLINEAR iterations.
    cg_iterations : list of int
        CG iterations of each Newton step (empty for LinearSVC).
    converged : bool
        Newton: certified relative duality gap <= tol; LinearSVC: no ConvergenceWarning.
    certified_gap : float
        Final certified relative duality gap ``(P(w) - D(alpha(w))) / max(1, |P(w)|)``
        (Newton methods; NaN for LinearSVC).
    message : str
        Why the run stopped.
    """

    method: str
    w: np.ndarray = field(repr=False)
    objective: float
    time: float
    setup_time: float
    solver_time: float
    n_iter: int
    cg_iterations: list[int]
    converged: bool
    certified_gap: float
    message: str


def fit_method(method: str, formulation: RankSVM, *, tol: float = tolerances.NEWTON_GAP,
               linearsvc_tol: float = LINEARSVC_TOL) -> FitOutcome:
    """Train ``formulation`` (a fresh squared-hinge RankSVM) with one method and time it.

    Parameters
    ----------
    method : {"prsvm", "prsvm+", "linearsvc"}
        PRSVM (Chapelle & Keerthi Sect. 3), PRSVM+ (Sect. 4) or LinearSVC on the explicit
        pair differences.
    formulation : RankSVM
        A squared-hinge RankSVM whose pairs and loss engines were not built yet (they are
        cached on the formulation, so a reused one would hide the set-up cost).
    tol : float
        Certified relative duality gap at which PRSVM and PRSVM+ stop.
    linearsvc_tol : float
        LIBLINEAR's tolerance.

    Returns
    -------
    FitOutcome

    Raises
    ------
    PairLimitError
        When PRSVM or LinearSVC would build more pairs than the formulation's ``max_pairs``.
    ValueError
        For an unknown method.
    """
    from cvxrank.solvers.newton import solve_truncated_newton

    f = formulation
    if method in ("prsvm", "prsvm+"):
        engine = "pairs" if method == "prsvm" else "sorted"
        start = time.perf_counter()
        f.loss_engine(engine)  # the set-up: pairs and A, or the sorted blocks (cached)
        setup = time.perf_counter() - start
        res = solve_truncated_newton(f, engine=engine, tol=tol)
        total = time.perf_counter() - start
        primal = res.trace.primal[-1]
        return FitOutcome(
            method=method, w=res.w, objective=float(primal), time=total, setup_time=setup,
            solver_time=res.time, n_iter=res.n_iter,
            cg_iterations=[int(c) for c in res.info.get("cg_iterations", [])],
            converged=bool(res.converged),
            certified_gap=float(res.trace.gap[-1]) / max(1.0, abs(primal)),
            message=res.message,
        )
    if method == "linearsvc":
        from sklearn.exceptions import ConvergenceWarning

        from cvxrank.baselines import fit_linearsvc_pairs

        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            fit = fit_linearsvc_pairs(f, tol=linearsvc_tol)  # its build time: pairs + diffs
        total = time.perf_counter() - start
        converged = not any(issubclass(c.category, ConvergenceWarning) for c in caught)
        return FitOutcome(
            method=method, w=fit.w, objective=float(fit.objective), time=total,
            setup_time=fit.build_time, solver_time=fit.fit_time,
            n_iter=fit.n_iter, cg_iterations=[], converged=converged,
            certified_gap=float("nan"),
            message="converged" if converged else "LIBLINEAR hit its iteration limit",
        )
    raise ValueError(f"unknown method {method!r}; expected one of {', '.join(TABLE3_METHODS)}")


# --------------------------------------------------------------------------- Table 3


@dataclass
class MethodRun:
    """One method on one fold: the training run and its test NDCG@10.

    Attributes
    ----------
    fit : FitOutcome
        The training run.
    ndcg10 : float
        Test NDCG@10 of ``X_test @ w`` under the ``letor3`` preset
        (:func:`cvxrank.metrics.evaluate`).
    """

    fit: FitOutcome
    ndcg10: float

    def to_dict(self) -> dict[str, Any]:
        """Plain values (weights included)."""
        f = self.fit
        return {
            "method": f.method, "ndcg@10": self.ndcg10, "objective": f.objective,
            "time": f.time, "setup_time": f.setup_time, "solver_time": f.solver_time,
            "n_iter": f.n_iter, "cg_iterations": f.cg_iterations, "converged": f.converged,
            "certified_gap": f.certified_gap, "message": f.message, "w": f.w,
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
        """``relative_difference`` of the final objectives of every pair of methods."""
        names = list(self.runs)
        out = {}
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                out[f"{a} vs {b}"] = relative_difference(self.runs[a].fit.objective,
                                                         self.runs[b].fit.objective)
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
        C of eq. (1) (the published code's C is twice this).
    tol : float
        Certified relative duality gap of PRSVM and PRSVM+.
    linearsvc_tol : float
        LIBLINEAR's tolerance.
    methods : tuple of str
    folds : list of FoldResult
    max_train_queries : int or None
        Training restricted to the first queries of each fold (None: all).
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

    def total_time(self, method: str) -> float:
        """Training time of ``method`` summed over the folds (the paper's Table 3 time)."""
        return float(sum(f.runs[method].fit.time for f in self.folds))

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
            "total_time": {m: self.total_time(m) for m in self.methods},
            "max_objective_difference": self.max_objective_difference,
            "objective_agreement_required": OBJECTIVE_AGREEMENT,
            "objectives_agree": self.objectives_agree,
            "expected_mean_ndcg@10": EXPECTED_MEAN_NDCG10,
            "paper": PAPER_TABLE3,
        }


def check_letor_dir(data_dir: str | Path, folds: Sequence[int] = FOLDS,
                    splits: Sequence[str] = ("train", "test")) -> Path:
    """Check that ``data_dir/FoldK/<split>.txt`` exists for every fold; return the folder.

    Raises
    ------
    FileNotFoundError
        One line naming the missing folder or file.
    ValueError
        For an empty or invalid fold list.
    """
    root = Path(data_dir)
    if not folds:
        raise ValueError("no folds given")
    if any(int(k) < 1 for k in folds):
        raise ValueError(f"fold numbers are 1-based; got {list(folds)}")
    if not root.is_dir():
        raise FileNotFoundError(
            f"{root}: no such directory (expected the LETOR QueryLevelNorm folder holding "
            "Fold1..Fold5)")
    for k in folds:
        folder = root / f"Fold{k}"
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder}: no such fold directory in {root}")
        for split in splits:
            path = folder / f"{split}.txt"
            if not path.is_file():
                raise FileNotFoundError(f"{path}: no such LETOR split file (fold {k})")
    return root


def run_fold(train: RankingData, test: RankingData, *, fold: int = 0, C: float = DEFAULT_C,
             methods: Sequence[str] = TABLE3_METHODS, tol: float = tolerances.NEWTON_GAP,
             linearsvc_tol: float = LINEARSVC_TOL, k: int = 10) -> FoldResult:
    """Table 3 on one (train, test) split: every method trained, timed and evaluated.

    Parameters
    ----------
    train, test : RankingData
    fold : int
        Label of the fold in the result.
    C : float
        C of eq. (1) (:data:`DEFAULT_C`: the paper's C = 1e-4 in its code's convention).
    methods : sequence of str
        Among :data:`TABLE3_METHODS`.
    tol, linearsvc_tol : float
        See :func:`fit_method`.
    k : int
        NDCG cut-off (Table 3 reports NDCG@10).

    Returns
    -------
    FoldResult
    """
    runs: dict[str, MethodRun] = {}
    for method in methods:
        f = RankSVM(train, C=C, loss="squared_hinge")
        fit = fit_method(method, f, tol=tol, linearsvc_tol=linearsvc_tol)
        scores = np.asarray(test.pad_features(fit.w.size).X @ fit.w)
        measures = evaluate(test.y, scores, test.query_ptr, preset="letor3", k=k)
        runs[method] = MethodRun(fit=fit, ndcg10=float(measures[f"ndcg@{k}"]))
    return FoldResult(
        fold=fold, n_documents=train.n_documents, n_queries=train.n_queries,
        n_pairs=int(count_pairs(train).sum()), n_test_documents=test.n_documents,
        n_test_queries=test.n_queries, runs=runs,
    )


def run_table3(
    data_dir: str | Path,
    *,
    C: float = DEFAULT_C,
    folds: Sequence[int] = FOLDS,
    methods: Sequence[str] = TABLE3_METHODS,
    tol: float = tolerances.NEWTON_GAP,
    linearsvc_tol: float = LINEARSVC_TOL,
    max_train_queries: int | None = None,
    n_blas_threads: int | None = None,
    progress: Progress | None = None,
) -> Table3Result:
    """Chapelle & Keerthi (2010), Sect. 5.1, Table 3 on LETOR 3.0 OHSUMED.

    For each fold, trains the squared-hinge RankSVM of eq. (1) on ``FoldK/train.txt`` with
    PRSVM (Sect. 3), PRSVM+ (Sect. 4) and LinearSVC on explicit pairs, and evaluates NDCG@10
    on ``FoldK/test.txt`` with LETOR 3.0's conventions. The paper fixes C for all folds
    ("setting 1" of Sect. 5.1) and reports the mean NDCG@10 and the total training time.

    Parameters
    ----------
    data_dir : path
        The ``QueryLevelNorm`` folder holding ``Fold1`` ... ``Fold5``.
    C : float
        C of eq. (1). The default 5e-5 is the paper's C = 1e-4 in its published code's
        convention (loss term times C/2).
    folds : sequence of int
        Fold numbers.
    methods : sequence of str
        Among :data:`TABLE3_METHODS`.
    tol : float
        Certified relative duality gap at which PRSVM and PRSVM+ stop.
    linearsvc_tol : float
        LIBLINEAR's tolerance (tight, so that it reaches the same optimum).
    max_train_queries : int or None
        Train on the first this many queries of each fold only (a quick check; None: all).
    n_blas_threads : int or None
        Limit BLAS threads during the run (:func:`blas_threads`).
    progress : callable, optional
        Called with one line of text after each fold.

    Returns
    -------
    Table3Result

    Raises
    ------
    FileNotFoundError
        Naming a missing folder or split file (checked before any training).
    ValueError
        For an unknown method, C <= 0 or a malformed data file (file and line).
    """
    unknown = [m for m in methods if m not in TABLE3_METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be among {', '.join(TABLE3_METHODS)}; got "
                         f"{list(methods)}")
    if not (math.isfinite(C) and C > 0):
        raise ValueError(f"C must be finite and > 0, got {C}")
    if max_train_queries is not None and max_train_queries < 1:
        raise ValueError(f"max_train_queries must be >= 1, got {max_train_queries}")
    root = check_letor_dir(data_dir, folds)
    results = []
    warm_up()
    with blas_threads(n_blas_threads):
        for k in folds:
            split = read_letor_fold(root, int(k), splits=("train", "test"))
            train, test = split["train"], split["test"]
            if max_train_queries is not None and max_train_queries < train.n_queries:
                train = train.subset(np.arange(max_train_queries))
            fold = run_fold(train, test, fold=int(k), C=C, methods=methods, tol=tol,
                            linearsvc_tol=linearsvc_tol)
            results.append(fold)
            if progress is not None:
                progress(f"fold {k}: " + ", ".join(
                    f"{LABELS[m]} NDCG@10 {r.ndcg10:.4f} in {r.fit.time:.2f}s"
                    for m, r in fold.runs.items()))
    return Table3Result(data_dir=str(root), C=float(C), tol=float(tol),
                        linearsvc_tol=float(linearsvc_tol), methods=tuple(methods),
                        folds=results, max_train_queries=max_train_queries)


def table3_markdown(result: Table3Result) -> str:
    """The markdown table of :func:`run_table3` (per fold, mean and total) and a summary."""
    ms = result.methods
    head = (["fold", "train docs", "queries", "pairs"]
            + [f"NDCG@10 {LABELS[m]}" for m in ms]
            + [f"time {LABELS[m]} [s]" for m in ms]
            + ["objective", "max rel. obj. diff."])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f in result.folds:
        cells = ([str(f.fold), f"{f.n_documents:,}", str(f.n_queries), f"{f.n_pairs:,}"]
                 + [f"{f.runs[m].ndcg10:.4f}" for m in ms]
                 + [f"{f.runs[m].fit.time:.3f}" for m in ms]
                 + [f"{f.runs[ms[0]].fit.objective:.8g}", f"{f.max_objective_difference:.1e}"])
        lines.append("| " + " | ".join(cells) + " |")
    n = len(result.folds)
    mean = (["mean", f"{np.mean([f.n_documents for f in result.folds]):,.0f}",
             f"{np.mean([f.n_queries for f in result.folds]):.1f}",
             f"{np.mean([f.n_pairs for f in result.folds]):,.0f}"]
            + [f"**{result.mean_ndcg10(m):.4f}**" for m in ms]
            + [f"{result.total_time(m) / n:.3f}" for m in ms]
            + [f"{np.mean([f.runs[ms[0]].fit.objective for f in result.folds]):.8g}",
               f"{result.max_objective_difference:.1e}"])
    total = (["total", f"{sum(f.n_documents for f in result.folds):,}",
              str(sum(f.n_queries for f in result.folds)),
              f"{sum(f.n_pairs for f in result.folds):,}"]
             + ["" for _ in ms]
             + [f"**{result.total_time(m):.3f}**" for m in ms]
             + ["", ""])
    lines += ["| " + " | ".join(mean) + " |", "| " + " | ".join(total) + " |"]
    subset = ("" if result.max_train_queries is None else
              f" Training restricted to the first {result.max_train_queries} queries of each "
              "fold.")
    agree = "agree" if result.objectives_agree else "DO NOT agree"
    paper_t = PAPER_TABLE3["time"]
    summary = [
        "",
        f"Squared-hinge RankSVM, C = {result.C:g} in eq. (1)'s convention (= {2 * result.C:g} "
        "in the published code's C/2 convention); PRSVM and PRSVM+ stop at certified relative "
        f"duality gap {result.tol:g}, LinearSVC (LIBLINEAR dual CD on explicit pairs) at "
        f"tol {result.linearsvc_tol:g}. Test NDCG@10 with LETOR 3.0's conventions.{subset}",
        "",
        f"Objective column: {LABELS[ms[0]]}'s final objective. Largest relative objective "
        f"difference between the methods: {result.max_objective_difference:.1e} (required "
        f"<= {OBJECTIVE_AGREEMENT:g}): {agree}.",
        "",
        "Times: wall-clock seconds per fold including set-up (pairs and A for PRSVM, sorted "
        "blocks for PRSVM+, pairs and explicit differences for LinearSVC); 'total' is the sum "
        "over the folds, the paper's Table 3 time.",
        "",
        f"Paper (Table 3, Ohsumed): NDCG@10 {PAPER_TABLE3['ndcg@10']} for PRSVM and PRSVM+, "
        f"{paper_t['prsvm']} s and {paper_t['prsvm+']} s for the five folds (authors' "
        f"machine); expected mean NDCG@10 at C = 5e-5: {EXPECTED_MEAN_NDCG10}.",
    ]
    return "\n".join(lines + summary) + "\n"


TABLE3_CSV_FIELDS = ("fold", "method", "n_documents", "n_queries", "n_pairs", "ndcg@10",
                     "objective", "time", "setup_time", "solver_time", "n_iter",
                     "cg_iterations", "converged", "certified_gap", "rel_diff_to_first")


def table3_rows(result: Table3Result) -> list[dict[str, Any]]:
    """One row per (fold, method), then ``mean`` and ``total`` rows per method."""
    rows = []
    first = result.methods[0]
    for f in result.folds:
        for m, r in f.runs.items():
            rows.append({
                "fold": f.fold, "method": m, "n_documents": f.n_documents,
                "n_queries": f.n_queries, "n_pairs": f.n_pairs, "ndcg@10": r.ndcg10,
                "objective": r.fit.objective, "time": r.fit.time,
                "setup_time": r.fit.setup_time, "solver_time": r.fit.solver_time,
                "n_iter": r.fit.n_iter,
                "cg_iterations": " ".join(str(c) for c in r.fit.cg_iterations),
                "converged": r.fit.converged, "certified_gap": r.fit.certified_gap,
                "rel_diff_to_first": relative_difference(f.runs[first].fit.objective,
                                                         r.fit.objective),
            })
    for m in result.methods:
        runs = [f.runs[m] for f in result.folds]
        for label, agg in (("mean", np.mean), ("total", np.sum)):
            rows.append({
                "fold": label, "method": m,
                "n_documents": agg([f.n_documents for f in result.folds]),
                "n_queries": agg([f.n_queries for f in result.folds]),
                "n_pairs": agg([f.n_pairs for f in result.folds]),
                "ndcg@10": result.mean_ndcg10(m) if label == "mean" else "",
                "objective": agg([r.fit.objective for r in runs]),
                "time": agg([r.fit.time for r in runs]),
                "setup_time": agg([r.fit.setup_time for r in runs]),
                "solver_time": agg([r.fit.solver_time for r in runs]),
                "n_iter": agg([r.fit.n_iter for r in runs]), "cg_iterations": "",
                "converged": all(r.fit.converged for r in runs), "certified_gap": "",
                "rel_diff_to_first": max(relative_difference(f.runs[first].fit.objective,
                                                             f.runs[m].fit.objective)
                                         for f in result.folds),
            })
    return rows


def _write_csv(path: Path, fields: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(fields))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_value(row.get(k, "")) for k in fields})


def _csv_value(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_table3(result: Table3Result, out_dir: str | Path) -> dict[str, Path]:
    """Write ``chapelle-table3.md`` and ``chapelle-table3.csv`` into ``out_dir``.

    Returns
    -------
    dict
        ``{"markdown": path, "csv": path}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = out / "chapelle-table3.md"
    md.write_text("# Chapelle & Keerthi (2010), Table 3: LETOR 3.0 OHSUMED\n\n"
                  + table3_markdown(result), encoding="utf-8")
    path = out / "chapelle-table3.csv"
    _write_csv(path, TABLE3_CSV_FIELDS, table3_rows(result))
    return {"markdown": md, "csv": path}


# --------------------------------------------------------------------------- Fig. 3


def auc_data(n: int, *, d: int = FIG3_FEATURES, noise: float = FIG3_NOISE,
             seed: int = 0) -> RankingData:
    """The one-query, two-grade (AUC) problem of Sect. 5.2 on n synthetic documents.

    ``make_synthetic(n_queries=1, docs_per_query=n, n_features=d, n_grades=2, noise=noise,
    seed=seed)``: standard normal features, a planted unit-norm linear scorer plus
    ``noise`` times standard normal noise, grade 1 for the top third of the latent scores
    (masses proportional to 2^-g), so about ``2 n^2 / 9`` pairs.
    """
    return make_synthetic(n_queries=1, docs_per_query=int(n), n_features=int(d), n_grades=2,
                          noise=noise, seed=seed)


@dataclass
class ScalingRun:
    """One method at one n of Fig. 3.

    Attributes
    ----------
    n, n_pairs : int
        Documents and preference pairs.
    method : str
        ``"prsvm"`` or ``"prsvm+"``.
    C : float
        C of eq. (1) used at this n.
    status : str
        ``"ok"``, or ``"refused"`` when ``build_pairs`` refused (more pairs than the limit).
    time : float
        Median wall-clock seconds over the repeats, set-up included (NaN when refused).
    times : list of float
        Every repeat's wall-clock time.
    setup_time, solver_time : float
        Medians of the set-up time and of the solver's own clock.
    newton_iterations : int
        Newton iterations (the method is deterministic: the same in every repeat).
    cg_iterations : list of int
        CG iterations of each Newton step.
    objective, certified_gap : float
        Final objective and certified relative duality gap.
    converged : bool
    x_bytes : int
        Bytes of the feature matrix X.
    peak_bytes : int or None
        Peak traced memory (``tracemalloc``) allocated during one training run, set-up
        included, above what was allocated before it; None when not measured.
    message : str
        The solver's stopping message, or the refusal.
    """

    n: int
    n_pairs: int
    method: str
    C: float
    status: str
    time: float = float("nan")
    times: list[float] = field(default_factory=list)
    setup_time: float = float("nan")
    solver_time: float = float("nan")
    newton_iterations: int = 0
    cg_iterations: list[int] = field(default_factory=list)
    objective: float = float("nan")
    certified_gap: float = float("nan")
    converged: bool = False
    x_bytes: int = 0
    peak_bytes: int | None = None
    message: str = ""

    @property
    def cg_total(self) -> int:
        """CG iterations summed over the Newton steps."""
        return int(sum(self.cg_iterations))

    @property
    def peak_ratio(self) -> float:
        """``peak_bytes / x_bytes`` (NaN when not measured)."""
        if self.peak_bytes is None or self.x_bytes == 0:
            return float("nan")
        return self.peak_bytes / self.x_bytes

    def to_dict(self) -> dict[str, Any]:
        """Plain values."""
        return {
            "n": self.n, "n_pairs": self.n_pairs, "method": self.method, "C": self.C,
            "status": self.status, "time": self.time, "times": self.times,
            "setup_time": self.setup_time, "solver_time": self.solver_time,
            "newton_iterations": self.newton_iterations,
            "cg_iterations": self.cg_iterations, "cg_total": self.cg_total,
            "objective": self.objective, "certified_gap": self.certified_gap,
            "converged": self.converged, "x_bytes": self.x_bytes,
            "peak_bytes": self.peak_bytes, "peak_ratio": self.peak_ratio,
            "message": self.message,
        }


@dataclass
class ScalingResult:
    """Chapelle & Keerthi (2010), Sect. 5.2, Fig. 3, as measured.

    Attributes
    ----------
    runs : list of ScalingRun
        In the order run (size by size).
    sizes : list of int
    methods : tuple of str
    d : int
    noise : float
    seed : int
    c_mode : str
        ``"per-pair"`` (``C = c0 / p``) or ``"fixed"`` (``C = C_fixed`` at every n).
    c0 : float
    C_fixed : float or None
    tol : float
    max_pairs : int
        The pair limit given to ``build_pairs`` for PRSVM.
    repeat : int
        Minimum number of timed repeats per point (more for fast points, see
        :func:`run_fig3`).
    """

    runs: list[ScalingRun]
    sizes: list[int]
    methods: tuple[str, ...]
    d: int
    noise: float
    seed: int
    c_mode: str
    c0: float
    C_fixed: float | None
    tol: float
    max_pairs: int
    repeat: int

    def runs_of(self, method: str, *, ok_only: bool = False) -> list[ScalingRun]:
        """The runs of one method, in increasing n."""
        runs = sorted((r for r in self.runs if r.method == method), key=lambda r: r.n)
        return [r for r in runs if r.status == "ok"] if ok_only else runs

    def slope(self, method: str, *, min_n: int = 0) -> float:
        """Least-squares slope of log time against log n over the runs with ``n >= min_n``."""
        runs = [r for r in self.runs_of(method, ok_only=True) if r.n >= min_n]
        return fitted_slope([r.n for r in runs], [r.time for r in runs])

    def refused_from(self, method: str) -> int | None:
        """The smallest n at which ``method`` was refused (None if never)."""
        refused = [r.n for r in self.runs_of(method) if r.status == "refused"]
        return min(refused) if refused else None

    def objective_difference(self, n: int) -> float:
        """Relative objective difference between the methods that ran at ``n`` (NaN if < 2)."""
        objs = [r.objective for r in self.runs if r.n == n and r.status == "ok"]
        if len(objs) < 2:
            return float("nan")
        return max(relative_difference(a, b) for a in objs for b in objs)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for ``--json``)."""
        return {
            "experiment": "chapelle-fig3",
            "sizes": self.sizes, "methods": list(self.methods), "d": self.d,
            "noise": self.noise, "seed": self.seed, "c_mode": self.c_mode, "c0": self.c0,
            "C_fixed": self.C_fixed, "tol": self.tol, "max_pairs": self.max_pairs,
            "repeat": self.repeat,
            "slopes": {m: self.slope(m) for m in self.methods},
            "refused_from": {m: self.refused_from(m) for m in self.methods},
            "objective_differences": {str(n): self.objective_difference(n)
                                      for n in self.sizes},
            "runs": [r.to_dict() for r in self.runs],
        }


def _nbytes(X: Any) -> int:
    """Bytes of a dense array or of a CSR matrix's three arrays."""
    if hasattr(X, "indptr"):
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(np.asarray(X).nbytes)


def _one_run(method: str, data: RankingData, C: float, *, tol: float,
             max_pairs: int) -> FitOutcome:
    f = RankSVM(data, C=C, loss="squared_hinge", max_pairs=max_pairs)
    return fit_method(method, f, tol=tol)


def _peak_memory(method: str, data: RankingData, C: float, *, tol: float,
                 max_pairs: int) -> int:
    """Peak bytes traced by ``tracemalloc`` during one training run, above the start."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        _one_run(method, data, C, tol=tol, max_pairs=max_pairs)
        return int(tracemalloc.get_traced_memory()[1] - base)
    finally:
        if not was_tracing:
            tracemalloc.stop()


def check_fig3_options(sizes: Sequence[int], *, methods: Sequence[str] = FIG3_METHODS,
                       d: int = FIG3_FEATURES, c0: float = FIG3_C0, C: float | None = None,
                       repeat: int = 3, max_repeat: int = 25) -> list[int]:
    """Validate the options of :func:`run_fig3`; return the sorted distinct sizes.

    Raises
    ------
    ValueError
        For an unknown method, sizes below 3, d < 1, c0 or C not finite and > 0, or
        ``repeat`` not in ``[1, max_repeat]``.
    """
    unknown = [m for m in methods if m not in FIG3_METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be among {', '.join(FIG3_METHODS)}; got "
                         f"{list(methods)}")
    out = sorted({int(n) for n in sizes})
    if not out or out[0] < 3:
        raise ValueError(f"sizes must be integers >= 3 (two grades need a few documents); "
                         f"got {list(sizes)}")
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if C is not None and not (math.isfinite(C) and C > 0):
        raise ValueError(f"C must be finite and > 0, got {C}")
    if not (math.isfinite(c0) and c0 > 0):
        raise ValueError(f"c0 must be finite and > 0, got {c0}")
    if repeat < 1 or max_repeat < repeat:
        raise ValueError(f"need 1 <= repeat <= max_repeat; got {repeat}, {max_repeat}")
    return out


def run_fig3(
    sizes: Sequence[int] = FIG3_SIZES,
    *,
    methods: Sequence[str] = FIG3_METHODS,
    d: int = FIG3_FEATURES,
    noise: float = FIG3_NOISE,
    seed: int = 0,
    c0: float = FIG3_C0,
    C: float | None = None,
    tol: float = tolerances.NEWTON_GAP,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    repeat: int = 3,
    min_time: float = 0.2,
    max_repeat: int = 25,
    measure_memory: bool = False,
    n_blas_threads: int | None = None,
    progress: Progress | None = None,
) -> ScalingResult:
    r"""Chapelle & Keerthi (2010), Sect. 5.2, Fig. 3: training time against n for AUC.

    The one-query, two-grade RankSVM (maximizing the AUC, the special case of Sect. 4.1) on
    n documents of :func:`auc_data`, trained to a certified relative duality gap ``tol`` by
    PRSVM (O(nd + p) per iteration, p ~ 2n^2/9 pairs) and PRSVM+ (O(nd + n log n)). PRSVM
    is refused, not crashed, once ``build_pairs`` would build more than ``max_pairs``
    pairs; the run is then marked ``"refused"`` with the library's message. The paper
    trains on n = 1,200 ... 19,200 documents of RCV1 (CCAT) and cannot train PRSVM at
    19,200 (about 10^8 pairs).

    **Choice of C.** With C fixed and p ~ n^2 growing, :math:`C p` (the weight of the
    loss term against the regularizer) grows like n^2: a different optimization problem at
    every n, whose Hessian :math:`I + 2C X^\top A^\top D A X` drifts from the identity to
    the loss curvature. The default ``C = c0 / p`` keeps the loss term an average over the
    pairs times ``c0`` (``c0 = 10``, the order of OHSUMED's C p of 14-21 in Table 3), so
    the problems are comparable across n and the times reflect the per-iteration cost. Give
    ``C`` to fix it instead; the Newton and CG iteration counts of every run are reported
    either way so that the slopes can be read against them.

    Parameters
    ----------
    sizes : sequence of int
        Numbers of documents n (default: the paper's 1,200 ... 19,200).
    methods : sequence of str
        Among :data:`FIG3_METHODS`.
    d : int
        Features (default 20: with few features the O(n log n) sort, not the O(nd)
        products, dominates PRSVM+'s cost, which is the regime the figure is about).
    noise : float
        Noise of the planted scorer (1.0: the classes overlap, many pairs stay active).
    seed : int
        Seed of the data.
    c0 : float
        ``C = c0 / p`` at each n (ignored when ``C`` is given).
    C : float or None
        A fixed C of eq. (1) for every n.
    tol : float
        Certified relative duality gap at which both methods stop.
    max_pairs : int
        PRSVM's pair limit (:func:`~cvxrank.data.pairs.build_pairs`).
    repeat : int
        Minimum number of timed repeats per point; the time is their median.
    min_time : float
        Repeat a point until its runs total at least this many seconds (at most
        ``max_repeat`` runs), so that millisecond runs are timed reliably.
    max_repeat : int
    measure_memory : bool
        Also run each point once under ``tracemalloc`` and record the peak traced memory
        (a separate, untimed run: tracing slows allocation).
    n_blas_threads : int or None
        Limit BLAS threads during the run (:func:`blas_threads`).
    progress : callable, optional
        Called with one line of text after each point.

    Returns
    -------
    ScalingResult

    Raises
    ------
    ValueError
        For an unknown method, sizes below 3, d < 1, c0 or C not > 0, repeat < 1.
    """
    sizes = check_fig3_options(sizes, methods=methods, d=d, c0=c0, C=C, repeat=repeat,
                               max_repeat=max_repeat)
    runs: list[ScalingRun] = []
    warm_up()
    with blas_threads(n_blas_threads):
        for n in sizes:
            data = auc_data(n, d=d, noise=noise, seed=seed)
            p = int(count_pairs(data).sum())
            C_n = float(C) if C is not None else c0 / p
            x_bytes = _nbytes(data.X)
            for method in methods:
                run = ScalingRun(n=n, n_pairs=p, method=method, C=C_n, status="ok",
                                 x_bytes=x_bytes)
                outcomes: list[FitOutcome] = []
                try:
                    while len(outcomes) < repeat or (
                            sum(o.time for o in outcomes) < min_time
                            and len(outcomes) < max_repeat):
                        outcomes.append(_one_run(method, data, C_n, tol=tol,
                                                 max_pairs=max_pairs))
                except PairLimitError as exc:
                    run.status, run.message = "refused", str(exc)
                    runs.append(run)
                    if progress is not None:
                        progress(f"n={n:,} p={p:,} {LABELS[method]}: refused")
                    continue
                last = outcomes[-1]
                run.times = [o.time for o in outcomes]
                run.time = float(np.median(run.times))
                run.setup_time = float(np.median([o.setup_time for o in outcomes]))
                run.solver_time = float(np.median([o.solver_time for o in outcomes]))
                run.newton_iterations = last.n_iter
                run.cg_iterations = last.cg_iterations
                run.objective = last.objective
                run.certified_gap = last.certified_gap
                run.converged = last.converged
                run.message = last.message
                if measure_memory:
                    run.peak_bytes = _peak_memory(method, data, C_n, tol=tol,
                                                  max_pairs=max_pairs)
                runs.append(run)
                if progress is not None:
                    progress(f"n={n:,} p={p:,} {LABELS[method]}: {run.time:.4f}s, "
                             f"{run.newton_iterations} Newton / {run.cg_total} CG iterations")
    return ScalingResult(
        runs=runs, sizes=sizes, methods=tuple(methods), d=int(d), noise=float(noise),
        seed=int(seed), c_mode="fixed" if C is not None else "per-pair", c0=float(c0),
        C_fixed=None if C is None else float(C), tol=float(tol), max_pairs=int(max_pairs),
        repeat=int(repeat),
    )


_STYLE = {"prsvm": {"marker": "o", "color": "tab:blue"},
          "prsvm+": {"marker": "s", "color": "tab:orange"}}


def plot_fig3(result: ScalingResult, ax: Any = None) -> Any:
    """Fig. 3: log-log training time against n, with the fitted slopes in the legend.

    Parameters
    ----------
    result : ScalingResult
    ax : matplotlib Axes or None
        Drawn on (default: a new Agg figure's axes, see :func:`cvxrank.plots.new_figure`).

    Returns
    -------
    matplotlib Axes
    """
    if ax is None:
        from cvxrank.plots import new_figure

        ax = new_figure(figsize=(6.0, 4.5)).add_subplot(1, 1, 1)
    for method in result.methods:
        ok = result.runs_of(method, ok_only=True)
        style = _STYLE.get(method, {})
        if ok:
            n = np.array([r.n for r in ok], dtype=float)
            t = np.array([r.time for r in ok])
            slope = result.slope(method)
            label = LABELS[method] + (f" (slope {slope:.2f})" if math.isfinite(slope) else "")
            ax.loglog(n, t, linestyle="-", label=label, **style)
            if math.isfinite(slope) and n.size >= 2:
                coef = np.polyfit(np.log(n), np.log(t), 1)
                grid = np.geomspace(n.min(), n.max(), 50)
                ax.loglog(grid, np.exp(np.polyval(coef, np.log(grid))), linestyle=":",
                          color=style.get("color"), linewidth=1)
        refused = result.refused_from(method)
        if refused is not None:
            ax.axvline(refused, linestyle="--", color=style.get("color", "gray"),
                       linewidth=1,
                       label=f"{LABELS[method]} refused from n = {refused:,} "
                       f"(> {result.max_pairs:,} pairs)")
    c_text = (f"C = {result.c0:g}/p" if result.c_mode == "per-pair"
              else f"C = {result.C_fixed:g}")
    from matplotlib.ticker import NullFormatter

    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("n (documents, one query, two grades)")
    ax.set_ylabel("training time [s]")
    ax.set_title(f"AUC optimization, d = {result.d}, {c_text} (Chapelle & Keerthi Fig. 3)",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return ax


FIG3_CSV_FIELDS = ("n", "n_pairs", "method", "C", "status", "time", "setup_time",
                   "solver_time", "newton_iterations", "cg_iterations", "cg_total",
                   "objective", "certified_gap", "converged", "x_bytes", "peak_bytes",
                   "peak_ratio", "n_repeats", "message")


def fig3_rows(result: ScalingResult) -> list[dict[str, Any]]:
    """One row per (n, method): the CSV behind the figure."""
    rows = []
    for r in result.runs:
        row = r.to_dict()
        row["cg_iterations"] = " ".join(str(c) for c in r.cg_iterations)
        row["peak_bytes"] = "" if r.peak_bytes is None else r.peak_bytes
        row["n_repeats"] = len(r.times)
        rows.append(row)
    return rows


def fig3_markdown(result: ScalingResult) -> str:
    """Per-n table (time, Newton and CG iterations of each method) and the slopes."""
    ms = result.methods
    head = ["n", "pairs", "C"]
    for m in ms:
        head += [f"{LABELS[m]} time [s]", f"{LABELS[m]} Newton", f"{LABELS[m]} CG"]
    head += ["rel. obj. diff."]
    if any(r.peak_bytes is not None for r in result.runs):
        head += [f"{LABELS[m]} peak / X" for m in ms]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by = {(r.n, r.method): r for r in result.runs}
    for n in result.sizes:
        first = next(r for r in result.runs if r.n == n)
        cells = [f"{n:,}", f"{first.n_pairs:,}", f"{first.C:.3g}"]
        for m in ms:
            r = by.get((n, m))
            if r is None or r.status != "ok":
                cells += ["refused" if r is not None else "-", "", ""]
            else:
                cells += [f"{r.time:.4g}", str(r.newton_iterations),
                          f"{r.cg_total} ({' '.join(map(str, r.cg_iterations))})"]
        diff = result.objective_difference(n)
        cells.append("-" if not math.isfinite(diff) else f"{diff:.1e}")
        if len(head) > len(cells):
            for m in ms:
                r = by.get((n, m))
                cells.append("-" if r is None or not math.isfinite(r.peak_ratio)
                             else f"{r.peak_ratio:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    c_text = (f"C = c0 / p with c0 = {result.c0:g} (C p constant)"
              if result.c_mode == "per-pair" else f"C = {result.C_fixed:g} at every n")
    notes = ["", f"One query, two grades (AUC), d = {result.d}, noise = {result.noise:g}, "
             f"seed = {result.seed}; {c_text}; both methods stop at certified relative duality "
             f"gap {result.tol:g}. Time: median wall-clock seconds over at least "
             f"{result.repeat} runs, set-up included. CG column: total (per Newton step).", ""]
    for m in ms:
        slope = result.slope(m)
        refused = result.refused_from(m)
        notes.append(f"* {LABELS[m]}: fitted slope of log time vs log n = {slope:.2f}"
                     + (f"; refused from n = {refused:,} (more than {result.max_pairs:,} "
                        "pairs)" if refused is not None else ""))
    return "\n".join(lines + notes) + "\n"


def write_fig3(result: ScalingResult, out_dir: str | Path) -> dict[str, Path]:
    """Write ``chapelle-fig3.png``, ``chapelle-fig3.csv`` and ``chapelle-fig3.md``.

    Returns
    -------
    dict
        ``{"png": path, "csv": path, "markdown": path}``.
    """
    from cvxrank.plots import new_figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig = new_figure(figsize=(6.5, 4.8))
    plot_fig3(result, fig.add_subplot(1, 1, 1))
    fig.tight_layout()
    png = out / "chapelle-fig3.png"
    fig.savefig(png, dpi=120)
    path = out / "chapelle-fig3.csv"
    _write_csv(path, FIG3_CSV_FIELDS, fig3_rows(result))
    md = out / "chapelle-fig3.md"
    md.write_text("# Chapelle & Keerthi (2010), Fig. 3: training time against n (AUC)\n\n"
                  + fig3_markdown(result), encoding="utf-8")
    return {"png": png, "csv": path, "markdown": md}
