"""Convergence figures: suboptimality against the certified optimum, on a log axis.

Every function takes an ``ax`` (or makes its own figure) and returns it, in the matplotlib
``ax=None`` style; figures are :class:`matplotlib.figure.Figure` objects drawn on an Agg
canvas, never through ``pyplot``, so nothing touches global state and no display is needed.

* :func:`plot_suboptimality`: one solver's relative suboptimality
  ``(P(w_k) - p*) / max(1, |p*|)`` (solid) and, when the trace has dual values,
  ``(d* - D(alpha_k)) / max(1, |p*|)`` (dashed), against iterations or solver time; several
  runs (seeds) are drawn as their median and a min-max (or interquartile) band.
* :func:`figure_for_formulation`: several solvers of one formulation, vs iteration and vs
  time (one row per instance).
* :func:`write_figures`: the PNG and the CSV of the traces behind it, per formulation and
  instance, as ``cvxrank verify`` and ``cvxrank figures`` write them.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from cvxrank.trace import SolverResult, Trace

#: Largest number of x positions of a median/band curve over several runs.
MAX_GRID = 2000

X_LABELS = {"iteration": "iteration", "time": "solver time [s]"}


def new_figure(**kwargs: Any) -> Figure:
    """A Figure on its own Agg canvas (no pyplot, no global state)."""
    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig


def _as_trace(run: SolverResult | Trace) -> Trace:
    if isinstance(run, SolverResult):
        return run.trace
    if isinstance(run, Trace):
        return run
    raise TypeError(f"expected a SolverResult or a Trace, got {type(run).__name__}")


def relative_suboptimality(
    run: SolverResult | Trace, p_star: float, *, d_star: float | None = None,
    which: str = "primal",
) -> np.ndarray:
    """``(P_k - p*) / max(1, |p*|)`` (``which="primal"``) or ``(d* - D_k) / max(1, |p*|)``.

    ``d*`` defaults to ``p*`` (strong duality). Values that are not positive (the run beat the
    reference within its accuracy) become NaN, which a log axis leaves out.
    """
    tr = _as_trace(run)
    scale = max(1.0, abs(float(p_star)))
    if which == "primal":
        s = (np.asarray(tr.primal, dtype=float) - float(p_star)) / scale
    elif which == "dual":
        ds = float(p_star if d_star is None else d_star)
        s = (ds - np.asarray(tr.dual, dtype=float)) / scale
    else:
        raise ValueError(f"which must be 'primal' or 'dual', got {which!r}")
    return np.where(s > 0, s, np.nan)


def _xvalues(run: SolverResult | Trace, x: str) -> np.ndarray:
    tr = _as_trace(run)
    if x == "iteration":
        return np.asarray(tr.iteration, dtype=float)
    if x == "time":
        return np.asarray(tr.time, dtype=float)
    raise ValueError(f"x must be 'iteration' or 'time', got {x!r}")


def _has_dual(runs: Sequence[SolverResult | Trace]) -> bool:
    return any(np.any(np.isfinite(np.asarray(_as_trace(r).dual, dtype=float))) for r in runs)


def _grid(xs: list[np.ndarray]) -> np.ndarray:
    allx = np.unique(np.concatenate(xs)) if xs else np.array([])
    if allx.size > MAX_GRID:
        allx = np.linspace(allx[0], allx[-1], MAX_GRID)
    return allx


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


def plot_suboptimality(
    runs: SolverResult | Trace | Sequence[SolverResult | Trace],
    p_star: float,
    *,
    x: str = "iteration",
    ax: Axes | None = None,
    label: str | None = None,
    d_star: float | None = None,
    dual: bool = True,
    band: str = "minmax",
    color: Any = None,
) -> Axes:
    """Relative suboptimality of one solver against a certified optimum, log y axis.

    Parameters
    ----------
    runs : SolverResult, Trace, or a sequence of them
        One run, or several (seeds) of the same solver.
    p_star : float
        Certified primal optimum.
    x : {"iteration", "time"}
        Horizontal axis: iteration count or solver time (trace evaluation excluded).
    ax : Axes, optional
        Where to draw (default: a new figure).
    label : str, optional
        Legend label of the primal curve; the dual curve gets ``label + " (dual)"``.
    d_star : float, optional
        Certified dual optimum for the dual curve (default ``p_star``).
    dual : bool
        Also draw the dual suboptimality ``(d* - D_k) / max(1, |p*|)`` when the runs have it.
    band : {"minmax", "quartile"}
        With several runs: the shaded band spans the min-max or the interquartile range of
        the runs at each x; the line is their median.
    color : optional
        Matplotlib color (default: the next of the axes' cycle).

    Returns
    -------
    Axes
    """
    if ax is None:
        ax = new_figure(figsize=(6, 4), layout="constrained").add_subplot()
    if isinstance(runs, (SolverResult, Trace)):
        runs = [runs]
    runs = list(runs)
    if not runs:
        raise ValueError("no runs to plot")
    if band not in ("minmax", "quartile"):
        raise ValueError(f"band must be 'minmax' or 'quartile', got {band!r}")
    which = ["primal"] + (["dual"] if dual and _has_dual(runs) else [])
    for w in which:
        name = label if w == "primal" else (f"{label} (dual)" if label else "dual")
        style = "-" if w == "primal" else "--"
        ys = [relative_suboptimality(r, p_star, d_star=d_star, which=w) for r in runs]
        xs = [_xvalues(r, x) for r in runs]
        if len(runs) == 1:
            (line,) = ax.plot(xs[0], ys[0], style, color=color, label=name)
            color = line.get_color()
            continue
        grid = _grid(xs)
        stack = np.vstack([_on_grid(grid, xi, yi) for xi, yi in zip(xs, ys, strict=True)])
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            med = np.nanmedian(stack, axis=0)
            if band == "minmax":
                lo, hi = np.nanmin(stack, axis=0), np.nanmax(stack, axis=0)
            else:
                lo, hi = np.nanpercentile(stack, [25, 75], axis=0)
        (line,) = ax.plot(grid, med, style, color=color,
                          label=None if name is None else f"{name}, median")
        color = line.get_color()
        ok = np.isfinite(lo) & np.isfinite(hi)
        ax.fill_between(grid, np.where(ok, lo, np.nan), np.where(ok, hi, np.nan), color=color,
                        alpha=0.2 if w == "primal" else 0.1, linewidth=0,
                        label=None if name is None else f"{name}, {band} over {len(runs)} seeds")
    ax.set_yscale("log")
    ax.set_xlabel(X_LABELS[x])
    ax.set_ylabel("(f - f*) / max(1, |p*|)")
    return ax


def figure_for_formulation(outcomes: Sequence[Any], *, tol: float | None = None) -> Figure:
    """Suboptimality of several solvers of one formulation, vs iteration and vs time.

    Parameters
    ----------
    outcomes : sequence of PairOutcome
        Outcomes of :func:`cvxrank.verification.run_verification` for one formulation (one
        row of panels per instance); outcomes without runs or reference are skipped.
    tol : float, optional
        Draw the tolerance as a horizontal dotted line (default: the entries' ``tol``).

    Returns
    -------
    Figure
        Two panels per instance: against iterations (left) and solver time (right).
    """
    usable = [o for o in outcomes if o.results and o.reference is not None]
    if not usable:
        raise ValueError("no outcome with runs and a reference to plot")
    names = sorted({o.formulation for o in usable})
    if len(names) > 1:
        raise ValueError(f"outcomes of several formulations: {', '.join(names)}")
    instances: list[str] = []
    for o in usable:
        if o.instance.name not in instances:
            instances.append(o.instance.name)
    solvers: list[str] = []
    for o in usable:
        if o.solver not in solvers:
            solvers.append(o.solver)
    fig = new_figure(figsize=(11, 4 * len(instances)), layout="constrained")
    axes = fig.subplots(len(instances), 2, squeeze=False)
    for row, inst in enumerate(instances):
        group = [o for o in usable if o.instance.name == inst]
        ref = group[0].reference
        for col, xaxis in enumerate(("iteration", "time")):
            ax = axes[row][col]
            for o in group:
                plot_suboptimality(
                    o.results, ref.p_star, x=xaxis, ax=ax, d_star=ref.d_star,
                    label=o.solver + (" (failed)" if not o.passed else ""),
                    color=f"C{solvers.index(o.solver) % 10}",
                )
            level = tol if tol is not None else group[0].entry.tol
            ax.axhline(level, color="0.5", linestyle=":", linewidth=1, label=f"tol {level:.0e}")
            params = ", ".join(f"{k}={v:g}" for k, v in group[0].instance.params.items())
            n = group[0].n_pairs
            ax.set_title(f"{names[0]} on {inst}" + (f" ({n:,} pairs" if n else " (")
                         + (f", {params})" if params else ")"), fontsize=10)
            ax.grid(True, which="major", alpha=0.3)
        axes[row][0].legend(fontsize=8)
    return fig


def figure_stem(formulation: str, instance: str) -> str:
    """File name (without extension) of a figure: ``<formulation>_<instance>``."""
    return f"{formulation}_{instance}".replace("/", "-").replace(os.sep, "-")


def write_figures(outcomes: Iterable[Any], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write one PNG per (formulation, instance) and the CSV of the traces behind it.

    Returns the written paths (PNG and CSV alternately). Outcomes without runs or reference
    (failed before running) are left out.
    """
    from cvxrank.verification import write_traces_csv

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
        fig.savefig(png, dpi=110)
        written.append(png)
        written.append(write_traces_csv(group, out / f"{stem}.csv"))
    return written
