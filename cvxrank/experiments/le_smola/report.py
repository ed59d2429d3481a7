"""Markdown, CSV and JSON of ``reproduce le-smola-ohsumed``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cvxrank.experiments.chapelle.reports import UNCERTIFIED_MARK
from cvxrank.experiments.le_smola.protocol import MEASURES, LeSmolaResult
from cvxrank.experiments.reports import markdown_table, table_files, write_table_files

#: Columns of the CSV (one row per method and fold, then the method's mean).
CSV_FIELDS = ("method", "fold", "selected_C", *MEASURES, "support_vectors", "cuts",
              "iterations", "master_share", "time", "objective", "gap", "converged",
              "zero_model")


def _f(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}f}"


def le_smola_markdown(result: LeSmolaResult) -> str:
    """The table of test means with selected C, then the Table 2 style account."""
    sel = result.select.upper()
    lines = [f"Le & Smola (DORM) on {Path(result.data_dir).name}: folds "
             f"{', '.join(map(str, result.fold_numbers))}, C selected per fold on vali.txt by "
             f"{sel} (ties: smallest C); test means ({result.preset})"
             + (f"; first {result.max_train_queries} training queries only"
                if result.max_train_queries else ""), ""]
    rows = [[m.spec.label, *(_f(m.mean()[k]) + ("" if m.certified()[k]["certified"] else
                                              UNCERTIFIED_MARK) for k in MEASURES),
             " ".join(f"{c:g}" for c in m.to_dict()["selected_C"])]
            for m in result.methods]
    lines.append(markdown_table(["method", "NDCG@1", "NDCG@10", "MAP", "selected C per fold"],
                                rows))
    uncertified = [f"{m.spec.label} {k.upper()} ({c['uncertified_queries']})"
                   for m in result.methods for k, c in m.certified().items()
                   if not c["certified"]]
    lines += ["", "Every measure above is certified: the exact optimum's on every test query "
              "of every fold (cvxrank.certificates.certify)." if not uncertified else
              f"{UNCERTIFIED_MARK}: not certified as the optimum's (test queries, summed over "
              f"the folds): {', '.join(uncertified)}: the model radius is not below those "
              "queries' score gaps (a zero model needs w = 0 proven the exact optimum, "
              "cvxrank.certificates.zero_certificate)."]
    lines += ["", "Table 2 style (selected fits, fold means): support vectors = cuts with a "
              "nonzero multiplier at the end (n-slack: working set after pruning); iterations "
              "= column-generation iterations; master = share of the solver's time in the "
              "master QP", ""]
    rows = []
    for m in result.methods:
        s = m.mean_stats()
        rows.append([m.spec.label, f"{s['support_vectors']:.1f}", f"{s['cuts']:.1f}",
                     f"{s['iterations']:.1f}", f"{100 * s['master_share']:.1f}%",
                     f"{s['time']:.2f}", f"{s['zero_model_folds']}/{len(m.folds)}"])
    lines.append(markdown_table(["method", "support vectors", "cuts added", "iterations",
                                 "master", "solver s", "folds with w = 0"], rows))
    zero = [m for m in result.methods if m.mean_stats()["zero_model_folds"] == len(m.folds)]
    proven = [m.spec.label for m in zero if all(c["certified"] for c in m.certified().values())]
    if proven:
        lines += ["", f"{', '.join(proven)}: the optimum is exactly w = 0 on every fold, for "
                  "every C (proven: 0 lies inside the subdifferential of the summed loss at 0 "
                  "with a margin, cvxrank.certificates.zero_certificate), so the test measures "
                  "are the zero model's (all scores tied, letor3's tie rule: file order)."]
    unproven = [m.spec.label for m in zero if m.spec.label not in proven]
    if unproven:
        lines += ["", f"{', '.join(unproven)}: the fits returned w = 0 on every fold, not "
                  "proven the exact optimum: their measures are the tie rule's."]
    lines.append(f"\n{len(result.methods)} methods, {result.elapsed:.1f} s of tasks "
                 f"(backend {result.backend})")
    return "\n".join(lines) + "\n"


def csv_rows(result: LeSmolaResult) -> list[dict[str, Any]]:
    rows = []
    for m in result.methods:
        for f, s in zip(m.folds, m.stats(), strict=True):
            rows.append({"method": m.spec.label, "fold": f.fold,
                         "selected_C": f.selected_params["C"],
                         **{k: f.test[k] for k in MEASURES}, **s})
        rows.append({"method": m.spec.label, "fold": "mean", **m.mean(),
                     **{k: v for k, v in m.mean_stats().items() if k != "zero_model_folds"},
                     "zero_model": m.mean_stats()["zero_model_folds"]})
    return rows


#: The stem of the files :func:`write_le_smola` writes.
STEM = "le-smola-ohsumed"

#: The files :func:`write_le_smola` writes, by kind.
LE_SMOLA_FILES = table_files(STEM)


def write_le_smola(result: LeSmolaResult, out_dir: str | Path) -> dict[str, Path]:
    """Write ``le-smola-ohsumed.{md,csv,json}`` into ``out_dir``."""
    return write_table_files(out_dir, STEM, le_smola_markdown(result), CSV_FIELDS,
                             csv_rows(result), result.to_dict())
