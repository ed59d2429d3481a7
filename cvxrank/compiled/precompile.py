"""Compile every numba kernel of cvxrank ahead of time, at install.

``make install`` runs ``python -m cvxrank.compiled.precompile`` once the package is installed. Each
kernel file (the sorted passes of PRSVM+ and the 1-slack, RankMM-3's l1,inf projection, the
SVMlight reader of large files, the compensated products, ConeRank's stochastic steps, the
1-slack's master QP) is compiled into an extension module beside it
(:mod:`cvxrank.compiled.aot`), which a user's
process loads in well under a millisecond without importing numba. Where that cannot be
built (no C compiler, a read-only install), the kernels are compiled into numba's on-disk
cache instead, so that a first call loads machine code (a fraction of a second) rather than
compiling it (several seconds). Running it again is cheap: a module that is current is kept.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor

from cvxrank.compiled import aot
from cvxrank.compiled.kernels import KernelFile
from cvxrank.utils.threads import usable_cores


def _kernel_files() -> list[tuple[str, KernelFile]]:
    """(what, kernel file) of each kernel file."""
    from cvxrank.data import svmlight_compiled
    from cvxrank.formulations import conerank_kernels, sorted_kernels
    from cvxrank.numerics import compensated_kernels, l1inf_kernels, simplex_kernels

    return [("sorted pair-loss passes", sorted_kernels.KERNELS),
            ("l1,inf projection", l1inf_kernels.KERNELS),
            ("SVMlight reader", svmlight_compiled.KERNELS),
            ("compensated products", compensated_kernels.KERNELS),
            ("ConeRank's stochastic steps", conerank_kernels.KERNELS),
            ("the one-block master's active set", simplex_kernels.KERNELS)]


def _build(index: int) -> str:
    """Build (or keep) the ahead-of-time module of the index-th kernel file, falling back to
    numba's cache; the line that says how, with the seconds it took."""
    what, kernels = _kernel_files()[index]
    start = time.perf_counter()
    if aot.module_path(kernels.source).is_file():
        how = "ahead-of-time module current"
    else:
        try:
            kernels.build_ahead()
            how = "compiled ahead of time"
        except Exception as error:  # noqa: BLE001 (any failure: compile just in time)
            kernels.warm_up()
            how = (f"just-in-time cache (the ahead-of-time build failed: "
                   f"{type(error).__name__}: {error})")
    return f"cvxrank.compiled.precompile: {what}: {how}, {time.perf_counter() - start:.2f} s"


def main() -> None:
    """Build every kernel file's module, one process per core (each build is a separate
    compilation into its own file), printing a line per kernel file in their order."""
    n = len(_kernel_files())
    workers = min(n, usable_cores())
    if workers == 1:
        lines = [_build(i) for i in range(n)]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            lines = list(pool.map(_build, range(n)))
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
