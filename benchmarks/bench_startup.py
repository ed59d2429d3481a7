"""Start-up and whole-process cost of the command line, beside the solver clock.

What a user feels is the whole process: interpreter start, imports, reading the file,
set-up (the sorted blocks of PRSVM+) and the solve. This script runs each command as a fresh
process several times and prints medians of wall-clock and CPU time (user + system of the
child), against the targets:

* ``cvxrank --help``: under 0.5 s of CPU;
* a plain ``cvxrank fit --train Fold1/train.txt`` (OHSUMED; the defaults: PRSVM+, squared
  hinge, C = 1): at most 0.5 s of CPU for the whole process, printed beside the floor of
  ``python -c "import numpy, scipy.sparse"`` measured in the same run and beside the
  ``time`` the fit reports (the solver clock: set-up and iterations with their stopping
  test); the same fit at C = 5e-5 is timed too.

For scale it also times the interpreter alone, importing the formulations, the same followed
by loading PRSVM+'s passes compiled ahead of time (:mod:`cvxrank.compiled.aot`) or, with
``CVXRANK_AOT=0``, just in time (importing numba and loading them from its disk cache; a fit
this small then runs the numpy passes instead, see :mod:`cvxrank.formulations.sorted_kernels`),
the plain fit with ``CVXRANK_AOT=0``, and ``import cvxpy`` (the fit does not import CVXPY).
``make install`` writes cvxrank's bytecode (``compileall``) and the ahead-of-time modules
(``python -m cvxrank.compiled.precompile``), so no process here compiles either.

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
    fit = "cvxrank fit --train Fold1/train.txt"
    fit_cmd = CVXRANK + ["fit", "--train", str(train), "--json"]
    small_c = "  the same, --C 5e-5"
    floor = 'python -c "import numpy, scipy.sparse"'
    warm_up = [sys.executable, "-c",
               "from cvxrank.formulations.sorted_kernels import warm_up; warm_up()"]
    just_in_time = ["env", "CVXRANK_AOT=0"]
    compiled = "  + numba, the passes just in time"
    cases: dict[str, list[str]] = {
        'python -c "pass"': [sys.executable, "-c", "pass"],
        floor: [sys.executable, "-c", "import numpy, scipy.sparse"],
        "import cvxrank.formulations": [sys.executable, "-c", "import cvxrank.formulations"],
        "  + PRSVM+'s passes compiled ahead of time": warm_up,
        compiled: just_in_time + warm_up,
        'python -c "import cvxpy"': [sys.executable, "-c", "import cvxpy"],
        "cvxrank --help": CVXRANK + ["--help"],
        fit: fit_cmd,
        small_c: fit_cmd + ["--C", "5e-5"],
        "  the same, CVXRANK_AOT=0 (C = 1)": just_in_time + fit_cmd,
    }
    run(cases[compiled])  # fill numba's disk cache (compiles after a source change)
    run(fit_cmd)  # the data file into the page cache
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'command':45s} {'wall [s]':>9s} {'CPU [s]':>8s} {'solver clock [s]':>17s}")
    results = {}
    for name, cmd in cases.items():
        walls, cpus, clocks = [], [], []
        for _ in range(args.repeat):
            wall, cpu, out = run(cmd)
            walls.append(wall)
            cpus.append(cpu)
            if "--json" in cmd:
                clocks.append(json.loads(out)["time"])
        results[name] = (statistics.median(walls), statistics.median(cpus),
                         statistics.median(clocks) if clocks else None)
        wall, cpu, clock = results[name]
        clock_text = f"{clock:17.3f}" if clock is not None else f"{'-':>17s}"
        print(f"{name:45s} {wall:9.3f} {cpu:8.3f} {clock_text}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    help_cpu = results["cvxrank --help"][1]
    _, fit_cpu, fit_clock = results[fit]
    print(f"\n--help CPU {help_cpu:.3f} s (target < 0.5 s): "
          f"{'met' if help_cpu < 0.5 else 'NOT met'}")
    print(f"plain fit CPU {fit_cpu:.3f} s (target <= 0.5 s; the floor {results[floor][1]:.3f} s): "
          f"{'met' if fit_cpu <= 0.5 else 'NOT met'}; the solver clock {fit_clock:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
