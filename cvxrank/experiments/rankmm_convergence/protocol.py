r"""RankMM's convergence runs: the series of every dual against its certified reference.

:func:`run_convergence` (the package's docstring says what it runs and why) returns a
:class:`ConvergenceResult`: per dual (:class:`DualRun`) the certified reference, the runs of
every series of :data:`SERIES` and, for the :math:`\ell_{1,\infty}` dual, the probe of the
paper's projection order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank import tolerances
from cvxrank.certificates.validate import RateSpec, validate_runs
from cvxrank.core.trace import Run, Trace
from cvxrank.data.ranking_data import RankingData
from cvxrank.experiments.backends import Log
from cvxrank.experiments.rankmm_convergence import DEFAULT_C, DEFAULT_SEEDS, DEFAULT_STEPS
from cvxrank.formulations.query_losses import (
    QUERY_LOSSES,
    QueryLoss,
    average,
    max_average,
    maximum,
)
from cvxrank.formulations.rankmm import RANKMM_LOSSES, RankMM
from cvxrank.numerics.sets import L1InfBall
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient
from cvxrank.solvers.rankmm import (
    default_eta0,
    pilot_eta0,
    query_blocks,
    solve_seg,
    solve_seg_pairs,
    solve_sgp,
)

if TYPE_CHECKING:
    from cvxrank.certificates.reference import Reference


#: The proven rates on the dual objective: projection methods :math:`O(1/\sqrt T)`
#: (Sects. 3.1, 3.3), EG :math:`O(1/T)` (Sect. 3.2), FISTA :math:`O(1/k^2)`.
PROJECTION_RATE = RateSpec.sublinear(-0.5, measure="dual", label="O(1/sqrt(T))")
EG_RATE = RateSpec.sublinear(-1.0, measure="dual", label="O(1/T)")
APG_RATE = RateSpec.sublinear(-2.0, measure="dual", label="O(1/k^2)")



@dataclass(frozen=True)
class Series:
    """One solver configuration on one dual.

    Attributes
    ----------
    key : str
        Unique name (``"sgp-paper"``), also the CSV's ``series`` column.
    loss : QueryLoss
        The RankMM loss whose dual it solves.
    solver : str
        Registry name of the solver.
    label : str
        Legend label.
    stochastic : bool
        Run once per seed (else once).
    rate : RateSpec
        The proven rate on the dual objective.
    options : dict
        Keyword arguments that define the algorithm (``projection``).
    """

    key: str
    loss: QueryLoss
    solver: str
    label: str
    stochastic: bool
    rate: RateSpec
    options: dict[str, Any] = field(default_factory=dict)


#: Every series, grouped by dual in the paper's order.
SERIES = (
    Series("sgp", average, "sgp", "sgp (box, Sect. 3.1)", True, PROJECTION_RATE),
    Series("apg-box", average, "apg", "apg", False, APG_RATE),
    Series("seg", maximum, "seg", "seg (factored EG)", True, EG_RATE),
    Series("seg-pairs", maximum, "seg-pairs", "seg-pairs (plain EG, Sect. 3.2)", True, EG_RATE),
    Series("apg-simplex", maximum, "apg", "apg", False, APG_RATE),
    Series("sgp-exact", max_average, "sgp", "sgp, exact projection", True, PROJECTION_RATE,
           {"projection": "exact"}),
    Series("sgp-paper", max_average, "sgp", "sgp, paper's order (Sect. 3.3)", True,
           PROJECTION_RATE, {"projection": "paper"}),
    Series("apg-l1inf", max_average, "apg", "apg", False, APG_RATE),
)

#: The series of the side-by-side figure of the three duals (the paper's solver of each
#: dual and its deterministic baseline; the variants have figures of their own).
MAIN_SERIES = ("sgp", "apg-box", "seg", "apg-simplex", "sgp-exact", "apg-l1inf")

_SOLVERS: dict[str, Callable[..., Run]] = {
    "sgp": solve_sgp, "seg": solve_seg, "seg-pairs": solve_seg_pairs,
    "apg": solve_accelerated_gradient,
}


@dataclass
class DualRun:
    r"""The runs of one dual, with its certified reference.

    Attributes
    ----------
    loss : QueryLoss
        :data:`~cvxrank.formulations.query_losses.average`, ``maximum`` or ``max_average``.
    formulation : RankMM
    reference : Reference
        The certified optimum (p*, d*).
    n_blocks : int
        B, the queries with preference pairs (a pass is B stochastic steps).
    runs : dict of str to list of Run
        Per series key, one run per seed (one for ``apg``).
    eta0 : dict of str to float
        Per stochastic series, the step size used.
    projection_difference : list of dict
        ``max_average`` only: per seed of the exact runs, arrays ``passes``, ``differ``
        (fraction of the B query blocks on which the paper's order differs from the exact
        projection, by more than 1e-12 relative) and ``distance``
        (:math:`\sum_b \|z'_b - z_b\| / \sum_b \|z_b\|`) of the inputs
        :math:`\alpha - \eta_t \nabla` the next step would project, at each record.
    """

    loss: QueryLoss
    formulation: RankMM
    reference: Reference
    n_blocks: int
    runs: dict[str, list[Run]] = field(default_factory=dict)
    eta0: dict[str, float] = field(default_factory=dict)
    projection_difference: list[dict[str, np.ndarray]] = field(default_factory=list)

    @property
    def dual_set(self) -> str:
        """Name of the dual's feasible set."""
        return self.loss.dual_set_name

    def series(self) -> list[Series]:
        """The series of this dual that ran, in :data:`SERIES` order."""
        return [s for s in SERIES if s.loss is self.loss and s.key in self.runs]

    def in_passes(self, key: str) -> list[Trace]:
        """The traces of a series with the iteration column in passes over the data."""
        spec = next(s for s in SERIES if s.key == key)
        per_pass = float(self.n_blocks) if spec.stochastic else 1.0
        return [replace(r.trace, iteration=list(np.asarray(r.trace.iteration, float) / per_pass))
                for r in self.runs[key]]

    def summary(self, key: str) -> dict[str, Any]:
        """Medians over the seeds of a series and the rate fitted to its mean dual
        suboptimality (:func:`cvxrank.certificates.validate.validate_runs`), beside the proven
        one."""
        spec = next(s for s in SERIES if s.key == key)
        runs = self.runs[key]
        tol = tolerances.STOCHASTIC_GAP if spec.stochastic else tolerances.FAST_SOLVER_GAP
        v = validate_runs(runs, self.reference, spec.rate, formulation=self.formulation, tol=tol)
        return {
            "series": key, "solver": spec.solver, "loss": self.loss.name, "dual_set": self.dual_set,
            "seeds": len(runs), "steps": int(np.median([r.n_iter for r in runs])),
            "eta0": self.eta0.get(key), "rel_gap": v.rel_gap, "dual_gap": v.dual_gap,
            "time": float(np.median([r.time for r in runs])),
            "proven": spec.rate.expected, "fitted_exponent": v.fitted,
            "at_least_as_fast": v.rate_ok,
        }


@dataclass
class ConvergenceResult:
    """Everything :func:`run_convergence` measured.

    Attributes
    ----------
    source : str
        What the data is (a file name or the synthetic instance's parameters).
    C : float
        The paper's C.
    seeds : tuple of int
        Seeds of the stochastic runs.
    steps : int
        Stochastic steps per run.
    step_scale : float
        Multiple of each solver's default step size.
    n_documents, n_queries, n_features : int
        Size of the data.
    duals : dict of str to DualRun
        Per loss name, in the paper's order.
    """

    source: str
    C: float
    seeds: tuple[int, ...]
    steps: int
    step_scale: float | None
    n_documents: int
    n_queries: int
    n_features: int
    duals: dict[str, DualRun]

    def summaries(self) -> list[dict[str, Any]]:
        """One :meth:`DualRun.summary` per series that ran."""
        return [d.summary(s.key) for d in self.duals.values() for s in d.series()]

    def to_dict(self) -> dict[str, Any]:
        """The parameters, the references and the summaries (for ``--json``)."""
        return {
            "source": self.source, "C": self.C, "seeds": list(self.seeds), "steps": self.steps,
            "step_scale": self.step_scale, "n_documents": self.n_documents,
            "n_queries": self.n_queries, "n_features": self.n_features,
            "references": {loss: {"p_star": d.reference.p_star, "d_star": d.reference.d_star,
                                  "rel_gap": d.reference.rel_gap,
                                  "n_pairs": d.formulation.n_pairs, "n_blocks": d.n_blocks}
                           for loss, d in self.duals.items()},
            "series": self.summaries(),
        }


def synthetic_instance(seed: int = 0) -> RankingData:
    """The default data: 30 queries of 10 to 30 documents, 10 features, three grades
    (:func:`cvxrank.data.make_synthetic`, seeded; about 4,000 preference pairs)."""
    from cvxrank.data import make_synthetic

    return make_synthetic(n_queries=30, docs_per_query=(10, 30), n_features=10, n_grades=3,
                          seed=seed)


def _projection_probe(formulation: RankMM, eta0: float, n_blocks: int,
                      out: dict[str, list[float]]) -> Callable[..., None]:
    r"""A callback of an exact ``sgp`` run on the l1,inf dual that compares, at each record,
    the exact projection and the paper's order on the step's input :math:`\alpha -
    \eta_t \nabla` of every block (:attr:`DualRun.projection_difference`)."""
    group, _, block = formulation.lower_group
    pair_block = block[group]
    dual_set = formulation.dual_set

    def probe(t: int, w: np.ndarray, alpha: np.ndarray | None, trace: Trace) -> None:
        if alpha is None:
            return
        v = alpha - eta0 / math.sqrt(t + 1) * formulation.neg_dual_grad(alpha)
        exact, paper = dual_set.project(v), dual_set.project_then_clip(v)
        diff = np.sqrt(np.bincount(pair_block, (paper - exact) ** 2, minlength=n_blocks))
        size = np.sqrt(np.bincount(pair_block, exact ** 2, minlength=n_blocks))
        out["passes"].append(t / n_blocks)
        out["differ"].append(float(np.mean(diff > 1e-12 * np.maximum(size, 1e-300))))
        out["distance"].append(float(diff.sum() / max(size.sum(), 1e-300)))

    return probe


def run_convergence(
    data: RankingData,
    *,
    C: float = DEFAULT_C,
    seeds: int | Sequence[int] = DEFAULT_SEEDS,
    steps: int = DEFAULT_STEPS,
    step_scale: float | None = None,
    losses: Sequence[str] = RANKMM_LOSSES,
    reference_solver: str = "CLARABEL",
    source: str = "",
    log: Log | None = None,
) -> ConvergenceResult:
    """Run every series of :data:`SERIES` for ``losses`` on ``data`` (module docstring).

    Parameters
    ----------
    data : RankingData
        Training data (every query counts in m).
    C : float
        The paper's C.
    seeds : int or sequence of int
        Seeds of the stochastic runs (an int n: ``0 .. n-1``).
    steps : int
        Stochastic steps T per run (``tol = 0``: every run takes all of them); ``apg`` runs
        ``ceil(T / B)`` iterations, the same number of passes.
    step_scale : float or None
        None: the stochastic solvers' default step (:func:`~cvxrank.solvers.rankmm.
        pilot_eta0`, once per dual); else this multiple of
        :func:`~cvxrank.solvers.rankmm.default_eta0`.
    losses : sequence of str
        Which duals to run.
    reference_solver : str
        CVXPY solver of the certified references.
    source : str
        Description of the data for titles and JSON.
    log : callable, optional
        Called with one line per run.

    Returns
    -------
    ConvergenceResult

    Raises
    ------
    ValueError
        For steps < 1, no seeds, a step scale that is not finite and positive, or an
        unknown loss.
    SolverError
        When a reference is not certified.
    """
    seed_list = tuple(range(seeds)) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
    if not seed_list:
        raise ValueError("at least one seed is needed")
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if step_scale is not None and not (math.isfinite(step_scale) and step_scale > 0):
        raise ValueError(f"step_scale must be finite and > 0, got {step_scale}")
    unknown = sorted(set(losses) - set(RANKMM_LOSSES))
    if unknown:
        raise ValueError(f"unknown losses {unknown}; RankMM has {', '.join(RANKMM_LOSSES)}")
    from cvxrank.certificates.reference import (
        solve_reference,  # CVXPY: imported when the runs start
    )

    say = log or (lambda line: None)
    duals: dict[str, DualRun] = {}
    for loss in [x for x in QUERY_LOSSES.values() if x.name in losses]:
        f = RankMM(data, C=C, loss=loss)
        ref = solve_reference(f, solver=reference_solver)
        blocks = query_blocks(f)  # shared set-up, made before the timed runs
        if isinstance(f.dual_set, L1InfBall):
            blocks.l1inf_layouts(f)
        f.dual_lipschitz()
        if step_scale is not None:
            eta = default_eta0(f) * step_scale
        elif "simplex_dual_blocks" in f.capabilities:
            eta = pilot_eta0(f, solve_seg, "eg", max_iter=steps, seed=seed_list[0])
        else:
            eta = pilot_eta0(f, solve_sgp, "sgp", max_iter=steps, seed=seed_list[0])
        dual = DualRun(loss, f, ref, blocks.n_blocks)
        say(f"{f.name}: {f.n_pairs:,} pairs, {blocks.n_blocks} queries with pairs, "
            f"p* = {ref.p_star:.10g}")
        for spec in (s for s in SERIES if s.loss is loss):
            solve = _SOLVERS[spec.solver]
            if not spec.stochastic:
                passes = max(1, math.ceil(steps / blocks.n_blocks))
                dual.runs[spec.key] = [solve(f, tol=0.0, max_iter=passes)]
                say(f"  {spec.key}: {passes} iterations")
                continue
            dual.eta0[spec.key] = eta
            dual.runs[spec.key] = []
            for seed in seed_list:
                probe = None
                if spec.key == "sgp-exact":
                    record: dict[str, list[float]] = {"passes": [], "differ": [], "distance": []}
                    probe = _projection_probe(f, eta, blocks.n_blocks, record)
                run = solve(f, tol=0.0, max_iter=steps, seed=seed, eta0=eta, callback=probe,
                            **spec.options)
                dual.runs[spec.key].append(run)
                if probe is not None:
                    dual.projection_difference.append(
                        {k: np.asarray(v) for k, v in record.items()})
            say(f"  {spec.key}: {len(seed_list)} seeds x {steps} steps, eta0 = {eta:.3g}")
        duals[loss.name] = dual
    return ConvergenceResult(
        source=source or "data", C=float(C), seeds=seed_list, steps=int(steps),
        step_scale=None if step_scale is None else float(step_scale),
        n_documents=data.n_documents, n_queries=data.n_queries,
        n_features=data.n_features, duals=duals)
