"""Chapelle & Keerthi's Table 3 and Fig. 3 as files: markdown tables, CSV and the PNG
(:func:`plot_auc_scaling`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank.experiments.chapelle import LABELS
from cvxrank.experiments.chapelle.fig3 import ScalingResult
from cvxrank.experiments.chapelle.table3 import (
    EXPECTED_MEAN_NDCG10,
    OBJECTIVE_AGREEMENT,
    PAPER_TABLE3,
    Table3Result,
)
from cvxrank.experiments.reports import UNCERTIFIED_MARK, finish_figure, write_csv
from cvxrank.tolerances import relative_gap

if TYPE_CHECKING:
    from matplotlib.axes import Axes


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
                 + [f"{f.runs[m].ndcg10:.4f}" + ("" if f.runs[m].certified["certified"]
                                                 else UNCERTIFIED_MARK) for m in ms]
                 + [f"{f.runs[m].time:.3f}" for m in ms]
                 + [f"{f.runs[ms[0]].objective:.8g}", f"{f.max_objective_difference:.1e}"])
        lines.append("| " + " | ".join(cells) + " |")
    n = len(result.folds)
    mean = (["mean", f"{np.mean([f.n_documents for f in result.folds]):,.0f}",
             f"{np.mean([f.n_queries for f in result.folds]):.1f}",
             f"{np.mean([f.n_pairs for f in result.folds]):,.0f}"]
            + [f"**{result.mean_ndcg10(m):.4f}**" for m in ms]
            + [f"{result.total_time(m) / n:.3f}" for m in ms]
            + [f"{np.mean([f.runs[ms[0]].objective for f in result.folds]):.8g}",
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
    uncertified = {LABELS[m]: result.uncertified(m) for m in ms
                   if result.uncertified(m) != 0}
    certified = ("Every NDCG@10 above is certified: the exact optimum's on every test query "
                 "(cvxrank.certificates.certify; the Newton methods go on past their tolerance "
                 "until it is)."
                 if not uncertified else
                 f"{UNCERTIFIED_MARK}: not certified as the optimum's NDCG@10 (queries, summed "
                 "over the folds: " + ", ".join(f"{m} {'?' if n is None else n}"
                                                for m, n in uncertified.items())
                 + "; LinearSVC stops at LIBLINEAR's tolerance).")
    paper_t = PAPER_TABLE3["time"]
    summary = [
        "",
        f"Squared-hinge RankSVM, C = {result.C:g} in eq. (1)'s convention (= {2 * result.C:g} "
        "in the published code's C/2 convention); PRSVM and PRSVM+ stop at certified relative "
        f"duality gap {result.tol:g}, LinearSVC (LIBLINEAR dual CD on explicit pairs) at "
        f"tol {result.linearsvc_tol:g}. Test NDCG@10 with LETOR 3.0's conventions.{subset}",
        "",
        certified,
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
                     "ndcg@10_uncertified_queries", "objective", "time", "setup_time",
                     "solver_time", "n_iter", "cg_iterations", "converged", "certified_gap",
                     "w_radius", "rel_diff_to_first")


def table3_rows(result: Table3Result) -> list[dict[str, Any]]:
    """One row per (fold, method), then ``mean`` and ``total`` rows per method."""
    rows = []
    first = result.methods[0]
    for f in result.folds:
        for m, r in f.runs.items():
            rows.append({
                "fold": f.fold, "method": m, "n_documents": f.n_documents,
                "n_queries": f.n_queries, "n_pairs": f.n_pairs, "ndcg@10": r.ndcg10,
                "ndcg@10_uncertified_queries": r.certified["uncertified_queries"],
                "objective": r.objective, "time": r.time,
                "setup_time": r.setup_time, "solver_time": r.solver_time,
                "n_iter": r.run.n_iter,
                "cg_iterations": " ".join(str(c) for c in r.cg_iterations),
                "converged": r.run.converged, "certified_gap": r.certified_gap,
                "w_radius": r.run.w_radius, "rel_diff_to_first": relative_gap(r.objective,
                                                  f.runs[first].objective),
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
                "ndcg@10_uncertified_queries": result.uncertified(m) if label == "total" else "",
                "objective": agg([r.objective for r in runs]),
                "time": agg([r.time for r in runs]),
                "setup_time": agg([r.setup_time for r in runs]),
                "solver_time": agg([r.solver_time for r in runs]),
                "n_iter": agg([r.run.n_iter for r in runs]), "cg_iterations": "",
                "converged": all(r.run.converged for r in runs), "certified_gap": "",
                "w_radius": "",
                "rel_diff_to_first": max(relative_gap(f.runs[m].objective,
                                                      f.runs[first].objective)
                                         for f in result.folds),
            })
    return rows


#: The files :func:`write_table3` writes, by kind.
TABLE3_FILES = {"markdown": "chapelle-table3.md", "csv": "chapelle-table3.csv"}


def write_table3(result: Table3Result, out_dir: str | Path) -> dict[str, Path]:
    """Write ``chapelle-table3.md`` and ``chapelle-table3.csv`` into ``out_dir``.

    Returns
    -------
    dict
        ``{"markdown": path, "csv": path}`` (:data:`TABLE3_FILES`).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {kind: out / name for kind, name in TABLE3_FILES.items()}
    files["markdown"].write_text("# Chapelle & Keerthi (2010), Table 3: LETOR 3.0 OHSUMED\n\n"
                                 + table3_markdown(result), encoding="utf-8")
    write_csv(files["csv"], TABLE3_CSV_FIELDS, table3_rows(result))
    return files


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
                cells += [r.status if r is not None else "-", "", ""]
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


#: The files :func:`write_fig3` writes, by kind.
FIG3_FILES = {"png": "chapelle-fig3.png", "csv": "chapelle-fig3.csv",
              "markdown": "chapelle-fig3.md"}


def write_fig3(result: ScalingResult, out_dir: str | Path) -> dict[str, Path]:
    """Write ``chapelle-fig3.png``, ``chapelle-fig3.csv`` and ``chapelle-fig3.md``.

    Returns
    -------
    dict
        ``{"png": path, "csv": path, "markdown": path}`` (:data:`FIG3_FILES`).
    """
    from cvxrank.plots import new_figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {kind: out / name for kind, name in FIG3_FILES.items()}
    fig = new_figure(figsize=(6.5, 4.8))
    plot_auc_scaling(result, fig.add_subplot(1, 1, 1))
    finish_figure(fig, result.protocol, path=files["png"])
    write_csv(files["csv"], FIG3_CSV_FIELDS, fig3_rows(result))
    files["markdown"].write_text("# Chapelle & Keerthi (2010), Fig. 3: training time against "
                                 "n (AUC)\n\n" + fig3_markdown(result), encoding="utf-8")
    return files


def plot_auc_scaling(result: ScalingResult, ax: Axes | None = None) -> Axes:
    """Chapelle & Keerthi's Fig. 3: log-log training time against n, fitted slopes in the
    legend, and where a method was refused (too many pairs).

    Parameters
    ----------
    result : ScalingResult
    ax : matplotlib Axes or None
        Drawn on (default: a new figure's axes).

    Returns
    -------
    matplotlib Axes
    """
    from matplotlib.ticker import NullFormatter

    from cvxrank.plots import axes_or_new

    ax = axes_or_new(ax, figsize=(6.0, 4.5))
    styles = {"prsvm": {"marker": "o", "color": "tab:blue"},
              "prsvm+": {"marker": "s", "color": "tab:orange"}}
    for method in result.methods:
        ok = result.runs_of(method, ok_only=True)
        style = styles.get(method, {})
        if ok:
            n = np.array([r.n for r in ok], dtype=float)
            t = np.array([r.time for r in ok])
            slope = result.slope(method)
            label = LABELS[method] + (f" (slope {slope:.2f})" if np.isfinite(slope) else "")
            ax.loglog(n, t, linestyle="-", label=label, **style)
            if np.isfinite(slope) and n.size >= 2:
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
    # every size labelled (a log axis alone labels only the powers of ten between them)
    ax.set_xticks(result.sizes, [f"{n:,}" for n in result.sizes])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("n (documents, one query, two grades)")
    ax.set_ylabel("training time [s]")
    ax.set_title(f"AUC optimization, d = {result.d}, {c_text} (Chapelle & Keerthi Fig. 3)",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return ax
