"""``cvxrank grid`` on the five OHSUMED folds x 10 values of C with PRSVM+, on three backends.

Targets (issue 10): on 2 cores, the ``processes`` backend with 2 workers at least 1.7x faster
than ``sequential``, and the ``dask`` backend (local cluster, 2 workers) within 1.3x of
``processes``.

Each run is a whole ``cvxrank grid --method ranksvm --loss squared_hinge --solver prsvm+
--param C=... --select map --json`` process (``python -m cvxrank.cli.main``), timed by
wall-clock from its start to its exit: what a user waits for, interpreter start, imports,
worker start-up (loky processes, the Dask cluster) and shut-down included. Beside it, the
command's own ``elapsed`` (its JSON), the *grid phase*: wall-clock from starting the workers
to the last result (for the local Dask cluster, its shut-down too), i.e. without the
interpreter's start and the command's imports. The backends run alternately, ``--rounds``
times each; the medians and their ratios are printed side by side. Every run's selections and
measures are checked to be identical across backends.

The same grid with ``--solver prsvm`` (explicit pairs: fits about ten times heavier) runs too
(``--solvers``), to show how the backends scale once the fits, not the fixed costs, dominate.
The fixed costs are measured first: starting Python and importing what a worker imports, and
reading the fifteen files (each worker reads the folds it runs, once).

Run: ``.venv/bin/python benchmarks/bench_grid.py [--rounds 3] [--workers 2]
[--solvers prsvm+ prsvm]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import OHSUMED, markdown_table, print_machine, verdict

#: The ten values of C of the grid (eq. (1)'s convention).
C_VALUES = "1e-6,5e-6,1e-5,5e-5,1e-4,5e-4,1e-3,5e-3,1e-2,5e-2"
BACKENDS = ("sequential", "processes", "dask")
PROCESSES_TARGET = 1.7
DASK_TARGET = 1.3


def run_grid(backend: str, workers: int, solver: str) -> tuple[float, dict]:
    """One ``cvxrank grid`` process: its wall-clock seconds and its JSON."""
    cmd = [sys.executable, "-m", "cvxrank.cli.main", "grid", "--method", "ranksvm",
           "--loss", "squared_hinge", "--solver", solver, "--data", str(OHSUMED),
           "--param", f"C={C_VALUES}", "--select", "map", "--backend", backend, "--json"]
    if backend != "sequential":
        cmd += ["--workers", str(workers)]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{backend}: exit {done.returncode}: {done.stderr.strip()}")
    return elapsed, json.loads(done.stdout)


def outcome(doc: dict) -> list:
    """What must not depend on the backend: selections, measures, objectives."""
    return [(f["fold"], f["selected"], f["test"],
             [(p["vali"], p["test"], p["objective"], p["n_iter"]) for p in f["points"]])
            for f in doc["folds"]]


def fixed_costs() -> tuple[float, float]:
    """Seconds to start Python and import what a worker imports, and to read the 15 files."""
    code = "import cvxrank.experiments.tasks, cvxrank.fitting, cvxrank.registry"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    imports = time.perf_counter() - start
    from cvxrank.data import read_svmlight

    start = time.perf_counter()
    for fold in range(1, 6):
        for split in ("train", "vali", "test"):
            read_svmlight(OHSUMED / f"Fold{fold}" / f"{split}.txt")
    return imports, time.perf_counter() - start


def bench(solver: str, rounds: int, workers: int) -> dict[str, float]:
    """Every backend ``rounds`` times, alternating; print the table; return the ratios."""
    print(f"## --solver {solver}\n")
    wall: dict[str, list[float]] = {b: [] for b in BACKENDS}
    phase: dict[str, list[float]] = {b: [] for b in BACKENDS}
    fits: list[float] = []
    reference: list = []
    for r in range(rounds):
        for backend in BACKENDS:
            seconds, doc = run_grid(backend, workers, solver)
            wall[backend].append(seconds)
            phase[backend].append(doc["elapsed"])
            if backend == "sequential":
                fits.append(sum(p["wall_time"] for f in doc["folds"] for p in f["points"]))
            reference = reference or outcome(doc)
            same = outcome(doc) == reference
            print(f"round {r + 1} {backend:10s}: {seconds:6.2f} s process, "
                  f"{doc['elapsed']:6.2f} s grid phase, pids "
                  f"{len({p['pid'] for f in doc['folds'] for p in f['points']})}, "
                  f"same results: {same}", flush=True)
            if not same:
                raise SystemExit(f"{backend} gave different selections or measures")
    med = {b: statistics.median(wall[b]) for b in BACKENDS}
    med_phase = {b: statistics.median(phase[b]) for b in BACKENDS}
    rows = [[b, f"{med[b]:.2f}", f"{med_phase[b]:.2f}", f"{med['sequential'] / med[b]:.2f}x",
             f"{med_phase['sequential'] / med_phase[b]:.2f}x",
             f"{med[b] / med['processes']:.2f}x", f"{med_phase[b] / med_phase['processes']:.2f}x"]
            for b in BACKENDS]
    print()
    print(markdown_table(["backend", "process [s]", "grid phase [s]",
                          "sequential / it (process)", "sequential / it (phase)",
                          "it / processes (process)", "it / processes (phase)"], rows))
    print(f"\n50 fits in the sequential runs: {statistics.median(fits):.2f} s (sum of the "
          "fit calls' wall-clock, median over rounds)")
    print("identical selections and measures on every run; selected C per fold: "
          + ", ".join(f"{fold}: {selected['C']:g}" for fold, selected, _, _ in reference)
          + f"; mean test MAP {statistics.mean(t['map'] for _, _, t, _ in reference):.4f}, "
          f"NDCG@10 {statistics.mean(t['ndcg@10'] for _, _, t, _ in reference):.4f}\n")
    return {"processes": med["sequential"] / med["processes"],
            "processes_phase": med_phase["sequential"] / med_phase["processes"],
            "dask": med["dask"] / med["processes"],
            "dask_phase": med_phase["dask"] / med_phase["processes"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs of each backend")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--solvers", nargs="+", default=["prsvm+", "prsvm"],
                        help="solvers to benchmark (the target is judged on prsvm+; prsvm's "
                        "fits are about ten times heavier)")
    args = parser.parse_args()
    print_machine()
    imports, reading = fixed_costs()
    print(f"grid: 5 folds x C = {C_VALUES} (squared hinge), selection by vali MAP; "
          f"{args.workers} workers; {args.rounds} rounds, backends alternating")
    print(f"fixed costs: starting Python and importing what a worker imports {imports:.2f} s; "
          f"reading the 15 files of the five folds once {reading:.2f} s\n")
    ratios = {solver: bench(solver, args.rounds, args.workers) for solver in args.solvers}
    for solver, r in ratios.items():
        judged = " (the target's configuration)" if solver == "prsvm+" else ""
        print(f"{solver}{judged}:")
        print(f"  processes ({args.workers} workers) >= {PROCESSES_TARGET}x faster than "
              f"sequential, whole process: {r['processes']:.2f}x: "
              f"{verdict(r['processes'] >= PROCESSES_TARGET)} (grid phase: "
              f"{r['processes_phase']:.2f}x)")
        print(f"  dask within {DASK_TARGET}x of processes, whole process: {r['dask']:.2f}x: "
              f"{verdict(r['dask'] <= DASK_TARGET)} (grid phase: {r['dask_phase']:.2f}x)")
    print(f"cores: {os.cpu_count()}; load average now: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    if not Path(OHSUMED).is_dir():
        raise SystemExit(f"{OHSUMED}: not found (../shared/data is needed)")
    main()
