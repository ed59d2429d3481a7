"""RankMM's certified solvers on OHSUMED Fold1: time to relative gap 1e-6 against CVXPY.

``cvxrank fit --method rankmm`` must reach the certified optimum (relative gap 1e-6) on
OHSUMED Fold1 ``vali.txt`` at C = 10 for each loss (issue 7). This script times, side by
side in one run and on fresh formulations:

* ``cutting-plane`` (the default solver: n-slack cutting planes, master QP in CVXPY,
  :mod:`cvxrank.solvers.cutting_plane`), to its certified gap ``(P(w) - D(alpha)) / P(w)
  <= 1e-6``;
* ``apg`` (FISTA on the printed dual) to the same certified gap, stopped after ``--budget``
  seconds;
* CVXPY (``solve_reference(f, "CLARABEL", cache=False)``: the primal QP and the printed dual,
  compiled and solved, certified against each other);
* the whole process ``cvxrank fit --method rankmm ... --json`` (Python start-up, imports,
  parsing, pairs, the fit), wall clock, median of ``--repeat`` runs;

and prints the solver-clock ratios CVXPY / cutting-plane and apg / cutting-plane, and each
result's true relative gap ``(P(w) - p*) / p*`` against Clarabel's p*.

Run: ``.venv/bin/python benchmarks/bench_rankmm_certified.py [--split vali] [--C 10 1]
[--budget 120]`` (a few minutes per C on ``vali``, dominated by CVXPY and apg).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _common import OHSUMED, add_common_args, markdown_table, print_machine

from cvxrank.certificates.reference import solve_reference
from cvxrank.data import count_pairs, read_svmlight
from cvxrank.formulations.rankmm import RANKMM_LOSSES, RankMM
from cvxrank.solvers.cutting_plane import solve_cutting_plane
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient
from cvxrank.tolerances import FAST_SOLVER_GAP
from cvxrank.utils.threads import blas_threads

CVXRANK = Path(sys.executable).with_name("cvxrank")


def whole_process(path: Path, loss: str, C: float, repeat: int) -> tuple[float, dict]:
    """Median wall-clock seconds of ``cvxrank fit`` as a user runs it, and its JSON."""
    times, out = [], {}
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run([str(CVXRANK), "fit", "--method", "rankmm", "--loss", loss,
                               "--C", f"{C:g}", "--train", str(path), "--json"],
                              capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - started)
        out = json.loads(done.stdout)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--C", type=float, nargs="+", default=[10.0, 1.0])
    parser.add_argument("--split", default="vali", choices=("train", "vali"))
    parser.add_argument("--losses", nargs="+", default=list(RANKMM_LOSSES),
                        choices=RANKMM_LOSSES)
    parser.add_argument("--budget", type=float, default=120.0,
                        help="seconds before apg is stopped (default 120)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="whole-process runs per setting (median; default 3)")
    add_common_args(parser)
    args = parser.parse_args()
    print_machine()
    path = OHSUMED / "Fold1" / f"{args.split}.txt"
    data = read_svmlight(path)
    print(f"\n{path}: {data.n_documents:,} documents, {data.n_queries} queries, "
          f"{int(count_pairs(data).sum()):,} pairs; d = {data.n_features}; target gap "
          f"{FAST_SOLVER_GAP:g}; apg budget {args.budget:g} s\n")
    headers = ["C", "loss", "p* (Clarabel)", "CVXPY p+d [s]", "cutting-plane [s]", "iters",
               "cuts", "true gap", "apg [s]", "apg true gap", "CVXPY / cp", "apg / cp",
               "fit, whole process [s]"]
    rows = []
    with blas_threads(args.blas_threads):
        for C in args.C:
            for loss in args.losses:
                ref = solve_reference(RankMM(data, C=C, loss=loss), "CLARABEL", cache=False)
                cvx = ref.primal_time + ref.dual_time
                f = RankMM(data, C=C, loss=loss)
                cp_run = solve_cutting_plane(f, tol=FAST_SOLVER_GAP)
                apg = solve_accelerated_gradient(RankMM(data, C=C, loss=loss),
                                                 tol=FAST_SOLVER_GAP, max_iter=10**8,
                                                 time_budget=args.budget)
                wall, out = whole_process(path, loss, C, args.repeat)

                def gap(w: np.ndarray, f: RankMM = f, p: float = ref.p_star) -> str:
                    return f"{(f.primal_value(w) - p) / p:.1e}"

                apg_time = f"{apg.time:.2f}" if apg.converged else f"> {apg.time:.0f}"
                rows.append([
                    f"{C:g}", loss, f"{ref.p_star:.10g}", f"{cvx:.1f}",
                    f"{cp_run.time:.2f}" if cp_run.converged else f"({cp_run.message})",
                    cp_run.n_iter, cp_run.info["cuts_added"], gap(cp_run.w), apg_time,
                    gap(apg.w), f"{cvx / cp_run.time:.0f}x",
                    f"{apg.time / cp_run.time:.0f}x" + ("" if apg.converged else " +"),
                    f"{wall:.2f} ({out['solver']}, {out['iterations']} it)"])
                print(f"C = {C:g}, {loss}: CVXPY {cvx:.1f} s, cutting-plane "
                      f"{cp_run.time:.2f} s, apg {apg_time} s, fit {wall:.2f} s", flush=True)
    print()
    print(markdown_table(headers, rows))
    print("\n(+: apg stopped at its budget without reaching the gap; the ratio is a lower "
          "bound)")


if __name__ == "__main__":
    main()
