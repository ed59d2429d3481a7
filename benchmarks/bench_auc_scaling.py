"""AUC scaling (Chapelle & Keerthi 2010, Sect. 5.2, Fig. 3) from n = 10^3 to 10^6 documents.

Targets (issue), on the one-query, two-grade problem (``make_synthetic(n_queries=1,
docs_per_query=n, n_grades=2)``, about 2 n^2 / 9 pairs):

* PRSVM+'s training time grows with a fitted exponent <= 1.15 (least-squares slope of
  log time against log n over all sizes);
* PRSVM+'s peak memory stays within a small multiple of the data: peak traced memory
  (``tracemalloc``, which traces numpy's allocations) of one training run, above what was
  allocated before it, divided by the bytes of X; this script checks <= 4;
* PRSVM's exponent is near 2 until ``build_pairs`` refuses it (PairLimitError above
  ``--max-pairs``, default 20,000,000 pairs, about 1.2 GiB of pairs): reported where.

It calls :func:`cvxrank.experiments.chapelle.fig3.run_fig3` (the ``cvxrank reproduce
chapelle-fig3`` experiment) twice: with ``C = 10 / p`` (C p constant, the loss term an
average over pairs: comparable problems across n; the target is judged on this run) and with
C fixed at the value of the smallest n (C p grows like n^2), and prints the Newton and CG
iteration counts per n for both, so the slopes can be read against them. Times are
wall-clock of the whole training call (set-up and the per-iteration certified gap included);
the solver clock after its set-up (``Run.solve_time``: the Newton iterations with their
certificates) is shown beside them. PRSVM+'s numba
kernels are loaded (or compiled) once before any timing (``warm_up``).

d = 20 by default: with few features the O(n log n) sort and the O(n) passes of the sorted
loss, not the O(nd) products with X, dominate PRSVM+'s cost, so this is the stricter test of
the n log n claim (and of the memory claim: the engine's O(n) arrays weigh more against an
X of n x 20 than of n x 50); it also keeps X at 160 MB at n = 10^6 and the whole script
under ~5 minutes on 2 cores.

Run: ``.venv/bin/python benchmarks/bench_auc_scaling.py [--d 20] [--blas-threads 1]``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from _common import (
    add_common_args,
    check_no_recompile,
    markdown_table,
    print_machine,
    verdict,
    warm_up,
)

from cvxrank.data import count_pairs
from cvxrank.data.pairs import DEFAULT_MAX_PAIRS
from cvxrank.experiments.backends import Execution
from cvxrank.experiments.chapelle.fig3 import (
    FIG3_C0,
    Fig3Config,
    ScalingResult,
    auc_data,
    run_fig3,
)
from cvxrank.experiments.chapelle.reports import fig3_markdown
from cvxrank.experiments.timing import fitted_slope

SIZES = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000)
EXPONENT_TARGET = 1.15
MEMORY_TARGET = 4.0


def local_slopes(result: ScalingResult, method: str) -> list[str]:
    runs = result.runs_of(method, ok_only=True)
    return [f"{a.n:,}-{b.n:,}: {fitted_slope([a.n, b.n], [a.time, b.time]):.2f}"
            for a, b in zip(runs, runs[1:], strict=False)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--max-pairs", type=int, default=DEFAULT_MAX_PAIRS, dest="max_pairs")
    parser.add_argument("--repeat", type=int, default=3)
    add_common_args(parser)
    args = parser.parse_args()
    print_machine()
    print(f"BLAS threads: {args.blas_threads or 'library default'}; d = {args.d}; "
          f"PRSVM pair limit {args.max_pairs:,}\n")
    warm_up()
    progress = lambda line: print("  " + line, flush=True)  # noqa: E731
    start = time.perf_counter()
    config = Fig3Config(sizes=SIZES, d=args.d, c0=FIG3_C0, max_pairs=args.max_pairs,
                        repeat=args.repeat, execution=Execution(blas_threads=args.blas_threads))
    per_pair = run_fig3(replace(config, measure_memory=True), log=progress)
    c_fixed = FIG3_C0 / int(count_pairs(auc_data(SIZES[0], d=args.d)).sum())
    fixed = run_fig3(replace(config, C=c_fixed), log=progress)
    elapsed = time.perf_counter() - start

    print(f"\n## C = {FIG3_C0:g} / p (C p constant)\n")
    print(fig3_markdown(per_pair))
    print(f"## C = {c_fixed:.3g} fixed (C p from {FIG3_C0:g} at n = {SIZES[0]:,} to "
          f"{c_fixed * per_pair.runs_of('prsvm+')[-1].n_pairs:.2g} at n = {SIZES[-1]:,})\n")
    print(fig3_markdown(fixed))

    plus = per_pair.runs_of("prsvm+", ok_only=True)
    rows = [[f"{r.n:,}", f"{r.time:.4g}", f"{r.solver_time:.4g}", f"{r.setup_time:.4g}",
             f"{r.x_bytes / 2**20:.1f}", f"{(r.peak_bytes or 0) / 2**20:.1f}",
             f"{r.peak_ratio:.2f}"] for r in plus]
    print("## PRSVM+ time and memory (C = c0 / p)\n")
    print(markdown_table(["n", "time [s]", "solver clock [s]", "set-up [s]", "X [MiB]",
                          "peak [MiB]", "peak / X"], rows))

    slope = per_pair.slope("prsvm+")
    slope_hi = per_pair.slope("prsvm+", min_n=100_000)
    slope_fixed = fixed.slope("prsvm+")
    slope_solver = fitted_slope([r.n for r in plus], [r.solver_time for r in plus])
    worst_mem = max(r.peak_ratio for r in plus)
    prsvm_slope = per_pair.slope("prsvm")
    refused = per_pair.refused_from("prsvm")
    print("\nPRSVM+ local slopes: " + "; ".join(local_slopes(per_pair, "prsvm+")))
    print(f"PRSVM+ fitted exponent, n = {SIZES[0]:,}..{SIZES[-1]:,}: {slope:.2f} "
          f"(n >= 100,000 only: {slope_hi:.2f}; solver clock: {slope_solver:.2f}; "
          f"fixed C: {slope_fixed:.2f})")
    print(f"target: PRSVM+ exponent <= {EXPONENT_TARGET}: {verdict(slope <= EXPONENT_TARGET)}")
    print(f"target: PRSVM+ peak memory a small multiple of X (<= {MEMORY_TARGET:g}x): largest "
          f"{worst_mem:.2f}x: {verdict(worst_mem <= MEMORY_TARGET)}")
    prsvm_ok = per_pair.runs_of("prsvm", ok_only=True)
    print(f"PRSVM fitted exponent on n = {', '.join(f'{r.n:,}' for r in prsvm_ok)}: "
          f"{prsvm_slope:.2f} (near 2: {verdict(1.7 <= prsvm_slope <= 2.5)}); refused from "
          f"n = {refused:,} ({per_pair.runs_of('prsvm')[len(prsvm_ok)].n_pairs:,} pairs > "
          f"{args.max_pairs:,})" if refused else "PRSVM never refused")
    print("PRSVM peak / X: "
          + ", ".join(f"n={r.n:,}: {r.peak_ratio:.0f}x" for r in prsvm_ok))
    check_no_recompile()
    print(f"\ntotal run time of this script: {elapsed:.0f} s")


if __name__ == "__main__":
    main()
