"""Cost of one PRSVM+ gradient against one pair of matrix-vector products with X.

Target (issue): one full gradient of the RankSVM primal by PRSVM+,
``g = w + C X^T dL/ds`` with ``dL/ds`` from ``loss_engine("sorted").evaluate(X @ w)``
(Chapelle & Keerthi 2010, Sect. 4: O(nd + n log n)), costs at most 3x the time of one
``X @ w`` plus one ``X.T @ v`` at the same n and d (the O(nd) part alone).

Both are timed ``timeit``-style (calls per measurement doubled until a measurement takes
>= 20 ms, then the median of 7 measurements per call); the engine is built once, outside the
timing (its set-up is a one-off cost per training run), and PRSVM+'s numba kernels are
loaded (or compiled) once before any timing (``warm_up``; ``median_time`` also makes one
untimed call of each function). The breakdown columns time the engine's ``evaluate`` alone
(numpy's sort of the block entries plus the compiled block passes) and a bare ``np.argsort``
of n scores, to show where the time goes.

Shapes: OHSUMED Fold1 and Fold2 train (real: n = 9,219 and 10,187, d = 45, 63 queries, 3
grades), a synthetic many-query set of the same shape, and the one-query two-grade AUC
problem for n = 10^3 ... 10^6 with d = 20 and d = 50.

Run: ``.venv/bin/python benchmarks/bench_gradient.py [--blas-threads 1] [--max-n 1000000]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import (
    OHSUMED,
    add_common_args,
    check_no_recompile,
    markdown_table,
    median_time,
    print_machine,
    verdict,
    warm_up,
)

from cvxrank.data import make_synthetic, read_letor_fold
from cvxrank.experiments.chapelle.fig3 import auc_data
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.utils.threads import blas_threads

TARGET = 3.0


def shapes(max_n: int) -> list[tuple[str, object]]:
    out = []
    if OHSUMED.is_dir():
        for k in (1, 2):
            out.append((f"OHSUMED Fold{k} train",
                        read_letor_fold(OHSUMED, k, splits=("train",))["train"]))
    else:
        print(f"({OHSUMED} not found: OHSUMED shapes skipped)")
    out.append(("synthetic 64 queries x 150, 3 grades",
                make_synthetic(n_queries=64, docs_per_query=150, n_features=45, n_grades=3,
                               seed=0)))
    for d in (20, 50):
        for n in (10**3, 10**4, 10**5, 10**6):
            if n <= max_n:
                out.append(("AUC one query, 2 grades", auc_data(n, d=d)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=int, default=10**6, dest="max_n")
    add_common_args(parser)
    args = parser.parse_args()
    print_machine()
    print(f"BLAS threads: {args.blas_threads or 'library default'}\n")
    rows, ratios = [], []
    rng = np.random.default_rng(0)
    with blas_threads(args.blas_threads):
        warm_up()
        for name, data in shapes(args.max_n):
            X = data.X
            n, d = X.shape
            f = RankSVM(data, C=1e-4, loss="squared_hinge")
            engine = f.loss_engine("sorted")
            C = f.C
            w = rng.standard_normal(d) / np.sqrt(d)
            v = rng.standard_normal(n)

            def gradient(w=w, X=X, engine=engine, C=C):
                ev = engine.evaluate(X @ w)
                return w + C * (X.T @ ev.grad)

            def products(w=w, v=v, X=X):
                X @ w
                return X.T @ v

            s = X @ w
            t_grad = median_time(gradient)
            t_mv = median_time(products)
            t_eval = median_time(lambda s=s, engine=engine: engine.evaluate(s))
            t_sort = median_time(lambda s=s: np.argsort(s))
            ratio = t_grad / t_mv
            ratios.append(ratio)
            rows.append([name, f"{n:,}", d, data.n_queries, f"{engine.n_entries:,}",
                         f"{t_mv * 1e3:.3f}", f"{t_grad * 1e3:.3f}", f"**{ratio:.1f}**",
                         f"{t_eval * 1e3:.3f}", f"{t_sort * 1e3:.3f}",
                         f"{t_eval / t_sort:.1f}"])
            print(f"  {name} n={n:,} d={d}: ratio {ratio:.1f}", flush=True)
    print()
    print(markdown_table(
        ["shape", "n", "d", "queries", "block entries E", "X@w + X.T@v [ms]",
         "PRSVM+ gradient [ms]", "ratio", "evaluate alone [ms]", "argsort(n) [ms]",
         "evaluate / argsort"], rows))
    print()
    check_no_recompile()
    worst = max(ratios)
    print(f"target: gradient <= {TARGET:g}x (X@w + X.T@v) at every shape; largest ratio "
          f"{worst:.1f}: {verdict(worst <= TARGET)}"
          + ("" if worst <= TARGET else f" (by a factor {worst / TARGET:.1f})"))


if __name__ == "__main__":
    main()
