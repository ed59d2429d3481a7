"""Certified measures: what a fit pays to certify them, against the tolerance-only fit.

Issue "certified measures" (performance): a fit that reports the measures of its
evaluation sets goes on past its tolerance until every measure is the optimum's
(``until``, :mod:`cvxrank.certificates.certify`); the target is at most 1.3x the solver clock of the
tolerance-only run, for PRSVM+ (Newton) and the 1-slack cutting plane (whose tail the exact
finish of :mod:`cvxrank.solvers.one_slack` replaces for the hinge).

On the five OHSUMED folds (LETOR 3.0, ``QueryLevelNorm``; fitted on ``train.txt``, the
measures of ``vali.txt`` and ``test.txt``: NDCG@1..10, P@1..10, MAP, MRR, ``letor3``), each
setting is fitted three ways by :func:`cvxrank.fitting.fit_formulation`, on fresh
formulations:

* (a) the tolerance only: ``fit_formulation(f, solver, model_radius=None)``;
* (b) certifying the measures of vali and test: ``fit_formulation(f, solver,
  certify=EvaluationTarget.of([vali, test]))``;
* (c) the model-radius rule (``fit``'s default without evaluation sets): ``fit_formulation(f,
  solver)``, until the radius is at most 1e-4 ||w||.

Settings: PRSVM+ (squared hinge) at C = 1e-5, 5e-5, 1e-4, 5e-4 and the 1-slack (hinge) at
C = 1e-3 and 1e-2, each at its default tolerance (1e-8 and 1e-6). Times are medians of
``--repeat`` fits: the solver clock (``Run.time``: wall clock of the solver, set-up included,
trace-only evaluations and the ``until`` checks excluded) and the CPU time of the whole
fit call (``time.process_time``, one BLAS thread: the ``until`` checks included), which
load on the machine disturbs less; the ratios b/a and c/a of both are printed, and how many
(set, measure) pairs each run leaves uncertified (of 2 x 22).

Run: ``.venv/bin/python benchmarks/bench_certified_stop.py [--folds 1 2 3 4 5] [--repeat 3]``
(about 2-4 min; needs ../shared/data).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np
from _common import OHSUMED, add_common_args, markdown_table, print_machine, warm_up

from cvxrank.certificates.certify import EvaluationTarget
from cvxrank.data.letor import read_letor_fold
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.utils.threads import blas_threads

#: (solver, loss, C values).
SETTINGS = (("prsvm+", "squared_hinge", (1e-5, 5e-5, 1e-4, 5e-4)),
            ("1-slack", "hinge", (1e-3, 1e-2)))

#: The three stopping rules: label and the keyword arguments of fit_formulation.
RULES = ("a", "b", "c")

TARGET = 1.3


def fit_once(data, solver: str, loss: str, C: float, rule: str,
             target: EvaluationTarget) -> dict[str, Any]:
    """One fit on a fresh formulation: solver clock, CPU seconds, the run and its measures."""
    f = RankSVM(data, C=C, loss=loss)
    kwargs: dict[str, Any] = {"a": {"model_radius": None}, "b": {"certify": target},
                              "c": {}}[rule]
    started = time.process_time()
    run = fit_formulation(f, solver, **kwargs)
    cpu = time.process_time() - started
    report = target.report(f, run)
    uncertified = sum(not m["certified"] for per_set in report for m in per_set.values())
    return {"clock": run.time, "cpu": cpu, "iterations": run.n_iter,
            "status": run.status.value, "gap": run.relative_gap, "radius": run.w_radius,
            "uncertified": uncertified, "finishes": run.info.get("finishes")}


def measure(data, solver: str, loss: str, C: float, target: EvaluationTarget,
            repeat: int) -> dict[str, dict[str, Any]]:
    """The three rules, ``repeat`` rounds taken in turn (a, b, c, a, b, c, ...); per rule
    the medians of the times and the last run's other numbers."""
    runs: dict[str, list[dict[str, Any]]] = {r: [] for r in RULES}
    for _ in range(repeat):
        for rule in RULES:
            runs[rule].append(fit_once(data, solver, loss, C, rule, target))
    out = {}
    for rule, rows in runs.items():
        out[rule] = {**rows[-1], "clock": statistics.median(r["clock"] for r in rows),
                     "cpu": statistics.median(r["cpu"] for r in rows)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--repeat", type=int, default=3, help="fits per rule (median)")
    add_common_args(parser)
    args = parser.parse_args()
    print_machine()
    if not OHSUMED.is_dir():
        print(f"skipped: {OHSUMED} not present")
        return
    rows, ratios = [], {}
    with blas_threads(args.blas_threads):
        warm_up()
        for k in args.folds:
            fold = read_letor_fold(OHSUMED, k)
            target = EvaluationTarget.of([fold["vali"], fold["test"]])
            for solver, loss, Cs in SETTINGS:
                for C in Cs:
                    res = measure(fold["train"], solver, loss, C, target, args.repeat)
                    a, b, c = res["a"], res["b"], res["c"]
                    ratios.setdefault((solver, C), []).append(
                        (b["clock"] / a["clock"], c["clock"] / a["clock"],
                         b["cpu"] / a["cpu"], c["cpu"] / a["cpu"]))
                    rows.append([
                        k, solver, f"{C:g}",
                        " / ".join(f"{res[r]['iterations']}" for r in RULES),
                        " / ".join(f"{1e3 * res[r]['clock']:.0f}" for r in RULES),
                        f"**{b['clock'] / a['clock']:.2f}**", f"{c['clock'] / a['clock']:.2f}",
                        " / ".join(f"{1e3 * res[r]['cpu']:.0f}" for r in RULES),
                        f"{b['cpu'] / a['cpu']:.2f}", f"{c['cpu'] / a['cpu']:.2f}",
                        " / ".join(f"{res[r]['radius']:.1e}" for r in RULES),
                        " / ".join(str(res[r]["uncertified"]) for r in RULES),
                        " / ".join(f"{res[r]['finishes']}" for r in RULES)
                        if solver == "1-slack" else "-",
                        " / ".join(res[r]["status"] for r in RULES)])
                    print(f"Fold{k} {solver} C = {C:g}: b/a {b['clock'] / a['clock']:.2f}, "
                          f"c/a {c['clock'] / a['clock']:.2f} (CPU {b['cpu'] / a['cpu']:.2f}, "
                          f"{c['cpu'] / a['cpu']:.2f}); uncertified {a['uncertified']} / "
                          f"{b['uncertified']} / {c['uncertified']}", flush=True)
    print("\nPer fold and setting (a: tolerance only, b: certify vali + test, c: model "
          f"radius; medians of {args.repeat} fits; 'uncertified' counts (set, measure) pairs "
          "of 2 x 22)\n")
    print(markdown_table(
        ["fold", "solver", "C", "iterations a / b / c", "solver clock a / b / c [ms]",
         "b/a (clock)", "c/a (clock)", "CPU a / b / c [ms]", "b/a (CPU)", "c/a (CPU)",
         "w_radius a / b / c", "uncertified a / b / c", "finishes a / b / c",
         "status a / b / c"], rows))
    summary = []
    for (solver, C), values in ratios.items():
        arr = np.asarray(values)
        summary.append([solver, f"{C:g}", f"{np.median(arr[:, 0]):.2f} ({arr[:, 0].max():.2f})",
                        f"{np.median(arr[:, 1]):.2f} ({arr[:, 1].max():.2f})",
                        f"{np.median(arr[:, 2]):.2f} ({arr[:, 2].max():.2f})",
                        f"{np.median(arr[:, 3]):.2f} ({arr[:, 3].max():.2f})",
                        "MET" if arr[:, 0].max() <= TARGET else "NOT MET"])
    print(f"\nSummary over the folds: median (largest) ratio; target b/a <= {TARGET} on the "
          "solver clock\n")
    print(markdown_table(["solver", "C", "b/a (clock)", "c/a (clock)", "b/a (CPU)",
                          "c/a (CPU)", "target"], summary))
    print(f"\nload average at the end (1, 5, 15 min): "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
