r"""Chapelle & Keerthi (2010), Sect. 5.2, Fig. 3: training time against n for the AUC problem.

:func:`run_fig3` trains the one-query, two-grade RankSVM (maximizing the AUC, the special case
of Sect. 4.1) on n synthetic documents (:func:`auc_data`) with PRSVM and PRSVM+ to a
certified duality gap, timing each point by its median over repeats, with the Newton and CG
iteration counts per n and least-squares slopes of log time against log n. Each (n, method)
is one :class:`~cvxrank.experiments.tasks.Task` on a
:class:`~cvxrank.experiments.sources.Synthetic` source, run in this process in order;
:class:`Fig3Config` holds every option.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from cvxrank import tolerances
from cvxrank.data.pairs import DEFAULT_MAX_PAIRS, count_pairs
from cvxrank.data.ranking_data import RankingData
from cvxrank.experiments.backends import Execution, Log
from cvxrank.experiments.chapelle import LABELS
from cvxrank.experiments.config import ExperimentConfig, check_sequential, increasing, normalize
from cvxrank.experiments.sources import Synthetic
from cvxrank.experiments.tasks import Task, TaskResult
from cvxrank.experiments.timing import fitted_slope
from cvxrank.tolerances import relative_gap

#: The methods (solvers) of :func:`run_fig3`.
FIG3_METHODS = ("prsvm", "prsvm+")

#: The training-set sizes of the paper's Fig. 3.
FIG3_SIZES = (1200, 2400, 4800, 9600, 19200)

#: Default feature dimension of the Fig. 3 problem (see :func:`run_fig3`).
FIG3_FEATURES = 20

#: Default noise of the planted model of the Fig. 3 problem.
FIG3_NOISE = 1.0

#: Default ``C * p`` of the Fig. 3 problem (``C = c0 / p``): on OHSUMED, C = 5e-5 with
#: 280,000-420,000 pairs per fold gives C p of 14 to 21.
FIG3_C0 = 10.0


def auc_source(n: int, *, d: int = FIG3_FEATURES, noise: float = FIG3_NOISE,
               seed: int = 0) -> Synthetic:
    """The one-query, two-grade (AUC) problem of Sect. 5.2 on n synthetic documents.

    ``make_synthetic(n_queries=1, docs_per_query=n, n_features=d, n_grades=2, noise=noise,
    seed=seed)``: standard normal features, a planted unit-norm linear scorer plus
    ``noise`` times standard normal noise, grade 1 for the top third of the latent scores
    (masses proportional to 2^-g), so about ``2 n^2 / 9`` pairs.
    """
    return Synthetic(n_queries=1, docs_per_query=int(n), n_features=int(d), n_grades=2,
                     noise=float(noise), seed=int(seed))


def auc_data(n: int, *, d: int = FIG3_FEATURES, noise: float = FIG3_NOISE,
             seed: int = 0) -> RankingData:
    """The data of :func:`auc_source` (built once per process)."""
    return auc_source(n, d=d, noise=noise, seed=seed).load("train")


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
        ``"ok"``; ``"refused"`` when ``build_pairs`` refused (more pairs than the limit);
        ``"failed"`` when the solver did not reach its tolerance.
    time : float
        Median wall-clock seconds over the repeats, set-up included (NaN when refused).
    times : list of float
        Every repeat's wall-clock time.
    setup_time, solver_time : float
        Medians of the solver clock's set-up (:attr:`~cvxrank.core.trace.Run.setup_time`) and of
        the solver clock after it (:attr:`~cvxrank.core.trace.Run.solve_time`).
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
    protocol : str
        Which options made the run (:meth:`~cvxrank.experiments.config.ExperimentConfig.protocol`).
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
    protocol: str = "paper"

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
        return max(relative_gap(b, a) for a in objs for b in objs)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for ``--json``)."""
        return {
            "experiment": "chapelle-fig3",
            "sizes": self.sizes, "methods": list(self.methods), "d": self.d,
            "noise": self.noise, "seed": self.seed, "c_mode": self.c_mode, "c0": self.c0,
            "C_fixed": self.C_fixed, "tol": self.tol, "max_pairs": self.max_pairs,
            "repeat": self.repeat, "protocol": self.protocol,
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


@dataclass(frozen=True)
class Fig3Config(ExperimentConfig):
    r"""Every option of :func:`run_fig3`.

    **Choice of C.** With C fixed and p ~ n^2 growing, :math:`C p` (the weight of the
    loss term against the regularizer) grows like n^2: a different optimization problem at
    every n, whose Hessian :math:`I + 2C X^\top A^\top D A X` drifts from the identity to
    the loss curvature. The default ``C = c0 / p`` keeps the loss term an average over the
    pairs times ``c0`` (``c0 = 10``, the order of OHSUMED's C p of 14-21 in Table 3), so
    the problems are comparable across n and the times reflect the per-iteration cost. Give
    ``C`` to fix it instead; the Newton and CG iteration counts of every run are reported
    either way so that the slopes can be read against them.

    Attributes
    ----------
    sizes : tuple of int
        Numbers of documents n (default: the paper's 1,200 ... 19,200; sorted, distinct).
    methods : tuple of str
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
    execution : Execution
        BLAS threads (the backend is sequential: the fits are timed one after the other).

    Raises
    ------
    ValueError
        For an unknown method, sizes below 3, d < 1, c0 or C not finite and > 0,
        ``repeat`` not in ``[1, max_repeat]``, or a parallel backend.
    """

    #: ``--quick``: three small sizes, one timed run each (a check, not the paper's figure).
    QUICK: ClassVar[Mapping[str, Any]] = {"sizes": (300, 600, 1200), "repeat": 1}

    sizes: tuple[int, ...] = FIG3_SIZES
    methods: tuple[str, ...] = FIG3_METHODS
    d: int = FIG3_FEATURES
    noise: float = FIG3_NOISE
    seed: int = 0
    c0: float = FIG3_C0
    C: float | None = None
    tol: float = tolerances.NEWTON_GAP
    max_pairs: int = DEFAULT_MAX_PAIRS
    repeat: int = 3
    min_time: float = 0.2
    max_repeat: int = 25
    measure_memory: bool = False
    execution: Execution = Execution()

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in FIG3_METHODS]
        if unknown or not self.methods:
            raise ValueError(f"methods must be among {', '.join(FIG3_METHODS)}; got "
                             f"{list(self.methods)}")
        sizes = increasing(self.sizes, int)
        if not sizes or sizes[0] < 3:
            raise ValueError(f"sizes must be integers >= 3 (two grades need a few "
                             f"documents); got {list(self.sizes)}")
        if self.d < 1:
            raise ValueError(f"d must be >= 1, got {self.d}")
        if self.C is not None and not (math.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be finite and > 0, got {self.C}")
        if not (math.isfinite(self.c0) and self.c0 > 0):
            raise ValueError(f"c0 must be finite and > 0, got {self.c0}")
        if self.repeat < 1 or self.max_repeat < self.repeat:
            raise ValueError(f"need 1 <= repeat <= max_repeat; got {self.repeat}, "
                             f"{self.max_repeat}")
        check_sequential(self.execution, "chapelle-fig3")
        normalize(self, sizes=sizes, methods=tuple(self.methods))


def run_fig3(config: Fig3Config, *, log: Log | None = None,
             progress_bar: bool = False) -> ScalingResult:
    r"""Chapelle & Keerthi (2010), Sect. 5.2, Fig. 3: training time against n for AUC.

    The one-query, two-grade RankSVM (maximizing the AUC, the special case of Sect. 4.1) on
    n documents of :func:`auc_data`, trained to a certified relative duality gap ``tol`` by
    PRSVM (O(nd + p) per iteration, p ~ 2n^2/9 pairs) and PRSVM+ (O(nd + n log n)). PRSVM
    is refused, not crashed, once ``build_pairs`` would build more than ``max_pairs``
    pairs; the run is then marked ``"refused"`` with the library's message. The paper
    trains on n = 1,200 ... 19,200 documents of RCV1 (CCAT) and cannot train PRSVM at
    19,200 (about 10^8 pairs). The choice of C: :class:`Fig3Config`.

    Parameters
    ----------
    config : Fig3Config
    log : callable, optional
        Called with one line of text after each point.
    progress_bar : bool
        A progress bar on stderr while each n's fits run.

    Returns
    -------
    ScalingResult
    """
    runs: list[ScalingRun] = []
    source = {"d": config.d, "noise": config.noise, "seed": config.seed}
    for n in config.sizes:
        data = auc_data(n, **source)
        p = int(count_pairs(data).sum())
        C_n = float(config.C) if config.C is not None else config.c0 / p
        tasks = [Task(source=auc_source(n, **source), method="ranksvm", loss="squared_hinge",
                      params={"C": C_n, "max_pairs": config.max_pairs}, solver=method,
                      tol=config.tol, repeat=config.repeat, min_time=config.min_time,
                      max_repeat=config.max_repeat, measure_memory=config.measure_memory)
                 for method in config.methods]

        def done(result: TaskResult, p: int = p, x_bytes: int = _nbytes(data.X)) -> None:
            run = scaling_run(result, n_pairs=p, x_bytes=x_bytes)
            runs.append(run)
            if log is not None:
                log(f"n={run.n:,} p={p:,} {LABELS[run.method]}: " + (
                    f"{run.time:.4f}s, {run.newton_iterations} Newton / {run.cg_total} CG "
                    "iterations" if run.status == "ok" else run.status))

        config.execution.run(tasks, on_result=done, progress=progress_bar,
                             desc=f"chapelle-fig3 n={n:,}")
    return ScalingResult(
        runs=runs, sizes=list(config.sizes), methods=config.methods, d=int(config.d),
        noise=float(config.noise), seed=int(config.seed),
        c_mode="fixed" if config.C is not None else "per-pair", c0=float(config.c0),
        C_fixed=None if config.C is None else float(config.C), tol=float(config.tol),
        max_pairs=int(config.max_pairs), repeat=int(config.repeat),
        protocol=config.protocol(),
    )


def scaling_run(result: TaskResult, *, n_pairs: int, x_bytes: int) -> ScalingRun:
    """One point of Fig. 3 from its task's result: median times over the repeats, the last
    run's iterations, objective and certified gap; ``"refused"`` for a
    :class:`~cvxrank.errors.PairLimitError`, ``"failed"`` for another failure."""
    task = result.task
    run = ScalingRun(n=task.source.docs_per_query, n_pairs=n_pairs, method=task.solver,
                     C=task.params["C"], status="ok", x_bytes=x_bytes)
    if not result.ok:
        run.status = "refused" if result.error_type == "PairLimitError" else "failed"
        run.message = result.error or ""
        return run
    last = result.run
    run.times = list(result.wall_times)
    run.time = float(np.median(run.times))
    run.setup_time = float(np.median([r.setup_time for r in result.runs]))
    run.solver_time = float(np.median([r.solve_time for r in result.runs]))
    run.newton_iterations = last.n_iter
    run.cg_iterations = [int(c) for c in last.info.get("cg_iterations", [])]
    run.objective = last.objective
    run.certified_gap = last.relative_gap
    run.converged = last.converged
    run.message = last.message
    run.peak_bytes = result.peak_bytes
    return run
