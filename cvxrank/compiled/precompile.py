"""Compile every numba kernel of cvxrank ahead of time, at install.

``make install`` runs ``python -m cvxrank.compiled.precompile`` once the package is installed. Each
kernel file (the sorted passes of PRSVM+ and the 1-slack, RankMM-3's l1,inf projection, the
SVMlight reader of large files) is compiled into an extension module beside it
(:mod:`cvxrank.compiled.aot`), which a user's process loads in well under a millisecond without
importing numba. Where that cannot be built (no C compiler, a read-only install), the kernels
are compiled into numba's on-disk cache instead, so that a first call loads machine code
(a fraction of a second) rather than compiling it (several seconds). Running it again is
cheap: a module that is current is kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import ModuleType

from cvxrank.compiled import aot


def _kernel_files() -> list[tuple[str, ModuleType, Callable[[], None], Callable[[], None]]]:
    """(what, module, ahead-of-time build, just-in-time warm-up) of each kernel file."""
    from cvxrank.data import svmlight_compiled
    from cvxrank.formulations import sorted_kernels
    from cvxrank.numerics import l1inf_kernels

    return [
        ("sorted pair-loss passes", sorted_kernels, sorted_kernels.build_ahead,
         sorted_kernels.warm_up),
        ("l1,inf projection", l1inf_kernels, l1inf_kernels.build_ahead,
         l1inf_kernels.warm_up),
        ("SVMlight reader", svmlight_compiled, svmlight_compiled.build_ahead,
         svmlight_compiled.compile_kernels),
    ]


def main() -> None:
    """Build (or keep) the ahead-of-time module of each kernel file, falling back to numba's
    cache, printing the seconds each took."""
    for what, module, build, warm_up in _kernel_files():
        start = time.perf_counter()
        source = str(module.__file__)
        if aot.module_path(source).is_file():
            how = "ahead-of-time module current"
        else:
            try:
                build()
                how = "compiled ahead of time"
            except Exception as error:  # noqa: BLE001 (any failure: compile just in time)
                warm_up()
                how = (f"just-in-time cache (the ahead-of-time build failed: "
                       f"{type(error).__name__}: {error})")
        print(f"cvxrank.compiled.precompile: {what}: {how}, {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
