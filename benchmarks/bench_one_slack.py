"""Hinge RankSVM, five LETOR folds: the 1-slack cutting plane against svm_rank, side by side.

The target: ``cvxrank``'s five folds (LETOR 3.0 OHSUMED ``QueryLevelNorm/FoldK/train.txt``,
or LETOR 4.0 MQ2008's with ``--dataset mq2008``) in one process, to svm_rank's own
precision, in at most 0.5x svm_rank's CPU time at c >= 1 and at most 1x at c = 0.01,
svm_rank timed in the same run with its own protocol: one fresh ``svm_rank_learn -c c
FoldK/train.txt MODEL`` process per fold (parsing included), CPU time (user + system,
``os.wait4``) summed over the five folds, median of ``--repeat`` rounds. svm_rank refuses a file
whose qids decrease (OHSUMED's Fold4 and Fold5, MQ2008's Fold4 and Fold5 hold a query in two
runs), so it reads a copy with the lines stably sorted by qid (written before timing; the
same queries, documents and pairs: the same objective). svm_rank's licence
forbids redistribution, so it is not bundled: give its binary with the environment variable
``SVM_RANK_LEARN`` (path to ``svm_rank_learn``), or its source with ``SVM_RANK_SRC``
(``svm_rank.tar.gz`` or its folder), or fetch the public copy :mod:`build_peers` names
(RSL-NEU/person-reid-benchmark); it is built into the git-ignored ``benchmarks/build/``.
Without any, the script says so in one line and times cvxrank alone (no ratios). svm_rank's
model (the last line of its model file, ``1 1:w_1 2:w_2 ... #``) is read back and its
objective evaluated with cvxrank's formulation: the "svm_rank true gap" columns.

**svm_rank's c.** ``svm_rank_learn -c c`` (loss 1, "total number of swapped pairs", the
default) is ``svm_learn -z p -c c/n`` with n the number of training queries (svm_rank's
documentation: "C_light = C_rank/n, where n is the number of training queries"), i.e. eq.
(1) of Chapelle & Keerthi with the hinge, ``(1/2)||w||^2 + C sum_pairs max(0, 1 - w.(x_i -
x_j))``, at **C = c / n** (n = 63 or 64 on OHSUMED, 470-471 on MQ2008). **svm_rank's
stopping rule**: it multiplies its ``-e`` (default 0.001) by (number of pairs) / n
("Adjusted stopping criterion relative to maximum loss", ``svm_struct_api.c``) and stops
when the most violated 1-slack constraint is violated by at most that, so its objective is
within ``c * 0.001 * pairs / n = 1e-3 P(0)`` of the optimum (``P(0) = C * pairs``, the
objective at w = 0). Here ``P(0) / p*`` is 1.2-1.3, so a certified relative gap of 1e-3 of
``P(w)`` (``tol = 1e-3``) is a little *stricter* than svm_rank's rule; the 1-slack run that
stops exactly on svm_rank's rule (gap <= 1e-3 P(0)) is timed too, and so is ``tol = 1e-6``.

(a) **Whole processes** (CPU time, user + system, and wall clock of the child process, Python
start-up, imports and parsing included; median of ``--repeat`` runs; the ratios are CPU over
CPU):

* one Python process that reads the five folds and fits each with ``fit_formulation(f,
  "auto", tol=...)``, as ``cvxrank fit`` does (the target's setting; the registry's families,
  which the first fit's ``default_solver`` imports, are loaded up front so that their import
  time is shown apart from the fits), as a *plain process* (the target's: no thread
  variable, no ``CVXRANK_*`` variable, so cvxrank's thread policy of
  :mod:`cvxrank.utils.threads` applies; unless ``--no-default-threads``) and with one BLAS
  thread (``OPENBLAS_NUM_THREADS=1`` etc.);
* five ``cvxrank fit --method ranksvm --loss hinge --C <c/n> --train FoldK/train.txt --tol
  <tol> --json`` processes one after the other (svm_rank's protocol), one BLAS thread.

(b) **Solver clocks** (``Run.time``, set-up included) in this process, fresh formulations,
the compiled sorted-loss passes loaded first (``_common.warm_up``): ``solve_one_slack`` at
``tol`` 1e-3, at svm_rank's rule and at 1e-6 (iterations, cuts, time in master and oracle);
``apg`` (FISTA on the dual; ``--apg-budget`` seconds per fold, its time to 1e-3 read off its
trace, which records every iteration); the CVXPY reference (``solve_reference(f,
"CLARABEL", cache=False)``: primal and dual, for folds of at most ``--cvxpy-max-pairs``
pairs); scikit-learn's ``LinearSVC(loss="hinge")`` (LIBLINEAR dual coordinate descent) on
the explicit pair differences (``cvxrank.solvers.baselines.pair_differences``; building them is on
its clock). Every objective ``P(w)`` is the formulation's ``primal_value``, evaluated off the
clocks; "true gap" is ``(P(w) - p*) / p*`` with Clarabel's p* (or, for a fold CVXPY skipped,
the 1-slack run at 1e-6, within 1e-6 of p*).

Ratios are cvxrank's seconds over svm_rank's (five-fold totals): **below 1 is faster than
svm_rank**. The solver-clock ratios compare a solver clock with svm_rank's whole processes and
only bound what is possible.

With svm_rank: ``SVM_RANK_LEARN=/path/to/svm_rank_learn .venv/bin/python
benchmarks/bench_one_slack.py``.

Run: ``.venv/bin/python benchmarks/bench_one_slack.py [--c 0.01 1 100] [--repeat 3]
[--apg-budget 60] [--cvxpy-max-pairs 500000]`` (about 15-25 min, dominated by apg at c >= 1,
CVXPY and LinearSVC at c = 100).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    OHSUMED,
    add_common_args,
    check_no_recompile,
    markdown_table,
    print_machine,
    verdict,
    warm_up,
)
from _process import blas_env, run_process
from build_peers import svm_rank_learn

from cvxrank.certificates.reference import solve_reference
from cvxrank.data import read_svmlight
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.solvers.baselines import pair_differences
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient
from cvxrank.solvers.one_slack import solve_one_slack
from cvxrank.tolerances import within
from cvxrank.utils.threads import blas_threads


#: The target: cvxrank's five folds in one process at most this multiple of svm_rank's time.
def target_ratio(c: float) -> float:
    """0.5 at c >= 1, 1 below."""
    return 0.5 if c >= 1 else 1.0


#: The LETOR folders ``--dataset`` chooses from; :data:`ROOT` is the one chosen.
DATASETS = {"ohsumed": OHSUMED, "mq2008": OHSUMED.parents[1] / "letor4_mq2008"}
ROOT = OHSUMED

#: svm_rank's -e default, scaled by pairs / queries (its stopping rule: gap <= EPS * P(0)).
SVM_RANK_EPS = 1e-3

CVXRANK = Path(sys.executable).with_name("cvxrank")

#: The one-process child: reads the five folds and fits each (what a user script does).
CHILD = r"""
import json, sys, time
started = time.perf_counter()
from cvxrank.data import read_svmlight
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.ranksvm import RankSVM
imports = time.perf_counter() - started
from cvxrank.registry import entries
entries()  # what the first fit's default_solver does: import every registered family
registry = time.perf_counter() - started - imports
root, c, tol = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
radius = None if sys.argv[4] == "tolerance" else 1e-4  # 1e-4: the default MODEL_RADIUS
folds = []
for k in sys.argv[5:]:
    t0 = time.perf_counter()
    data = read_svmlight(f"{root}/Fold{k}/train.txt")
    t1 = time.perf_counter()
    run = fit_formulation(RankSVM(data, C=c / data.n_queries, loss="hinge"), "auto", tol=tol,
                          model_radius=radius)
    t2 = time.perf_counter()
    folds.append({"fold": int(k), "read": t1 - t0, "fit": t2 - t1, "solver": run.solver,
                  "iterations": run.n_iter, "objective": run.objective,
                  "gap": run.relative_gap, "clock": run.time})
print(json.dumps({"imports": imports, "registry": registry, "folds": folds,
                  "inside": time.perf_counter() - started,
                  "numba": "numba" in sys.modules, "cvxpy": "cvxpy" in sys.modules,
                  "sklearn": "sklearn" in sys.modules}))
"""


def stop_rule(tol: float) -> str:
    """``"tolerance"`` at svm_rank's precision (tol 1e-3: stop where the tolerance is met, as
    svm_rank does), ``"default"`` otherwise (cvxrank's default stop: the tolerance, then the
    certified model radius 1e-4 ||w||)."""
    return "tolerance" if tol >= 1e-3 else "default"


def child_env(threads: int) -> dict[str, str]:
    """The environment of a child process: ``threads`` BLAS threads (0: none set, a user's
    plain process)."""
    return blas_env(threads, plain=True)


def one_process(c: float, tol: float, folds: list[int], threads: int,
                repeat: int) -> tuple[float, dict]:
    """Median wall seconds of the one-process child, and the last run's JSON.

    The JSON gets ``cpu_median`` (median CPU seconds, user + system, of the child) and
    ``peak_rss_mb`` (its peak RSS).
    """
    times, cpus, out = [], [], {}
    for _ in range(repeat):
        done = run_process([sys.executable, "-c", CHILD, str(ROOT), repr(c), repr(tol),
                            stop_rule(tol), *map(str, folds)], env=child_env(threads))
        times.append(done.wall)
        cpus.append(done.cpu)
        out = json.loads(done.stdout)
        out["peak_rss_mb"] = done.maxrss_mb
    out["cpu_median"] = statistics.median(cpus)
    return statistics.median(times), out


def read_svm_rank_w(model: Path, d: int) -> np.ndarray | None:
    """The weights of an svm_rank (linear SVMlight) model: its last line ``1 1:w_1 ... #``."""
    try:
        lines = [line for line in model.read_text().splitlines() if line.strip()]
        w = np.zeros(d)
        for token in lines[-1].split("#")[0].split()[1:]:
            index, value = token.split(":")
            if int(index) <= d:
                w[int(index) - 1] = float(value)
        return w
    except (OSError, ValueError, IndexError):
        return None


def svm_rank_file(k: int, tmp: Path) -> Path:
    """Fold k's ``train.txt`` as svm_rank reads it: the file itself when its qids never
    decrease, else a copy in ``tmp`` with its lines stably sorted by qid (svm_rank refuses
    "Query ID's in data file have to be in increasing order"; OHSUMED's Fold4 has a query
    in two runs). The copy has the same queries, documents and pairs, so the same objective."""
    path = ROOT / f"Fold{k}" / "train.txt"
    lines = [line for line in path.read_bytes().splitlines(keepends=True) if line.strip()]
    qids = [int(line.split()[1].split(b":")[1]) for line in lines]
    if all(a <= b for a, b in zip(qids, qids[1:], strict=False)):
        return path
    order = sorted(range(len(qids)), key=qids.__getitem__)
    copy = tmp / f"Fold{k}-train-by-qid.txt"
    copy.write_bytes(b"".join(lines[i] for i in order))
    return copy


def svm_rank_five(binary: Path, c: float, folds: list[int], repeat: int,
                  tmp: Path) -> dict:
    """svm_rank's protocol: one ``svm_rank_learn -c c`` process per fold; CPU summed.

    Returns the median over ``repeat`` rounds of the five-fold CPU and wall sums, and the
    last round's models (weights per fold, for the true-gap columns).
    """
    cpus, walls, models = [], [], {}
    files = {k: svm_rank_file(k, tmp) for k in folds}
    for _ in range(repeat):
        cpu = wall = 0.0
        for k in folds:
            model = tmp / f"svm_rank_fold{k}.model"
            done = run_process([str(binary), "-c", repr(c), str(files[k]), str(model)])
            cpu += done.cpu
            wall += done.wall
            models[k] = model.read_text() if model.is_file() else ""
        cpus.append(cpu)
        walls.append(wall)
    return {"cpu": statistics.median(cpus), "wall": statistics.median(walls), "models": models}


def five_cli_processes(c: float, tol: float, data: dict[int, Any], threads: int,
                       repeat: int) -> tuple[float, float]:
    """Medians over rounds of the summed wall and CPU seconds of one ``cvxrank fit`` per fold."""
    totals, cpus = [], []
    for _ in range(repeat):
        total = cpu = 0.0
        for k, d in data.items():
            done = run_process(
                [str(CVXRANK), "fit", "--method", "ranksvm", "--loss", "hinge",
                 "--C", repr(c / d.n_queries), "--train", str(ROOT / f"Fold{k}" / "train.txt"),
                 "--tol", repr(tol), "--json",
                 *(["--model-radius", "0"] if stop_rule(tol) == "tolerance" else [])],
                env=child_env(threads))
            total += done.wall
            cpu += done.cpu
        totals.append(total)
        cpus.append(cpu)
    return statistics.median(totals), statistics.median(cpus)


def one_slack_row(f: RankSVM, *, tol: float, svm_rank_rule: bool = False,
                  budget: float | None = None) -> dict:
    """A 1-slack run on ``f`` and its bookkeeping (iterations, master and oracle seconds)."""
    callback = None
    if svm_rank_rule:
        bound = SVM_RANK_EPS * f.primal_value(np.zeros(f.X.shape[1]))  # 1e-3 P(0)

        def callback(k, w, alpha, trace) -> bool:  # noqa: ANN001 - the Callback protocol
            return bool(trace.gap[-1] <= bound)

    run = solve_one_slack(f, tol=0.0 if svm_rank_rule else tol, time_budget=budget,
                          callback=callback)
    ok = run.converged or (svm_rank_rule and run.message == "stopped by callback")
    extra = run.trace.as_arrays()
    master = float(np.nansum(extra["master_time"]))
    oracle = float(np.nansum(extra["oracle_time"]))
    ws = run.info["cuts"]
    return {"run": run, "ok": ok, "time": run.time, "iters": run.n_iter,
            "oracle_calls": len(run.trace), "cuts": int(ws.offset.size - 1),
            "support": int(np.count_nonzero(ws.multiplier[1:] > 0)), "master": master,
            "oracle": oracle, "other": run.time - master - oracle, "P": f.primal_value(run.w),
            "gap": run.relative_gap}


def apg_row(f: RankSVM, budget: float) -> dict:
    """FISTA on the dual to 1e-6 within ``budget`` s; its first time at relative gap 1e-3."""
    run = solve_accelerated_gradient(f, tol=1e-6, max_iter=10**9, time_budget=budget)
    tr = run.trace
    hit = [i for i in range(len(tr)) if within(tr.gap[i], tr.primal[i], 1e-3)]
    return {"run": run, "t3": tr.time[hit[0]] if hit else None, "t6": run.time,
            "P3": tr.primal[hit[0]] if hit else None,
            "ok": run.converged, "iters": run.n_iter, "gap": run.relative_gap,
            "P": f.primal_value(run.w), "setup": run.setup_time}


def linearsvc_row(f: RankSVM, *, tol: float, max_iter: int) -> dict:
    """``LinearSVC(loss="hinge")`` on the explicit pair differences, timed from scratch."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    started = time.perf_counter()
    Z, labels = pair_differences(f)
    built = time.perf_counter() - started
    model = LinearSVC(C=f.C, loss="hinge", fit_intercept=False, dual=True, tol=tol,
                      max_iter=max_iter)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(Z, labels)
    elapsed = time.perf_counter() - started
    del Z
    w = model.coef_.ravel().copy()
    return {"time": elapsed, "build": built, "iters": int(np.max(model.n_iter_)),
            "ok": not any(issubclass(c.category, ConvergenceWarning) for c in caught),
            "P": f.primal_value(w)}


def fmt_gap(P: float, p_star: float) -> str:
    """``(P - p*) / p*``."""
    return f"{(P - p_star) / p_star:.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--c", type=float, nargs="+", default=[0.01, 1.0, 100.0],
                        help="svm_rank's c values (C = c / number of training queries)")
    parser.add_argument("--dataset", choices=tuple(DATASETS), default="ohsumed")
    parser.add_argument("--folds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--repeat", type=int, default=3, help="whole-process runs (median)")
    parser.add_argument("--apg-budget", type=float, default=60.0,
                        help="seconds of apg per fold (default 60)")
    parser.add_argument("--one-slack-budget", type=float, default=600.0,
                        help="seconds of the 1-slack per fold and setting (default 600)")
    parser.add_argument("--cvxpy-max-pairs", type=int, default=500_000,
                        help="CVXPY only on folds with at most this many pairs (0: never)")
    parser.add_argument("--svc-tol", type=float, default=1e-4,
                        help="LIBLINEAR's tol (sklearn's default 1e-4)")
    parser.add_argument("--svc-max-iter", type=int, default=20_000)
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=("process", "cli", "apg", "cvxpy", "linearsvc"),
                        help="parts to leave out")
    parser.add_argument("--no-default-threads", action="store_true",
                        help="do not also time the one-process run with the BLAS default")
    add_common_args(parser)
    args = parser.parse_args()
    global ROOT
    ROOT = DATASETS[args.dataset]
    if not ROOT.is_dir():
        raise SystemExit(f"{ROOT}: not found (../shared/data is needed)")
    print_machine()
    data = {k: read_svmlight(ROOT / f"Fold{k}" / "train.txt") for k in args.folds}
    probe = {k: RankSVM(d, C=1.0, loss="hinge") for k, d in data.items()}
    print(f"\n{ROOT}: folds {args.folds}")
    for k, d in data.items():
        print(f"  Fold{k}: {d.n_documents:,} documents, {d.n_queries} queries, "
              f"{probe[k].n_dual:,} pairs, d = {d.n_features}")
    binary, message = svm_rank_learn()
    print(message + "\n")

    # ---------------------------------------------------------------- (a) whole processes
    proc_rows = []
    svm_rank: dict[float, dict] = {}  # by c: five-fold CPU and wall, the models
    tmp_dir = tempfile.TemporaryDirectory()
    if "process" not in args.skip or "cli" not in args.skip:
        for c in args.c:
            ref = None
            if binary is not None:
                svm_rank[c] = svm_rank_five(binary, c, args.folds, args.repeat,
                                            Path(tmp_dir.name))
                ref = svm_rank[c]["cpu"]
                print(f"c = {c:g}: svm_rank, {len(args.folds)} processes: CPU {ref:.2f} s, "
                      f"wall {svm_rank[c]['wall']:.2f} s", flush=True)
            for tol in (1e-3, 1e-6):
                row: dict[str, Any] = {"c": c, "tol": tol}
                if "process" not in args.skip:
                    row["one"], out = one_process(c, tol, args.folds, args.blas_threads or 0,
                                                  args.repeat)
                    row["out"] = out
                    if not args.no_default_threads:
                        row["default"], row["default_out"] = one_process(
                            c, tol, args.folds, 0, args.repeat)
                if "cli" not in args.skip:
                    row["cli"], row["cli_cpu"] = five_cli_processes(
                        c, tol, data, args.blas_threads or 0, args.repeat)
                proc_rows.append(row)
                one_cpu = row.get("out", {}).get("cpu_median", float("nan"))
                print(f"c = {c:g}, tol = {tol:g}: one process {row.get('one', float('nan')):.2f} s"
                      f" (CPU {one_cpu:.2f} s; default threads "
                      f"{row.get('default', float('nan')):.2f} s), five cvxrank fit "
                      f"{row.get('cli', float('nan')):.2f} s; svm_rank "
                      f"{'-' if ref is None else f'{ref:.2f}'} s CPU", flush=True)
        headers = ["c", "tol", "one process, 1 BLAS thread: CPU [s] (wall)",
                   "one plain process (no thread variables): CPU [s] (wall)",
                   "5 x `cvxrank fit` CPU [s] (wall)",
                   "svm_rank, 5 processes: CPU [s] (wall)", "ratio (plain process, CPU)",
                   "ratio (1 BLAS thread, CPU)", "ratio (5 x fit, CPU)", "target", "verdict",
                   "imports / registry / reading / fits [s]", "iterations per fold",
                   "numba loaded", "peak RSS one process [MB]"]
        rows = []
        for r in proc_rows:
            sr = svm_rank.get(r["c"])
            ref = sr["cpu"] if sr else None
            out = r.get("out", {})
            one = out.get("cpu_median") if "one" in r else None
            plain = r["default_out"]["cpu_median"] if "default_out" in r else None
            folds = out.get("folds", [])
            ratio = plain / ref if (plain is not None and ref) else None
            rows.append([
                f"{r['c']:g}", f"{r['tol']:g}",
                f"{one:.2f} ({r['one']:.2f})" if one is not None else "-",
                f"{plain:.2f} ({r['default']:.2f})" if plain is not None else "-",
                f"{r['cli_cpu']:.2f} ({r['cli']:.2f})" if "cli" in r else "-",
                f"{ref:.2f} ({sr['wall']:.2f})" if sr else "-",
                f"{ratio:.2f}" if ratio is not None else "-",
                f"{one / ref:.2f}" if (one is not None and ref) else "-",
                f"{r['cli_cpu'] / ref:.2f}" if ("cli" in r and ref) else "-",
                f"<= {target_ratio(r['c']):g}",
                verdict(ratio <= target_ratio(r["c"])) if ratio is not None else "-",
                (f"{out['imports']:.2f} / {out['registry']:.2f} / "
                 f"{sum(f['read'] for f in folds):.2f} / "
                 f"{sum(f['fit'] for f in folds):.2f}") if folds else "-",
                ", ".join(str(f["iterations"]) for f in folds) or "-",
                out.get("numba", "-"),
                f"{out['peak_rss_mb']:.0f}" if "peak_rss_mb" in out else "-"])
        print("\n(a) whole processes (CPU = user + system of the child, wall clock in "
              f"parentheses, medians of {args.repeat}; svm_rank's rule is looser than tol = "
              "1e-3, see the docstring)\n")
        print(markdown_table(headers, rows))
        print()

    # ---------------------------------------------------------------- (b) solver clocks
    warm_up()
    per_fold: dict[float, list[dict]] = {c: [] for c in args.c}
    with blas_threads(args.blas_threads):
        for c in args.c:
            for k, d in data.items():
                C = c / d.n_queries
                n_pairs = probe[k].n_dual
                rec: dict[str, Any] = {"fold": k, "C": C, "pairs": n_pairs}
                f = RankSVM(d, C=C, loss="hinge")
                rec["P0"] = f.primal_value(np.zeros(d.n_features))
                rec["os3"] = one_slack_row(f, tol=1e-3, budget=args.one_slack_budget)
                rec["osr"] = one_slack_row(RankSVM(d, C=C, loss="hinge"), tol=0.0,
                                           svm_rank_rule=True, budget=args.one_slack_budget)
                rec["os6"] = one_slack_row(RankSVM(d, C=C, loss="hinge"), tol=1e-6,
                                           budget=args.one_slack_budget)
                print(f"c = {c:g} Fold{k}: 1-slack {rec['os3']['time']:.3f} s / "
                      f"{rec['osr']['time']:.3f} s / {rec['os6']['time']:.3f} s "
                      f"({rec['os3']['iters']} / {rec['osr']['iters']} / "
                      f"{rec['os6']['iters']} it)", flush=True)
                if "cvxpy" not in args.skip and n_pairs <= args.cvxpy_max_pairs:
                    ref = solve_reference(RankSVM(d, C=C, loss="hinge"), "CLARABEL", cache=False)
                    rec["cvxpy"] = {"time": ref.primal_time + ref.dual_time,
                                    "primal": ref.primal_time, "p_star": ref.p_star}
                    print(f"  CVXPY {ref.primal_time:.1f} + {ref.dual_time:.1f} s, p* = "
                          f"{ref.p_star:.10g}", flush=True)
                if "linearsvc" not in args.skip:
                    rec["svc"] = linearsvc_row(RankSVM(d, C=C, loss="hinge"), tol=args.svc_tol,
                                               max_iter=args.svc_max_iter)
                    print(f"  LinearSVC {rec['svc']['time']:.2f} s ({rec['svc']['iters']} it, "
                          f"{'converged' if rec['svc']['ok'] else 'NOT converged'})", flush=True)
                if "apg" not in args.skip:
                    rec["apg"] = apg_row(RankSVM(d, C=C, loss="hinge"), args.apg_budget)
                    a = rec["apg"]
                    print(f"  apg to 1e-3 {a['t3']} s, to 1e-6 {a['t6']:.1f} s "
                          f"({'converged' if a['ok'] else 'not converged'}, gap "
                          f"{a['gap']:.1e})", flush=True)
                rec["p_star"] = (rec["cvxpy"]["p_star"] if "cvxpy" in rec
                                 else rec["os6"]["P"])
                rec["p_source"] = "Clarabel" if "cvxpy" in rec else "1-slack 1e-6"
                if c in svm_rank and k in svm_rank[c]["models"]:
                    model = Path(tmp_dir.name) / "svm_rank_check.model"
                    model.write_text(svm_rank[c]["models"][k])
                    w_sr = read_svm_rank_w(model, d.n_features)
                    if w_sr is not None:
                        rec["svm_rank_P"] = f.primal_value(w_sr)
                per_fold[c].append(rec)

    # per-fold detail
    headers = ["c", "C", "fold", "pairs", "p*", "P(0) / p*", "1-slack 1e-3 [s] (it)",
               "true gap", "svm_rank rule [s] (it)", "true gap", "1-slack 1e-6 [s] (it)",
               "true gap", "apg to 1e-3 [s]", "apg to 1e-6 [s]", "apg true gap (last)",
               "CVXPY p+d [s]", "LinearSVC [s] (it)", "LinearSVC true gap",
               "svm_rank true gap"]
    rows = []
    for c, recs in per_fold.items():
        for r in recs:
            p = r["p_star"]
            a, s = r.get("apg"), r.get("svc")
            rows.append([
                f"{c:g}", f"{r['C']:.4g}", r["fold"], f"{r['pairs']:,}",
                f"{p:.10g} ({r['p_source']})", f"{r['P0'] / p:.3f}",
                f"{r['os3']['time']:.3f} ({r['os3']['iters']})", fmt_gap(r["os3"]["P"], p),
                f"{r['osr']['time']:.3f} ({r['osr']['iters']})", fmt_gap(r["osr"]["P"], p),
                f"{r['os6']['time']:.3f} ({r['os6']['iters']})", fmt_gap(r["os6"]["P"], p),
                ("-" if a is None else f"{a['t3']:.2f}" if a["t3"] is not None
                 else f"> {a['t6']:.0f}"),
                "-" if a is None else (f"{a['t6']:.2f}" if a["ok"] else f"> {a['t6']:.0f}"),
                "-" if a is None else fmt_gap(a["P"], p),
                f"{r['cvxpy']['time']:.1f}" if "cvxpy" in r else "-",
                "-" if s is None else f"{s['time']:.2f} ({s['iters']}{'' if s['ok'] else ', !'})",
                "-" if s is None else fmt_gap(s["P"], p),
                fmt_gap(r["svm_rank_P"], p) if "svm_rank_P" in r else "-"])
    print("\n(b) solver clocks per fold (fresh formulations; '!' LIBLINEAR hit max_iter; "
          f"'> t': apg not there within its {args.apg_budget:g} s)\n")
    print(markdown_table(headers, rows))

    # five-fold totals against svm_rank
    headers = ["c", "solver / setting", "five folds [s]", "svm_rank CPU [s]", "ratio",
               "folds converged", "largest true gap"]
    rows = []
    for c, recs in per_fold.items():
        ref = svm_rank[c]["cpu"] if c in svm_rank else None

        def total(rows_: list[tuple[float, bool, float]], name: str, ref=ref, c=c) -> list:
            t = sum(x[0] for x in rows_)
            ok = sum(bool(x[1]) for x in rows_)
            worst = max(x[2] for x in rows_)
            return [f"{c:g}", name, f"{t:.3f}" + ("" if ok == len(rows_) else " +"),
                    f"{ref:.2f}" if ref else "-", f"{t / ref:.3f}" if ref else "-",
                    f"{ok}/{len(rows_)}", f"{worst:.1e}"]

        def g(r: dict, P: float) -> float:
            return (P - r["p_star"]) / r["p_star"]

        for key, name in (("os3", "1-slack, tol 1e-3"), ("osr", "1-slack, svm_rank's rule"),
                          ("os6", "1-slack, tol 1e-6")):
            rows.append(total([(r[key]["time"], r[key]["ok"], g(r, r[key]["P"]))
                               for r in recs], name))
        if all("apg" in r for r in recs):
            rows.append(total([(r["apg"]["t3"] if r["apg"]["t3"] is not None
                                else r["apg"]["t6"], r["apg"]["t3"] is not None,
                                g(r, r["apg"]["P3"] if r["apg"]["P3"] is not None
                                  else r["apg"]["P"])) for r in recs], "apg, to 1e-3"))
            rows.append(total([(r["apg"]["t6"], r["apg"]["ok"], g(r, r["apg"]["P"]))
                               for r in recs], "apg, to 1e-6"))
        if all("cvxpy" in r for r in recs):
            rows.append(total([(r["cvxpy"]["time"], True, 0.0) for r in recs],
                              "CVXPY (Clarabel) primal + dual"))
        if all("svc" in r for r in recs):
            rows.append(total([(r["svc"]["time"], r["svc"]["ok"], g(r, r["svc"]["P"]))
                               for r in recs],
                              f"LinearSVC hinge, tol {args.svc_tol:g} (pairs built)"))
    print("\n(b) five-fold totals on the solver clocks against svm_rank's whole processes "
          "(+: some fold stopped at its budget, the total is a lower bound)\n")
    print(markdown_table(headers, rows))

    # where the 1-slack's time goes
    headers = ["c", "setting", "oracle calls (per fold)", "cuts at the end (support)",
               "master [s]", "oracle [s]", "other [s]", "master share", "oracle per call [ms]",
               "master per call [ms]"]
    rows = []
    for c, recs in per_fold.items():
        for key, name in (("os3", "tol 1e-3"), ("osr", "svm_rank's rule"), ("os6", "tol 1e-6")):
            xs = [r[key] for r in recs]
            m, o, t = (sum(x["master"] for x in xs), sum(x["oracle"] for x in xs),
                       sum(x["time"] for x in xs))
            calls = sum(x["oracle_calls"] for x in xs)
            masters = sum(x["iters"] for x in xs)
            rows.append([f"{c:g}", name, ", ".join(str(x["oracle_calls"]) for x in xs),
                         ", ".join(f"{x['cuts']} ({x['support']})" for x in xs),
                         f"{m:.3f}", f"{o:.3f}", f"{t - m - o:.3f}", f"{m / t:.0%}",
                         f"{1e3 * o / calls:.2f}", f"{1e3 * m / max(masters, 1):.2f}"])
    print("\n1-slack: where the solver clock goes (five-fold sums; 'other' = set-up, adding "
          "the cut to the working set (a row of Q), the dual value, the trace)\n")
    print(markdown_table(headers, rows))
    check_no_recompile()


if __name__ == "__main__":
    main()
