"""Start-up and whole-process cost of the command line, beside the solver clock.

What a user feels is the whole process: interpreter start, imports, reading the file,
set-up (sorting, compiled passes loaded from numba's disk cache) and the solve. This script
runs each command as a fresh process several times and prints medians of wall-clock and CPU
time (user + system of the child), against the targets of issue 11:

* ``cvxrank --help``: under 0.5 s of CPU;
* a one-fold OHSUMED fit with PRSVM+ (``train.txt`` of Fold1, squared hinge, C = 5e-5):
  under 1 s as a whole process, printed beside the ``time`` the fit reports (the solver
  clock: set-up and iterations with their stopping test) and ``python -c "import cvxpy"``
  for scale (the fit does not import CVXPY).

Usage::

    .venv/bin/python benchmarks/bench_startup.py [--repeat 5] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CVXRANK = [sys.executable, "-m", "cvxrank.cli.main"]


def run(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, stdout) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    train = args.data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1" / "train.txt"
    cases = {
        "cvxrank --help": CVXRANK + ["--help"],
        'python -c "import cvxpy"': [sys.executable, "-c", "import cvxpy"],
        "cvxrank fit (PRSVM+, OHSUMED Fold1 train)": CVXRANK + [
            "fit", "--method", "ranksvm", "--loss", "squared_hinge", "--C", "5e-5",
            "--train", str(train), "--json"],
    }
    run(cases["cvxrank fit (PRSVM+, OHSUMED Fold1 train)"])  # fill numba's disk cache
    print(f"{'command':45s} {'wall [s]':>9s} {'CPU [s]':>8s} {'solver clock [s]':>17s}")
    results = {}
    for name, cmd in cases.items():
        walls, cpus, clocks = [], [], []
        for _ in range(args.repeat):
            wall, cpu, out = run(cmd)
            walls.append(wall)
            cpus.append(cpu)
            if name.startswith("cvxrank fit"):
                clocks.append(json.loads(out)["time"])
        results[name] = (statistics.median(walls), statistics.median(cpus),
                         statistics.median(clocks) if clocks else None)
        wall, cpu, clock = results[name]
        clock_text = f"{clock:17.3f}" if clock is not None else f"{'-':>17s}"
        print(f"{name:45s} {wall:9.3f} {cpu:8.3f} {clock_text}")
    help_cpu = results["cvxrank --help"][1]
    fit_wall, _, fit_clock = results["cvxrank fit (PRSVM+, OHSUMED Fold1 train)"]
    print(f"\n--help CPU {help_cpu:.3f} s (target < 0.5 s): "
          f"{'met' if help_cpu < 0.5 else 'NOT met'}")
    print(f"fit whole process {fit_wall:.3f} s (target < 1 s): "
          f"{'met' if fit_wall < 1.0 else 'NOT met'}; the solver clock is "
          f"{fit_clock / fit_wall:.0%} of it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
