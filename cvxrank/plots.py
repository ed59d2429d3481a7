"""Convergence figures: suboptimality against the certified optimum, on a log axis.

Every function takes an ``ax`` (or makes its own figure) and returns it, in the matplotlib
``ax=None`` style; figures are :class:`matplotlib.figure.Figure` objects drawn on an Agg
canvas, never through ``pyplot``, so nothing touches global state and no display is needed.

* :func:`plot_suboptimality`: one solver's relative suboptimality, primal
  ``P(w_k) - p*`` (solid) and, when the trace has dual values, dual ``d* - D(alpha_k)``
  (dashed), both made relative as :data:`cvxrank.tolerances.RELATIVE_GAP_DEFINITION` says,
  against iterations, solver time or solver time since the first record (``"elapsed"``);
  several runs (seeds) are drawn as their median and a min-max (or interquartile) band,
  taken per iteration (on a time axis, at the runs' median time of each iteration: one
  line over the same runs); given the proven :class:`~cvxrank.certificates.validate.RateSpec`, the
  rate as a guide line beside the measured curve (:func:`plot_rate_guide`).
* :func:`figure_for_formulation`: the solvers of one formulation, deterministic and
  stochastic ones in separate rows, against iterations (left) and solver time after the
  set-up (right, from 0), an x axis logarithmic where its solvers end orders of magnitude
  apart (:func:`wants_log_axis`) or their proven rate is a power law (symlog, so that the
  first record stays on it; decades labelled only), every proven rate that has a curve as
  a guide (stochastic solvers' included: on the dual median where the rate is about the
  dual), curves that coincide per iteration kept apart (:func:`coinciding_solvers`), the
  legend beside the data.
* :func:`write_figures`: the PNG and the CSV of the traces behind it, per formulation and
  instance, as ``cvxrank verify`` and ``cvxrank figures`` write them (``small``: the
  compact PNGs of ``figures/``, :func:`save_small_png`).

These are generic: they draw traces, runs and rates, never an experiment's results. An
experiment's own figures live with it and draw with these (the AUC scaling of
:mod:`cvxrank.experiments.chapelle.reports`, the LETOR grid's validation curves of
:mod:`cvxrank.experiments.reports`, RankMM's duals of
:mod:`cvxrank.experiments.rankmm_convergence.figures`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, NullFormatter

from cvxrank.certificates.validate import SUBLINEAR_TAIL, RateSpec
from cvxrank.core.trace import Run, Trace
from cvxrank.tolerances import RELATIVE_GAP_DEFINITION, relative_gap

#: Largest number of x positions of a median/band curve over several runs.
MAX_GRID = 2000

#: The x axes: iterations, the solver's clock (its set-up included: the first record is at
#: the end of the set-up) and the solver's clock since its first record ("elapsed", the
#: convergence figures' time axis: it starts at 0 whatever the set-up took).
X_LABELS = {"iteration": "iteration", "time": "solver time [s]",
            "elapsed": "solver time after set-up [s]"}

#: The y label of every suboptimality panel: the gap definition comes from
#: :mod:`cvxrank.tolerances`, so the label follows when the definition changes.
Y_LABEL = f"relative suboptimality\n{RELATIVE_GAP_DEFINITION}"

#: A panel's x axis is logarithmic when the curves on it end at least this many times apart
#: (largest last iteration, or solver time, over the smallest).
LOG_AXIS_RATIO = 10.0

#: Style of the proven-rate guides: a broad translucent stroke in the solver's color, unlike
#: any measured curve (thin solid primal, thin dashed dual, shaded band).
GUIDE_STYLE: dict[str, Any] = {"linewidth": 6.0, "alpha": 0.35, "solid_capstyle": "butt"}

#: ``gid`` of the guide lines and of the tolerance lines, to find them among an axes' lines.
GUIDE_GID = "rate-guide"
TOL_GID = "tolerance"

#: Points of a guide line.
GUIDE_POINTS = 200

#: A guide starts this many times above the curve it is drawn for (a slope to compare with,
#: kept off the data).
GUIDE_OFFSET = 10.0

#: A guide stops at this fraction of the lowest value of its curve (it would otherwise
#: stretch the y axis by decades below anything measured).
GUIDE_FLOOR = 0.1

#: The legend gives a solver's set-up time when it is at least this fraction of its time
#: (its curves then start far right on the time axis).
SETUP_NOTE_FRACTION = 0.5

#: Solvers with few records (Newton's handful of iterations) get hollow markers, one shape
#: per solver, so that every iteration shows and coinciding curves stay apart.
MARKER_MAX_POINTS = 30
MARKERS = ("o", "x", "s", "+", "^", "D", "v", "*", "<", ">")

#: Line width of a measured curve. Where a solver's curve per iteration is the same as the
#: curve of a solver drawn before it in its row (EG with the factored and the plain step),
#: the iteration panel draws the earlier one as a broad pale line (:data:`UNDER_STYLE`)
#: under the later one, and the legend says so (:func:`coinciding_solvers`).
LINE_WIDTH = 1.5
UNDER_STYLE: dict[str, Any] = {"linewidth": 4.0, "alpha": 0.5, "zorder": 1.9}

#: Two solvers' curves coincide when their records are at the same iterations and their
#: objective values agree to this relative accuracy.
COINCIDE_RTOL = 1e-9

#: Resolution of every figure file: ``cvxrank verify``'s, the curated ones that ``cvxrank
#: figures`` writes into ``figures/`` (kept in git as palette PNGs, :func:`save_small_png`)
#: and the reproductions' (text legible when the PNG is shown at its size).
DPI = 150


def new_figure(**kwargs: Any) -> Figure:
    """A Figure on its own Agg canvas (no pyplot, no global state)."""
    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig


def axes_or_new(ax: Axes | None, **figure: Any) -> Axes:
    """``ax``, or the axes of a new figure (:func:`new_figure` with ``figure``): the
    ``ax=None`` style of every plotting function."""
    return ax if ax is not None else new_figure(**figure).add_subplot()


def _as_trace(run: Run | Trace) -> Trace:
    if isinstance(run, Run):
        return run.trace
    if isinstance(run, Trace):
        return run
    raise TypeError(f"expected a Run or a Trace, got {type(run).__name__}")


def relative_suboptimality(
    run: Run | Trace, p_star: float, *, d_star: float | None = None,
    which: str = "primal",
) -> np.ndarray:
    """Relative suboptimality of every record of a run.

    Parameters
    ----------
    run : Run or Trace
    p_star : float
        Certified primal optimum.
    d_star : float, optional
        Certified dual optimum (default ``p_star``: strong duality).
    which : {"primal", "dual"}
        ``P(w_k) - p*`` or ``d* - D(alpha_k)``.

    Returns
    -------
    ndarray
        The gap of each record to its optimum, relative as
        :func:`cvxrank.tolerances.relative_gap` defines it
        (:data:`~cvxrank.tolerances.RELATIVE_GAP_DEFINITION`); NaN where the record is at or
        beyond the optimum (the run beat the reference within its accuracy), which a log
        axis leaves out.
    """
    tr = _as_trace(run)
    if which == "primal":
        values, optimum, side = tr.primal, float(p_star), 1.0
    elif which == "dual":
        values, optimum, side = tr.dual, float(p_star if d_star is None else d_star), -1.0
    else:
        raise ValueError(f"which must be 'primal' or 'dual', got {which!r}")
    v = np.asarray(values, dtype=float)
    s = np.array([relative_gap(value, optimum) for value in v], dtype=float)
    return np.where(side * (v - optimum) > 0, s, np.nan)


def _xvalues(run: Run | Trace, x: str) -> np.ndarray:
    tr = _as_trace(run)
    if x == "iteration":
        return np.asarray(tr.iteration, dtype=float)
    if x == "time":
        return np.asarray(tr.time, dtype=float)
    if x == "elapsed":
        t = np.asarray(tr.time, dtype=float)
        return t - t[0] if t.size else t
    raise ValueError(f"x must be one of {', '.join(map(repr, X_LABELS))}, got {x!r}")


def _has_dual(runs: Sequence[Run | Trace]) -> bool:
    return any(np.any(np.isfinite(np.asarray(_as_trace(r).dual, dtype=float))) for r in runs)


def _grid(xs: list[np.ndarray], log: bool) -> np.ndarray:
    """Every recorded x, or :data:`MAX_GRID` of them evenly spaced on the axis' scale
    (geometrically on a log axis, non-positive x kept)."""
    allx = np.unique(np.concatenate(xs)) if xs else np.array([])
    if allx.size <= MAX_GRID:
        return allx
    positive, rest = allx[allx > 0], allx[allx <= 0]
    if log and positive.size > 1 and rest.size < MAX_GRID // 2:
        return np.unique(np.concatenate(
            [rest, np.geomspace(positive[0], positive[-1], MAX_GRID - rest.size)]))
    return np.linspace(allx[0], allx[-1], MAX_GRID)


def _on_grid(grid: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log-linear interpolation of ``y`` (NaN where missing) at ``grid``, NaN outside the run."""
    ok = np.isfinite(y) & np.isfinite(x)
    out = np.full(grid.shape, np.nan)
    if np.count_nonzero(ok) == 0:
        return out
    xo, ly = x[ok], np.log10(y[ok])
    inside = (grid >= xo[0]) & (grid <= xo[-1])
    out[inside] = 10.0 ** np.interp(grid[inside], xo, ly)
    return out


def _median_x(grid: np.ndarray, its: list[np.ndarray], xs: list[np.ndarray]) -> np.ndarray:
    """Where the records of a median curve over several runs go on a time axis: at each
    iteration of ``grid``, the median over the runs of the time at which each reached it
    (linear interpolation between records; NaN where no run did), made non-decreasing (past
    the end of a run that stopped early the median is over fewer runs and could step back).
    The runs are aligned on their iterations, so that
    the median is over the same runs at every point and the curve is one line, whatever the
    runs' clocks did (a seed's slow start, seeds ending at different times)."""
    stack = np.full((len(its), grid.size), np.nan)
    for row, k, x in zip(stack, its, xs, strict=True):
        ok = np.isfinite(k) & np.isfinite(x)
        if np.count_nonzero(ok):
            inside = (grid >= k[ok][0]) & (grid <= k[ok][-1])
            row[inside] = np.interp(grid[inside], k[ok], x[ok])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(stack, axis=0)
    return np.fmax.accumulate(med)


def plot_suboptimality(
    runs: Run | Trace | Sequence[Run | Trace],
    p_star: float,
    *,
    x: str = "iteration",
    ax: Axes | None = None,
    label: str | None = None,
    d_star: float | None = None,
    dual: bool = True,
    band: str = "minmax",
    color: Any = None,
    rate: RateSpec | None = None,
    marker: str | None = None,
    line: dict[str, Any] | None = None,
) -> Axes:
    """Relative suboptimality of one solver against a certified optimum, log y axis.

    Parameters
    ----------
    runs : Run, Trace, or a sequence of them
        One run, or several (seeds) of the same solver.
    p_star : float
        Certified primal optimum.
    x : {"iteration", "time", "elapsed"}
        Horizontal axis: iteration count, solver time (trace evaluation excluded; the first
        record is at the end of the set-up) or solver time since the first record
        (``"elapsed"``: the axis starts at 0 whatever the set-up took). Several runs are
        aligned on their iterations: their median and band are taken per iteration, on a
        geometric grid when the axes' x scale (set it before drawing) is logarithmic, and
        drawn on a time axis at the runs' median time of each iteration (:func:`_median_x`).
    ax : Axes, optional
        Where to draw (default: a new figure).
    label : str, optional
        Legend label of the primal curve; the dual curve gets ``label + " (dual)"``.
    d_star : float, optional
        Certified dual optimum for the dual curve (default ``p_star``).
    dual : bool
        Also draw the dual suboptimality ``d* - D(alpha_k)`` (relative) when the runs have it.
    band : {"minmax", "quartile"}
        With several runs: the shaded band spans the min-max or the interquartile range of
        the runs at each x; the line is their median.
    color : optional
        Matplotlib color (default: the next of the axes' cycle).
    rate : RateSpec, optional
        The proven rate: drawn by :func:`plot_rate_guide` beside the curve it is about
        (``rate.measure``; ``"auto"``, as :func:`~cvxrank.certificates.validate.validate`
        fits it: the dual curve of a dual solver's runs, those with a dual point ``alpha``,
        else the primal one, also where a primal solver's certified bound draws a dual
        curve), against iterations only.
    marker : str, optional
        Matplotlib marker drawn hollow at every point of the curves (e.g. to tell apart
        solvers whose curves coincide); default none.
    line : dict, optional
        Further :class:`~matplotlib.lines.Line2D` properties of the curves (``linewidth``,
        ``alpha``, ``zorder``), e.g. a broad pale line under a curve that coincides with it.

    Returns
    -------
    Axes
    """
    ax = axes_or_new(ax, figsize=(6, 4), layout="constrained")
    if x not in X_LABELS:
        raise ValueError(f"x must be one of {', '.join(map(repr, X_LABELS))}, got {x!r}")
    marks = {"marker": marker, "markerfacecolor": "none", "markersize": 5, **(line or {})}
    if isinstance(runs, (Run, Trace)):
        runs = [runs]
    runs = list(runs)
    if not runs:
        raise ValueError("no runs to plot")
    if band not in ("minmax", "quartile"):
        raise ValueError(f"band must be 'minmax' or 'quartile', got {band!r}")
    which = ["primal"] + (["dual"] if dual and _has_dual(runs) else [])
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for w in which:
        name = label if w == "primal" else (f"{label} (dual)" if label else "dual")
        style = "-" if w == "primal" else "--"
        ys = [relative_suboptimality(r, p_star, d_star=d_star, which=w) for r in runs]
        xs = [_xvalues(r, x) for r in runs]
        if len(runs) == 1:
            (drawn,) = ax.plot(xs[0], ys[0], style, color=color, label=name, **marks)
            color = drawn.get_color()
            curves[w] = (xs[0], ys[0])
            continue
        its = [_xvalues(r, "iteration") for r in runs]
        grid = _grid(its, log=ax.get_xscale() != "linear")
        stack = np.vstack([_on_grid(grid, ki, yi) for ki, yi in zip(its, ys, strict=True)])
        at = grid if x == "iteration" else _median_x(grid, its, xs)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            med = np.nanmedian(stack, axis=0)
            if band == "minmax":
                lo, hi = np.nanmin(stack, axis=0), np.nanmax(stack, axis=0)
            else:
                lo, hi = np.nanpercentile(stack, [25, 75], axis=0)
        (drawn,) = ax.plot(at, med, style, color=color,
                           label=None if name is None else f"{name}, median", **marks)
        color = drawn.get_color()
        curves[w] = (grid, med)
        ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(at)
        ax.fill_between(at, np.where(ok, lo, np.nan), np.where(ok, hi, np.nan), color=color,
                        alpha=0.2 if w == "primal" else 0.1, linewidth=0,
                        label=None if name is None else f"{name}, {band} over {len(runs)} seeds")
    if rate is not None and x == "iteration":
        measure = rate.measure if rate.measure != "auto" else (
            "dual" if "dual" in curves and any(isinstance(r, Run) and r.alpha is not None
                                               for r in runs) else "primal")
        if measure in curves:
            text = f"proven {rate_guide_text(rate)}"
            plot_rate_guide(rate, *curves[measure], ax=ax, color=color,
                            label=f"{label}: {text}" if label else text)
    ax.set_yscale("log")
    ax.set_xlabel(X_LABELS[x])
    ax.set_ylabel(Y_LABEL)
    return ax


def rate_guide_text(rate: RateSpec) -> str:
    """How a legend names a proven rate.

    ``O(1/k)``, ``O(1/k^2)`` (sublinear), ``O((1 - 2.1e-03)^k)`` (linear with a contraction
    factor, written as one minus a small number so that a factor of 0.99998 stays readable),
    ``linear``, ``Newton, <=15 it, superlinear end`` or an iteration bound (nothing to
    draw).
    """
    if rate.kind == "sublinear":
        return rate.expected
    if rate.kind == "linear":
        if rate.factor is None:
            return "linear"
        return f"O((1 - {1.0 - rate.factor:.1e})^k)"
    if rate.kind == "bounded":
        return f"<={rate.max_iter_expected:.3g} iterations (proven bound)"
    return f"Newton, <={rate.max_iter_expected} it, superlinear end"


def plot_rate_guide(
    rate: RateSpec,
    k: np.ndarray,
    s: np.ndarray,
    *,
    ax: Axes | None = None,
    color: Any = None,
    label: str | None = None,
) -> Axes:
    """The proven rate as a guide line beside a measured suboptimality curve.

    A convergence theorem bounds the suboptimality by ``C k^a`` (sublinear) or ``c q^k``
    (linear) with constants that depend on the problem, and
    :func:`cvxrank.certificates.validate.validate` judges the slope of the curve's tail: the last
    decade of iterations for a sublinear rate (``k >= k_end / SUBLINEAR_TAIL``), the second half for
    a linear one (``k >= k_end / 2``). The guide spans that window and starts :data:`GUIDE_OFFSET`
    times above the measured curve at the window's first point, parallel to where the curve should
    be and clear of it: a curve that falls at least as steeply as its guide there matches the
    theory. A Newton rate (a number of iterations and a superlinear end) and a linear rate without a
    predicted factor have no curve to draw: nothing is drawn.

    Parameters
    ----------
    rate : RateSpec
        The proven rate.
    k : ndarray
        Iterations of the measured curve.
    s : ndarray
        Its relative suboptimality (NaN where missing).
    ax : Axes, optional
        Where to draw (default: a new figure).
    color : optional
        Matplotlib color (default: the next of the axes' cycle).
    label : str, optional
        Legend label (default: ``"proven " + rate_guide_text(rate)``).

    Returns
    -------
    Axes
        The guide, if drawn, is the line of ``ax`` whose gid is :data:`GUIDE_GID`; it stops
        at :data:`GUIDE_FLOOR` times the lowest value of the curve.
    """
    if ax is None:
        ax = new_figure(figsize=(6, 4), layout="constrained").add_subplot()
        ax.set_yscale("log")
    if rate.kind in ("newton", "bounded") or (rate.kind == "linear" and rate.factor is None):
        return ax
    k = np.asarray(k, dtype=float)
    s = np.asarray(s, dtype=float)
    measured = np.isfinite(k) & np.isfinite(s) & (s > 0) & (k >= 0)
    if not np.any(measured):
        return ax
    k_end = k[measured][-1]
    start = max(k_end / SUBLINEAR_TAIL, 1.0) if rate.kind == "sublinear" else k_end / 2.0
    window = measured & (k >= start)
    if np.count_nonzero(window) < 2:
        return ax
    k0, s0 = k[window][0], GUIDE_OFFSET * s[window][0]
    if rate.kind == "sublinear":
        kk = np.geomspace(k0, k_end, GUIDE_POINTS)
        guide = s0 * (kk / k0) ** float(rate.exponent)  # type: ignore[arg-type]
    else:
        kk = np.linspace(k0, k_end, GUIDE_POINTS)
        guide = s0 * float(rate.factor) ** (kk - k0)  # type: ignore[arg-type]
    keep = guide >= GUIDE_FLOOR * np.min(s[measured])
    ax.plot(kk[keep], guide[keep], **GUIDE_STYLE, color=color,
            label=label if label is not None else f"proven {rate_guide_text(rate)}",
            gid=GUIDE_GID)
    return ax


def wants_log_axis(ends: Sequence[float]) -> bool:
    """Whether curves that end at ``ends`` (last iteration or time) need a log x axis.

    True when the largest positive end is at least :data:`LOG_AXIS_RATIO` times the
    smallest: on a linear axis the shorter curves would be squeezed into a tenth of it.
    """
    positive = [float(e) for e in ends if np.isfinite(e) and e > 0]
    if len(positive) < 2:
        return False
    return max(positive) >= LOG_AXIS_RATIO * min(positive)


def set_log_x(ax: Axes, x: str, *, linthresh: float | None = None) -> Axes:
    """Make the x axis logarithmic: ``symlog`` for iterations (linear on [0, 1], so that
    iteration 0 stays on the plot) and for the time since the first record (linear on
    [0, ``linthresh``], by default the power of ten at or below the earliest positive time
    drawn, :func:`symlog_threshold`), ``log`` for solver time. Only the decades are
    labelled (a log axis spanning less than a few decades would otherwise label its minor
    ticks too, and their labels run into each other)."""
    if x == "iteration":
        ax.set_xscale("symlog", linthresh=1.0, linscale=0.4)
    elif x == "elapsed":
        ax.set_xscale("symlog", linthresh=1e-3 if linthresh is None else linthresh,
                      linscale=0.4)
    elif x == "time":
        ax.set_xscale("log")
    else:
        raise ValueError(f"x must be one of {', '.join(map(repr, X_LABELS))}, got {x!r}")
    ax.xaxis.set_minor_formatter(NullFormatter())
    return ax


def symlog_threshold(values: Iterable[np.ndarray]) -> float:
    """The power of ten at or below the smallest positive value of ``values`` (1e-3 when
    there is none): the end of the linear part of a symlog time axis that starts at 0."""
    positive = [float(np.min(v[v > 0])) for v in map(np.asarray, values)
                if np.any(v[np.isfinite(v)] > 0)]
    if not positive:
        return 1e-3
    return float(10.0 ** np.floor(np.log10(min(positive))))


def coinciding_solvers(outcomes: Sequence[Any]) -> dict[str, str]:
    """``{solver: earlier solver}`` for the outcomes (of one row of a figure) whose curve per
    iteration is the one of an outcome before them: every run's records at the same
    iterations, primal (and dual) values equal to :data:`COINCIDE_RTOL` (two
    implementations of one algorithm, e.g. EG with the factored and the plain step)."""
    def same(a: Any, b: Any) -> bool:
        if len(a.results) != len(b.results):
            return False
        for ra, rb in zip(a.results, b.results, strict=True):
            ta, tb = _as_trace(ra), _as_trace(rb)
            if list(ta.iteration) != list(tb.iteration):
                return False
            for va, vb in ((ta.primal, tb.primal), (ta.dual, tb.dual)):
                if not np.allclose(np.asarray(va, dtype=float), np.asarray(vb, dtype=float),
                                   rtol=COINCIDE_RTOL, atol=0.0, equal_nan=True):
                    return False
        return True

    found: dict[str, str] = {}
    for i, o in enumerate(outcomes):
        for earlier in outcomes[:i]:
            if earlier.solver not in found and same(earlier, o):
                found[o.solver] = earlier.solver
                break
    return found


def _rate_of(outcome: Any) -> RateSpec | None:
    """The proven rate of an outcome, about the curve its validation measured it on (else
    the entry's rate when it does not depend on the formulation)."""
    if outcome.validation is not None:
        return replace(outcome.validation.rate, measure=outcome.validation.measure)
    rate = outcome.entry.rate
    return rate if isinstance(rate, RateSpec) else None


def _x_ends(outcomes: Sequence[Any], x: str) -> list[float]:
    """Where each outcome's curves end on the ``x`` axis (iterations counted from 1)."""
    ends = []
    for o in outcomes:
        last = [float(_xvalues(r, x)[-1]) for r in o.results if len(_as_trace(r))]
        if last:
            ends.append(max(max(last), 1.0) if x == "iteration" else max(last))
    return ends


def _instance_text(outcome: Any) -> str:
    """``"<instance> (<n> dual variables, C=<C>)"``, with the hyper-parameters the
    formulation was built with (the instance's C rescaled for the method)."""
    built = {**outcome.entry.params, **outcome.entry.instance_params(outcome.instance)}
    params = ", ".join(f"{k}={v:.3g}" for k, v in built.items())
    parts = ([f"{outcome.n_pairs:,} dual variables"] if outcome.n_pairs else []) + (
        [params] if params else [])
    return outcome.instance.name + (f" ({', '.join(parts)})" if parts else "")


def _draw_tolerances(ax: Axes, group: Sequence[Any], tol: float | None) -> None:
    """One dotted line per tolerance level of the solvers in ``group``, naming them."""
    levels: dict[float, list[str]] = {}
    for o in group:
        levels.setdefault(tol if tol is not None else o.entry.tol, []).append(o.solver)
    for level, names in levels.items():
        ax.axhline(level, color="0.45", linestyle=":", linewidth=1.2, gid=TOL_GID,
                   label=f"tol {level:.0e} ({', '.join(names)})")


def _setup_note(runs: Sequence[Run]) -> str:
    """``" (set-up 9.1 s)"`` when the set-up before the first iteration took at least
    :data:`SETUP_NOTE_FRACTION` of the solver's time (median over runs), else ``""``: the
    time axis starts at the first record, after the set-up, and the legend says what that
    left out where it matters."""
    setup = float(np.median([r.setup_time for r in runs]))
    total = float(np.median([r.time for r in runs]))
    return f" (set-up {setup:.2g} s)" if total > 0 and setup >= SETUP_NOTE_FRACTION * total else ""


def _marker(runs: Sequence[Run], index: int) -> str | None:
    """The ``index``-th of :data:`MARKERS` when every run has at most
    :data:`MARKER_MAX_POINTS` records (a few iterations, each worth seeing), else None."""
    if max(len(_as_trace(r)) for r in runs) > MARKER_MAX_POINTS:
        return None
    return MARKERS[index % len(MARKERS)]


def _legend_handles(ax: Axes, group: Sequence[Any], colors: dict[str, str],
                    markers: dict[str, str | None], stochastic: bool, same: dict[str, str],
                    duals: bool) -> list[Artist]:
    """Legend of a row: solvers (color, marker; a curve drawn over the same curve of another
    solver says so), their proven rates (guides, or why none), then the key of the styles
    (primal, dual, band, tolerance)."""
    handles: list[Artist] = [
        Line2D([], [], color=colors[o.solver], linewidth=2, marker=markers[o.solver],
               markerfacecolor="none",
               label=o.solver + _setup_note(o.results)
               + (f"\n(per iteration: the curve of {same[o.solver]},\ndrawn over its broad "
                  "pale line)" if o.solver in same else "")
               + ("" if o.passed else " (failed)"))
        for o in group]
    handles += [ln for ln in ax.get_lines() if ln.get_gid() == GUIDE_GID]
    unguided: dict[str, list[str]] = {}
    for o in group:
        rate = _rate_of(o)
        if rate is not None and (rate.kind in ("newton", "bounded")
                                 or (rate.kind == "linear" and rate.factor is None)):
            unguided.setdefault(rate_guide_text(rate), []).append(o.solver)
    handles += [Line2D([], [], linestyle="none", label=f"{', '.join(names)}: proven {text}\n"
                       "(no rate curve to draw)") for text, names in unguided.items()]
    handles.append(Line2D([], [], color="0.2", linestyle="-",
                          label=r"solid: primal $P(w_k) - p^*$"))
    if duals:
        handles.append(Line2D([], [], color="0.2", linestyle="--",
                              label=r"dashed: dual $d^* - D(\alpha_k)$"))
    if stochastic:
        seeds = sorted({len(o.results) for o in group})
        handles.append(Patch(facecolor="0.2", alpha=0.25, label=(
            f"line: median, band: min-max over {'/'.join(map(str, seeds))} seeds")))
    handles += [ln for ln in ax.get_lines() if ln.get_gid() == TOL_GID]
    return handles


def figure_for_formulation(outcomes: Sequence[Any], *, tol: float | None = None) -> Figure:
    """Suboptimality of the solvers of one formulation, vs iteration and vs solver time.

    Parameters
    ----------
    outcomes : sequence of PairOutcome
        Outcomes of :func:`cvxrank.verification.sweep.run_verification` for one formulation;
        outcomes without runs or reference are skipped.
    tol : float, optional
        Draw this tolerance as the horizontal dotted line (default: each entry's ``tol``,
        one line per level, naming its solvers).

    Returns
    -------
    Figure
        One row of two panels per instance and kind of solver (deterministic solvers, then
        stochastic ones, whose iterations are steps on a sample and not comparable with a
        full-gradient or Newton iteration; their primal median is drawn, and their dual
        median too when their proven rate is about the dual, as RankMM's stochastic dual
        solvers' is): against iterations (left, with each solver's proven rate as a guide,
        :func:`plot_rate_guide`) and against solver time since the solver's first record
        (right, ``x="elapsed"``: the axis starts at 0, the set-up left out and given in the
        legend where it is long; same y axis). An x axis is logarithmic when its solvers
        end :data:`LOG_AXIS_RATIO` times apart or more (:func:`wants_log_axis`), and both
        are when a solver of the row has a sublinear proven rate (a power law, whose guide
        is then a straight line); a logarithmic axis is linear near 0 (symlog), so that the
        first record stays on it. A solver whose curve per iteration is the one of a solver
        before it in the row (:func:`coinciding_solvers`) is drawn thin over the other's
        broad pale line. Each row's legend is beside its right panel, outside the data.
    """
    usable = [o for o in outcomes if o.results and o.reference is not None]
    if not usable:
        raise ValueError("no outcome with runs and a reference to plot")
    names = sorted({o.formulation for o in usable})
    if len(names) > 1:
        raise ValueError(f"outcomes of several formulations: {', '.join(names)}")
    instances = list(dict.fromkeys(o.instance.name for o in usable))
    solvers = list(dict.fromkeys(o.solver for o in usable))
    colors = {s: f"C{i % 10}" for i, s in enumerate(solvers)}
    rows = [(inst, stochastic) for inst in instances for stochastic in (False, True)
            if any(o.instance.name == inst and bool(o.entry.stochastic) == stochastic
                   for o in usable)]
    fig = new_figure(figsize=(13, 0.6 + 3.6 * len(rows)), layout="constrained")
    axes = fig.subplots(len(rows), 2, squeeze=False)
    for (inst, stochastic), (left, right) in zip(rows, axes, strict=True):
        group = [o for o in usable
                 if o.instance.name == inst and bool(o.entry.stochastic) == stochastic]
        ref = group[0].reference
        markers = {o.solver: _marker(o.results, solvers.index(o.solver)) for o in group}
        same = coinciding_solvers(group)
        under = set(same.values())
        rates = {o.solver: _rate_of(o) for o in group}
        duals = {o.solver: _has_dual(o.results) and (
            not stochastic or (rates[o.solver] is not None
                               and rates[o.solver].measure == "dual")) for o in group}
        right.sharey(left)
        power_law = any(r is not None and r.kind == "sublinear" for r in rates.values())
        for ax, xaxis in ((left, "iteration"), (right, "elapsed")):
            if power_law or wants_log_axis(_x_ends(group, xaxis)):
                set_log_x(ax, xaxis, linthresh=symlog_threshold(
                    _xvalues(r, xaxis) for o in group for r in o.results))
            else:
                ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=xaxis == "iteration"))
            for o in group:
                plot_suboptimality(o.results, ref.p_star, x=xaxis, ax=ax, d_star=ref.d_star,
                                   label=o.solver, color=colors[o.solver],
                                   rate=rates[o.solver], dual=duals[o.solver],
                                   marker=markers[o.solver],
                                   line=UNDER_STYLE if xaxis == "iteration" and o.solver in under
                                   else {"linewidth": LINE_WIDTH})
            _draw_tolerances(ax, group, tol)
            ax.grid(True, which="major", alpha=0.3)
        right.set_ylabel("")
        kind = "stochastic solvers" if stochastic else "deterministic solvers"
        where = f"{_instance_text(group[0])}: " if len(instances) > 1 else ""
        left.set_title(f"{where}{kind}, per iteration", fontsize=10)
        right.set_title(f"{where}{kind}, per second of solver time after set-up", fontsize=10)
        right.legend(handles=_legend_handles(left, group, colors, markers, stochastic, same,
                                             any(duals.values())),
                     fontsize=8, loc="upper left", bbox_to_anchor=(1.03, 1.0),
                     borderaxespad=0.0)
    title = names[0] + (f" on {_instance_text(usable[0])}" if len(instances) == 1 else "")
    fig.suptitle(title, fontsize=11)
    return fig


def figure_stem(formulation: str, instance: str) -> str:
    """File name (without extension) of a figure: ``<formulation>_<instance>``."""
    return f"{formulation}_{instance}".replace("/", "-").replace(os.sep, "-")


def save_small_png(fig: Figure, path: str | os.PathLike[str], *,
                   dpi: float = DPI) -> Path:
    """Save ``fig`` as a compact PNG: rendered at ``dpi``, then reduced to a palette of at
    most 256 colours (line plots on white use far fewer; the antialiased edges keep their
    look) and compressed at the highest level. Deterministic: the same figure gives the same
    bytes."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    buffer.seek(0)
    with Image.open(buffer) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                                              dither=Image.Dither.NONE)
    target = Path(path)
    small.save(target, format="PNG", optimize=True)
    return target


def write_figures(outcomes: Iterable[Any], out_dir: str | os.PathLike[str], *,
                  small: bool = False) -> list[Path]:
    """Write one PNG per (formulation, instance) and the CSV of the traces behind it.

    Returns the written paths (PNG and CSV alternately). Outcomes without runs or reference
    (failed before running) are left out. The PNGs are at :data:`DPI`; ``small``: with a
    palette of at most 256 colours (:func:`save_small_png`, a few tens of kB, for the
    figures kept in git) instead of full colour.
    """
    from cvxrank.verification.sweep import write_traces_csv

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups: dict[tuple[str, str], list[Any]] = {}
    for o in outcomes:
        if o.results and o.reference is not None:
            groups.setdefault((o.formulation, o.instance.name), []).append(o)
    written: list[Path] = []
    for (formulation, instance), group in groups.items():
        stem = figure_stem(formulation, instance)
        fig = figure_for_formulation(group)
        png = out / f"{stem}.png"
        if small:
            save_small_png(fig, png)
        else:
            fig.savefig(png, dpi=DPI)
        written.append(png)
        written.append(write_traces_csv(group, out / f"{stem}.csv"))
    return written
