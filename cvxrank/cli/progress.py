"""The progress line of ``cvxrank fit --progress``: a solver callback."""

from __future__ import annotations

import math
import time
from typing import TextIO

import numpy as np

from cvxrank.core.trace import Callback, Trace
from cvxrank.tolerances import relative_gap


def progress_printer(label: str, stream: TextIO, every: float = 0.5, *,
                     unit: str = "iteration") -> Callback:
    """A callback that shows a run's progress on ``stream``, at most every ``every`` seconds.

    One line, rewritten in place (``\\r``): iterations (counted in ``unit``: ``"pass"`` for
    a stochastic solver whose iteration is a pass over the data), the last recorded objective, the
    relative duality gap and model radius where the run has them, and wall-clock seconds. It
    never stops the run; the caller ends the line (``stream.write("\\n")``) when the run
    returns.
    """
    started = time.perf_counter()
    shown = [started - every]

    def show(k: int, w: np.ndarray, alpha: np.ndarray | None, trace: Trace) -> None:
        now = time.perf_counter()
        if now - shown[0] < every or not len(trace):
            return
        shown[0] = now
        parts = [f"{label}: {unit} {k:,}", f"objective {trace.primal[-1]:.8g}"]
        if math.isfinite(trace.dual[-1]):
            parts.append(f"relative gap {relative_gap(trace.dual[-1], trace.primal[-1]):.2e}")
        if math.isfinite(trace.radius[-1]):
            parts.append(f"radius {trace.radius[-1]:.2e}")
        stream.write("\r" + "  ".join(parts) + f"  {now - started:.1f} s ")
        stream.flush()

    return show
