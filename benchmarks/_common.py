"""Shared helpers of the benchmark scripts: machine description, timing, tables, options.

Not a test module and not part of the package: the scripts in this folder import it as
``_common`` (Python puts the script's folder first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: The OHSUMED folder used by the real-data benchmarks (``../shared/data`` beside the project).
OHSUMED = (Path(__file__).resolve().parents[1].parent / "shared" / "data" / "letor3_ohsumed"
           / "QueryLevelNorm")


def cpu_model() -> str:
    """The CPU model name of ``/proc/cpuinfo`` (or ``platform.processor()``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    """What the timings depend on: CPU, cores, load, library versions, BLAS threads."""
    import numpy
    import scipy
    import sklearn

    info: dict[str, Any] = {
        "platform.processor()": platform.processor() or "(empty)",
        "cpu model": cpu_model(),
        "cores (os.cpu_count)": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
    }
    try:
        import numba

        info["numba"] = numba.__version__
    except ImportError:  # pragma: no cover
        pass
    try:
        import cvxpy

        info["cvxpy"] = cvxpy.__version__
    except ImportError:  # pragma: no cover
        pass
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{p['internal_api']} {p['version']} ({p['architecture']}, "
                f"{p['num_threads']} threads)" for p in threadpool_info()
                if p.get("user_api") == "blas"]
        info["blas"] = "; ".join(dict.fromkeys(blas)) or "unknown"
    except ImportError:  # pragma: no cover
        pass
    try:
        info["load average (1, 5, 15 min)"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover
        pass
    return info


def print_machine() -> None:
    """Print :func:`machine` as ``key: value`` lines."""
    print("machine:")
    for key, value in machine().items():
        print(f"  {key}: {value}")


def add_common_args(parser: argparse.ArgumentParser) -> None:
    """``--blas-threads`` (default 1)."""
    parser.add_argument("--blas-threads", type=int, default=1, dest="blas_threads",
                        help="BLAS threads (default 1; 0 = library default). On this shared "
                        "2-core machine a 2-thread OpenBLAS spin-waits on busy cores and makes "
                        "small products erratic")


_WARM: dict[str, int | None] = {}


def kernel_signatures() -> int | None:
    """Number of just-in-time specializations of the sorted-loss kernels in this process;
    None when they are the ahead-of-time module's (:mod:`cvxrank.compiled.aot`), which never
    compile."""
    from cvxrank.formulations import sorted_kernels

    kernels = (sorted_kernels.block_sums, sorted_kernels.block_hessp)
    if not all(hasattr(kernel, "signatures") for kernel in kernels):
        return None
    return sum(len(kernel.signatures) for kernel in kernels)


def check_no_recompile() -> None:
    """Print whether a timed run compiled a kernel specialization after :func:`warm_up`."""
    now, before = kernel_signatures(), _WARM.get("signatures")
    if "signatures" not in _WARM:
        print("numba: no warm-up was run")
    elif now is None:
        print("kernels compiled ahead of time: none compiled during the timed runs")
    elif now == before:
        print(f"numba: no kernel compiled after the warm-up ({now} specializations)")
    else:
        print(f"numba: WARNING {now - (before or 0)} kernel specialization(s) compiled during "
              "the timed runs (their first call includes compilation)")


def warm_up() -> float:
    """Load PRSVM+'s compiled kernels before any timing; return the seconds it took.

    Without the ahead-of-time module (:mod:`cvxrank.compiled.aot`), the first call of a compiled
    kernel in a process compiles it (first run after a source change) or loads it from
    numba's cache in ``__pycache__`` (about 0.2-0.3 s here), which would otherwise be
    charged to whichever training run comes first.
    :func:`cvxrank.formulations.sorted_kernels.warm_up` calls both kernels on tiny arrays of
    the argument types every problem uses, so no later call compiles again.
    """
    from cvxrank.formulations.sorted_kernels import warm_up as load_kernels

    start = time.perf_counter()
    load_kernels()
    elapsed = time.perf_counter() - start
    _WARM["signatures"] = kernel_signatures()
    print(f"warm-up (PRSVM+ kernels loaded: ahead-of-time module, or numba's cache): "
          f"{elapsed:.2f} s\n")
    return elapsed


def median_time(fn: Callable[[], Any], *, repeat: int = 7, min_time: float = 0.02) -> float:
    """Median seconds per call of ``fn``, ``timeit``-style.

    The number of calls per measurement is doubled until one measurement takes at least
    ``min_time`` seconds; then ``repeat`` measurements are taken and the median of the
    per-call times is returned.
    """
    fn()  # warm-up
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time or number >= 2**20:
            break
        number *= 2
    samples = [elapsed / number]
    for _ in range(repeat - 1):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def export_tree(revision: str, dest: Path) -> Path:
    """The files of ``revision`` of this repository under ``dest`` (``git archive | tar
    -x``: read-only for the repository, no worktree or checkout)."""
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", revision],
                             capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A markdown table (cells converted with ``str``)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def verdict(ok: bool) -> str:
    """``MET`` or ``NOT MET``."""
    return "MET" if ok else "NOT MET"
