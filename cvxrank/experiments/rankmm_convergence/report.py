r"""RankMM's convergence as files: the three figures, the CSV of the records behind each,
the summary table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from cvxrank import tolerances
from cvxrank.experiments.rankmm_convergence.figures import (
    figure_rankmm_duals,
    figure_rankmm_eg,
    figure_rankmm_projection,
)
from cvxrank.experiments.rankmm_convergence.protocol import MAIN_SERIES, ConvergenceResult
from cvxrank.experiments.reports import write_csv

#: The figures: file name (without extension) -> the function that draws it and the series
#: whose records its CSV holds.
FIGURES: dict[str, tuple[Callable[[ConvergenceResult], Figure], Sequence[str]]] = {
    "rankmm-duals": (figure_rankmm_duals, MAIN_SERIES),
    "rankmm-eg": (figure_rankmm_eg, ("seg", "seg-pairs")),
    "rankmm-projection": (figure_rankmm_projection, ("sgp-exact", "sgp-paper")),
}

#: The files :func:`write_convergence` may write: each figure's PNG and CSV (a figure whose
#: series did not run is left out) and the summaries.
CONVERGENCE_FILES = (*(f"{name}.{suffix}" for name in FIGURES for suffix in ("png", "csv")),
                     "rankmm-convergence.csv")

#: Columns of the trace CSVs.
CSV_COLUMNS = ("loss", "dual_set", "series", "solver", "seed", "iteration", "passes", "time",
               "primal", "dual", "p_star", "d_star", "rel_primal", "rel_dual")


def trace_rows(result: ConvergenceResult, keys: Sequence[str]) -> list[dict[str, Any]]:
    """The records of the series ``keys``, one row per (series, seed, record).

    ``rel_primal`` is :math:`(P(w_t) - p^*)/|p^*|` and ``rel_dual`` :math:`(d^* -
    D(\\alpha_t))/|p^*|` (:func:`cvxrank.tolerances.relative_gap`).
    """
    rows = []
    for dual in result.duals.values():
        ref = dual.reference
        for spec in dual.series():
            if spec.key not in keys:
                continue
            for seed, (run, passes) in enumerate(zip(dual.runs[spec.key],
                                                     dual.in_passes(spec.key), strict=True)):
                tr = run.trace
                for i in range(len(tr)):
                    rows.append({
                        "loss": dual.loss.name, "dual_set": dual.dual_set, "series": spec.key,
                        "solver": spec.solver,
                        "seed": result.seeds[seed] if spec.stochastic else "",
                        "iteration": tr.iteration[i], "passes": passes.iteration[i],
                        "time": tr.time[i], "primal": tr.primal[i], "dual": tr.dual[i],
                        "p_star": ref.p_star, "d_star": ref.d_star,
                        "rel_primal": tolerances.relative_gap(tr.primal[i], ref.p_star),
                        "rel_dual": tolerances.relative_gap(tr.dual[i], ref.d_star),
                    })
    return rows


def write_convergence(result: ConvergenceResult, out_dir: str | Path) -> dict[str, Path]:
    """Write the figures of :data:`FIGURES` and their CSVs, plus ``rankmm-convergence.csv``
    (the summaries) into ``out_dir``; return the paths by name.

    The CSV of ``rankmm-projection`` also holds the ``projection_difference`` records
    (``series = "difference"``).
    """
    from cvxrank.plots import DPI

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for name, (make, keys) in FIGURES.items():
        present = [k for d in result.duals.values() for k in d.runs if k in keys]
        if not present:
            continue
        fig = make(result)
        files[f"{name}.png"] = out / f"{name}.png"
        fig.savefig(files[f"{name}.png"], dpi=DPI)
        rows = trace_rows(result, keys)
        columns = list(CSV_COLUMNS)
        if name == "rankmm-projection":
            columns += ["differ", "distance"]
            dual = result.duals["max_average"]
            for seed, record in zip(result.seeds, dual.projection_difference, strict=True):
                rows += [{"loss": dual.loss.name, "dual_set": dual.dual_set,
                          "series": "difference", "solver": "sgp", "seed": seed,
                          "passes": p, "differ": a, "distance": b}
                         for p, a, b in zip(record["passes"], record["differ"],
                                            record["distance"], strict=True)]
        files[f"{name}.csv"] = out / f"{name}.csv"
        write_csv(files[f"{name}.csv"], columns, rows)
    summaries = result.summaries()
    files["rankmm-convergence.csv"] = out / "rankmm-convergence.csv"
    write_csv(files["rankmm-convergence.csv"], list(summaries[0]), summaries)
    return files


def summary_markdown(result: ConvergenceResult) -> str:
    """A markdown table of :meth:`ConvergenceResult.summaries`: per series the median final
    relative gaps, time, step size and the fitted exponent of the mean dual suboptimality
    beside the proven rate."""
    lines = [
        f"RankMM convergence on {result.source}: {result.n_queries} queries, "
        f"{result.n_documents:,} documents, {result.n_features} features; C = {result.C:g}, "
        f"{result.steps:,} steps x {len(result.seeds)} seeds (step: "
        + ("the pilot's" if result.step_scale is None
           else f"{result.step_scale:g} x the worst-case step") + ")",
        "",
        "| dual | series | eta0 | rel. primal gap | rel. dual gap | time [s] | proven | "
        "fitted exponent |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in result.summaries():
        eta = "" if s["eta0"] is None else f"{s['eta0']:.3g}"
        fitted = "" if s["fitted_exponent"] is None else f"{s['fitted_exponent']:.2f}"
        dual_gap = "" if s["dual_gap"] is None else f"{s['dual_gap']:.1e}"
        lines.append(f"| {s['dual_set']} | {s['series']} | {eta} | {s['rel_gap']:.1e} | "
                     f"{dual_gap} | {s['time']:.3f} | {s['proven']} | {fitted} |")
    return "\n".join(lines) + "\n"
