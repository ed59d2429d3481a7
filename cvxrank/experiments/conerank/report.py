"""Table 1 (MQ2008), Fig. 3 and Fig. 4 of Tran & Pham: markdown, CSV files, JSON and figures.

* ``conerank-table1.md``: the fold means of test MAP, MeanNDCG and NDCG@1..10 for
  ConeRank-SG, ConeRank-EG and RankSVM beside the paper's published MQ2008 numbers; the
  selections per fold; Fig. 3's and Fig. 4's tables; the notes (protocol, conventions).
* ``conerank-table1.csv``: one row per method and fold (and the mean), every test measure.
* ``conerank-table1-points.csv``: every candidate (pass or C) of every fold and method.
* ``conerank-runs.csv``: every ConeRank run (fold, variant, K, seed, seconds).
* ``conerank-fig3.csv`` / ``.png``: test MAP and MeanNDCG against K.
* ``conerank-fig4.csv`` / ``.png``: eigenvalues of the pair differences' second moment and
  their cumulative energy.
* ``conerank-table1.png``: NDCG@k against k and the MAP / MeanNDCG bars with the paper's.
* ``conerank-passes.png``: validation and test MAP against the number of passes, per fold.
* ``conerank-table1.json``: :meth:`Table1Result.to_dict
  <cvxrank.experiments.conerank.protocol.Table1Result.to_dict>`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from cvxrank.experiments.conerank import (
    ENERGY_LEVELS,
    LABELS,
    PAPER_ROW,
    PAPER_SOURCE,
    PAPER_TABLE1_MQ2008,
    RANKSVM,
)
from cvxrank.experiments.conerank.protocol import K_CUT, PRESET, SELECT, Table1Result
from cvxrank.experiments.reports import finish_figure, markdown_table, write_csv
from cvxrank.experiments.selection import TIE_BREAK

#: The stem of every file.
STEM = "conerank"

#: The measures of the table and the CSV files, in order.
MEASURES = ["map", "mean_ndcg"] + [f"ndcg@{i}" for i in range(1, K_CUT + 1)]

#: MeanNDCG as computed here (and by LETOR 4.0's Eval-Score-4.0.pl).
MEAN_NDCG_NOTE = ("MeanNDCG is LETOR 4.0's (Eval-Score-4.0.pl, cvxrank.metrics.mean_ndcg, "
                  "preset letor4): per query the mean of NDCG@i over *all* positions i = 1..n "
                  "of the query's n documents (not only 1..10), then the mean over the queries; "
                  "a query without relevant document scores 0 and counts in the mean. NDCG@k of "
                  "a query with fewer than k documents is 0 (Eval-Score-4.0.pl), which is why "
                  "NDCG@9 and @10 drop on MQ2008 (403 of its 784 queries have fewer than 10 "
                  "documents).")


def _label(key: str) -> str:
    return {"map": "MAP", "mean_ndcg": "MeanNDCG"}.get(key, key.replace("ndcg", "NDCG"))


def _selected(params: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in params.items())


def table_markdown(result: Table1Result) -> str:
    """The main table: fold means beside the paper's numbers."""
    rows = []
    for method in result.choices:
        mean = result.mean(method)
        paper = PAPER_TABLE1_MQ2008[PAPER_ROW[method]]
        rows.append([method] + [f"{mean[m]:.4f}" for m in MEASURES]
                    + [f"{paper['map']:.3f}", f"{paper['ndcg']:.3f}"])
    headers = (["method"] + [_label(m) for m in MEASURES]
               + ["paper MAP", "paper NDCG"])
    return markdown_table(headers, rows)


def table1_markdown(result: Table1Result) -> str:
    """Everything the markdown file holds (without its title)."""
    folds = ", ".join(map(str, result.folds))
    s = result.settings
    parts = [f"Test measures on MQ2008, mean over folds {folds} ({PRESET}); ConeRank at K = "
             f"{s['K']}, seeds {result.seeds} (a pass's measures are the mean over the seeds); "
             f"'paper' = the published Table 1, MQ2008 columns ({_paper_rows_note()}):", "",
             table_markdown(result), ""]

    votes = [[m, f"{result.mean(m, 'test_votes')['map']:.4f}",
              f"{result.mean(m, 'test_votes')['mean_ndcg']:.4f}",
              f"{result.mean(m)['map']:.4f}", f"{result.mean(m)['mean_ndcg']:.4f}"]
             for m in LABELS.values()]
    parts += ["ConeRank scored by Alg. 2 literally (votes of the unconstrained folding-in of every "
              "test pair) against the linear scorer v = (U^+)^T 1 used above (the same ranking "
              "up to ties):", "",
              markdown_table(["method", "votes MAP", "votes MeanNDCG", "linear MAP",
                              "linear MeanNDCG"], votes), ""]

    sel = []
    for method, choices in result.choices.items():
        for c in choices:
            b = c.best
            sel.append([method, str(c.fold), _selected(b.params),
                        f"{b.measures['vali'][SELECT]:.4f}",
                        f"{b.measures['test']['map']:.4f}",
                        f"{b.measures['test']['mean_ndcg']:.4f}",
                        f"{b.stats['objective']:.4g}", f"{c.time:.1f}"])
    parts += ["Selected per fold (validation MAP; ConeRank: the number of passes, RankSVM: C; "
              "objective: (18) for ConeRank, the primal for RankSVM; seconds: solver time of "
              "every run behind the fold's candidates):", "",
              markdown_table(["method", "fold", "selected", "vali MAP", "test MAP",
                              "test MeanNDCG", "objective", "seconds"], sel), ""]

    paper = [[name, f"{v['map']:.3f}", f"{v['ndcg']:.3f}"]
             for name, v in PAPER_TABLE1_MQ2008.items()]
    parts += [f"Published (quoted, not rerun): {PAPER_SOURCE}.", "",
              markdown_table(["algorithm", "MQ2008 MAP", "MQ2008 NDCG"], paper), ""]

    if result.sweep:
        parts += ["Fig. 3 analogue on MQ2008 (the paper's Fig. 3 is on MQ2007, which is not "
                  "available here): test measures against K, passes selected per fold by "
                  f"validation MAP, seeds {s['sweep_seeds']}:", "", sweep_markdown(result), ""]
    if result.spectrum:
        parts += ["Fig. 4 analogue on MQ2008 (the paper's Fig. 4 is on MQ2007): eigenvalues of "
                  "Z^T Z / p, the second-moment (non-centred) matrix of the p normalized ordered "
                  "pair differences of train.txt; the fewest eigenvalues that hold each share "
                  "of the energy (trace):", "", spectrum_markdown(result), ""]
    parts += _notes(result)
    return "\n".join(parts) + "\n"


def _paper_rows_note() -> str:
    return ", ".join(f"{m} against {row}" for m, row in PAPER_ROW.items() if m != row)


def sweep_markdown(result: Table1Result) -> str:
    rows = []
    for variant, by_K in result.sweep.items():
        for K, choices in by_K.items():
            mean = result.sweep_mean(variant, K)
            rows.append([LABELS[variant], str(K), f"{mean['map']:.4f}", f"{mean['mean_ndcg']:.4f}",
                         f"{mean['ndcg@10']:.4f}",
                         " ".join(str(int(c.best.params["passes"])) for c in choices),
                         f"{sum(c.time for c in choices):.0f}"])
    return markdown_table(["variant", "K", "test MAP", "test MeanNDCG", "test NDCG@10",
                           "passes per fold", "seconds"], rows)


def spectrum_markdown(result: Table1Result) -> str:
    rows = []
    for sp in result.spectrum:
        top = sp.energy
        rows.append([str(sp.task.source.fold), str(sp.n_pairs)]
                    + [str(sp.components_for(level)) for level in ENERGY_LEVELS]
                    + [f"{top[0]:.3f}", f"{top[min(9, top.size - 1)]:.3f}",
                       " ".join(map(str, sp.constant_features)) or "-"])
    return markdown_table(["fold", "pairs p"] + [f"{level:.0%}" for level in ENERGY_LEVELS]
                          + ["energy of 1", "energy of 10", "constant features"], rows)


def _notes(result: Table1Result) -> list[str]:
    s = result.settings
    subset = ("" if result.max_train_queries is None else
              f" Trained on the first {result.max_train_queries} queries of each fold only.")
    constant = {k: v for k, v in s["constant_features"].items() if v}
    notes = [
        "- Data: every feature z-scored with its mean and standard deviation on the fold's "
        "train.txt, the same map applied to vali.txt and test.txt (Sect. 6.1); features "
        "constant on train.txt are set to 0 in all splits"
        + (f" ({'; '.join(f'fold {k}: {v}' for k, v in constant.items())})" if constant else "")
        + f".{subset}",
        f"- ConeRank (18): K = {s['K']}, alpha = {s['alpha']:g}, rho = sqrt(N) = "
        f"{s['rho']:.4g}, c = 2 rho = {s['c']:.4g}, mu = {s['mu']['sg']:g} (SG) and "
        f"{s['mu']['eg']:g} (EG) (Sect. 6.1); Sect. 4.1's stochastic Alg. 1 "
        "(cvxrank.solvers.conerank.solve_stochastic: per query, the paper's folding-in step "
        "until no coefficient moves by more than 1e-6 or 200 steps, then one basis step per "
        f"basis vector), {s['passes']} passes per run, the basis evaluated after every pass; "
        f"the number of passes selected in 1..{s['passes']} by {SELECT.upper()} on vali.txt "
        f"({TIE_BREAK}: the fewest passes); test.txt measures of the selected pass. The paper "
        "does not state its number of passes.",
        "- Prediction: the linear scorer v = (U^+)^T 1 "
        "(cvxrank.formulations.conerank.linear_direction), the same ranking as Alg. 2's "
        "votes up to ties; Alg. 2 itself (vote_scores) is reported beside it on test.txt.",
        f"- RankSVM: the {s['ranksvm_loss']} RankSVM (LETOR 4.0's RankSVM-struct is the hinge "
        f"RankSVM: (1/2)||w||^2 + C sum over pairs of max(0, 1 - w.(x_i - x_j))), C in "
        f"{s['ranksvm_C']}, solved to a certified relative duality gap {s['ranksvm_tol']:g} by "
        "the default solver, on the same z-scored folds, selected the same way.",
        f"- {MEAN_NDCG_NOTE}",
        "- The paper's Table 1 column 'NDCG' states no cut-off; it is compared here with "
        "MeanNDCG, the summary measure of LETOR 4.0's evaluation script and baseline tables.",
        f"- {result.n_tasks} tasks on the {result.backend} backend"
        + (f" ({result.workers} workers)" if result.workers else "")
        + f" in {result.elapsed:.1f} s wall-clock (worker start-up included).",
    ]
    return notes


# -- CSV ---------------------------------------------------------------------------------
def table1_rows(result: Table1Result) -> tuple[list[str], list[dict[str, Any]]]:
    """``conerank-table1.csv``: one row per (method, fold) and a ``mean`` row per method."""
    rows: list[dict[str, Any]] = []
    for method, choices in result.choices.items():
        for c in choices:
            b = c.best
            row = {"method": method, "fold": c.fold, **c.setting, **b.params,
                   "vali_map": b.measures["vali"]["map"],
                   "vali_mean_ndcg": b.measures["vali"]["mean_ndcg"],
                   **b.stats, "seconds": c.time,
                   **{f"test_{m}": b.measures["test"][m] for m in MEASURES}}
            if "test_votes" in b.measures:
                row.update({"votes_map": b.measures["test_votes"]["map"],
                            "votes_mean_ndcg": b.measures["test_votes"]["mean_ndcg"]})
            rows.append(row)
        mean = result.mean(method)
        paper = PAPER_TABLE1_MQ2008[PAPER_ROW[method]]
        row = {"method": method, "fold": "mean", **{f"test_{m}": mean[m] for m in MEASURES},
               "paper_map": paper["map"], "paper_ndcg": paper["ndcg"]}
        if method in LABELS.values():
            votes = result.mean(method, "test_votes")
            row.update({"votes_map": votes["map"], "votes_mean_ndcg": votes["mean_ndcg"]})
        rows.append(row)
    fields = (["method", "fold", "K", "passes", "C", "vali_map", "vali_mean_ndcg", "objective",
               "seconds"] + [f"test_{m}" for m in MEASURES]
              + ["votes_map", "votes_mean_ndcg", "paper_map", "paper_ndcg"])
    return fields, rows


def point_rows(result: Table1Result) -> tuple[list[str], list[dict[str, Any]]]:
    """``conerank-table1-points.csv``: every candidate of every fold (table and sweep)."""
    rows = []

    def add(method: str, choices: list[Any], part: str) -> None:
        for c in choices:
            for i, p in enumerate(c.points):
                row = {"part": part, "method": method, "fold": c.fold, **c.setting,
                       **p.params, "selected": i == c.selected, "n_runs": p.n_runs,
                       **p.stats, "error": p.error or ""}
                for split in ("vali", "test", "test_votes"):
                    row.update({f"{split}_{k}": v for k, v in p.measures.get(split, {}).items()
                                if k in ("map", "mean_ndcg", "ndcg@10")})
                rows.append(row)

    for method, choices in result.choices.items():
        add(method, choices, "table1")
    for variant, by_K in result.sweep.items():
        for choices in by_K.values():
            add(LABELS[variant], choices, "fig3")
    fields = ["part", "method", "fold", "K", "passes", "C", "selected", "n_runs", "objective",
              "error"] + [f"{split}_{k}" for split in ("vali", "test", "test_votes")
                          for k in ("map", "mean_ndcg", "ndcg@10")]
    return fields, rows


def sweep_rows(result: Table1Result) -> tuple[list[str], list[dict[str, Any]]]:
    """``conerank-fig3.csv``: per variant, K and fold (and the mean) the selected passes and
    the test measures."""
    rows: list[dict[str, Any]] = []
    for variant, by_K in result.sweep.items():
        for K, choices in by_K.items():
            for c in choices:
                rows.append({"variant": variant, "K": K, "fold": c.fold,
                             "passes": c.best.params["passes"],
                             "vali_map": c.best.measures["vali"]["map"], "seconds": c.time,
                             **{f"test_{m}": c.best.measures["test"][m] for m in MEASURES}})
            mean = result.sweep_mean(variant, K)
            rows.append({"variant": variant, "K": K, "fold": "mean",
                         **{f"test_{m}": mean[m] for m in MEASURES}})
    fields = (["variant", "K", "fold", "passes", "vali_map", "seconds"]
              + [f"test_{m}" for m in MEASURES])
    return fields, rows


def spectrum_rows(result: Table1Result) -> tuple[list[str], list[dict[str, Any]]]:
    """``conerank-fig4.csv``: per index i (1-based) the eigenvalue and cumulative energy of
    every fold and their means."""
    rows = []
    n = result.spectrum[0].eigenvalues.size
    for i in range(n):
        row: dict[str, Any] = {"i": i + 1}
        for sp in result.spectrum:
            row[f"eigenvalue_fold{sp.task.source.fold}"] = float(sp.eigenvalues[i])
            row[f"energy_fold{sp.task.source.fold}"] = float(sp.energy[i])
        row["eigenvalue_mean"] = float(np.mean([sp.eigenvalues[i] for sp in result.spectrum]))
        row["energy_mean"] = float(np.mean([sp.energy[i] for sp in result.spectrum]))
        rows.append(row)
    fields = (["i"] + [f"{kind}_fold{sp.task.source.fold}" for kind in ("eigenvalue", "energy")
                       for sp in result.spectrum] + ["eigenvalue_mean", "energy_mean"])
    return fields, rows


def run_rows(result: Table1Result) -> tuple[list[str], list[dict[str, Any]]]:
    """``conerank-runs.csv``: every ConeRank run."""
    fields = ["fold", "variant", "K", "seed", "passes", "mu", "time", "wall_time", "n_pairs",
              "n_queries", "error"]
    return fields, [{**r, "error": r["error"] or ""} for r in result.runs]


# -- figures -----------------------------------------------------------------------------
COLOURS = {"ConeRank-SG": "C0", "ConeRank-EG": "C1", RANKSVM: "C2"}

#: Eigenvalues below this multiple of the largest are zero to rounding (Fig. 4's log panel).
ZERO_EIGENVALUE = 1e-10


def plot_table1(result: Table1Result, fig: Any) -> None:
    """NDCG@k against k (left) and MAP / MeanNDCG bars with the paper's numbers (right)."""
    ax = fig.add_subplot(1, 2, 1)
    ks = np.arange(1, K_CUT + 1)
    for method in result.choices:
        mean = result.mean(method)
        ax.plot(ks, [mean[f"ndcg@{k}"] for k in ks], marker="o", ms=3,
                color=COLOURS.get(method), label=method)
    ax.set_xlabel("k")
    ax.set_ylabel("test NDCG@k (fold mean)")
    ax.set_xticks(ks)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax = fig.add_subplot(1, 2, 2)
    methods = list(result.choices)
    width = 0.38
    for j, key in enumerate(("map", "mean_ndcg")):
        x = np.arange(len(methods)) + (j - 0.5) * width
        ax.bar(x, [result.mean(m)[key] for m in methods], width,
               color=[COLOURS.get(m) for m in methods], alpha=1.0 if j == 0 else 0.55,
               edgecolor="black", label="MAP" if j == 0 else "MeanNDCG")
        paper_key = "map" if key == "map" else "ndcg"
        ax.scatter(x, [PAPER_TABLE1_MQ2008[PAPER_ROW[m]][paper_key] for m in methods],
                   marker="D", color="black", zorder=3,
                   label="paper (MAP, NDCG)" if j == 0 else None)
    ax.set_xticks(np.arange(len(methods)))
    ax.set_xticklabels(methods, fontsize=8)
    values = [result.mean(m)[k] for m in methods for k in ("map", "mean_ndcg")]
    paper_values = [v[k] for v in PAPER_TABLE1_MQ2008.values() for k in ("map", "ndcg")]
    low, high = min(values + paper_values), max(values + paper_values)
    ax.set_ylim(max(0.0, low - 0.08), high + 0.25 * (high - low + 0.08))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", ncol=3)
    ax.set_title("left bars MAP, right bars MeanNDCG", fontsize=8)
    fig.suptitle(f"Tran & Pham Table 1 (MQ2008) reproduced: {len(result.folds)}-fold means, "
                 f"K = {result.settings['K']}", fontsize=9)


def plot_passes(result: Table1Result, fig: Any) -> None:
    """Per ConeRank variant (columns): validation (solid) and test (dashed) MAP against the
    passes, one line per fold, the selected pass marked (top); the objective (18) (bottom);
    both means over the seeds."""
    from matplotlib.ticker import MaxNLocator

    labels = list(LABELS.values())
    for i, method in enumerate(labels):
        top = fig.add_subplot(2, len(labels), i + 1)
        bottom = fig.add_subplot(2, len(labels), len(labels) + i + 1, sharex=top)
        for j, c in enumerate(result.choices[method]):
            t = [p.params["passes"] for p in c.points]
            top.plot(t, [p.measures["vali"]["map"] for p in c.points], color=f"C{j}",
                     label=f"fold {c.fold}")
            top.plot(t, [p.measures["test"]["map"] for p in c.points], color=f"C{j}", ls="--",
                     alpha=0.7)
            b = c.best
            top.plot([b.params["passes"]], [b.measures["vali"]["map"]], "o", color=f"C{j}")
            bottom.plot(t, [p.stats["objective"] for p in c.points], color=f"C{j}")
        top.set_ylabel("MAP (solid: vali, dashed: test)")
        top.set_title(method, fontsize=9)
        bottom.set_xlabel("passes of Alg. 1")
        bottom.set_ylabel("objective (18) on train")
        bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
        if i == 0:
            top.legend(fontsize=7)
    fig.suptitle("ConeRank, K = {}: MAP against passes (dots: selected by validation "
                 "MAP)".format(result.settings["K"]), fontsize=9)


def plot_sweep(result: Table1Result, fig: Any) -> None:
    """Fig. 3 analogue: test MAP and MeanNDCG against K (fold means, per-fold lines faint),
    RankSVM's as horizontal lines."""
    keys = (("map", "MAP"), ("mean_ndcg", "MeanNDCG"))
    axes = [fig.add_subplot(1, 2, i + 1) for i in range(2)]
    for ax, (key, name) in zip(axes, keys, strict=True):
        for variant, by_K in result.sweep.items():
            Ks = sorted(by_K)
            colour = COLOURS[LABELS[variant]]
            for j in range(len(result.folds)):
                ax.plot(Ks, [by_K[K][j].best.measures["test"][key] for K in Ks], color=colour,
                        alpha=0.2, lw=0.8)
            ax.plot(Ks, [result.sweep_mean(variant, K)[key] for K in Ks], marker="o",
                    color=colour, label=f"{LABELS[variant]} (fold mean)")
        ax.axhline(result.mean(RANKSVM)[key], color=COLOURS[RANKSVM], ls="--",
                   label="RankSVM (fold mean)")
        ax.set_xticks(sorted({K for by_K in result.sweep.values() for K in by_K}))
        ax.set_xlabel("K (number of basis vectors)")
        ax.set_ylabel(f"test {name}")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("Fig. 3 analogue on LETOR 4.0 MQ2008 (the paper's Fig. 3 is on MQ2007, not "
                 "available here): performance against K", fontsize=9)


def plot_spectrum(result: Table1Result, fig: Any) -> None:
    """Fig. 4 analogue: eigenvalues (log scale) and cumulative energy, one line per fold."""
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    zero = []
    for j, sp in enumerate(result.spectrum):
        i = np.arange(1, sp.eigenvalues.size + 1)
        # eigenvalues at rounding level (features constant on train.txt give exact zeros)
        # would squash the log scale: they are left out of the left panel and counted
        shown = sp.eigenvalues > ZERO_EIGENVALUE * sp.eigenvalues[0]
        zero.append(int(np.sum(~shown)))
        left.semilogy(i[shown], sp.eigenvalues[shown], marker="o", ms=2, color=f"C{j}",
                      label=f"fold {sp.task.source.fold}")
        right.plot(i, sp.energy, marker="o", ms=2, color=f"C{j}")
    if any(zero):
        left.set_title(f"{min(zero)}-{max(zero)} eigenvalues below {ZERO_EIGENVALUE:g} x the "
                       "largest not shown (features constant on train.txt)", fontsize=8)
    right.axhline(0.9, color="grey", ls=":", lw=1)
    right.text(1, 0.905, "90%", fontsize=7, color="grey")
    n90 = [sp.components_for(0.9) for sp in result.spectrum]
    for ax in (left, right):
        ax.axvline(result.settings["K"], color="grey", ls="--", lw=1)
        ax.set_xlabel("index i (eigenvalues sorted decreasingly)")
        ax.grid(alpha=0.3)
    left.set_ylabel("eigenvalue of Z^T Z / p")
    right.set_ylabel("cumulative energy")
    left.legend(fontsize=7)
    right.set_title(f"90% of the energy in {min(n90)}-{max(n90)} eigenvalues (dashed: K = "
                    f"{result.settings['K']})", fontsize=8)
    fig.suptitle("Fig. 4 analogue on LETOR 4.0 MQ2008 (the paper's Fig. 4 is on MQ2007): "
                 "spectrum of the normalized ordered pair differences (non-centred)", fontsize=9)


def _training_note(result: Table1Result) -> str:
    """What a figure says about the training beyond its options: the quick preset's few
    passes leave ConeRank's models under-trained (the selection picks the last pass)."""
    if result.protocol != "quick":
        return ""
    passes = result.settings.get("passes")
    return (f"ConeRank trained for {passes} passes only, its models under-trained (its MAP is "
            "not the paper's)")


#: The files :func:`write_table1` writes, by kind (``fig3_*`` with a sweep over K only,
#: ``fig4_*`` with the spectrum only).
TABLE1_FILES = {"markdown": f"{STEM}-table1.md", "csv": f"{STEM}-table1.csv",
                "points_csv": f"{STEM}-table1-points.csv", "runs_csv": f"{STEM}-runs.csv",
                "json": f"{STEM}-table1.json", "png": f"{STEM}-table1.png",
                "passes_png": f"{STEM}-passes.png", "fig3_csv": f"{STEM}-fig3.csv",
                "fig3_png": f"{STEM}-fig3.png", "fig4_csv": f"{STEM}-fig4.csv",
                "fig4_png": f"{STEM}-fig4.png"}


def write_table1(result: Table1Result, out_dir: str | Path) -> dict[str, Path]:
    """Write every file into ``out_dir``; return ``{kind: path}`` (:data:`TABLE1_FILES`)."""
    from cvxrank.plots import new_figure
    from cvxrank.utils.jsonable import to_jsonable

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    optional = ("fig3", "fig4")
    files = {kind: out / name for kind, name in TABLE1_FILES.items()
             if not kind.startswith(optional)}
    files["markdown"].write_text(
        f"# Tran & Pham (ConeRank), Table 1 (MQ2008), Figs. 3 and 4, on {result.data_dir}\n\n"
        + table1_markdown(result), encoding="utf-8")
    write_csv(files["csv"], *table1_rows(result))
    write_csv(files["points_csv"], *point_rows(result))
    write_csv(files["runs_csv"], *run_rows(result))
    figures = [(files["png"], plot_table1, (10, 4.2)),
               (files["passes_png"], plot_passes, (10, 7))]
    if result.sweep:
        files["fig3_csv"], files["fig3_png"] = (out / TABLE1_FILES["fig3_csv"],
                                                out / TABLE1_FILES["fig3_png"])
        write_csv(files["fig3_csv"], *sweep_rows(result))
        figures.append((files["fig3_png"], plot_sweep, (10, 4.2)))
    if result.spectrum:
        files["fig4_csv"], files["fig4_png"] = (out / TABLE1_FILES["fig4_csv"],
                                                out / TABLE1_FILES["fig4_png"])
        write_csv(files["fig4_csv"], *spectrum_rows(result))
        figures.append((files["fig4_png"], plot_spectrum, (10, 4.2)))
    for path, draw, size in figures:
        fig = new_figure(figsize=size)
        draw(result, fig)
        finish_figure(fig, result.protocol, _training_note(result), path)
    files["json"].write_text(json.dumps(to_jsonable(result.to_dict()), indent=2) + "\n",
                             encoding="utf-8")
    return files
