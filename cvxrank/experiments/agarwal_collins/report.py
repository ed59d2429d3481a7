"""Fig. 1's table (markdown), CSV files, JSON and figure (Agarwal & Collins 2010, Sect. 4).

* ``agarwal-collins-fig1.md``: the five-fold means of test NDCG@1..10, P@1..10 (a
  selection of cut-offs in the table) and MAP for RankMM-1/2/3 (the paper's protocol,
  early-stopped), the same losses at their certified optimum for the selected C, and RankSVM;
  the selected hyper-parameters per fold; the zero test; the paper's stated findings.
* ``agarwal-collins-fig1.csv``: one row per method and fold (and the mean), every measure.
* ``agarwal-collins-fig1-points.csv``: every grid point of every fold and method.
* ``agarwal-collins-fig1.json``: :meth:`Fig1Result.to_dict
  <cvxrank.experiments.agarwal_collins.protocol.Fig1Result.to_dict>`.
* ``agarwal-collins-fig1.png``: like Fig. 1, NDCG@k and P@k against k = 1..10 (top) and MAP
  bars (bottom); the certified optima dashed and hatched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cvxrank.experiments.agarwal_collins import LABELS, PAPER_FINDINGS
from cvxrank.experiments.agarwal_collins.protocol import (
    PRESET,
    RANKSVM,
    SELECT,
    Fig1Result,
    K,
)
from cvxrank.experiments.reports import (
    UNCERTIFIED_MARK,
    finish_figure,
    markdown_table,
    write_csv,
)
from cvxrank.experiments.selection import TIE_BREAK

#: The cut-offs the markdown table shows (the CSV and JSON have 1..10).
SHOWN = (1, 3, 5, 10)

#: Suffix of the certified optima's rows (and of those whose optimum is w = 0 on every fold).
OPTIMUM = " (optimum)"
OPTIMUM_ZERO = " (optimum: w = 0)"


def measure_keys() -> list[str]:
    """NDCG@1..K, P@1..K and MAP: the measures of Fig. 1."""
    return ([f"ndcg@{i}" for i in range(1, K + 1)] + [f"p@{i}" for i in range(1, K + 1)]
            + ["map"])


def summary_rows(result: Fig1Result) -> list[tuple[str, str, dict[str, float]]]:
    """``(label, method, mean test measures)`` in the table's order: RankMM-1/2/3, their
    certified optima (when every fold has one; labelled ``w = 0`` when that is the optimum
    on every fold), RankSVM."""
    rows = [(label, label, result.mean(label)) for label in LABELS.values()]
    for loss, label in LABELS.items():
        mean = result.certified_mean(loss)
        if mean is not None:
            zero = all(r.w_norm == 0 for r in result.certified[loss])
            rows.append((label + (OPTIMUM_ZERO if zero else OPTIMUM), label, mean))
    rows.append((RANKSVM, RANKSVM, result.mean(RANKSVM)))
    return rows


def _optimum_loss(label: str) -> str | None:
    """The loss of an optimum row's label (None for the other rows)."""
    for loss, name in LABELS.items():
        if label in (name + OPTIMUM, name + OPTIMUM_ZERO):
            return loss
    return None


def _cell(result: Fig1Result, label: str, mean: dict[str, float], measure: str) -> str:
    """A measure of the table, marked when an optimum row's value is not certified."""
    loss = _optimum_loss(label)
    report = result.optimum_certified(loss).get(measure) if loss else None
    mark = "" if report is None or report["certified"] else UNCERTIFIED_MARK
    return f"{mean[measure]:.4f}{mark}"


def _count(n: int | None) -> str:
    return "?" if n is None else str(n)


def certified_notes(result: Fig1Result) -> list[str]:
    """One sentence per certified-optimum row: its measures are the optimum's, or which are
    not (the early-stopped stochastic rows are never labelled as optima)."""
    notes = []
    for loss, label in LABELS.items():
        report = result.optimum_certified(loss)
        if not report or result.certified_mean(loss) is None:
            continue
        missing = [f"{m.upper()} ({_count(c['uncertified_queries'])})"
                   for m, c in report.items() if not c["certified"]]
        notes.append(f"{label} optimum: every test measure certified (the exact optimum's)."
                     if not missing else
                     f"{label} optimum{UNCERTIFIED_MARK}: not certified (test queries summed "
                     f"over the folds): {', '.join(missing)}.")
    return notes


def _params(params: dict[str, float]) -> str:
    return ", ".join(f"{name}={value:g}" for name, value in params.items())


def fig1_markdown(result: Fig1Result) -> str:
    """The table of means, the selections per fold, the certified fits, the zero test and
    the notes."""
    cols = ([f"ndcg@{i}" for i in SHOWN] + [f"p@{i}" for i in SHOWN] + ["map"])
    rows = [[label] + [_cell(result, label, mean, c) for c in cols]
            for label, _, mean in summary_rows(result)]
    parts = [f"Test measures, mean over folds {', '.join(map(str, result.folds))} "
             f"({PRESET}); the stochastic rows are early-stopped at their selected T (not "
             "optima):", "",
             markdown_table(["method"] + [c.upper() for c in cols], rows), "",
             *certified_notes(result), ""]

    sel = [[c.method, str(c.fold), _params(c.best.params), f"{c.best.measures['vali'][SELECT]:.4f}",
            f"{c.best.measures['test'][SELECT]:.4f}", f"{c.best.stats['relative_gap']:.2e}",
            f"{c.best.stats['w_norm']:.3g}"]
           for choices in result.choices.values() for c in choices]
    parts += ["Selected per fold (validation MAP; gap = relative duality gap of the selected "
              "model, mean over seeds):", "",
              markdown_table(["method", "fold", "selected", "vali MAP", "test MAP", "gap",
                              "||w||"], sel), ""]

    if result.certified:
        cert = []
        for loss, runs in result.certified.items():
            for r in runs:
                cert.append([LABELS[loss], str(r.task.source.fold), f"{r.task.C:g}",
                             r.solver if r.ok else "failed",
                             f"{r.relative_gap:.1e}" if r.ok else "",
                             f"{r.w_norm:.3g}" if r.ok else "",
                             f"{r.measures['test']['map']:.4f}" if r.ok else "",
                             f"{r.time:.1f}", r.error or r.note])
        parts += [f"Certified optima at the selected C ({result.certified_solver}, relative "
                  "gap <= 1e-6):", "",
                  markdown_table(["loss", "fold", "C", "solver", "gap", "||w||", "test MAP",
                                  "seconds", "note"], cert), ""]

    zero = [[LABELS[loss], str(z["fold"]), "yes" if z["zero_optimal"] else "no",
             f"{z['min_norm']:.3g}", f"{z['relative_norm']:.2e}", f"{z['descent_slope']:.3g}"]
            for loss, checks in result.zero.items() for z in checks]
    parts += ["Is w = 0 optimal? (exact test on train.txt, the same answer for every C: "
              "0 in the subdifferential of sum_i L_i at 0; min-norm subgradient g*, its norm "
              "relative to the set's size, and the exact slope of sum_i L_i along -g*/||g*||, "
              "negative = w = 0 not optimal)", "",
              markdown_table(["loss", "fold", "w = 0 optimal", "||g*||", "relative",
                              "slope"], zero), ""]
    parts += _notes(result)
    return "\n".join(parts) + "\n"


def _notes(result: Fig1Result) -> list[str]:
    grid = result.grid
    zero_losses = sorted({LABELS[loss] for loss, checks in result.zero.items()
                          if any(z["zero_optimal"] for z in checks)})
    subset = ("" if result.max_train_queries is None else
              f" Trained on the first {result.max_train_queries} queries of each fold only.")
    notes = [
        f"- Protocol (Sect. 4): train.txt; C in {grid['C']}, eta0 in {grid['eta0']}, T in "
        f"{grid['T']}; seeds {result.seeds} (a point's measures are the mean over the seeds); "
        f"selected by {SELECT.upper()} on vali.txt ({TIE_BREAK}: smallest C, then eta0, then "
        f"T); test.txt measures of the selected model.{subset}",
        "- One run of max(T) steps per (C, eta0, seed); the weights after T steps are the run "
        "with max_iter = T (eta_t = eta0/sqrt(t) for sgp, constant eta0 for seg: nothing "
        "depends on T; records every gcd(T grid) steps).",
        f"- RankSVM: the hinge RankSVM of LETOR (sum of pair hinges max(0, 1 - w.(x_j - x_k)), "
        f"C in {grid['ranksvm_C']}), solved to a certified relative duality gap 1e-6 "
        "(default solver, apg on its box dual), selected the same way.",
        f"- Paper (Fig. 1, text): {PAPER_FINDINGS}.",
    ]
    if zero_losses:
        notes.append(f"- w = 0 is optimal for {', '.join(zero_losses)} on some folds (for "
                     "every C): there the certified optimum scores every document alike and "
                     "its measures are those of LETOR's tie rule (file order), not of a "
                     "learned ranking; only early stopping makes these losses rank.")
    notes.append(f"- {result.n_tasks} tasks on the {result.backend} backend"
                 + (f" ({result.workers} workers)" if result.workers else "")
                 + f": grid {result.elapsed['grid']:.1f} s, certified fits "
                 f"{result.elapsed['certified']:.1f} s (wall-clock).")
    return notes


def fig1_rows(result: Fig1Result) -> tuple[list[str], list[dict[str, Any]]]:
    """``agarwal-collins-fig1.csv``: one row per (method, fold) and a ``mean`` row per
    method, with the selected parameters and every test measure."""
    keys = measure_keys()
    rows: list[dict[str, Any]] = []
    for method, choices in result.choices.items():
        for c in choices:
            rows.append({"method": method, "fold": c.fold, **c.best.params,
                         "vali_map": c.best.measures["vali"][SELECT],
                         **c.best.stats,
                         **{f"test_{k}": c.best.measures["test"][k] for k in keys}})
        rows.append({"method": method, "fold": "mean",
                     **{f"test_{k}": v for k, v in result.mean(method).items() if k in keys}})
    for loss, runs in result.certified.items():
        label = LABELS[loss] + OPTIMUM
        for r in runs:
            rows.append({"method": label, "fold": r.task.source.fold, "C": r.task.C,
                         "solver": r.solver, "relative_gap": r.relative_gap,
                         "w_norm": r.w_norm, "error": r.error or "",
                         **({f"test_{k}": r.measures["test"][k] for k in keys} if r.ok
                            else {})})
        mean = result.certified_mean(loss)
        if mean is not None:
            rows.append({"method": label, "fold": "mean",
                         **{f"test_{k}": mean[k] for k in keys}})
    fields = (["method", "fold", "C", "eta0", "T", "solver", "vali_map", "relative_gap",
               "w_norm", "error"] + [f"test_{k}" for k in keys])
    return fields, rows


def point_rows(result: Fig1Result) -> tuple[list[str], list[dict[str, Any]]]:
    """``agarwal-collins-fig1-points.csv``: every grid point of every fold and method."""
    rows = []
    for method, choices in result.choices.items():
        for c in choices:
            for i, p in enumerate(c.points):
                row = {"method": method, "fold": c.fold, **p.params, "selected": i == c.selected,
                       "n_runs": p.n_runs, **p.stats, "error": p.error or ""}
                for split in ("vali", "test"):
                    row.update({f"{split}_{k}": v for k, v in p.measures.get(split, {}).items()
                                if k in ("map", "ndcg@10", "p@10")})
                rows.append(row)
    fields = ["method", "fold", "C", "eta0", "T", "selected", "n_runs", "relative_gap",
              "w_norm", "error", "vali_map", "vali_ndcg@10", "vali_p@10", "test_map",
              "test_ndcg@10", "test_p@10"]
    return fields, rows


def plot_fig1(result: Fig1Result, fig: Any) -> None:
    """Draw Fig. 1 on ``fig``: NDCG@k and P@k against k (top), MAP bars (bottom)."""
    import numpy as np

    rows = summary_rows(result)
    ks = np.arange(1, K + 1)
    colours = {label: f"C{i}" for i, label in enumerate(list(LABELS.values()) + [RANKSVM])}
    top = [fig.add_subplot(2, 2, 1), fig.add_subplot(2, 2, 2)]
    for ax, prefix, title in zip(top, ("ndcg", "p"), ("NDCG@k", "Prec@k"), strict=True):
        drawn: dict[tuple[float, ...], tuple[Any, str, str]] = {}
        for label, method, mean in rows:
            ys = tuple(mean[f"{prefix}@{k}"] for k in ks)
            if ys in drawn:  # the same curve (two optima at w = 0): one line in both colours
                line, first_label, first_method = drawn[ys]
                _merge_line(line, first_label, first_method, label, method, colours[method])
                continue
            line, = ax.plot(ks, ys, marker="o", ms=3, color=colours[method],
                            ls="-" if label == method else "--", label=label)
            drawn[ys] = (line, label, method)
        ax.set_xlabel("k")
        ax.set_title(title)
        ax.set_xticks(ks)
        ax.grid(alpha=0.3)
    top[0].legend(fontsize=7)
    ax = fig.add_subplot(2, 1, 2)
    values = [mean["map"] for _, _, mean in rows]
    bars = ax.bar(range(len(rows)), values, color=[colours[method] for _, method, _ in rows],
                  edgecolor="black")
    for bar, (label, method, _) in zip(bars, rows, strict=True):
        if label != method:
            bar.set_hatch("//")
            bar.set_alpha(0.6)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([label.replace(" ", "\n", 1) for label, _, _ in rows], fontsize=8)
    ax.bar_label(bars, fmt="%.4f", fontsize=7)
    ax.set_ylim(0.0, 1.12 * max(values))  # bars from 0: their heights compare
    ax.set_title("MAP")
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"Agarwal & Collins Fig. 1 reproduced: {len(result.folds)}-fold means "
                 "(dashed/hatched: certified optimum at the selected C)", fontsize=9)


def _merge_line(line: Any, first_label: str, first_method: str, label: str, method: str,
                colour: str) -> None:
    """Make ``line`` (drawn for ``first_label``) show ``label``'s identical curve too:
    dashes alternating between the two colours, one legend entry naming both."""
    suffix, other = first_label[len(first_method):], label[len(method):]
    line.set_label(f"{first_method} = {method}{suffix}" if suffix == other
                   else f"{first_label} = {label}")
    if line.get_linestyle() == "-":
        line.set_linestyle((0, (8, 2)))
    line.set_gapcolor(colour)


#: The files :func:`write_fig1` writes, by kind.
FIG1_FILES = {"markdown": "agarwal-collins-fig1.md", "csv": "agarwal-collins-fig1.csv",
              "points_csv": "agarwal-collins-fig1-points.csv",
              "json": "agarwal-collins-fig1.json", "png": "agarwal-collins-fig1.png"}


def write_fig1(result: Fig1Result, out_dir: str | Path) -> dict[str, Path]:
    """Write the markdown, the two CSV files, the JSON and the PNG into ``out_dir``.

    Returns
    -------
    dict
        ``{"markdown", "csv", "points_csv", "json", "png"}`` to paths
        (:data:`FIG1_FILES`).
    """
    from cvxrank.plots import new_figure
    from cvxrank.utils.jsonable import to_jsonable

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {kind: out / name for kind, name in FIG1_FILES.items()}
    files["markdown"].write_text(f"# Agarwal & Collins (2010), Fig. 1, on {result.data_dir}\n\n"
                                 + fig1_markdown(result), encoding="utf-8")
    write_csv(files["csv"], *fig1_rows(result))
    write_csv(files["points_csv"], *point_rows(result))
    files["json"].write_text(json.dumps(to_jsonable(result.to_dict()), indent=2) + "\n",
                             encoding="utf-8")
    fig = new_figure(figsize=(10, 7.5))
    plot_fig1(result, fig)
    finish_figure(fig, result.protocol, path=files["png"])
    return files
