"""Run registry entries on instances against certified references: the engine of verify.

:func:`run_verification` is what ``cvxrank verify`` and ``cvxrank figures`` call, and what a
notebook or a test calls directly::

    from cvxrank.verification.sweep import run_verification
    outcomes = run_verification(quick=True)
    [o.summary() for o in outcomes if not o.passed]

For every instance and every entry it builds the formulation (with the instance's
hyper-parameters for the entry's method, :meth:`cvxrank.registry.Entry.instance_params`),
runs the solver (once per seed for stochastic entries) and judges the run(s) as the entry
says: against the certified reference (:func:`cvxrank.certificates.reference.solve_reference`,
cached per formulation, parameters and solver; :func:`cvxrank.certificates.validate.validate_runs`),
or as a monotone alternation (:func:`cvxrank.certificates.validate.validate_alternation`). Anything
that raises along the way (building, reference, solver, validation) makes that pair fail with the
exception in its reasons; it never stops the other pairs.
"""

from __future__ import annotations

import csv
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cvxrank.certificates.reference import Reference, check_solver, solve_reference
from cvxrank.certificates.validate import Validation, validate_alternation, validate_runs
from cvxrank.core.trace import Run
from cvxrank.data.instances import Instance, instance_set
from cvxrank.registry import Entry, entries

#: Columns of the trace CSV files written beside the figures.
TRACE_COLUMNS = ("formulation", "solver", "instance", "seed", "iteration", "time", "primal",
                 "dual", "gap", "p_star")


@dataclass
class PairOutcome:
    """The outcome of one (entry, instance) pair.

    Attributes
    ----------
    entry : Entry
    instance : Instance
    seeds : list of int
        Seeds of the runs.
    results : list of Run
        One per seed that ran (empty when the solver raised before returning).
    reference : Reference or None
        The certified reference (None when it could not be obtained).
    validation : Validation or None
        The verdict on the runs (None when a stage before it failed).
    error : str or None
        The stage and exception that made the pair fail before validation.
    n_pairs : int or None
        Number of dual variables of the formulation.
    wall_time : float
        Wall-clock seconds of the runs and validation (trace evaluation included).
    """

    entry: Entry
    instance: Instance
    seeds: list[int] = field(default_factory=list)
    results: list[Run] = field(default_factory=list)
    reference: Reference | None = None
    validation: Validation | None = None
    error: str | None = None
    n_pairs: int | None = None
    wall_time: float = 0.0

    @property
    def formulation(self) -> str:
        return self.entry.formulation

    @property
    def solver(self) -> str:
        return self.entry.solver

    @property
    def name(self) -> str:
        """``"<formulation>/<solver> on <instance>"``."""
        return f"{self.entry.name} on {self.instance.name}"

    @property
    def passed(self) -> bool:
        return self.error is None and self.validation is not None and self.validation.passed

    @property
    def reasons(self) -> list[str]:
        if self.error is not None:
            return [self.error]
        if self.validation is None:
            return ["not validated"]
        return list(self.validation.reasons)

    @property
    def reference_time(self) -> float:
        """Seconds CVXPY took on the primal (what a user pays to get w); NaN if none."""
        return float("nan") if self.reference is None else float(self.reference.primal_time)

    @property
    def solver_time(self) -> float:
        """Solver seconds (median over seeds), trace evaluation excluded; NaN if none."""
        if self.validation is not None:
            return float(self.validation.time)
        return float("nan")

    @property
    def speedup(self) -> float:
        """``reference_time / solver_time``."""
        t = self.solver_time
        if not (t > 0) or math.isnan(self.reference_time):
            return float("nan")
        return self.reference_time / t

    def summary(self) -> str:
        """``"<formulation>/<solver> on <instance>: <reasons>"`` (or ``: ok``)."""
        return f"{self.name}: {'ok' if self.passed else '; '.join(self.reasons)}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no traces)."""
        v = self.validation
        ref = self.reference
        out: dict[str, Any] = {
            "formulation": self.formulation,
            "solver": self.solver,
            "instance": self.instance.name,
            "name": self.name,
            "n_pairs": self.n_pairs,
            "params": {**self.entry.params, **self.instance.params},
            "seeds": list(self.seeds),
            "passed": self.passed,
            "reasons": self.reasons if not self.passed else [],
            "error": self.error,
            "reference_solver": None if ref is None else ref.solver,
            "p_star": None if ref is None else ref.p_star,
            "d_star": None if ref is None else ref.d_star,
            "reference_rel_gap": None if ref is None else ref.rel_gap,
            "reference_time": self.reference_time,
            "reference_dual_time": None if ref is None else ref.dual_time,
            "solver_time": self.solver_time,
            "speedup": self.speedup,
            "wall_time": self.wall_time,
        }
        if v is not None:
            d = v.as_dict()
            for key in ("tol", "rel_gap", "dual_gap", "duality_gap", "feasibility", "fitted",
                        "fitted_label", "expected", "rate_ok", "measure", "n_points",
                        "noise_floor", "n_iter", "converged", "n_runs", "notes"):
                out[key] = d[key]
            out["rate"] = d["rate"]
        return out


def _error(stage: str, exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{stage} raised {type(exc).__name__}: {text}"


def run_pair(
    entry: Entry,
    instance: Instance,
    reference_solver: str = "CLARABEL",
    *,
    formulation: Any = None,
) -> PairOutcome:
    """Run one entry on one instance (see the module docstring); never raises."""
    out = PairOutcome(entry=entry, instance=instance)
    try:
        f = formulation if formulation is not None else entry.build(
            instance.data(), entry.instance_params(instance))
        sizes = f.sizes()
        out.n_pairs = int(sizes.get("n_dual", sizes.get("n_pairs", 0))) or None
    except Exception as exc:  # noqa: BLE001 (a broken entry fails its pair, not the run)
        out.error = _error("building the formulation", exc)
        return out
    if entry.check == "reference":
        try:
            out.reference = solve_reference(f, solver=reference_solver)
        except Exception as exc:  # noqa: BLE001
            out.error = _error(f"the {reference_solver} reference", exc)
            return out
    start = time.perf_counter()
    try:
        rate = entry.rate_for(f)
        options = {"tol": entry.tol, **entry.limits}
        for seed in entry.run_seeds():
            out.seeds.append(seed)
            result = entry.solve(f, **{**options, "seed": seed})
            if not isinstance(result, Run):
                raise TypeError(f"the solver returned {type(result).__name__}, not a "
                                "Run")
            out.results.append(result)
    except Exception as exc:  # noqa: BLE001
        out.error = _error(f"the solver (seed {out.seeds[-1] if out.seeds else '-'})", exc)
        out.wall_time = time.perf_counter() - start
        return out
    try:
        if entry.check == "reference":
            out.validation = validate_runs(out.results, out.reference, rate, formulation=f,
                                           tol=entry.tol)
        else:
            out.validation = validate_alternation(out.results, rate, tol=entry.tol)
    except Exception as exc:  # noqa: BLE001
        out.error = _error("validation", exc)
    out.wall_time = time.perf_counter() - start
    return out


def run_verification(
    selected: Sequence[Entry] | None = None,
    instances: Sequence[Instance] | None = None,
    reference_solver: str = "CLARABEL",
    *,
    quick: bool = False,
    progress: Callable[[PairOutcome, int, int], None] | None = None,
) -> list[PairOutcome]:
    """Run every entry on every instance against certified references.

    Parameters
    ----------
    selected : sequence of Entry or None
        Entries to run (default: every registered entry, :func:`cvxrank.registry.entries`).
    instances : sequence of Instance or None
        Instances (default :func:`cvxrank.data.instances.instance_set` of ``quick``).
    reference_solver : str
        CVXPY solver of the certified references.
    quick : bool
        Use the quick instance set when ``instances`` is None.
    progress : callable, optional
        ``progress(outcome, done, total)`` after each pair.

    Returns
    -------
    list of PairOutcome
        Instance by instance, in registry order within an instance.

    Raises
    ------
    ValueError
        If ``reference_solver`` is not installed, or there is nothing to run.
    """
    reference_solver = check_solver(reference_solver)
    chosen = list(entries() if selected is None else selected)
    insts = list(instance_set(quick) if instances is None else instances)
    if not chosen:
        raise ValueError("no registry entry selected")
    if not insts:
        raise ValueError("no instance selected")
    total = len(chosen) * len(insts)
    outcomes: list[PairOutcome] = []
    for inst in insts:
        # One formulation object per (formulation, builder, params) and instance, shared by
        # that formulation's solvers (the reference and e.g. the Lipschitz constant are
        # computed once).
        built: dict[tuple, Any] = {}
        for entry in chosen:
            params = {**entry.params, **entry.instance_params(inst)}
            key = (entry.formulation, entry.make_formulation, repr(sorted(params.items())))
            if key not in built:
                try:
                    built[key] = entry.build(inst.data(), entry.instance_params(inst))
                except Exception:  # noqa: BLE001 (run_pair reports it)
                    built[key] = None
            outcome = run_pair(entry, inst, reference_solver, formulation=built[key])
            outcomes.append(outcome)
            if progress is not None:
                progress(outcome, len(outcomes), total)
    return outcomes


def failure_messages(outcomes: Iterable[PairOutcome]) -> list[str]:
    """``verify failed: <formulation>/<solver> on <instance>: <reasons>`` per failing pair."""
    return [f"verify failed: {o.name}: {'; '.join(o.reasons)}" for o in outcomes
            if not o.passed]


def trace_rows(outcome: PairOutcome) -> Iterable[dict[str, Any]]:
    """The rows of :data:`TRACE_COLUMNS` for every run of ``outcome``."""
    p_star = outcome.reference.p_star if outcome.reference is not None else float("nan")
    for seed, result in zip(outcome.seeds, outcome.results, strict=False):
        tr = result.trace
        for i in range(len(tr)):
            yield {
                "formulation": outcome.formulation, "solver": outcome.solver,
                "instance": outcome.instance.name, "seed": seed,
                "iteration": tr.iteration[i], "time": repr(float(tr.time[i])),
                "primal": repr(float(tr.primal[i])), "dual": repr(float(tr.dual[i])),
                "gap": repr(float(tr.gap[i])), "p_star": repr(float(p_star)),
            }


def write_traces_csv(outcomes: Iterable[PairOutcome], path: str | os.PathLike[str]) -> Path:
    """Write the traces of ``outcomes`` as CSV with columns :data:`TRACE_COLUMNS`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=TRACE_COLUMNS)
        writer.writeheader()
        for outcome in outcomes:
            writer.writerows(trace_rows(outcome))
    return path
