"""Report writers: markdown tables, CSV files, and the LETOR grid's table, CSV, JSON and
figure (:func:`plot_grid_validation`).

The paper reproductions' own tables are in :mod:`cvxrank.experiments.chapelle.reports`; they
share :func:`markdown_table` and :func:`write_csv`.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank.experiments.letor import EVALUATED, GridResult, point_dict
from cvxrank.experiments.selection import TIE_BREAK

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: The test measures the grid's table shows (those reported for the run's k and preset).
TABLE_MEASURES = ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "p@1", "p@3", "p@5", "p@10",
                  "map", "mean_ndcg")


#: Marks a measure that is not certified as the optimum's in the tables.
UNCERTIFIED_MARK = "†"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A markdown table (cells converted with ``str``)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def csv_value(value: Any) -> Any:
    """A CSV cell: floats at full precision (``repr``), numpy scalars as Python ones."""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_csv(path: Path, fields: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
    """Write ``rows`` (dicts; missing fields empty) under the header ``fields``."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(fields))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: csv_value(row.get(k, "")) for k in fields})



def table_files(stem: str) -> dict[str, str]:
    """The names of the files :func:`write_table_files` writes for ``stem``, by kind."""
    return {"markdown": f"{stem}.md", "csv": f"{stem}.csv", "json": f"{stem}.json"}


def write_table_files(out_dir: str | Path, stem: str, markdown: str, fields: Sequence[str],
                      rows: Sequence[dict[str, Any]], payload: dict[str, Any]) -> dict[str, Path]:
    """Write ``<stem>.md`` (``markdown``), ``<stem>.csv`` (``rows`` under ``fields``) and
    ``<stem>.json`` (``payload``) into ``out_dir`` (created); return their paths by kind."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {kind: out / name for kind, name in table_files(stem).items()}
    files["markdown"].write_text(markdown, encoding="utf-8")
    write_csv(files["csv"], fields, rows)
    files["json"].write_text(json.dumps(payload, indent=2, default=float) + "\n",
                             encoding="utf-8")
    return files

# --------------------------------------------------------------------------- LETOR grid


def _label(measure: str) -> str:
    return "MeanNDCG" if measure == "mean_ndcg" else measure.upper()


def _shown(result: GridResult) -> list[str]:
    keys = result.folds[0].test
    return [m for m in TABLE_MEASURES if m in keys]


def _params_text(params: dict[str, float]) -> str:
    return ", ".join(f"{name}={value:g}" for name, value in params.items())


def grid_markdown(result: GridResult) -> str:
    """The per-fold table (selected point, its validation measure, its test measures), the
    mean over folds, the validation measure at every grid point and a summary."""
    shown = _shown(result)
    sel = _label(result.measure)
    names = list(result.grid.names)
    rows = [[str(f.fold)] + [f"{f.selected_params[n]:g}" for n in names]
            + [f"{f.validation[result.measure]:.4f}"] + [f"{f.test[m]:.4f}" for m in shown]
            for f in result.folds]
    mean = result.mean()
    rows.append(["mean"] + ["" for _ in names]
                + [f"{np.mean([f.validation[result.measure] for f in result.folds]):.4f}"]
                + [f"**{mean[m]:.4f}**" for m in shown])
    table = markdown_table(["fold"] + names + [f"vali {sel}"] + [f"test {_label(m)}"
                                                                  for m in shown], rows)
    points = result.folds[0].params
    cells = []
    for i, point in enumerate(points):
        row = [_params_text(point)]
        for f in result.folds:
            r = f.results[i]
            value = f"{r.measures['vali'][result.measure]:.4f}" if r.ok else "failed"
            row.append(f"**{value}**" if i == f.selected else value)
        cells.append(row)
    by_point = markdown_table(["grid point"] + [f"fold {f.fold}" for f in result.folds], cells)
    failed = sum(not r.ok for f in result.folds for r in f.results)
    subset = ("" if result.max_train_queries is None else
              f" Training on the first {result.max_train_queries} queries of each fold.")
    uncertified = {m: c for m, c in result.certified().items() if not c["certified"]}
    notes = [
        f"{result.method} ({result.loss}), solver {result.solver}; trained on train.txt at "
        f"each of {len(points)} grid points, selected by {sel} on vali.txt ({TIE_BREAK}); "
        f"test measures of the selected model on test.txt, preset {result.preset}.{subset}",
        f"{sum(len(f.results) for f in result.folds)} tasks on the {result.backend} backend"
        + (f" ({result.workers} workers)" if result.workers else "")
        + f" in {result.elapsed:.2f} s (wall-clock, worker start-up included)"
        + (f"; {failed} failed (see grid-points.csv)" if failed else "") + ".",
        certified_note(uncertified),
    ]
    edges = result.at_edges()
    if edges:
        notes.append("At the edge of the grid (extend it: the validation measure may go on "
                     "improving beyond): " + "; ".join(edges) + ".")
    return "\n".join([table, "", f"Validation {sel} at every grid point (selected in bold):",
                      "", by_point, ""] + notes) + "\n"


def certified_note(uncertified: dict[str, dict[str, Any]]) -> str:
    """One sentence: every reported test measure is the optimum's, or which are not."""
    if not uncertified:
        return ("Every test measure above is certified: the exact optimum's for every fold "
                "(cvxrank.certificates.certify).")
    listed = ", ".join(
        f"{_label(m)} ({'?' if c['uncertified_queries'] is None else c['uncertified_queries']}"
        " queries)" for m, c in uncertified.items())
    return f"Not certified as the optimum's (queries summed over the folds): {listed}."


def grid_rows(result: GridResult) -> tuple[list[str], list[dict[str, Any]]]:
    """``grid.csv``: one row per fold (selected point, validation measure, every test
    measure), then the ``mean`` row."""
    names = list(result.grid.names)
    measures = list(result.folds[0].test)
    vali = f"vali_{result.measure}"
    rows = [{"fold": f.fold, **f.selected_params, vali: f.validation[result.measure],
             **{f"test_{m}": f.test[m] for m in measures}} for f in result.folds]
    rows.append({"fold": "mean",
                 vali: float(np.mean([f.validation[result.measure] for f in result.folds])),
                 **{f"test_{m}": v for m, v in result.mean().items()}})
    return ["fold"] + names + [vali] + [f"test_{m}" for m in measures], rows


def grid_point_rows(result: GridResult) -> tuple[list[str], list[dict[str, Any]]]:
    """``grid-points.csv``: one row per (fold, grid point) with its run and measures."""
    names = list(result.grid.names)
    measures = list(result.folds[0].test)
    run_fields = ["ok", "selected", "solver", "objective", "n_iter", "status",
                  "relative_gap", "w_radius", "time", "setup_time", "wall_time", "error"]
    rows = []
    for f in result.folds:
        for i, (params, r) in enumerate(zip(f.params, f.results, strict=True)):
            point = point_dict(params, r, selected=(i == f.selected))
            row = {"fold": f.fold, **params, **{k: point.get(k, "") for k in run_fields}}
            for split in EVALUATED:
                row.update({f"{split}_{m}": v for m, v in point[split].items()})
            rows.append(row)
    fields = (["fold"] + names + run_fields
              + [f"{split}_{m}" for split in EVALUATED for m in measures])
    return fields, rows


#: The files :func:`write_grid` writes, by kind (``png`` for a grid of one axis only).
GRID_FILES = {"markdown": "grid.md", "csv": "grid.csv", "points_csv": "grid-points.csv",
              "json": "grid.json", "png": "grid-validation.png"}


def write_grid(result: GridResult, out_dir: str | Path) -> dict[str, Path]:
    """Write ``grid.md``, ``grid.csv``, ``grid-points.csv``, ``grid.json`` and, for a grid of
    one axis, ``grid-validation.png`` (:func:`plot_grid_validation`).

    Returns
    -------
    dict
        ``{"markdown", "csv", "points_csv", "json"[, "png"]}`` to paths.
    """
    from cvxrank.utils.jsonable import to_jsonable

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {kind: out / name for kind, name in GRID_FILES.items() if kind != "png"}
    files["markdown"].write_text(f"# LETOR protocol: {result.method} on {result.data_dir}\n\n"
                                 + grid_markdown(result), encoding="utf-8")
    write_csv(files["csv"], *grid_rows(result))
    write_csv(files["points_csv"], *grid_point_rows(result))
    files["json"].write_text(json.dumps(to_jsonable(result.to_dict()), indent=2,
                                        allow_nan=False) + "\n", encoding="utf-8")
    if len(result.grid.axes) == 1:
        from cvxrank.plots import DPI, new_figure

        fig = new_figure(figsize=(8.5, 4.5), layout="constrained")
        plot_grid_validation(result, fig.add_subplot(1, 1, 1))
        files["png"] = out / GRID_FILES["png"]
        fig.savefig(files["png"], dpi=DPI)
    return files


def plot_grid_validation(result: GridResult, ax: Axes | None = None) -> Axes:
    """The LETOR protocol on a one-axis grid: the validation measure that selects (solid,
    dots) and the test measure (dotted) against the axis, one colour per fold, the selected
    point circled; a log axis when the values are positive and span more than a decade. The
    title and the legend say which line is which (the legend: one entry per fold, then the
    key of the styles: validation, test, selected).

    Parameters
    ----------
    result : GridResult
    ax : matplotlib Axes or None
        Drawn on (default: a new figure's axes).

    Returns
    -------
    matplotlib Axes
    """
    from matplotlib.lines import Line2D

    from cvxrank.plots import axes_or_new

    ax = axes_or_new(ax, figsize=(8.5, 4.5), layout="constrained")
    (name, values), = result.grid.axes
    x = np.asarray(values, dtype=float)
    measure = result.measure
    for i, fold in enumerate(result.folds):
        color = f"C{i % 10}"
        vali = [r.measures["vali"][measure] if r.ok else np.nan for r in fold.results]
        test = [r.measures["test"][measure] if r.ok else np.nan for r in fold.results]
        ax.plot(x, vali, marker="o", markersize=3, color=color, label=f"fold {fold.fold}")
        ax.plot(x, test, linestyle=":", color=color, linewidth=1)
        ax.plot(x[fold.selected], vali[fold.selected], marker="o", markersize=10,
                markerfacecolor="none", color=color)
    if x.min() > 0 and x.max() / x.min() > 10:
        ax.set_xscale("log")
    ax.set_xlabel(name)
    ax.set_ylabel(measure)
    ax.set_title(f"{result.method} ({result.loss}): {measure} by fold\n"
                 "validation set (solid: selects the point) and test set (dotted)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    folds = [h for h in ax.get_lines() if not h.get_label().startswith("_")]
    key = [Line2D([], [], color="0.3", marker="o", markersize=3,
                  label=f"solid: validation {measure}"),
           Line2D([], [], color="0.3", linestyle=":", linewidth=1,
                  label=f"dotted: test {measure}"),
           Line2D([], [], color="0.3", linestyle="none", marker="o", markersize=10,
                  markerfacecolor="none", label="circled: selected by validation")]
    ax.legend(handles=folds + key, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0),
              borderaxespad=0.0)
    return ax


def finish_figure(fig: Any, protocol: str, detail: str = "",
                  path: str | Path | None = None) -> None:
    """Lay out a reproduction's figure with a footer that states which options made it
    (:data:`cvxrank.experiments.config.PROTOCOLS`, then ``detail``), and save it at ``path``
    (PNG at :data:`cvxrank.plots.DPI`) when given."""
    from cvxrank.experiments.config import PROTOCOLS
    from cvxrank.plots import DPI

    text = "Run with " + PROTOCOLS[protocol] + (f"; {detail}" if detail else "") + "."
    fig.text(0.5, 0.005, text, ha="center", va="bottom", fontsize=7, style="italic")
    fig.tight_layout(rect=(0.0, 0.035, 1.0, 1.0))
    if path is not None:
        fig.savefig(path, dpi=DPI)

