"""The exact projection onto RankMM-3's dual set (l1,inf ball per query, in the orthant).

Four measurements of ``cvxrank.numerics.sets.L1InfBall`` (Agarwal & Collins 2010, Sect. 3.3;
Quattoni, Carreras, Collins & Darrell, ICML 2009):

0. **First-call cost** of the compiled kernel (``cvxrank.numerics.l1inf_kernels``): importing numba
   and loading the kernel from numba's disk cache (or compiling it, the first run after a
   change of the kernel), in a fresh process; the timed projections below run after
   ``l1inf_kernels.warm_up()`` and do not include it. A process that has not loaded the
   kernel runs the sort-based numpy method (``L1InfLayout.project_sorted``) until that has
   cost ``NUMPY_BUDGET`` = 0.25 s, then loads it (``cvxrank/numerics/l1inf_kernels.py``); both are
timed. 1. **Against CVXPY** at N = 10^2, 10^3, 10^4 coordinates, side by side in one run:
   ``L1InfBall.project`` against the CVXPY projection of the same set
   (``minimize sum_squares(z - v)`` subject to ``constraints(z)``, with the caps ``gamma`` as
   a CVXPY variable; Clarabel at cvxrank's reference settings). CVXPY is timed as a user
   calls it, the problem built and solved from scratch (the *whole call*, with CVXPY's
   compilation), and Clarabel's own solve time is shown beside it. **Target: the exact
   projection >= 1000x faster than the whole CVXPY call at N = 10^4**; the ratio to
   Clarabel's solve time alone is printed too, with its own verdict. The distance between
   the two points (in units of sigma = max(1, ||v||_inf, max_b s r_b)) is printed as a
   sanity check, and so is the time of one ``np.argsort`` of the N values (the floor of
   the sort-based method, which does two).
2. **Scaling**: time of ``project`` for N = 10^3 ... 10^6 on two layouts, median of
   ``timeit``-style repeats; the fitted exponent of log(time) against log(N) and time / (N
   log2 N), normalised to its value at the smallest N (flat for an O(N log N) method,
   falling for an O(N) one).
3. **The paper's order** (project onto the l1,inf ball, then clip the negatives:
   ``project_then_clip``) against the exact projection on random inputs: the fraction of
   inputs where the two differ, ``||z' - z|| / ||z||`` (median, max over the inputs where
   they differ) and the objective excess ``(||z' - v||^2 - ||z - v||^2) / ||z - v||^2``.

Layouts: *one block* (one query: G = sqrt(N) groups of N/G coordinates), *RankMM-3 queries*
(blocks = queries of 60 documents with grades 0, 1, 2 drawn uniformly; one group per lower
document k, holding the pairs (j, k) with y_j > y_k, as in RankMM-3's dual: ~1,200
coordinates per query), and *many small blocks* (10 groups of 10 per block). Points: v ~
N(0, 1), radii s r_b = 0.3 x (the block's l1,inf norm of max(v, 0)), so the budget binds in
every block.

Run: ``.venv/bin/python benchmarks/bench_l1inf_projection.py [--max-n 1000000]
[--cvxpy-repeat 3] [--inputs 1000] [--blas-threads 1]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import cvxpy as cp
import numpy as np
from _common import add_common_args, markdown_table, median_time, print_machine, verdict

from cvxrank.certificates.reference import SOLVER_OPTIONS
from cvxrank.numerics import l1inf_kernels
from cvxrank.numerics.sets import L1InfBall
from cvxrank.utils.threads import blas_threads

TARGET = 1000.0


def one_block(n: int, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(group, block) of one block of ``n_groups`` groups of ``n / n_groups`` coordinates."""
    return np.repeat(np.arange(n_groups), n // n_groups), np.zeros(n_groups, dtype=np.int64)


def small_blocks(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(group, block) of n / 100 blocks of 10 groups of 10 coordinates."""
    n_groups = n // 10
    return np.repeat(np.arange(n_groups), 10), np.arange(n_groups) // 10


def rankmm3_queries(rng: np.random.Generator, n: int | None = None,
                    docs: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """(group, block) of RankMM-3's dual for queries of ``docs`` documents with random grades
    0-2: as many queries as reach n pairs (the last one truncated to exactly n), or one query
    if n is None."""
    sizes, blocks = [], []
    total, query = 0, 0
    while (query == 0) if n is None else (total < n):
        grades = rng.integers(0, 3, docs)
        higher = np.array([(grades > y).sum() for y in grades])  # |P_ik| of each document
        higher = higher[higher > 0]
        sizes.append(higher)
        blocks.append(np.full(higher.size, query))
        total += int(higher.sum())
        query += 1
    sizes, blocks = np.concatenate(sizes), np.concatenate(blocks)
    group = np.repeat(np.arange(sizes.size), sizes)[:n]  # [:None]: all
    n_groups = int(group[-1]) + 1
    return group, blocks[:n_groups]


def binding_set(group: np.ndarray, block: np.ndarray, v: np.ndarray,
                fraction: float = 0.3) -> L1InfBall:
    """The set with s r_b = fraction x the block's l1,inf norm of max(v, 0)."""
    norms = L1InfBall(group, block, 0.0).block_sums(np.maximum(v, 0.0))
    return L1InfBall(group, block, fraction * norms)


def cvxpy_projection(s: L1InfBall, v: np.ndarray) -> tuple[np.ndarray, float, float, float]:
    """CVXPY's projection built and solved from scratch: (point, wall time, compilation
    time, Clarabel's solve time)."""
    start = time.perf_counter()
    z = cp.Variable(v.size)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(z - v)), s.constraints(z))
    problem.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
    wall = time.perf_counter() - start
    assert problem.status == cp.OPTIMAL, problem.status
    return z.value, wall, problem.compilation_time, problem.solver_stats.solve_time


def sigma_of(s: L1InfBall, v: np.ndarray) -> float:
    return max(1.0, float(np.abs(v).max()), float(np.max(s._budgets())))


def first_call() -> None:
    """The kernel's fixed cost: in a fresh process (after importing cvxrank.numerics.sets), and in
    this one."""
    code = ("import time; import cvxrank.numerics.sets; from cvxrank import l1inf_kernels; "
            "t = time.perf_counter(); l1inf_kernels.warm_up(); "
            "t = time.perf_counter() - t; kernel = l1inf_kernels.project_blocks; "
            "stats = getattr(kernel, 'stats', None); "
            "print(t, -1 if stats is None else sum(stats.cache_hits.values()))")
    fresh = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.split()
        fresh.append((float(out[0]), int(out[1])))
    start = time.perf_counter()
    l1inf_kernels.warm_up()
    here = time.perf_counter() - start
    print("## 0. First call of the compiled kernel (the ahead-of-time module, or import numba "
          "+ load or compile)\n")
    how = {-1: "compiled ahead of time", 0: "compiled"}
    print("fresh processes: " + ", ".join(
        f"{t:.3f} s ({how.get(hits, 'loaded from cache')})" for t, hits in fresh))
    print(f"this process (numba already imported here: {'numba' in sys.modules}): "
          f"{here:.3f} s; not included in the times below\n")


def layouts_at(n: int, rng: np.random.Generator) -> list[tuple[str, tuple[np.ndarray,
                                                                        np.ndarray]]]:
    """The three layouts of the comparison with CVXPY at about n coordinates."""
    n_groups = int(round(np.sqrt(n)))
    return [(f"one block, {n_groups} groups x {n // n_groups}", one_block(n, n_groups)),
            ("RankMM-3 queries of 60 docs", rankmm3_queries(rng, n)),
            (f"{max(n // 100, 1)} blocks of 10 groups x 10", small_blocks(n))]


def against_cvxpy(repeat: int, rng: np.random.Generator) -> None:
    rows, ratios = [], {"whole": [], "solve": []}
    for n in (10**2, 10**3, 10**4):
        for name, (group, block) in layouts_at(n, rng):
            v = rng.normal(size=group.size)
            s = binding_set(group, block, v)
            budgets = s._budgets()
            t_exact = median_time(lambda s=s, v=v: s.project(v))
            t_sorted = median_time(lambda s=s, v=v, r=budgets: s._layout.project_sorted(v, r))
            t_sort = median_time(lambda v=v: np.argsort(v))
            p = s.project(v)
            runs = [cvxpy_projection(s, v) for _ in range(repeat)]
            wall = statistics.median(r[1] for r in runs)
            compile_time = statistics.median(r[2] for r in runs)
            solve_time = statistics.median(r[3] for r in runs)
            sigma = sigma_of(s, v)
            distance = np.abs(p - runs[-1][0]).max() / sigma
            objective = (np.sum((p - v) ** 2) - np.sum((runs[-1][0] - v) ** 2)) / sigma**2
            if n == 10**4:
                ratios["whole"].append(wall / t_exact)
                ratios["solve"].append(solve_time / t_exact)
            rows.append([f"{group.size:,}", name, s.n_blocks, s.n_groups,
                         f"{t_exact * 1e3:.4f}", f"{t_sorted * 1e3:.3f}",
                         f"{t_sort * 1e3:.4f}", f"{wall:.4f}", f"{compile_time:.4f}",
                         f"{solve_time:.4f}", f"**{wall / t_exact:.0f}x**",
                         f"**{solve_time / t_exact:.0f}x**", f"{wall / t_sorted:.0f}x",
                         f"{t_sorted / t_exact:.1f}x", f"{distance:.1e}", f"{objective:.1e}"])
    print(f"## 1. Exact projection vs CVXPY (Clarabel); CVXPY median of {repeat}\n")
    print(markdown_table(
        ["N", "layout", "blocks", "groups", "exact (compiled) [ms]", "sort-based numpy [ms]",
         "one np.argsort(v) [ms]", "CVXPY whole call [s]", "CVXPY compilation [s]",
         "Clarabel solve [s]", "CVXPY whole / exact", "Clarabel solve / exact",
         "CVXPY whole / sort-based", "sort-based / compiled", "max |p - p_cvxpy| / sigma",
         "(|p-v|^2 - |p_cvxpy-v|^2) / sigma^2"], rows))
    whole, solve = min(ratios["whole"]), min(ratios["solve"])
    print(f"\ntarget: exact >= {TARGET:g}x faster than the CVXPY projection as a user calls it "
          f"(built and solved) at N = 10^4; smallest ratio {whole:.0f}x: "
          f"{verdict(whole >= TARGET)}")
    print(f"stricter, against Clarabel's solve time alone: smallest ratio {solve:.0f}x: "
          f"{verdict(solve >= TARGET)}\n")


def scaling(max_n: int, rng: np.random.Generator) -> None:
    sizes = [n for n in (10**3, 3 * 10**3, 10**4, 3 * 10**4, 10**5, 3 * 10**5, 10**6)
             if n <= max_n]
    layouts = {"one block, sqrt(N) groups": lambda n: one_block(n, int(round(np.sqrt(n)))),
               "RankMM-3 queries of 60 docs": lambda n: rankmm3_queries(rng, n)}
    rows, fits = [], []
    for name, layout in layouts.items():
        times = []
        for n in sizes:
            group, block = layout(n)
            v = rng.normal(size=group.size)
            s = binding_set(group, block, v)
            t = median_time(lambda s=s, v=v: s.project(v), repeat=5)
            times.append(t)
            per = t / (n * np.log2(n))
            first = times[0] / (sizes[0] * np.log2(sizes[0]))
            rows.append([name, f"{n:,}", s.n_blocks, s.n_groups, f"{t * 1e3:.3f}",
                         f"{per * 1e9:.2f}", f"{per / first:.2f}"])
        slope = np.polyfit(np.log(sizes), np.log(times), 1)[0]
        upper = [k for k, n in enumerate(sizes) if n >= 10**4]
        slope_upper = (np.polyfit(np.log(np.array(sizes)[upper]), np.log(np.array(times)[upper]),
                                  1)[0] if len(upper) >= 2 else float("nan"))
        fits.append((name, slope, slope_upper))
    print("## 2. Time of project() (compiled) against N (median of 5 timeit-style "
          "measurements)\n")
    print(markdown_table(["layout", "N", "blocks", "groups", "time [ms]",
                          "time / (N log2 N) [ns]", "normalised to the smallest N"], rows))
    print()
    for name, slope, slope_upper in fits:
        print(f"fitted exponent ({name}): {slope:.2f} over {sizes[0]:,} ... {sizes[-1]:,}; "
              f"{slope_upper:.2f} over N >= 10^4")
    print()


def paper_order(n_inputs: int, rng: np.random.Generator) -> None:
    """Paper's order vs exact on random inputs of several layouts and two point models."""

    def small_random() -> tuple[np.ndarray, np.ndarray]:
        n_blocks = int(rng.integers(1, 4))
        per_block = rng.integers(1, 6, n_blocks)
        block = np.repeat(np.arange(n_blocks), per_block)
        group = np.repeat(np.arange(block.size), rng.integers(1, 6, block.size))
        return group, block

    layouts = {"small (1-3 blocks, 1-5 groups of 1-5)": small_random,
               "one RankMM-3 query of 60 docs": lambda: rankmm3_queries(rng)}
    rows = []
    for name, layout in layouts.items():
        for model in ("v ~ N(0, 1)", "SGD step from a feasible point"):
            differ, distance, excess = 0, [], []
            for _ in range(n_inputs):
                group, block = layout()
                if model == "v ~ N(0, 1)":
                    v = rng.normal(size=group.size)
                    s = binding_set(group, block, v)
                else:  # alpha - eta g from a point of the set (on its boundary), 10 % step
                    s = binding_set(group, block, np.abs(rng.normal(size=group.size)))
                    alpha = s.project(np.abs(rng.normal(size=group.size)) * 10.0)
                    g = rng.normal(size=group.size)
                    v = alpha - 0.1 * np.linalg.norm(alpha) / np.linalg.norm(g) * g
                z, z_paper = s.project(v), s.project_then_clip(v)
                gap = float(np.linalg.norm(z_paper - z))
                if gap <= 1e-12 * sigma_of(s, v):
                    continue
                differ += 1
                distance.append(gap / np.linalg.norm(z))
                base = float(np.sum((z - v) ** 2))
                excess.append((float(np.sum((z_paper - v) ** 2)) - base) / base)
            stats = (lambda x: (f"{np.median(x):.2e}", f"{np.max(x):.2e}")) if differ else (
                lambda x: ("-", "-"))
            rows.append([name, model, n_inputs, f"{differ / n_inputs:.1%}", *stats(distance),
                         *stats(excess)])
    print("## 3. The paper's order (ball, then clip) vs the exact projection\n")
    print(markdown_table(["layout", "points", "inputs", "differ",
                          "median ||z'-z||/||z||", "max ||z'-z||/||z||",
                          "median objective excess", "max objective excess"], rows))
    print("\n(objective excess: (||z' - v||^2 - ||z - v||^2) / ||z - v||^2, over the inputs "
          "where they differ; 'differ': ||z' - z|| > 1e-12 sigma)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=int, default=10**6, dest="max_n")
    parser.add_argument("--cvxpy-repeat", type=int, default=3, dest="cvxpy_repeat",
                        help="CVXPY projections per layout (median)")
    parser.add_argument("--inputs", type=int, default=1000,
                        help="random inputs per layout and point model for the paper's order")
    add_common_args(parser)
    args = parser.parse_args()
    print_machine()
    print(f"BLAS threads: {args.blas_threads or 'library default'}\n")
    rng = np.random.default_rng(0)
    with blas_threads(args.blas_threads):
        first_call()
        against_cvxpy(args.cvxpy_repeat, rng)
        scaling(args.max_n, rng)
        paper_order(args.inputs, rng)


if __name__ == "__main__":
    main()
