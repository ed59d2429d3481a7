"""One factored EG step (``seg``) against one plain O(|R_i|) step (``seg-pairs``), RankMM-2.

Target (issue 7): one factored exponentiated-gradient step at least 20x faster than the
O(|R_i|) step on a query of 1,000 documents.

Both solvers (:mod:`cvxrank.solvers.rankmm`) run on a data set of one query (so every step
draws it): n documents with d = 45 features uniform on [0, 1] (the range of LETOR's
QueryLevelNorm features) and grades in fixed proportions, 3 levels as OHSUMED's train
files (65.6 / 19.1 / 15.2 %) or 5 levels (45 / 30 / 15 / 7 / 3 %). A step of either solver
is the whole step: the query's scores ``X_i w``, the update, the per-document coefficients and
``w += X_i^T (change)``. Per-step time: the difference of the solver clocks
(``Run.solve_time``, records at the first and last step only) of a run of 2N and one of N
steps, divided by N, so that set-up and the two records cancel; median of ``--repeat``
such pairs. N is chosen so that the N-step run takes about ``--min-time`` seconds. Both runs
use the same seed and default step; their ``alpha`` after 100 steps are compared (the factored
step is exact, so they agree to rounding).

Also the scaling of both steps with n (250, 500, 1,000, 2,000 documents, 3 levels), with the
exponents fitted to log time against log n: the plain step is O(|R_i|) = O(n^2) pairs, the
factored one O(n_i d) (plus a fixed per-step cost of some thirty numpy calls).

Run: ``.venv/bin/python benchmarks/bench_rankmm_eg_step.py [--repeat 5] [--blas-threads 1]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import add_common_args, markdown_table, print_machine, verdict

from cvxrank.data import RankingData, count_pairs
from cvxrank.formulations.rankmm import RankMM
from cvxrank.solvers.rankmm import solve_seg, solve_seg_pairs
from cvxrank.utils.threads import blas_threads

TARGET = 20.0
OHSUMED_LEVELS = (0.656, 0.191, 0.153)
FIVE_LEVELS = (0.45, 0.30, 0.15, 0.07, 0.03)
#: Steps after which the two solvers' alpha are compared.
AGREE_STEPS = 100


def one_query(n: int, proportions: tuple[float, ...], d: int = 45, seed: int = 0) -> RankingData:
    """One query of n documents, grades in the given proportions (exact counts, shuffled)."""
    rng = np.random.default_rng(seed)
    counts = np.floor(np.asarray(proportions) * n).astype(int)
    counts[0] += n - counts.sum()
    y = rng.permutation(np.repeat(np.arange(len(proportions)), counts)).astype(float)
    return RankingData.from_arrays(rng.uniform(size=(n, d)), y, qid=np.zeros(n, dtype=int))


def per_step(solve, f: RankMM, min_time: float, repeat: int) -> float:
    """Median seconds per step (difference of a 2N- and an N-step run)."""
    n_steps = 4
    while True:  # N so that an N-step run takes about min_time
        run = solve(f, tol=0.0, seed=0, max_iter=n_steps, record_every=n_steps)
        if run.solve_time >= min_time or n_steps >= 2**22:
            break
        n_steps *= 2
    samples = []
    for _ in range(repeat):
        short = solve(f, tol=0.0, seed=0, max_iter=n_steps, record_every=n_steps)
        long = solve(f, tol=0.0, seed=0, max_iter=2 * n_steps, record_every=2 * n_steps)
        samples.append((long.solve_time - short.solve_time) / n_steps)
    return statistics.median(samples)


def compare(n: int, levels: tuple[float, ...], min_time: float,
            repeat: int) -> tuple[list[object], float, float, float]:
    """Table row, factored and plain seconds per step, and their ratio."""
    data = one_query(n, levels)
    pairs = int(count_pairs(data).sum())
    f = RankMM(data, C=10.0, loss="max")
    factored = per_step(solve_seg, f, min_time, repeat)
    plain = per_step(solve_seg_pairs, f, min_time, repeat)
    same = [solve(f, tol=0.0, seed=0, max_iter=AGREE_STEPS, record_every=AGREE_STEPS).alpha
            for solve in (solve_seg, solve_seg_pairs)]
    agree = float(np.max(np.abs(same[0] - same[1]) / same[1]))
    ratio = plain / factored
    row = [f"{n:,}", len(levels), f"{pairs:,}", f"{factored * 1e6:.1f}", f"{plain * 1e6:.1f}",
           f"**{ratio:.1f}x**", f"{agree:.1e}"]
    return row, factored, plain, ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timing pairs per size (median)")
    parser.add_argument("--min-time", type=float, default=0.3, dest="min_time",
                        help="seconds of the shorter run of each timing pair")
    add_common_args(parser)
    args = parser.parse_args()
    print_machine()
    print(f"BLAS threads: {args.blas_threads or 'library default'}; d = 45, C = 10, "
          "default eta0 (1 / bound on |A|_inf)\n")
    headers = ["n", "levels", "pairs |R_i|", "factored step [us]", "plain step [us]",
               "plain / factored", "alpha: max rel. diff. (100 steps)"]
    started = time.perf_counter()
    with blas_threads(args.blas_threads):
        rows, ratios = [], []
        for levels in (OHSUMED_LEVELS, FIVE_LEVELS):
            row, _, _, ratio = compare(1000, levels, args.min_time, args.repeat)
            rows.append(row)
            ratios.append(ratio)
            print(f"  n = 1000, {len(levels)} levels: done", flush=True)
        print("\nOne step on a query of 1,000 documents:\n")
        print(markdown_table(headers, rows))
        worst = min(ratios)
        print(f"\ntarget: factored step >= {TARGET:g}x faster than the plain step at n = 1,000; "
              f"smallest ratio {worst:.1f}x: {verdict(worst >= TARGET)}\n")

        sizes = (250, 500, 1000, 2000)
        rows, times = [], []
        for n in sizes:
            row, factored, plain, _ = compare(n, OHSUMED_LEVELS, args.min_time, args.repeat)
            rows.append(row)
            times.append((factored, plain))
            print(f"  n = {n}: done", flush=True)
        print("\nScaling with n (3 levels):\n")
        print(markdown_table(headers, rows))
        logn = np.log(sizes)
        for name, k in (("factored", 0), ("plain", 1)):
            slope = np.polyfit(logn, np.log([t[k] for t in times]), 1)[0]
            local = np.diff(np.log([t[k] for t in times])) / np.diff(logn)
            print(f"fitted exponent of the {name} step over n = 250 ... 2,000: {slope:.2f} "
                  f"(local: {', '.join(f'{s:.2f}' for s in local)})")
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
