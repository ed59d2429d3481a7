"""RankMM's solvers against the CVXPY reference on OHSUMED Fold1: time to relative gap 1e-3.

Issue 7 asks for the time to a relative duality gap of 1e-3 of each stochastic solver
(:mod:`cvxrank.solvers.rankmm`) against the CVXPY solve of the same problem, as ratios:

* RankMM-1 (``"average"``, box dual): ``sgp``;
* RankMM-2 (``"max"``, simplex dual): ``seg`` (factored EG step) and ``seg-pairs`` (plain);
* RankMM-3 (``"max_average"``, l1,inf dual): ``sgp`` with the exact projection and with the
  paper's order (project onto the ball, then clip);
* and, for every loss, the deterministic baseline ``apg`` (FISTA on the same dual).

Each run stops at the first record where its certified relative gap
``(P(w) - D(alpha)) / P(w)`` is at most 1e-3 (records every ``--record-epochs`` passes over
the queries, i.e. that many times the number of queries with pairs, in steps; ``apg`` checks
every iteration), or at ``--budget`` seconds. Its time is ``Run.time`` of a call on a fresh
formulation: the pairs, the per-query blocks, the default step (Lipschitz constants) and
the certificates at the records are included. The stochastic solvers run with their default
step (``eta0=None``: the pilot of ``cvxrank.solvers.rankmm.pilot_eta0``, its time included)
and with ``--multiples`` of the theory's worst-case step ``default_eta0`` (see the module
docstring of ``cvxrank.solvers.rankmm``), seed 0; the fastest stochastic setting of each
loss that reached the gap is in bold.

CVXPY: ``solve_reference(f, "CLARABEL", cache=False)`` of a fresh formulation, which solves
the primal QP and the printed dual (``Reference.primal_time`` and ``dual_time``: CVXPY
compilation plus Clarabel) and certifies them against each other (1e-7). The ratios printed
are CVXPY primal + dual over the solver's time and the faster of the two over it; the
reference also gives p*, so the table shows each run's true relative gap ``(P(w) - p*) / p*``
beside its certificate, and whether ``w = 0`` is optimal (``P(0) = p*`` up to Clarabel's
accuracy). The pairs of the split are counted first; ``--split vali`` runs the smaller
validation file (135,942 pairs against 367,663 in train).

Run: ``.venv/bin/python benchmarks/bench_rankmm_solvers.py [--C 10 1] [--budget 120]``
(about 50 minutes with the defaults: every setting that does not reach the gap runs for the
whole budget).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from _common import OHSUMED, add_common_args, markdown_table, print_machine

from cvxrank.certificates.reference import solve_reference
from cvxrank.data import count_pairs, read_svmlight
from cvxrank.formulations.rankmm import RANKMM_LOSSES, RankMM
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient
from cvxrank.solvers.rankmm import default_eta0, solve_seg, solve_seg_pairs, solve_sgp
from cvxrank.utils.threads import blas_threads

GAP = 1e-3

#: The stochastic solvers of each loss: (label, solver, options).
STOCHASTIC: dict[str, list[tuple[str, Any, dict[str, Any]]]] = {
    "average": [("sgp (box)", solve_sgp, {})],
    "max": [("seg (factored)", solve_seg, {}), ("seg-pairs (plain)", solve_seg_pairs, {})],
    "max_average": [("sgp (exact l1,inf)", solve_sgp, {"projection": "exact"}),
                    ("sgp (paper's order)", solve_sgp, {"projection": "paper"})],
}


def run_row(label: str, run: Any, f: RankMM, ref: Any, cvxpy_total: float, cvxpy_best: float,
            eta: str) -> list[object]:
    """One table row: the run's time, gaps and the CVXPY ratios (if it reached the gap)."""
    reached = run.converged
    true_gap = (f.primal_value(run.w) - ref.p_star) / ref.p_star
    ratio = (lambda t: f"{t / run.time:.1f}x") if reached else (lambda t: "-")
    return [label, eta, f"{run.n_iter:,}", f"{run.time:.2f}" if reached else f"> {run.time:.0f}",
            f"{run.relative_gap:.1e}", f"{true_gap:.1e}", ratio(cvxpy_total),
            ratio(cvxpy_best)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--C", type=float, nargs="+", default=[10.0, 1.0])
    parser.add_argument("--split", default="train", choices=("train", "vali"))
    parser.add_argument("--losses", nargs="+", default=list(RANKMM_LOSSES),
                        choices=RANKMM_LOSSES)
    parser.add_argument("--budget", type=float, default=120.0,
                        help="seconds per run before it is stopped (default 120)")
    parser.add_argument("--multiples", type=float, nargs="+", default=[1.0, 10.0, 100.0, 1000.0],
                        help="eta0 as multiples of the default step (default 1 10 100 1000)")
    parser.add_argument("--record-epochs", type=int, default=5, dest="record_epochs",
                        help="records every this many passes over the queries (default 5)")
    add_common_args(parser)
    args = parser.parse_args()
    print_machine()
    path = OHSUMED / "Fold1" / f"{args.split}.txt"
    data = read_svmlight(path)
    per_query = count_pairs(data)
    print(f"\n{path}: {data.n_documents:,} documents, {data.n_queries} queries "
          f"({int(np.count_nonzero(per_query))} with pairs), {int(per_query.sum()):,} pairs "
          f"(largest query {int(per_query.max()):,}); d = {data.n_features}")
    print(f"stop at certified relative gap {GAP:g} or after {args.budget:g} s; BLAS threads: "
          f"{args.blas_threads or 'library default'}\n")
    every = args.record_epochs * int(np.count_nonzero(per_query))
    headers = ["solver", "eta0", "steps", "time to 1e-3 [s]", "cert. gap", "true gap",
               "CVXPY (primal+dual) / it", "faster CVXPY / it"]
    started = time.perf_counter()
    with blas_threads(args.blas_threads):
        for C in args.C:
            for loss in args.losses:
                f = RankMM(data, C=C, loss=loss)
                ref = solve_reference(f, "CLARABEL", cache=False)
                total, best = ref.primal_time + ref.dual_time, min(ref.primal_time,
                                                                    ref.dual_time)
                p_zero = f.primal_value(np.zeros(data.n_features))
                print(f"### C = {C:g}, loss {loss!r}\n")
                print(f"CVXPY (Clarabel): primal {ref.primal_time:.1f} s, dual "
                      f"{ref.dual_time:.1f} s (total {total:.1f} s); p* = {ref.p_star:.10g}, "
                      f"||w*|| = {np.linalg.norm(ref.w):.3g}, P(0) = {p_zero:.10g}, "
                      f"(P(0) - p*) / p* = {(p_zero - ref.p_star) / ref.p_star:.1e}")
                rows = []
                base = default_eta0(f)
                fastest: tuple[float, int] | None = None
                for label, solve, options in STOCHASTIC[loss]:
                    run = solve(RankMM(data, C=C, loss=loss), tol=GAP, seed=0, max_iter=10**9,
                                time_budget=args.budget, record_every=every, **options)
                    eta = f"pilot: {run.info['eta0'] / base:.3g} x {base:.3g}"
                    rows.append(run_row(f"{label}, default", run, f, ref, total, best, eta))
                    print(f"  {label}, default eta0 ({eta}): {run.message} ({run.time:.1f} s)",
                          flush=True)
                    for multiple in args.multiples:
                        run = solve(RankMM(data, C=C, loss=loss), tol=GAP, seed=0,
                                    max_iter=10**9, time_budget=args.budget,
                                    record_every=every, eta0=multiple * base, **options)
                        eta = f"{multiple:g} x {base:.3g}"
                        rows.append(run_row(label, run, f, ref, total, best, eta))
                        if run.converged and (fastest is None or run.time < fastest[0]):
                            fastest = (run.time, len(rows) - 1)
                        print(f"  {label}, eta0 {eta}: {run.message} ({run.time:.1f} s)",
                              flush=True)
                run = solve_accelerated_gradient(RankMM(data, C=C, loss=loss), tol=GAP,
                                                 max_iter=10**7, time_budget=args.budget)
                rows.append(run_row("apg (FISTA)", run, f, ref, total, best,
                                    f"1/L, L = {run.info['L']:.3g}"))
                if fastest is not None:
                    rows[fastest[1]][0] = f"**{rows[fastest[1]][0]}**"
                print()
                print(markdown_table(headers, rows))
                print()
    print(f"total time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
