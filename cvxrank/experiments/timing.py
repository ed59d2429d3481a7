"""Timing helpers of the experiments: repeated timed calls, peak memory, slopes.

Which clock is which (the convention of every experiment and report):

* **wall-clock** (``time.perf_counter`` around the whole training call, the formulation's
  construction excluded): what a user waits for, the solver's set-up included. It is the
  ``time`` of Table 3 and Fig. 3 and the ``wall_time`` of a task.
* **solver clock** (:attr:`cvxrank.core.trace.Run.time`): the solver's own stopwatch, set-up
  included (:attr:`~cvxrank.core.trace.Run.setup_time`: pairs, sorted blocks, pair
  differences), trace-only evaluation excluded; :attr:`~cvxrank.core.trace.Run.solve_time` is
  the part after the set-up.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()`` and its wall-clock seconds."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def repeat_until(measure: Callable[[], tuple[T, float]], *, repeat: int = 1,
                 min_time: float = 0.0, max_repeat: int = 1) -> tuple[list[T], list[float]]:
    """Call ``measure() -> (output, seconds)`` at least ``repeat`` times, and until the
    seconds total ``min_time`` (at most ``max_repeat`` calls); return outputs and seconds."""
    outputs: list[T] = []
    times: list[float] = []
    while len(times) < repeat or (sum(times) < min_time and len(times) < max_repeat):
        out, seconds = measure()
        outputs.append(out)
        times.append(seconds)
    return outputs, times


def peak_memory(fn: Callable[[], object]) -> int:
    """Peak bytes traced by ``tracemalloc`` during ``fn()``, above what was traced before."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return int(tracemalloc.get_traced_memory()[1] - base)
    finally:
        if not was_tracing:
            tracemalloc.stop()


def fitted_slope(n: Sequence[float], t: Sequence[float]) -> float:
    """Least-squares slope of ``log t`` against ``log n`` (NaN with fewer than two points)."""
    x = np.log(np.asarray(n, dtype=np.float64))
    y = np.log(np.asarray(t, dtype=np.float64))
    keep = np.isfinite(x) & np.isfinite(y)
    if np.unique(x[keep]).size < 2:
        return float("nan")
    return float(np.polyfit(x[keep], y[keep], 1)[0])
