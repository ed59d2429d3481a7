r"""RankMM's convergence figures (Agarwal & Collins 2010, Sects. 3.1-3.3), drawn with
:mod:`cvxrank.plots`.

* :func:`plot_rankmm_series`: series of one dual against its certified optimum, log-log,
  with the proven rates as guides; :func:`rankmm_legend` its legend;
* :func:`figure_rankmm_duals`: the three duals side by side, per pass and per second;
* :func:`figure_rankmm_eg`: factored against plain exponentiated gradient (RankMM-2);
* :func:`figure_rankmm_projection`: the paper's projection order against the exact
  projection (RankMM-3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from cvxrank.experiments.rankmm_convergence.protocol import (
    MAIN_SERIES,
    ConvergenceResult,
    DualRun,
)
from cvxrank.plots import GUIDE_GID, GUIDE_STYLE, axes_or_new, new_figure, plot_suboptimality

#: Colors of RankMM's convergence series (the same in every figure).
RANKMM_COLORS = {"sgp": "C0", "apg-box": "0.35", "seg": "C2", "seg-pairs": "C1",
                 "apg-simplex": "0.35", "sgp-exact": "C0", "sgp-paper": "C3",
                 "apg-l1inf": "0.35"}

#: x labels of the RankMM figures: passes for the side-by-side figure, steps, seconds.
RANKMM_X_LABELS = {
    "pass": "passes over the data\n(stochastic: steps / queries with pairs; apg: iterations)",
    "iteration": "stochastic steps T",
    "time": "solver time [s]",
}


def plot_rankmm_series(
    dual: DualRun,
    keys: Sequence[str],
    *,
    x: str = "pass",
    ax: Axes | None = None,
    dual_curve: bool = True,
    guides: Sequence[str] | None = None,
) -> Axes:
    """Series of one RankMM dual against its certified optimum, log-log.

    For each series (key of
    :data:`~cvxrank.experiments.rankmm_convergence.protocol.SERIES`): the relative primal
    suboptimality :math:`(P(w_t) - p^*)/|p^*|` (solid) and, with ``dual_curve``, the dual
    one :math:`(d^* - D(\\alpha_t))/|p^*|` (dashed), the median over the seeds with a min-max
    band (:func:`~cvxrank.plots.plot_suboptimality`); against passes or steps, the series'
    proven rate on the dual objective as a guide (:func:`~cvxrank.plots.plot_rate_guide`:
    :math:`O(1/\\sqrt T)` for projection, :math:`O(1/T)` for EG, :math:`O(1/k^2)` for ``apg``)
    on the dual curve (the primal one without ``dual_curve``).

    Parameters
    ----------
    dual : DualRun
    keys : sequence of str
        The series to draw (those that did not run are skipped).
    x : {"pass", "iteration", "time"}
        Passes over the data (stochastic steps / B, ``apg`` iterations), steps (iterations
        as recorded) or solver time.
    ax : Axes, optional
        Where to draw (default: a new figure).
    dual_curve : bool
        Also draw the dual suboptimality.
    guides : sequence of str, optional
        The series whose proven rate is drawn (default: all of ``keys``; one is enough for
        series with the same rate and the same iterates).

    Returns
    -------
    Axes
        With log axes, labelled; no legend (:func:`rankmm_legend` makes one).
    """
    if x not in RANKMM_X_LABELS:
        raise ValueError(f"x must be one of {', '.join(RANKMM_X_LABELS)}, got {x!r}")
    ax = axes_or_new(ax, figsize=(6, 4), layout="constrained")
    ax.set_xscale("log")
    ref = dual.reference
    for spec in dual.series():
        if spec.key not in keys:
            continue
        runs = dual.in_passes(spec.key) if x == "pass" else dual.runs[spec.key]
        rate = (replace(spec.rate, measure="dual" if dual_curve else "primal")
                if guides is None or spec.key in guides else None)
        plot_suboptimality(runs, ref.p_star, d_star=ref.d_star, x="time" if x == "time"
                           else "iteration", ax=ax, label=spec.label, dual=dual_curve,
                           color=RANKMM_COLORS.get(spec.key), rate=rate)
    ax.set_xlabel(RANKMM_X_LABELS[x])
    ax.set_ylabel("relative suboptimality\n(to the certified optimum)")
    ax.grid(True, which="major", alpha=0.3)
    return ax


def rankmm_legend(ax: Axes, dual: DualRun, keys: Sequence[str], *, dual_curve: bool = True,
                  n_seeds: int | None = None, where: Axes | None = None, **kwargs: Any) -> Any:
    """A legend for :func:`plot_rankmm_series`: one entry per series (its color), the rate
    guides drawn on ``ax``, then the key of the styles; drawn on ``where`` (default ``ax``),
    ``kwargs`` go to its ``legend``."""
    handles: list[Artist] = [
        Line2D([], [], color=RANKMM_COLORS.get(s.key), linewidth=2,
               label=s.label + (f" (eta0 {dual.eta0[s.key]:.2g})" if s.key in dual.eta0
                                else ""))
        for s in dual.series() if s.key in keys]
    for line in ax.get_lines():
        if line.get_gid() == GUIDE_GID:
            text = str(line.get_label()).split(": proven ")
            handles.append(Line2D([], [], color=line.get_color(), **GUIDE_STYLE,
                                  label=f"proven {text[-1]}"))
    handles.append(Line2D([], [], color="0.2", label=r"solid: primal $P(w_t) - p^*$"))
    if dual_curve:
        handles.append(Line2D([], [], color="0.2", linestyle="--",
                              label=r"dashed: dual $d^* - D(\alpha_t)$"))
    band = "band: min-max" + (f" over {n_seeds} seeds" if n_seeds else " over the seeds")
    handles.append(Patch(facecolor="0.2", alpha=0.25, label=f"line: median, {band}"))
    return (where or ax).legend(handles=handles, **{"fontsize": 7, **kwargs})


def _rankmm_title(result: ConvergenceResult) -> str:
    return (f"RankMM on {result.source} ({result.n_queries} queries, {result.n_documents:,} "
            f"documents), C = {result.C:g}, {result.steps:,} steps x {len(result.seeds)} "
            f"seeds")


def figure_rankmm_duals(result: ConvergenceResult) -> Figure:
    """The three RankMM duals side by side (Agarwal & Collins 2010, Sects. 3.1-3.3).

    One column per dual that ran (box: ``sgp``; simplex: ``seg``; :math:`\\ell_{1,\\infty}`
    ball: ``sgp`` with the exact projection; each with ``apg``), relative suboptimality
    against passes over the data (top, with the proven rates as guides) and against solver
    time (bottom, same y axis), each column's legend below it.

    Parameters
    ----------
    result : ConvergenceResult

    Returns
    -------
    Figure
    """
    duals = list(result.duals.values())
    fig = new_figure(figsize=(5.0 * len(duals), 9.6), layout="constrained")
    axes = fig.subplots(2, len(duals), squeeze=False)
    for column, dual in enumerate(duals):
        top, bottom = axes[0, column], axes[1, column]
        plot_rankmm_series(dual, MAIN_SERIES, x="pass", ax=top)
        plot_rankmm_series(dual, MAIN_SERIES, x="time", ax=bottom)
        bottom.sharey(top)
        name = f"{dual.formulation.name}: {dual.dual_set} dual ({dual.formulation.n_pairs:,} pairs)"
        top.set_title(f"{name}\nper pass", fontsize=9)
        bottom.set_title("per second of solver time", fontsize=9)
        rankmm_legend(top, dual, MAIN_SERIES, n_seeds=len(result.seeds), where=bottom,
                      loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    fig.suptitle(_rankmm_title(result), fontsize=10)
    return fig


def _compare_two(result: ConvergenceResult, dual: DualRun, keys: tuple[str, str],
                 steps: Axes, seconds: Axes) -> None:
    """Two series of one dual, primal only, against steps and against solver time (same y
    axis), the first's proven rate as the guide, the second dashed on the steps panel (where
    they coincide both stay visible), the legend on the steps panel."""
    for ax, x in ((steps, "iteration"), (seconds, "time")):
        plot_rankmm_series(dual, keys, x=x, ax=ax, dual_curve=False, guides=keys[:1])
    for line in steps.get_lines():
        if line.get_color() == RANKMM_COLORS[keys[1]] and line.get_gid() != GUIDE_GID:
            line.set_linestyle((0, (4, 3)))
    seconds.sharey(steps)
    rankmm_legend(steps, dual, keys, dual_curve=False, n_seeds=len(result.seeds),
                  loc="lower left")


def figure_rankmm_eg(result: ConvergenceResult) -> Figure:
    """Factored (``seg``) against plain (``seg-pairs``) exponentiated gradient on RankMM-2's
    simplex dual (Sect. 3.2): per step, where the two coincide (same seeds, same iterates;
    the largest relative difference of their primal values is printed), and per second.

    Parameters
    ----------
    result : ConvergenceResult
        With the ``max`` dual.

    Returns
    -------
    Figure
    """
    dual = result.duals["max"]
    keys = ("seg", "seg-pairs")
    fig = new_figure(figsize=(11.5, 4.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    _compare_two(result, dual, keys, left, right)
    differences = [np.max(np.abs(np.subtract(a.trace.primal, b.trace.primal))
                          / np.abs(b.trace.primal))
                   for a, b in zip(dual.runs["seg"], dual.runs["seg-pairs"], strict=True)]
    per_step = {k: float(np.median([r.solve_time / max(r.n_iter, 1) for r in dual.runs[k]]))
                for k in keys}
    left.set_title(f"per step: the same iterates (largest relative difference of "
                   f"P(w_t): {max(differences):.1e})", fontsize=9)
    right.set_title(f"per second: {1e6 * per_step['seg']:.0f} us a step factored, "
                    f"{1e6 * per_step['seg-pairs']:.0f} us plain (median)", fontsize=9)
    pairs = dual.formulation.n_pairs / dual.n_blocks
    docs = dual.formulation.data.n_documents / dual.formulation.m
    fig.suptitle(f"{_rankmm_title(result)}\nrankmm-max: factored EG, O(n_i) a step, against "
                 f"plain EG, O(|R_i|) ({docs:.0f} documents and {pairs:.0f} pairs a query "
                 "on average)", fontsize=10)
    return fig


def figure_rankmm_projection(result: ConvergenceResult) -> Figure:
    """The paper's projection order against the exact projection on RankMM-3's
    :math:`\\ell_{1,\\infty}` dual (Sect. 3.3; :class:`cvxrank.numerics.sets.L1InfBall`, Notes).

    Left and middle: ``sgp`` with the exact projection and with the paper's order (project
    onto the ball, then clip; dashed), same seeds, against steps and solver time. Right: at
    the records of the exact runs, the fraction of query blocks on which the two would differ
    on the next step's input (mean and min-max over the seeds); the title gives the largest
    relative distance between the two (:attr:`DualRun.projection_difference
    <cvxrank.experiments.rankmm_convergence.protocol.DualRun.projection_difference>`).

    Parameters
    ----------
    result : ConvergenceResult
        With the ``max_average`` dual.

    Returns
    -------
    Figure
    """
    dual = result.duals["max_average"]
    keys = ("sgp-exact", "sgp-paper")
    fig = new_figure(figsize=(15.5, 4.8), layout="constrained")
    left, middle, right = fig.subplots(1, 3)
    _compare_two(result, dual, keys, left, middle)
    left.set_title("per step", fontsize=9)
    middle.set_title("per second of solver time", fontsize=9)
    records = dual.projection_difference
    if records:
        steps = np.asarray(records[0]["passes"]) * dual.n_blocks
        differ = np.vstack([r["differ"] for r in records])
        distance = np.vstack([r["distance"] for r in records])
        right.plot(steps, differ.mean(axis=0), color=RANKMM_COLORS["sgp-paper"],
                   label=f"mean over {len(records)} seeds")
        right.fill_between(steps, differ.min(axis=0), differ.max(axis=0),
                           color=RANKMM_COLORS["sgp-paper"], alpha=0.15, linewidth=0,
                           label="min-max over the seeds")
        right.set_xscale("log")
        right.set_ylim(bottom=0.0)
        right.set_xlabel(RANKMM_X_LABELS["iteration"])
        right.set_ylabel("fraction of the query blocks")
        right.grid(True, which="major", alpha=0.3)
        right.set_title("exact runs: where the paper's order would differ on the next "
                        f"step\n(largest relative distance {float(distance.max()):.1e})",
                        fontsize=9)
        right.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"{_rankmm_title(result)}\nrankmm-max_average: project onto the l1,inf ball "
                 "then clip (paper, Sect. 3.3) against the exact projection onto ball and "
                 "orthant", fontsize=10)
    return fig
