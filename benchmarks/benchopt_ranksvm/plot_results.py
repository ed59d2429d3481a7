"""Convergence figure of a ``benchopt run`` of this benchmark: relative suboptimality against
the certified optimum versus time, one curve per solver, one panel per (loss, C).

Reads benchopt's results file (parquet or csv), writes the figure (150 dpi) and, beside it
with the suffix ``.csv``, the curves it draws; prints each curve's last point and the time
it first reached a relative suboptimality of 1e-6 (:data:`TARGET`). Run from the project
root::

    .venv/bin/python benchmarks/benchopt_ranksvm/plot_results.py RESULTS.parquet \\
        --out figures/benchopt/ohsumed.png

A point whose suboptimality is at most 0 (the optimum to rounding) is drawn at
:data:`FLOOR`.
"""

from __future__ import annotations

import argparse
import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from PIL import Image  # noqa: E402

#: Where a relative suboptimality <= 0 (or below it) is drawn on the log axis.
FLOOR = 1e-16

#: The figure's resolution (dots per inch) and the colours of its palette.
DPI = 150
PALETTE = 128

#: The relative suboptimality whose first time is reported.
TARGET = 1e-6

#: The columns of the curves' CSV, renamed from benchopt's.
COLUMNS = {
    "dataset_name": "dataset",
    "p_obj_loss": "loss",
    "p_obj_C": "C",
    "solver_name": "solver",
    "stop_val": "stop_val",
    "time": "time",
    "objective_value": "objective",
    "objective_suboptimality": "suboptimality",
    "objective_relative_suboptimality": "relative_suboptimality",
    "objective_duality_gap": "duality_gap",
    "objective_distance": "distance",
    "objective_reference_gap": "reference_gap",
}

#: Drawing order and styles of the solvers (others get the next default style).
STYLES = {
    "prsvm-plus": ("C0", "o"),
    "prsvm": ("C1", "s"),
    "1-slack": ("C2", "D"),
    "pg": ("C3", "v"),
    "apg": ("C4", "^"),
    "liblinear": ("C5", "P"),
    "linearsvc": ("C6", "X"),
    "clarabel": ("C7", "*"),
}


def read_results(path: Path) -> pd.DataFrame:
    """benchopt's results file as the curves' table (:data:`COLUMNS`), sorted by panel and
    solver, each curve in benchopt's order (increasing precision: iterations, callback calls
    or decreasing tolerances; a later point of a rerun solver may take less time)."""
    frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    missing = sorted(set(COLUMNS) - set(frame.columns))
    if missing:
        raise ValueError(f"{path}: not a results file of this benchmark (missing {missing})")
    curves = frame[list(COLUMNS)].rename(columns=COLUMNS)
    return curves.sort_values(["dataset", "loss", "C", "solver"],
                              kind="stable").reset_index(drop=True)


def summary(curves: pd.DataFrame) -> pd.DataFrame:
    """Per panel and solver: points, last time, last relative suboptimality, and the first
    time it was at most :data:`TARGET` (NaN if never)."""
    rows = []
    for (dataset, loss, C, solver), curve in curves.groupby(["dataset", "loss", "C", "solver"]):
        reached = curve[curve["relative_suboptimality"] <= TARGET]
        rows.append({"dataset": dataset, "loss": loss, "C": C, "solver": solver,
                     "points": len(curve), "last_time": curve["time"].iloc[-1],
                     "last_relative_suboptimality": curve["relative_suboptimality"].iloc[-1],
                     "last_distance": curve["distance"].iloc[-1],
                     f"time_to_{TARGET:g}": (reached["time"].iloc[0] if len(reached)
                                             else math.nan)})
    return pd.DataFrame(rows)


def plot(curves: pd.DataFrame, out: Path, title: str | None = None) -> None:
    """The figure: one panel per (loss, C), rows by loss, columns by C."""
    losses = sorted(curves["loss"].unique(), key=lambda name: name != "squared_hinge")
    Cs = sorted(curves["C"].unique())
    fig, axes = plt.subplots(len(losses), len(Cs), figsize=(4.6 * len(Cs), 3.4 * len(losses)),
                             squeeze=False, sharey=True)
    for i, loss in enumerate(losses):
        for j, C in enumerate(Cs):
            ax = axes[i][j]
            panel = curves[(curves["loss"] == loss) & (curves["C"] == C)]
            order = sorted(panel["solver"].unique(), key=lambda s: (s not in STYLES,
                                                                    list(STYLES).index(s)
                                                                    if s in STYLES else 0, s))
            for solver in order:
                curve = panel[panel["solver"] == solver]
                color, marker = STYLES.get(solver, (None, "."))
                y = curve["relative_suboptimality"].clip(lower=FLOOR)
                ax.loglog(curve["time"], y, marker=marker, markersize=4, color=color,
                          label=solver, linewidth=1.2)
            ax.set_title(f"{loss}, C = {C:g}")
            ax.grid(True, which="major", alpha=0.3)
            ax.set_ylim(FLOOR / 3, None)
            if i == len(losses) - 1:
                ax.set_xlabel("time [s] (benchopt's clock)")
            if j == 0:
                ax.set_ylabel("(P(w) - P(w_ref)) / P(w_ref)")
    legend: dict[str, object] = {}  # one legend for all the panels, below them
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=len(legend),
               fontsize=9, frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0.0, 0.05, 1.0, 1.0))
    out.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=DPI, format="png")
    plt.close(fig)
    # a palette of PALETTE colours: the figure is a few lines and their antialiasing, a
    # quarter of the bytes of the full-colour file
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=PALETTE).save(out, optimize=True, dpi=(DPI, DPI))


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="benchopt's results file (.parquet, .csv)")
    parser.add_argument("--out", type=Path, required=True, help="the figure (.png)")
    parser.add_argument("--title", default=None, help="the figure's title")
    args = parser.parse_args(argv)
    curves = read_results(args.results)
    plot(curves, args.out, args.title)
    csv = args.out.with_suffix(".csv")
    curves.to_csv(csv, index=False, float_format="%.12g")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summary(curves).to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    print(f"wrote {args.out} and {csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
