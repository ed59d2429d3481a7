"""Validation of a fast solver's run against a certified reference and against its theory.

:func:`validate` compares a :class:`~cvxrank.core.trace.Run` with a certified
:class:`~cvxrank.certificates.reference.Reference` of the same formulation and returns a
:class:`Validation`:

* the **relative objective gap** ``(P(w) - p*) / |p*|`` at the returned ``w``;
* for solvers with a dual point, the **dual objective gap** ``(d* - D(alpha)) / |p*|``,
  the relative **duality gap** ``(P(w) - D(alpha)) / |p*|`` of the final iterate and
  the **feasibility residual** ``dual_infeasibility(alpha)``;
* the **fitted rate** of the suboptimality recorded in the trace, to compare with the rate
  the method's theory proves (a :class:`RateSpec`);
* a **verdict**: ``passed`` and the ``reasons`` of any failure.

What "matches theory" means
---------------------------
Convergence theorems give *upper bounds*: projected gradient on a smooth concave dual is
``O(1/k)``, FISTA ``O(1/k^2)``, and with strong concavity both are linear. Real runs are often
faster: on the RankSVM dual (a quadratic over a box) an error bound holds and plain projected
gradient converges linearly in its final phase even for the hinge loss (Luo & Tseng 1993). A
run therefore *matches* its theory when its fitted rate is **at least as fast as the proven
one**, up to :data:`cvxrank.tolerances.RATE_SLACK`; the fitted number is always reported so
that a reader can see how much faster it was. This is a check on the tail of one run, not a
proof: a run whose local slope is shallower than the bound's for a while can still obey the
bound, and the slack absorbs that.

How the rate is fitted
----------------------
The suboptimality series is ``s_k = (d* - D(alpha_k)) / |p*|`` for solvers that
record a dual value, else ``s_k = (P(w_k) - p*) / |p*|`` (``RateSpec.measure``
overrides the choice). Only the prefix of the trace where ``s_k`` is above the noise floor is
used: 100 machine epsilons, or 10 times the reference's own error (its primal-dual gap, or
the amount by which the run beats the reference's d* or p*), whichever is larger.

* ``sublinear`` (exponent ``e``, e.g. -1 for ``O(1/k)``): least-squares slope of ``log s_k``
  against ``log k`` over the last decade of iterations (``k >= k_end / 10``); passes when
  ``slope <= e + RATE_SLACK``.
* ``linear`` (optionally a predicted contraction ``q``): the fitted factor is
  ``exp(slope of log s_k against k)`` over the second half of the iterations; passes when it
  is below 1 and, given ``q``, when ``log(fitted) <= (1 - RATE_SLACK) log(q)``, i.e. the
  measured linear rate is at least ``1 - RATE_SLACK`` of the predicted one
  (``fitted <= q ** (1 - RATE_SLACK)``).
* ``newton``: the number of iterations is at most ``max_iter_expected`` and the last few
  ratios ``s_{k+1} / s_k`` above the noise floor show a superlinear final phase: all below 1
  and the last below the first (the ratios tend to 0; they need not fall monotonically,
  since an inexact Newton step on a piecewise-quadratic objective can be locally slower
  than the one before).

A rate that cannot be measured (fewer than :data:`MIN_FIT_POINTS` points above the noise
floor, e.g. a solver that converged in three iterations) is not held against the run; the
Validation says so in ``notes``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.core.trace import Run
from cvxrank.formulations.base import Formulation

#: Rate families a solver can be checked against.
RATE_KINDS = ("sublinear", "linear", "newton", "bounded")

#: A proven iteration bound above this many iterations says nothing about a run here (the
#: cutting planes' worst-case bounds reach 1e15): tables print it marked "vacuous".
VACUOUS_BOUND = 1e6

#: Fewest points above the noise floor needed to fit a sublinear or linear rate.
MIN_FIT_POINTS = 5

#: The noise floor is at least this many machine epsilons (relative suboptimality).
NOISE_EPS_FACTOR = 100.0

#: ... and at least this many times the reference's own (relative) error.
NOISE_REFERENCE_FACTOR = 10.0

#: Ratio ``k_end / k_start`` of the window used for a sublinear fit (the last decade).
SUBLINEAR_TAIL = 10.0

#: Number of final suboptimality ratios inspected for a Newton method's superlinear phase.
NEWTON_RATIOS = 3


@dataclass(frozen=True)
class RateSpec:
    """The convergence rate a method's theory proves.

    Build with :meth:`sublinear`, :meth:`linear`, :meth:`newton` or :meth:`bounded`.

    Attributes
    ----------
    kind : {"sublinear", "linear", "newton", "bounded"}
    exponent : float or None
        Sublinear: suboptimality ``O(k ** exponent)`` (-1 for ``O(1/k)``, -2 for
        ``O(1/k^2)``, -0.5 for ``O(1/sqrt(k))``).
    factor : float or None
        Linear: predicted contraction per iteration ``q`` in ``(0, 1)`` (e.g. ``1 - mu/L``);
        None asks only for linear convergence (fitted factor < 1).
    max_iter_expected : int or None
        Newton: largest acceptable number of outer iterations; bounded: the proven
        iteration bound.
    measure : {"auto", "dual", "primal"}
        Which suboptimality the rate is about: ``d* - D(alpha_k)`` (dual), ``P(w_k) - p*``
        (primal), or ``auto`` (dual when the run recorded dual values, else primal).
    label : str
        How tables print the expected rate (default derived from the numbers).
    """

    kind: str
    exponent: float | None = None
    factor: float | None = None
    max_iter_expected: int | None = None
    measure: str = "auto"
    label: str = ""

    def __post_init__(self) -> None:
        if self.kind not in RATE_KINDS:
            raise ValueError(f"rate kind must be one of {RATE_KINDS}, got {self.kind!r}")
        if self.measure not in ("auto", "dual", "primal"):
            raise ValueError(f"measure must be 'auto', 'dual' or 'primal', got {self.measure!r}")
        if self.kind == "sublinear" and not (
            self.exponent is not None and math.isfinite(self.exponent) and self.exponent < 0
        ):
            raise ValueError(f"a sublinear rate needs a negative exponent, got {self.exponent}")
        if self.kind == "linear" and self.factor is not None and not 0 < self.factor < 1:
            raise ValueError(f"a linear contraction factor must be in (0, 1), got {self.factor}")
        if self.kind in ("newton", "bounded") and not (
            self.max_iter_expected is not None and self.max_iter_expected >= 1
        ):
            raise ValueError(f"a {self.kind} rate needs max_iter_expected >= 1")

    @classmethod
    def sublinear(cls, exponent: float, *, measure: str = "auto", label: str = "") -> RateSpec:
        """Suboptimality ``O(k ** exponent)``, e.g. ``RateSpec.sublinear(-1)`` for O(1/k)."""
        return cls("sublinear", exponent=float(exponent), measure=measure, label=label)

    @classmethod
    def linear(
        cls, factor: float | None = None, *, measure: str = "auto", label: str = ""
    ) -> RateSpec:
        """Geometric convergence, with predicted contraction ``factor`` per iteration if given."""
        return cls("linear", factor=None if factor is None else float(factor), measure=measure,
                   label=label)

    @classmethod
    def newton(cls, max_iter_expected: int, *, measure: str = "auto", label: str = "") -> RateSpec:
        """At most ``max_iter_expected`` iterations, ending in a superlinear phase."""
        return cls("newton", max_iter_expected=int(max_iter_expected), measure=measure,
                   label=label)

    @classmethod
    def bounded(cls, max_iter_expected: int, *, measure: str = "auto",
                label: str = "") -> RateSpec:
        """At most ``max_iter_expected`` iterations to the tolerance: a proven iteration
        bound (cutting planes), with no rate fitted."""
        return cls("bounded", max_iter_expected=int(max_iter_expected), measure=measure,
                   label=label)

    @property
    def expected(self) -> str:
        """The expected rate as tables print it."""
        if self.label:
            return self.label
        if self.kind == "sublinear":
            e = -float(self.exponent)  # type: ignore[arg-type]
            power = f"{e:g}" if e != 0.5 else "1/2"
            return "O(1/k)" if e == 1 else f"O(1/k^{power})"
        if self.kind == "linear":
            return "linear" if self.factor is None else f"<={self.factor:.6g}/it"
        if self.kind == "bounded":
            if self.max_iter_expected > VACUOUS_BOUND:
                return f"vacuous (<={self.max_iter_expected:.1e} it)"
            return f"<={self.max_iter_expected:.3g} it (bound)"
        return f"<={self.max_iter_expected} it, superlinear"

    def as_dict(self) -> dict[str, Any]:
        """Plain fields plus the printed ``expected`` string."""
        return {**asdict(self), "expected": self.expected}


@dataclass
class Validation:
    """The verdict on one solver run (or the median over several seeded runs).

    All gaps are relative: divided by ``|p*|``.

    Attributes
    ----------
    formulation, solver : str
        Registry names.
    tol : float
        The relative objective gap the run had to reach.
    rel_gap : float
        ``(P(w) - p*) / |p*|`` at the returned ``w``.
    dual_gap : float or None
        ``(d* - D(alpha)) / |p*|`` at the returned ``alpha`` (None without one).
    duality_gap : float or None
        ``(P(w) - D(alpha)) / |p*|`` of the final iterate (None without alpha).
    feasibility : float or None
        ``dual_infeasibility(alpha)`` (None without alpha).
    rate : RateSpec
        The proven rate.
    fitted : float or None
        Sublinear: fitted slope; linear: fitted contraction factor; newton: iterations.
        None when the rate could not be measured.
    fitted_label : str
        ``fitted`` as tables print it (``k^-1.73``, ``0.9871/it``, ``7 it, superlinear``).
    rate_ok : bool or None
        Whether the fitted rate is at least as fast as the proven one (None: not measured).
    measure : str
        ``"dual"`` or ``"primal"``: the suboptimality the rate was fitted on.
    n_points : int
        Trace points used by the fit.
    noise_floor : float
        Relative suboptimality below which points were ignored.
    n_iter : int
        Iterations run (median over runs).
    converged : bool
        The solver's own stopping test was met (every run).
    time : float
        Solver time in seconds (median over runs).
    n_runs : int
        Number of seeded runs summarized (1 for deterministic solvers).
    passed : bool
        The verdict.
    reasons : list of str
        Why the run failed (empty when it passed).
    notes : list of str
        Remarks that do not affect the verdict (e.g. a rate that could not be measured).
    """

    formulation: str
    solver: str
    tol: float
    rel_gap: float
    dual_gap: float | None
    duality_gap: float | None
    feasibility: float | None
    rate: RateSpec
    fitted: float | None
    fitted_label: str
    rate_ok: bool | None
    measure: str
    n_points: int
    noise_floor: float
    n_iter: int
    converged: bool
    time: float
    n_runs: int = 1
    passed: bool = False
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the rate as a dict; non-finite floats left to the caller)."""
        out = asdict(self)
        out["rate"] = self.rate.as_dict()
        out["expected"] = self.rate.expected
        return out


# --------------------------------------------------------------------------- fitting


@dataclass
class _Fit:
    value: float | None
    label: str
    superlinear: bool | None
    n_points: int
    note: str = ""


def _suboptimality(
    result: Run, p_star: float, d_star: float, scale: float, measure: str
) -> tuple[str, np.ndarray, np.ndarray]:
    """(measure used, iterations, relative suboptimality) of the trace."""
    tr = result.trace.as_arrays()
    dual = tr["dual"]
    has_dual = dual.size > 0 and bool(np.any(np.isfinite(dual)))
    if measure == "auto":
        measure = "dual" if has_dual and result.alpha is not None else "primal"
    if measure == "dual":
        if not has_dual:
            raise ValueError(f"{result.solver}: rate measured on the dual but the trace "
                             "records no dual values")
        s = (d_star - dual) / scale
    else:
        s = (tr["primal"] - p_star) / scale
    return measure, tr["iteration"], s


def _noise_floor(result: Run, reference: Any, scale: float) -> float:
    """100 eps, or 10x the evidence of error in the reference (see the module docstring)."""
    tr = result.trace.as_arrays()
    err = float(getattr(reference, "rel_gap", 0.0) or 0.0)
    if tr["dual"].size and np.any(np.isfinite(tr["dual"])):
        err = max(err, (float(np.nanmax(tr["dual"])) - reference.d_star) / scale)
    if tr["primal"].size and np.any(np.isfinite(tr["primal"])):
        err = max(err, (reference.p_star - float(np.nanmin(tr["primal"]))) / scale)
    return max(NOISE_EPS_FACTOR * np.finfo(float).eps, NOISE_REFERENCE_FACTOR * err)


def _usable(
    k: np.ndarray, s: np.ndarray, floor: float, min_k: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Points with ``k >= min_k`` before ``s`` first falls to the noise floor (or is NaN)."""
    late = k >= min_k
    bad = np.flatnonzero(late & ~(s > floor))
    end = int(bad[0]) if bad.size else s.size
    keep = late[:end]
    return k[:end][keep], s[:end][keep]


def fit_rate(rate: RateSpec, k: np.ndarray, s: np.ndarray, floor: float) -> _Fit:
    """Fit ``rate.kind`` to the relative suboptimality ``s`` at iterations ``k``."""
    k = np.asarray(k, dtype=float)
    s = np.asarray(s, dtype=float)
    if rate.kind == "newton":
        return _fit_newton(k, s, floor)
    if rate.kind == "bounded":
        return _Fit(None, "", None, int(k.size))
    ku, su = _usable(k, s, floor)
    if ku.size < MIN_FIT_POINTS:
        return _Fit(None, "n/a", None, int(ku.size),
                    f"rate not measured: {ku.size} trace points above the noise floor "
                    f"{floor:.1e} (need {MIN_FIT_POINTS})")
    k_end = ku[-1]
    if rate.kind == "sublinear":
        window = ku >= k_end / SUBLINEAR_TAIL
        if np.count_nonzero(window) < MIN_FIT_POINTS:
            window = np.ones_like(ku, dtype=bool)
        slope = float(np.polyfit(np.log(ku[window]), np.log(su[window]), 1)[0])
        return _Fit(slope, f"k^{slope:.2f}", None, int(np.count_nonzero(window)))
    window = ku >= k_end / 2.0
    if np.count_nonzero(window) < MIN_FIT_POINTS:
        window = np.ones_like(ku, dtype=bool)
    slope = float(np.polyfit(ku[window], np.log(su[window]), 1)[0])
    factor = float(np.exp(slope))
    return _Fit(factor, f"{factor:.6g}/it", None, int(np.count_nonzero(window)))


def _fit_newton(k: np.ndarray, s: np.ndarray, floor: float) -> _Fit:
    ku, su = _usable(k, s, floor, min_k=0.0)
    tail = su[-(NEWTON_RATIOS + 1):]
    if tail.size < 3:
        return _Fit(None, "", None, int(tail.size),
                    f"superlinear phase not measured: {tail.size} points above the noise floor "
                    f"{floor:.1e}")
    ratios = tail[1:] / tail[:-1]
    superlinear = bool(np.all(ratios < 1.0) and ratios[-1] < ratios[0])
    label = "ratios " + ", ".join(f"{r:.1e}" for r in ratios)
    return _Fit(None, label, superlinear, int(tail.size))


# --------------------------------------------------------------------------- verdict


def _judge(
    rate: RateSpec, tol: float, rel_gap: float, dual_gap: float | None,
    feasibility: float | None, fitted: float | None, superlinear: bool | None, n_iter: int,
    prefix: str = "",
) -> tuple[bool | None, list[str]]:
    """(rate_ok, failure reasons)."""
    reasons: list[str] = []
    if not math.isfinite(rel_gap):
        reasons.append(f"{prefix}primal objective at w is not finite")
    elif rel_gap > tol:
        reasons.append(f"{prefix}relative objective gap {rel_gap:.2e} > tol {tol:.0e}")
    elif rel_gap < -max(tol, 1e-8):
        reasons.append(
            f"{prefix}primal objective {-rel_gap:.2e} (relative) below the certified optimum: "
            "the reference or the evaluator is wrong"
        )
    if dual_gap is not None:
        if not math.isfinite(dual_gap):
            reasons.append(f"{prefix}dual objective at alpha is not finite")
        elif dual_gap > tol:
            reasons.append(f"{prefix}relative dual objective gap {dual_gap:.2e} > tol {tol:.0e}")
    if feasibility is not None and not feasibility <= tolerances.FEASIBILITY:
        reasons.append(f"{prefix}dual infeasibility {feasibility:.2e} > "
                       f"{tolerances.FEASIBILITY:.0e}")
    rate_ok: bool | None = None
    if rate.kind == "sublinear" and fitted is not None:
        bound = float(rate.exponent) + tolerances.RATE_SLACK  # type: ignore[arg-type]
        rate_ok = fitted <= bound
        if not rate_ok:
            reasons.append(f"{prefix}fitted rate k^{fitted:.2f} is slower than the proven "
                           f"{rate.expected} (slope must be <= {bound:.2f})")
    elif rate.kind == "linear" and fitted is not None:
        if rate.factor is None:
            rate_ok = fitted < 1.0
            need = "< 1"
        else:
            allowed = rate.factor ** (1.0 - tolerances.RATE_SLACK)
            rate_ok = fitted < 1.0 and fitted <= allowed
            need = f"<= {allowed:.6g}"
        if not rate_ok:
            reasons.append(f"{prefix}fitted contraction {fitted:.6g}/it is slower than the "
                           f"proven {rate.expected} (must be {need})")
    elif rate.kind == "bounded":
        rate_ok = n_iter <= int(rate.max_iter_expected)  # type: ignore[arg-type]
        if not rate_ok:
            reasons.append(f"{prefix}{n_iter} iterations > the proven bound "
                           f"{rate.max_iter_expected}")
    elif rate.kind == "newton":
        rate_ok = n_iter <= int(rate.max_iter_expected)  # type: ignore[arg-type]
        if not rate_ok:
            reasons.append(f"{prefix}{n_iter} iterations > the expected "
                           f"{rate.max_iter_expected} of a Newton method")
        if superlinear is False:
            rate_ok = False
            reasons.append(f"{prefix}no superlinear final phase (the last suboptimality ratio "
                           "is not below the first)")
    return rate_ok, reasons


def _resolve_rate(rate: RateSpec | Any, formulation: Formulation | None) -> RateSpec:
    if isinstance(rate, RateSpec):
        return rate
    if callable(rate):
        if formulation is None:
            raise ValueError("a rate given as a function of the formulation needs formulation=")
        return rate(formulation)
    raise TypeError(f"rate must be a RateSpec or a callable, got {type(rate).__name__}")


def _measure_one(
    result: Run, reference: Any, rate: RateSpec, formulation: Formulation | None,
) -> dict[str, Any]:
    p_star, d_star = float(reference.p_star), float(reference.d_star)
    scale = tolerances.gap_scale(p_star, _floor(formulation))
    notes: list[str] = []
    if formulation is not None:
        primal = float(formulation.primal_value(result.w))
    else:
        primal = result.objective
        notes.append("objective taken from the trace (no formulation given)")
    dual_gap = duality_gap = feasibility = None
    if result.alpha is not None:
        if formulation is not None:
            dual = float(formulation.dual_value(result.alpha))
            feasibility = float(formulation.dual_infeasibility(result.alpha))
        else:
            dual = result.trace.dual[-1] if len(result.trace) else float("nan")
        dual_gap = (d_star - dual) / scale
        duality_gap = (primal - dual) / scale
    floor = _noise_floor(result, reference, scale)
    measure, k, s = _suboptimality(result, p_star, d_star, scale, rate.measure)
    fit = fit_rate(rate, k, s, floor)
    if fit.note:
        notes.append(fit.note)
    if rate.kind in ("newton", "bounded"):
        fitted: float | None = float(result.n_iter)
        label = f"{result.n_iter} it" + (f", {fit.label}" if fit.label else "")
    else:
        fitted, label = fit.value, fit.label
    return {
        "rel_gap": (primal - p_star) / scale, "dual_gap": dual_gap, "duality_gap": duality_gap,
        "feasibility": feasibility, "fitted": fitted, "fitted_label": label,
        "superlinear": fit.superlinear, "measure": measure, "n_points": fit.n_points,
        "noise_floor": floor, "n_iter": int(result.n_iter), "converged": bool(result.converged),
        "time": float(result.time), "notes": notes,
    }


def validate(
    result: Run,
    reference: Any,
    rate: RateSpec,
    *,
    formulation: Formulation | None = None,
    tol: float = tolerances.FAST_SOLVER_GAP,
) -> Validation:
    """Check one solver run against a certified reference and the rate its theory proves.

    Parameters
    ----------
    result : Run
        The run (its ``w``, ``alpha`` and trace).
    reference : Reference
        Certified optimum of the same formulation (``p_star``, ``d_star``, ``rel_gap``).
    rate : RateSpec or callable
        The proven rate (a callable is called with ``formulation``).
    formulation : Formulation, optional
        Evaluates the objectives at the returned ``w`` and ``alpha`` and the dual
        feasibility. Without it the last trace values are used (and a note says so); pass it,
        since a solver could return a point other than the one it recorded.
    tol : float
        Relative objective gap the run must reach.

    Returns
    -------
    Validation
        ``passed`` is True iff the relative objective gap (and, with a dual point, the dual
        objective gap) is at most ``tol``, the dual point is feasible within
        :data:`~cvxrank.tolerances.FEASIBILITY`, and the fitted rate is at least as fast as
        the proven one (see the module docstring).
    """
    return validate_runs([result], reference, rate, formulation=formulation, tol=tol)


def _floor(formulation: Formulation | None) -> float:
    """The formulation's gap floor (:func:`cvxrank.tolerances.gap_scale`), 0 without one."""
    return 0.0 if formulation is None else float(formulation.gap_floor)


def _fit_mean_curve(results: Sequence[Run], reference: Any, rate: RateSpec,
                    runs: list[dict[str, Any]], floor: float) -> _Fit | None:
    """The rate fitted to the mean suboptimality of several runs (None if not applicable)."""
    if len(results) < 2 or rate.kind in ("newton", "bounded"):
        return None
    scale = tolerances.gap_scale(float(reference.p_star), floor)
    curves = [_suboptimality(r, float(reference.p_star), float(reference.d_star), scale,
                             rate.measure) for r in results]
    k = curves[0][1]
    if any(c[1].shape != k.shape or np.any(c[1] != k) for c in curves):
        return None
    mean = np.mean([c[2] for c in curves], axis=0)
    return fit_rate(rate, k, mean, float(np.median([r["noise_floor"] for r in runs])))


def validate_runs(
    results: Sequence[Run],
    reference: Any,
    rate: RateSpec,
    *,
    formulation: Formulation | None = None,
    tol: float = tolerances.FAST_SOLVER_GAP,
) -> Validation:
    """:func:`validate` over several seeded runs of a stochastic solver: the median run.

    Every number (gaps, iterations, time) is the median over the runs, and the verdict
    applies the rules of :func:`validate` to those medians (for a Newton method the
    superlinear phase must show in at least half of the runs). A sublinear or linear rate is
    fitted to the *mean* suboptimality over the runs when they recorded the same iterations:
    the theorems of stochastic methods bound the expected suboptimality, which the mean
    estimates, while one run's curve fluctuates by as much as its value (otherwise, the
    median of the per-run fits).
    """
    if not results:
        raise ValueError("validate_runs needs at least one result")
    rate = _resolve_rate(rate, formulation)
    runs = [_measure_one(r, reference, rate, formulation) for r in results]

    def med(key: str) -> float | None:
        vals = [r[key] for r in runs if r[key] is not None]
        return float(np.median(vals)) if vals else None

    first = results[0]
    fitted = med("fitted")
    mean_fit = _fit_mean_curve(results, reference, rate, runs, _floor(formulation))
    if mean_fit is not None:
        fitted = mean_fit.value
    sl = [r["superlinear"] for r in runs if r["superlinear"] is not None]
    superlinear = None if not sl else (2 * sum(sl) >= len(sl))
    rel_gap = med("rel_gap")
    n_iter = int(round(med("n_iter") or 0))
    rate_ok, reasons = _judge(
        rate, tol, float("nan") if rel_gap is None else rel_gap, med("dual_gap"),
        med("feasibility"), fitted, superlinear, n_iter,
        prefix="" if len(runs) == 1 else f"median over {len(runs)} seeds: ",
    )
    if len(runs) == 1:
        label = runs[0]["fitted_label"]
    elif mean_fit is not None:
        label = f"{mean_fit.label} (mean of {len(runs)})" if fitted is not None else "n/a"
    elif fitted is None:
        label = "n/a"
    elif rate.kind == "sublinear":
        label = f"k^{fitted:.2f} (median)"
    elif rate.kind == "linear":
        label = f"{fitted:.6g}/it (median)"
    else:
        label = f"{n_iter} it (median)"
    notes = sorted({n for r in runs for n in r["notes"]})
    return Validation(
        formulation=first.formulation, solver=first.solver, tol=tol,
        rel_gap=float("nan") if rel_gap is None else rel_gap, dual_gap=med("dual_gap"),
        duality_gap=med("duality_gap"), feasibility=med("feasibility"), rate=rate,
        fitted=fitted, fitted_label=label, rate_ok=rate_ok, measure=runs[0]["measure"],
        n_points=int(np.median([r["n_points"] for r in runs])),
        noise_floor=float(np.median([r["noise_floor"] for r in runs])), n_iter=n_iter,
        converged=all(r["converged"] for r in runs), time=med("time") or 0.0,
        n_runs=len(runs), passed=not reasons, reasons=reasons, notes=notes,
    )


def validate_alternation(
    results: Sequence[Run], rate: RateSpec, *, tol: float = tolerances.FAST_SOLVER_GAP,
) -> Validation:
    """Judge runs of an alternation of convex subproblems (a non-convex method).

    There is no certified optimum of the joint problem, so the check is what block-coordinate
    descent guarantees: the objective recorded after every half-step never increases (by
    more than :data:`~cvxrank.tolerances.MONOTONE_SLACK` relative, rounding), and the run
    met its own stopping rule. Each subproblem's optimality is certified separately, as a
    formulation of its own.

    Parameters
    ----------
    results : sequence of Run
        One run per seed (random start).
    rate : RateSpec
        Recorded for the report; not fitted (a non-convex descent has no proven rate to
        its limit point).
    tol : float
        Recorded as the tolerance of the runs.

    Returns
    -------
    Validation
        ``rel_gap`` is the largest relative increase found (0 for a monotone run; NaN
        without records); ``passed`` when it is within the slack in every run and every
        run converged.
    """
    if not results:
        raise ValueError("validate_alternation needs at least one result")
    reasons: list[str] = []
    worst = 0.0
    for seed, r in enumerate(results):
        values = np.asarray(r.trace.primal, dtype=float)
        if values.size == 0:
            reasons.append(f"run {seed}: no records")
            continue
        rise = np.diff(values) / np.maximum(np.abs(values[:-1]), np.finfo(float).tiny)
        if rise.size and float(rise.max()) > worst:
            worst = float(rise.max())
        if rise.size and rise.max() > tolerances.MONOTONE_SLACK:
            k = int(np.argmax(rise))
            reasons.append(f"run {seed}: the objective rose by {rise[k]:.2e} (relative) at "
                           f"record {k + 1}, iteration {r.trace.iteration[k + 1]}")
        if not r.converged:
            reasons.append(f"run {seed}: {r.message}")
    first = results[0]
    return Validation(
        formulation=first.formulation, solver=first.solver, tol=tol, rel_gap=worst,
        dual_gap=None, duality_gap=None, feasibility=None, rate=rate, fitted=None,
        fitted_label="monotone" if not reasons else "not monotone", rate_ok=None,
        measure="primal", n_points=int(np.median([len(r.trace) for r in results])),
        noise_floor=tolerances.MONOTONE_SLACK,
        n_iter=int(np.median([r.n_iter for r in results])),
        converged=all(r.converged for r in results),
        time=float(np.median([r.time for r in results])), n_runs=len(results),
        passed=not reasons, reasons=reasons,
        notes=["alternation: judged by monotone descent, not against a reference"],
    )
