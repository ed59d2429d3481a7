"""A user-defined pair loss under the built-in Newton solver, against the same loss built in.

Target (issue "an open sandbox"): a pairwise loss defined by a user
(:class:`cvxrank.sandbox.PairLoss`: a CVXPY atom and numpy derivatives) and solved by the
built-in truncated Newton PRSVM (``solve_prsvm``, the explicit pair operator) costs at most
1.5x the same loss built in: the squared hinge as a user's loss
(:class:`cvxrank.sandbox.PairwiseFormulation`) against today's PRSVM on the package's
``RankSVM(loss="squared_hinge")``, on OHSUMED Fold1 train.txt (367,663 pairs), C = 1e-4, both
to the certified relative duality gap 1e-8 (their default), reaching the same objective to
1e-8 relative.

Each run is a whole ``solve_prsvm`` call on a fresh formulation (the pairs, the operator A
and its transpose are built inside it, on both sides; the user's loss is defined once, as in
a notebook: its check against CVXPY is a one-off at definition and is timed separately).
The times are CPU seconds of this process (``time.process_time``, one BLAS thread), the two
sides alternating for ``--rounds`` rounds; the ratio is of the medians. Also shown: the
solvers' own clocks (``Run.time``), Newton and CG iterations, and one loss evaluation with its
Hessian-vector product on each engine (``timeit``-style medians), where the difference lives.

Run: ``.venv/bin/python benchmarks/bench_user_loss.py [--rounds 7] [--blas-threads 1]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import cvxpy as cp
import numpy as np
from _common import OHSUMED, add_common_args, markdown_table, median_time, print_machine, verdict

from cvxrank.data import read_svmlight
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.sandbox import PairLoss, PairwiseFormulation
from cvxrank.solvers import solve_prsvm
from cvxrank.utils.threads import blas_threads

TARGET = 1.5
OBJECTIVE_MATCH = 1e-8
C = 1e-4


def user_squared_hinge() -> PairLoss:
    """The squared hinge max(0, 1 - t)^2 written as a user writes a loss."""
    return PairLoss("my_squared_hinge",
                    lambda t: cp.square(cp.pos(1 - t)),
                    lambda t: np.maximum(1.0 - t, 0.0) ** 2,
                    lambda t: -2.0 * np.maximum(1.0 - t, 0.0),
                    lambda t: 2.0 * (t < 1.0),
                    curvature_range=(2.0, 2.0))


def cpu_run(make):
    """A fresh formulation, then ``solve_prsvm`` on it: (CPU seconds of the call, run)."""
    f = make()
    start = time.process_time()
    run = solve_prsvm(f)
    return time.process_time() - start, run, f


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    add_common_args(parser)
    args = parser.parse_args()
    path = OHSUMED / "Fold1" / "train.txt"
    if not path.is_file():
        raise SystemExit(f"{path} not found: this benchmark needs ../shared/data")
    print_machine()
    print(f"BLAS threads: {args.blas_threads or 'library default'}; CPUs {os.cpu_count()}\n")
    data = read_svmlight(path)
    start = time.process_time()
    loss = user_squared_hinge()
    check_cost = time.process_time() - start
    sides = {"built-in RankSVM squared hinge": lambda: RankSVM(data, C=C, loss="squared_hinge"),
             "user PairLoss squared hinge": lambda: PairwiseFormulation(data, loss, C=C)}
    times: dict[str, list[float]] = {k: [] for k in sides}
    runs, formulations = {}, {}
    with blas_threads(args.blas_threads):
        for make in sides.values():  # warm-up: imports, first allocations
            cpu_run(make)
        for r in range(args.rounds):
            for name, make in sides.items():
                seconds, runs[name], formulations[name] = cpu_run(make)
                times[name].append(seconds)
            print(f"  round {r + 1}: " + ", ".join(f"{k.split()[0]} {v[-1]:.3f} s"
                                                 for k, v in times.items()), flush=True)
        engines = {name: f.loss_engine("pairs") for name, f in formulations.items()}
        s = data.X @ runs["built-in RankSVM squared hinge"].w
        delta = np.random.default_rng(0).standard_normal(s.size)
        per_eval = {name: median_time(lambda e=e: e.evaluate(s).hessp(delta))
                    for name, e in engines.items()}
    builtin_f = formulations["built-in RankSVM squared hinge"]
    reference = runs["built-in RankSVM squared hinge"].objective
    rows = []
    for name in sides:
        run = runs[name]
        rows.append([name, f"{statistics.median(times[name]):.3f}",
                     f"{min(times[name]):.3f}-{max(times[name]):.3f}", f"{run.time:.3f}",
                     run.n_iter, sum(run.info["cg_iterations"]), f"{run.relative_gap:.1e}",
                     f"{run.objective:.12g}",
                     f"{abs(builtin_f.primal_value(run.w) - reference) / reference:.1e}",
                     f"{per_eval[name] * 1e3:.2f}"])
    print()
    print(f"OHSUMED Fold1 train: {data.n_documents:,} documents, {data.n_features} features, "
          f"{builtin_f.n_dual:,} pairs, C = {C:g}; {args.rounds} rounds")
    print(f"the user's loss checked against CVXPY at its definition: {check_cost:.2f} s CPU "
          "(once)\n")
    print(markdown_table(
        ["formulation", "CPU s (median)", "CPU s (range)", "solver clock s", "Newton it",
         "CG it", "certified rel. gap", "objective", "rel. diff. to built-in",
         "evaluate + Hv [ms]"], rows))
    names = list(sides)
    ratio = statistics.median(times[names[1]]) / statistics.median(times[names[0]])
    objective_gap = abs(runs[names[1]].objective - reference) / reference
    print(f"\nload average (1, 5, 15 min) after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"target: user / built-in CPU time <= {TARGET:g}: {ratio:.2f}x: "
          f"{verdict(ratio <= TARGET)}")
    print(f"target: same objective to {OBJECTIVE_MATCH:g} relative: {objective_gap:.1e}: "
          f"{verdict(objective_gap <= OBJECTIVE_MATCH)}")


if __name__ == "__main__":
    main()
