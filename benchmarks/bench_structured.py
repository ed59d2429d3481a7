"""Structured ranking SVMs (DORM, SVM MAP, RankMM, 1-slack): oracles, masters, DORM training.

Issue 9's "Performance" items for the structured solvers, in one process, one BLAS thread:

1. **Oracle time per query** (ms, median of timeit-style repeats) for one query of n = 50,
   100, 200 documents, d = 45 features (random features, three grades in OHSUMED's
   proportions, fixed seed): DORM's NDCG@10 most violated permutation by the linear
   assignment problem (``most_violated_permutation(..., method="lap")``, scipy's
   ``linear_sum_assignment`` on the n x n gains), DORM's sorting shortcut where it applies
   (w = 0, Le & Smola's case "a = c" with random w) with the LAP on the same input beside
   it, and SVM MAP's greedy search (``most_violated_ranking``); fitted exponents in n. The
   real runs of part 3 give the oracle's time per query on OHSUMED too.
2. **Masters on recorded working sets**: the hand-written master against CVXPY's
   (Clarabel) on the same working set, at several working-set sizes:

   * 1-slack (hinge RankSVM, OHSUMED Fold1 train, C = 1e-3 and 1e-2): the final
     ``run.info["cuts"]`` of ``solve_one_slack``; its first t cuts (the zero cut first) are
     the working set of the t-th master. ``simplex_qp`` cold (from the vertex) and warm
     (from the previous master's multipliers, as the solver calls it) against
     ``solve_master_cvxpy`` (the one-block master in CVXPY);
   * n-slack (SVM MAP and RankMM "average" on OHSUMED Fold1 vali at C = 10): every master's
     working set captured while
     ``solve_cutting_plane(f, master="cvxpy")`` runs (a wrapper around
     ``cutting_plane.solve_master_cvxpy`` copies it); ``solve_master_blocks`` (tol 1e-10)
     cold (as the solver runs it) and warm (from the previous master's multipliers, 0 for new
     cuts) against ``solve_master_cvxpy`` (Clarabel at its defaults, as the solver calls it).

   "CVXPY" is the library's whole call (problem construction, canonicalization, Clarabel);
   "Clarabel" is Clarabel's own ``solve_time`` for the same problem built the same way.
   Agreement: the relative difference of the two masters' optimal values (dual value for the
   hand-written master, Clarabel's primal value).
3. **DORM training** (NDCG@10, C = 1 and 10; the default n-slack cutting plane with the CVXPY
   master, and with ``master="blocks"``) on OHSUMED Fold1 train against PRSVM+ (RankSVM
   squared hinge, C = 5e-5, certified gap 1e-8) on the same fold, fresh formulations, medians
   of ``--repeat`` runs: wall clock of the fit call, wall clock including the formulation's
   construction, the solver clock (``Run.time``) and its solve part. DORM's optimum on these
   queries is w = 0 (certified: ``info["zero_model"]``); the table shows what the runs
   return.

Run: ``.venv/bin/python benchmarks/bench_structured.py [--repeat 3] [--blas-threads 1]``
(about 2-3 min; parts 2 and 3 need ../shared/data).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from typing import Any

import numpy as np
from _common import (
    OHSUMED,
    add_common_args,
    check_no_recompile,
    markdown_table,
    median_time,
    print_machine,
    warm_up,
)

from cvxrank.data import read_letor_fold
from cvxrank.experiments.tasks import fit_timed
from cvxrank.formulations.dorm import DORM
from cvxrank.formulations.rankmm import RankMM
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.formulations.svmmap import SVMMAP
from cvxrank.oracles.dorm import (
    ideal_order,
    most_violated_permutation,
    position_coefficients,
    score_vectors,
)
from cvxrank.oracles.svmmap import most_violated_ranking
from cvxrank.solvers import cutting_plane
from cvxrank.solvers.cutting_plane import (
    WorkingSet,
    solve_cutting_plane,
    solve_master_blocks,
    solve_master_cvxpy,
)
from cvxrank.solvers.one_slack import solve_one_slack
from cvxrank.solvers.simplex_product_qp import simplex_qp
from cvxrank.utils.threads import blas_threads

SIZES = (50, 100, 200)
D = 45
GRADE_P = (0.6, 0.2, 0.2)  # OHSUMED's grades 0, 1, 2, roughly
PRSVM_C = 5e-5


def exponent(ns, ts) -> float:
    """Slope of log t against log n (least squares)."""
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


# ----------------------------------------------------------------------------- part 1
def part_oracles(seed: int) -> None:
    print("## 1. Oracle time per query (one query, d = 45, random features, fixed seed)\n")
    rng = np.random.default_rng(seed)
    rows, series = [], {k: [] for k in ("lap", "lap0", "sort0", "lapac", "sortac", "map")}
    for n in SIZES:
        X = rng.normal(size=(n, D))
        y = rng.choice(3, size=n, p=GRADE_P).astype(float)
        y[:2] = (2.0, 0.0)  # two grades at least
        w = rng.normal(size=D) / np.sqrt(D)
        zero = np.zeros(D)
        a, b = score_vectors(y, "ndcg", cutoff=10)
        c = position_coefficients(n, "power", d=0.5)
        ref = ideal_order(y)
        relevant = y >= 1

        def dorm(w_, a_, method, X=X, b=b, c=c, ref=ref):
            return lambda: most_violated_permutation(X, w_, a_, b, c, ref, method=method)

        cases = {
            "lap": dorm(w, a, "lap"),      # NDCG@10, random w: the LAP
            "lap0": dorm(zero, a, "lap"),  # w = 0 by the LAP
            "sort0": dorm(zero, a, "auto"),  # w = 0: the sort applies (case 2)
            "lapac": dorm(w, c, "lap"),    # a = c, random w, by the LAP
            "sortac": dorm(w, c, "auto"),  # a = c: the sort applies (case 1)
            "map": lambda X=X, w=w, relevant=relevant: most_violated_ranking(X, w, relevant),
        }
        assert dorm(w, a, "auto")().solver == "lap"
        assert cases["sort0"]().solver == "sort" and cases["sortac"]().solver == "sort"
        # the shortcut finds an optimal ranking: same objective as the LAP's
        for short, lap in (("sort0", "lap0"), ("sortac", "lapac")):
            vs, vl = cases[short](), cases[lap]()
            assert abs(vs.value - vl.value) <= 1e-9 * (1 + abs(vl.value)), short
        times = {k: median_time(fn, repeat=9) for k, fn in cases.items()}
        for k, t in times.items():
            series[k].append(t)
        rows.append([n, f"{int(relevant.sum())}/{n - int(relevant.sum())}",
                     f"{1e3 * times['lap']:.3f}", f"{1e3 * times['lap0']:.3f}",
                     f"{1e3 * times['sort0']:.3f}", f"{times['lap0'] / times['sort0']:.0f}x",
                     f"{1e3 * times['lapac']:.3f}", f"{1e3 * times['sortac']:.3f}",
                     f"{times['lapac'] / times['sortac']:.0f}x", f"{1e3 * times['map']:.3f}",
                     f"{times['lap'] / times['map']:.1f}x"])
    print(markdown_table(
        ["n", "relevant/irrelevant", "DORM NDCG@10 LAP [ms]", "LAP, w = 0 [ms]",
         "sort, w = 0 [ms]", "LAP / sort (w = 0)", "LAP, a = c [ms]", "sort, a = c [ms]",
         "LAP / sort (a = c)", "SVM MAP greedy [ms]", "DORM LAP / SVM MAP"], rows))
    labels = {"lap": "DORM LAP (NDCG@10)", "lap0": "LAP at w = 0", "sort0": "sort at w = 0",
              "lapac": "LAP at a = c", "sortac": "sort at a = c", "map": "SVM MAP greedy"}
    print("\nfitted exponents in n (50 ... 200): " + ", ".join(
        f"{labels[k]} {exponent(SIZES, v):.2f}" for k, v in series.items()) + "\n")


# ----------------------------------------------------------------------------- part 2
def clarabel_master(working, n_blocks, kappa) -> tuple[float, float]:
    """``solve_master_cvxpy``'s problem, built the same way: (value, Clarabel's solve time)."""
    import cvxpy as cp

    w = cp.Variable(working.gradient.shape[1])
    xi = cp.Variable(n_blocks)
    cuts = xi[working.block] >= working.offset - working.gradient @ w
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + kappa * cp.sum(xi)),
                         [cuts, xi >= 0])
    problem.solve(solver="CLARABEL")
    return float(problem.value), float(problem.solver_stats.solve_time)


def pick(total: int, k: int = 5) -> list[int]:
    """About k geometrically spaced sizes in 1 ... total, the last one included."""
    return sorted({int(round(s)) for s in np.geomspace(max(2, total // 20), total, k)})


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def rel_norm(u: np.ndarray, v: np.ndarray) -> float:
    return float(np.linalg.norm(u - v) / max(np.linalg.norm(v), 1e-300))


def part_one_slack(train, Cs, repeat: int) -> None:
    print("## 2a. 1-slack master (hinge RankSVM, OHSUMED Fold1 train): hand-written "
          "`simplex_qp` against CVXPY on the recorded working set\n")
    rows, ratios = [], []
    for C in Cs:
        f = RankSVM(train, C=C, loss="hinge")
        run = solve_one_slack(f)
        ws = run.info["cuts"]
        T = ws.offset.size
        print(f"C = {C:g}: {run.n_iter} iterations, {T} cuts (the zero cut included), "
              f"converged {run.converged}, certified gap {run.relative_gap:.1e}, "
              f"{run.time:.3f} s")
        lam_prev = {}
        for t in range(2, T + 1):  # the multipliers of every master (the warm starts)
            start = np.r_[lam_prev.get(t - 1, np.array([C])), 0.0][:t]
            lam_prev[t], _ = simplex_qp(ws.gram[:t, :t], ws.offset[:t], C, start)
        for t in pick(T):
            G, c, Q = ws.gradient[:t], ws.offset[:t], ws.gram[:t, :t]
            working = WorkingSet(G.shape[1])
            working.add(c, G, ws.block[:t])
            warm = np.r_[lam_prev.get(t - 1, np.array([C])), 0.0][:t]

            def hand(x0=None, Q=Q, c=c, G=G, C=C):
                lam, _ = simplex_qp(Q, c, C, x0)
                return lam, lam @ G

            t_cold = median_time(hand, repeat=repeat)
            t_warm = median_time(lambda warm=warm, hand=hand: hand(warm), repeat=repeat)
            t_cvx = median_time(lambda ws_=working, C=C: solve_master_cvxpy(ws_, 1, C),
                                repeat=repeat, min_time=0.0)
            lam, w_hand = hand()
            d_hand = float(c @ lam - 0.5 * lam @ Q @ lam)
            p_hand = float(0.5 * w_hand @ w_hand + C * max(0.0, float(np.max(c - G @ w_hand))))
            w_cvx, _ = solve_master_cvxpy(working, 1, C)
            v_cvx = float(0.5 * w_cvx @ w_cvx + C * max(0.0, float(np.max(c - G @ w_cvx))))
            v_cl, t_cl = clarabel_master(working, 1, C)
            ratios.append(t_cvx / t_cold)
            rows.append([f"{C:g}", t, f"{v_cvx:.10g}", f"{d_hand:.10g}",
                         f"{rel(d_hand, v_cvx):.1e}", f"{rel(p_hand, d_hand):.1e}",
                         f"{rel_norm(w_hand, w_cvx):.1e}",
                         f"{1e3 * t_cold:.3f}", f"{1e3 * t_warm:.3f}", f"{1e3 * t_cvx:.2f}",
                         f"{1e3 * t_cl:.2f}", f"**{t_cvx / t_cold:.0f}x**",
                         f"{t_cvx / t_warm:.0f}x", f"{t_cl / t_cold:.1f}x"])
    print()
    print(markdown_table(
        ["C", "cuts t", "CVXPY value", "hand dual value", "rel. diff.", "hand's own gap",
         "rel. diff. of w", "hand cold [ms]", "hand warm [ms]", "CVXPY [ms]",
         "Clarabel solve [ms]", "CVXPY / hand cold", "CVXPY / hand warm",
         "Clarabel solve / hand cold"], rows))
    print(f"\nCVXPY / hand-written (cold): {min(ratios):.0f}x ... {max(ratios):.0f}x\n")


def capture_working_sets(f) -> tuple[Any, list]:
    """Run ``solve_cutting_plane(f, master="cvxpy")`` and copy every master's working set."""
    sets = []
    original = cutting_plane.solve_master_cvxpy

    def recording(working, n_blocks, kappa, solver_name="CLARABEL"):
        sets.append(copy.deepcopy(working))
        return original(working, n_blocks, kappa, solver_name)

    cutting_plane.solve_master_cvxpy = recording
    try:
        run = solve_cutting_plane(f, master="cvxpy")
    finally:
        cutting_plane.solve_master_cvxpy = original
    return run, sets


def part_n_slack(cases, repeat: int) -> None:
    print("## 2b. n-slack master: hand-written `solve_master_blocks` against CVXPY "
          "(`solve_master_cvxpy`) on the working sets of real runs\n")
    rows, ratios = [], []
    for name, f in cases:
        run, sets = capture_working_sets(f)
        kappa, n_blocks = float(f.C) / f.m, int(f.queries_with_pairs.size)
        print(f"{name}: {run.n_iter} iterations, {len(sets)} masters, working sets of "
              f"{len(sets[0])} ... {len(sets[-1])} cuts, converged {run.converged}, "
              f"objective {run.objective:.10g}, ||w|| {np.linalg.norm(run.w):.3g}")
        masters = len(sets)
        for k in sorted({max(0, int(round(s)) - 1) for s in np.geomspace(1, masters, 3)}):
            ws = sets[k]

            def hand(lam0=None, ws=ws, n_blocks=n_blocks, kappa=kappa):
                return solve_master_blocks(ws, n_blocks, kappa, lam0, tol=1e-8,
                                           max_sweeps=500)

            t_cold = median_time(hand, repeat=repeat, min_time=0.0)
            warm = ws.multiplier.copy()
            t_warm = median_time(lambda warm=warm, hand=hand: hand(warm), repeat=repeat,
                                 min_time=0.0)
            t_cvx = median_time(lambda ws=ws, nb=n_blocks, kp=kappa: solve_master_cvxpy(
                ws, nb, kp), repeat=repeat, min_time=0.0)
            w_h, lam_h = hand()
            w_c, lam_c = solve_master_cvxpy(ws, n_blocks, kappa)
            v_cl, t_cl = clarabel_master(ws, n_blocks, kappa)
            d_h, d_c = ws.dual_value(lam_h), ws.dual_value(lam_c)
            ratios.append(t_cvx / t_cold)
            rows.append([name, k + 1, len(ws), f"{v_cl:.10g}", f"{d_c:.10g}", f"{d_h:.10g}",
                         f"{rel(d_h, v_cl):.1e}",
                         f"{rel_norm(w_h, w_c):.1e}",
                         f"{1e3 * t_cold:.2f}", f"{1e3 * t_warm:.2f}", f"{1e3 * t_cvx:.1f}",
                         f"{1e3 * t_cl:.1f}", f"**{t_cvx / t_cold:.1f}x**",
                         f"{t_cvx / t_warm:.1f}x", f"{t_cl / t_cold:.2f}x"])
    print()
    print(markdown_table(
        ["run", "master #", "cuts", "Clarabel value", "CVXPY dual bound", "hand dual bound",
         "rel. diff. (hand vs Clarabel)", "rel. diff. of w", "hand cold [ms]",
         "hand warm [ms]", "CVXPY [ms]", "Clarabel solve [ms]", "CVXPY / hand cold",
         "CVXPY / hand warm", "Clarabel solve / hand cold"], rows))
    print(f"\nCVXPY / hand-written (cold): {min(ratios):.1f}x ... {max(ratios):.1f}x\n")


# ----------------------------------------------------------------------------- part 3
def timed_fit(make, fit) -> dict:
    start = time.perf_counter()
    f = make()
    built = time.perf_counter() - start
    run, wall = fit(f)
    return {"run": run, "wall": wall, "built": built, "f": f}


def part_dorm(train, repeat: int) -> None:
    print("## 3. DORM (NDCG@10) training on OHSUMED Fold1 train against PRSVM+ on the same "
          "fold\n")
    n_docs = train.X.shape[0]
    configs = [
        (f"PRSVM+ (squared hinge, C = {PRSVM_C:g}, tol 1e-8)",
         lambda: RankSVM(train, C=PRSVM_C, loss="squared_hinge"),
         lambda f: fit_timed(f, "prsvm+", tol=1e-8), max(5, repeat)),
    ]
    for C in (1.0, 10.0):
        configs.append((f"DORM NDCG@10, C = {C:g} (`fit`, cutting plane, CVXPY master)",
                        lambda C=C: DORM(train, C=C, loss="ndcg@10"),
                        lambda f: fit_timed(f, "auto"), repeat))
    rows, walls = [], {}
    for name, make, fit, n_rep in configs:
        results = [timed_fit(make, fit) for _ in range(n_rep)]
        run, f = results[-1]["run"], results[-1]["f"]
        wall = statistics.median(r["wall"] for r in results)
        walls[name] = wall
        info = run.info
        iters = max(run.n_iter, 1)
        oracle = info.get("oracle_time")
        n_q = int(getattr(f, "queries_with_pairs", np.zeros(0)).size) or None
        per_query = (f"{1e3 * oracle / (iters * n_q):.2f}" if oracle is not None and n_q
                     else "")
        rows.append([
            name, n_rep, f"{wall:.3f}",
            f"{statistics.median(r['wall'] + r['built'] for r in results):.3f}",
            f"{statistics.median(r['run'].time for r in results):.3f}",
            f"{statistics.median(r['run'].solve_time for r in results):.3f}",
            run.n_iter, info.get("n_cuts", ""),
            f"{info['master_time']:.3f}" if "master_time" in info else "",
            f"{oracle:.3f}" if oracle is not None else "", per_query,
            f"{run.objective:.10g}", f"{run.relative_gap:.1e}",
            f"{np.linalg.norm(run.w):.3g}", info.get("zero_model", ""), run.converged,
        ])
    print(markdown_table(
        ["method", "runs", "fit wall [s]", "wall incl. construction [s]", "solver clock [s]",
         "of which solve [s]", "iterations", "cuts at end", "master [s]", "oracle [s]",
         "oracle per query per iteration [ms]", "objective", "cert. gap", "||w||",
         "zero_model", "converged"], rows))
    base = walls[configs[0][0]]
    print(f"\nFold1 train: {n_docs:,} documents, {train.n_queries} queries. "
          "Ratios of fit wall clocks to PRSVM+'s:")
    for name, wall in walls.items():
        if name != configs[0][0]:
            print(f"  {name}: {wall / base:.0f}x")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per DORM fit (PRSVM+: at least 5); repeats of the master "
                        "timings are 2x this + 1")
    parser.add_argument("--seed", type=int, default=0)
    add_common_args(parser)
    args = parser.parse_args()
    print_machine()
    print(f"BLAS threads: {args.blas_threads or 'library default'}\n")
    with blas_threads(args.blas_threads):
        warm_up()
        part_oracles(args.seed)
        if not (OHSUMED / "Fold1" / "train.txt").exists():
            print(f"{OHSUMED} not found: parts 2 and 3 skipped")
            return
        fold = read_letor_fold(OHSUMED, 1, splits=("train", "vali"))
        train, vali = fold["train"], fold["vali"]
        reps = 2 * args.repeat + 1
        part_one_slack(train, (1e-3, 1e-2), reps)
        part_n_slack([("SVM MAP, vali, C = 10", SVMMAP(vali, C=10.0)),
                      ("RankMM average, vali, C = 10", RankMM(vali, C=10.0, loss="average"))],
                     1)
        part_dorm(train, args.repeat)
    check_no_recompile()


if __name__ == "__main__":
    main()
