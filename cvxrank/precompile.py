"""Compile every numba kernel of cvxrank into numba's on-disk cache (``__pycache__``).

``make install`` runs ``python -m cvxrank.precompile`` once the package is installed, so that
the first call of a compiled kernel in a user's process loads cached machine code (a fraction
of a second) instead of compiling it (several seconds). Running it again is cheap: a kernel
whose cache is current is only loaded.
"""

from __future__ import annotations

import time


def main() -> None:
    """Compile (or load) the sorted passes of PRSVM+ and the 1-slack, RankMM-3's l1,inf
    projection and the SVMlight reader of large files, printing the seconds each took."""
    from cvxrank import l1inf_kernels
    from cvxrank.data import svmlight_compiled
    from cvxrank.formulations import sorted_kernels

    for name, warm_up in (("sorted pair-loss passes", sorted_kernels.warm_up),
                          ("l1,inf projection", l1inf_kernels.warm_up),
                          ("SVMlight reader", svmlight_compiled.compile_kernels)):
        start = time.perf_counter()
        warm_up()
        print(f"cvxrank.precompile: {name} ready in {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
