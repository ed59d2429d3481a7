"""Start-up and whole-process cost of the command line, beside the solver clock.

What a user feels is the whole process: interpreter start, imports, reading the file,
set-up (the sorted blocks of PRSVM+) and the solve. This script runs each command as a fresh
process several times and prints medians of wall-clock and CPU time (user + system of the
child), against the targets of issue 11:

* ``cvxrank --help``: under 0.5 s of CPU;
* a one-fold OHSUMED fit with PRSVM+ (``train.txt`` of Fold1, squared hinge, C = 5e-5):
  under 1 s as a whole process, printed beside the ``time`` the fit reports (the solver
  clock: set-up and iterations with their stopping test).

For scale it also times what the fit cannot avoid or no longer pays: the interpreter alone,
importing numpy and ``scipy.sparse.linalg`` (the libraries of the fit), importing the
formulations, the same followed by loading PRSVM+'s compiled passes (importing numba and
loading them from its disk cache: a fit this small runs the numpy passes instead, see
:mod:`cvxrank.formulations.sorted_kernels`) and ``import cvxpy`` (the fit does not import
CVXPY). Where the environment turns Python's bytecode cache off
(``PYTHONDONTWRITEBYTECODE``), cvxrank's own modules are compiled from source in every
process; the fit is then also timed with the cache on, in a temporary
``PYTHONPYCACHEPREFIX`` (the source tree is not written to), as an installed cvxrank runs.

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
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CVXRANK = [sys.executable, "-m", "cvxrank.cli.main"]


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, stdout) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1", **(env or {})})
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
    fit = "cvxrank fit (PRSVM+, OHSUMED Fold1 train)"
    fit_cmd = CVXRANK + ["fit", "--method", "ranksvm", "--loss", "squared_hinge", "--C",
                         "5e-5", "--train", str(train), "--json"]
    compiled = "  + numba, PRSVM+'s compiled passes loaded"
    cases: dict[str, tuple[list[str], dict[str, str]]] = {
        'python -c "pass"': ([sys.executable, "-c", "pass"], {}),
        "import numpy, scipy.sparse.linalg": (
            [sys.executable, "-c", "import numpy, scipy.sparse.linalg"], {}),
        "import cvxrank.formulations": (
            [sys.executable, "-c", "import cvxrank.formulations"], {}),
        compiled: ([sys.executable, "-c", "from cvxrank.formulations.sorted_kernels import "
                    "warm_up; warm_up()"], {}),
        'python -c "import cvxpy"': ([sys.executable, "-c", "import cvxpy"], {}),
        "cvxrank --help": (CVXRANK + ["--help"], {}),
        fit: (fit_cmd, {}),
    }
    no_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    with tempfile.TemporaryDirectory() as pycache:
        if no_bytecode:
            cases["  the same, Python bytecode cache on"] = (fit_cmd, {
                "PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": pycache})
            run(*cases["  the same, Python bytecode cache on"])  # write the cache
        run(*cases[compiled])  # fill numba's disk cache (compiles after a source change)
        run(fit_cmd)  # the data file into the page cache
        print(f"{'command':45s} {'wall [s]':>9s} {'CPU [s]':>8s} {'solver clock [s]':>17s}")
        results = {}
        for name, (cmd, env) in cases.items():
            walls, cpus, clocks = [], [], []
            for _ in range(args.repeat):
                wall, cpu, out = run(cmd, env)
                walls.append(wall)
                cpus.append(cpu)
                if cmd is fit_cmd:
                    clocks.append(json.loads(out)["time"])
            results[name] = (statistics.median(walls), statistics.median(cpus),
                             statistics.median(clocks) if clocks else None)
            wall, cpu, clock = results[name]
            clock_text = f"{clock:17.3f}" if clock is not None else f"{'-':>17s}"
            print(f"{name:45s} {wall:9.3f} {cpu:8.3f} {clock_text}")
    help_cpu = results["cvxrank --help"][1]
    fit_wall, _, fit_clock = results[fit]
    print(f"\n--help CPU {help_cpu:.3f} s (target < 0.5 s): "
          f"{'met' if help_cpu < 0.5 else 'NOT met'}")
    print(f"fit whole process {fit_wall:.3f} s (target < 1 s): "
          f"{'met' if fit_wall < 1.0 else 'NOT met'}; the solver clock is "
          f"{fit_clock / fit_wall:.0%} of it")
    if no_bytecode:
        print("PYTHONDONTWRITEBYTECODE is set: cvxrank's modules are compiled from source in "
              "every process (the row below the fit has the bytecode cache on)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
