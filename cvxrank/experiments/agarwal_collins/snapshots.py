r"""The T axis of the paper's grid from one run: the weights at every T of the grid.

Sect. 4 selects the number of stochastic steps T in :data:`~cvxrank.experiments.
agarwal_collins.T_GRID` = {100, 250, 500, 750, 1000}. A run of T steps with seed s is a
*prefix* of the run of :math:`T_{\max} = 1000` steps with the same seed, because nothing in
step t depends on T:

* the queries drawn are the same (one generator, seeded once, drawn in the same order);
* the step is :math:`\eta_t = \eta_0/\sqrt t` for ``sgp`` (Sects. 3.1, 3.3) and the constant
  :math:`\eta_0` for ``seg`` (Sect. 3.2): neither involves T;
* the stopping test is at its strictest (``tol=0``): a run stops early only at a record
  where the certified duality gap is not positive (an optimal point, to rounding), and a run
  with ``max_iter = T`` beyond that step stops at the same step with the same weights, so
  every T from there on gets the long run's final weights (:attr:`Snapshot.steps` says how
  many steps were made).

So the weights of the long run after t = T steps *are* the result of a run with
``max_iter = T``, and one run per (C, :math:`\eta_0`, seed) serves the whole T axis, five
times fewer steps than five runs. The solvers maintain w incrementally and recompute it
exactly from :math:`\alpha` at every record (every ``record_every`` steps); recording every
:math:`\gcd(T_{\text{grid}})` steps (50 for the paper's grid) makes the recomputations happen
at the same steps in the long run and in every short run, so the snapshot equals the short
run's weights bit for bit (tested), and the callback receives the exact
:math:`w(\alpha^{(T)})` at each T. The last T is the run's returned weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.core.trace import Run, Trace


@dataclass
class Snapshot:
    r"""The state of a stochastic run after T steps.

    Attributes
    ----------
    T : int
        The horizon.
    steps : int
        Steps made: T, or fewer when the run stopped at a zero duality gap.
    w : ndarray
        The weights :math:`w(\alpha^{(T)})`.
    primal, dual : float
        :math:`P(w)` and :math:`D(\alpha^{(T)})` as the solver recorded them; their
        relative difference is the certified gap of the early-stopped model.
    """

    T: int
    steps: int
    w: np.ndarray
    primal: float
    dual: float

    @property
    def relative_gap(self) -> float:
        """:math:`(P - D)/P`, how far the early-stopped model is from the optimum."""
        return (self.primal - self.dual) / abs(self.primal) if self.primal else 0.0


def record_interval(horizons: Sequence[int]) -> int:
    """Steps between records that hit every horizon: their greatest common divisor.

    Raises
    ------
    ValueError
        For no horizon or one below 1.
    """
    if not horizons or min(horizons) < 1:
        raise ValueError(f"the T grid needs values >= 1, got {list(horizons)}")
    return reduce(math.gcd, (int(t) for t in horizons))


def solve_stochastic(formulation: Any, *, eta0: float, max_iter: int, seed: int,
                     record_every: int, callback: Any = None) -> Run:
    """The paper's solver of ``formulation.loss`` (exponentiated gradient, ``seg``, on
    simplex dual blocks, Sect. 3.2; else stochastic gradient projection, ``sgp``, Sects. 3.1
    and 3.3) for ``max_iter`` steps,
    stopping only at the optimum, to rounding: a certified relative gap of at most
    :data:`cvxrank.tolerances.ZERO_MODEL_GAP` (``tol=0`` never stops on the gap)."""
    from cvxrank.solvers.rankmm import solve_seg, solve_sgp

    solve = solve_seg if "simplex_dual_blocks" in formulation.capabilities else solve_sgp
    return solve(formulation, eta0=eta0, max_iter=max_iter, tol=tolerances.ZERO_MODEL_GAP,
                 seed=seed, record_every=record_every, callback=callback)


def _record_at(trace: Trace, t: int) -> tuple[float, float]:
    i = trace.iteration.index(t)
    return trace.primal[i], trace.dual[i]


def run_snapshots(formulation: Any, *, eta0: float, horizons: Sequence[int],
                  seed: int) -> tuple[list[Snapshot], Run]:
    r"""One run of ``max(horizons)`` steps; the weights after each T of ``horizons``.

    Parameters
    ----------
    formulation : RankMM
    eta0 : float
        The paper's absolute :math:`\eta_0`.
    horizons : sequence of int
        The T grid.
    seed : int
        Seed of the query draws.

    Returns
    -------
    snapshots : list of Snapshot
        In increasing T.
    run : Run
        The long run.
    """
    ts = sorted({int(t) for t in horizons})
    every = record_interval(ts)
    kept: dict[int, np.ndarray] = {}

    def keep(t: int, w: np.ndarray, alpha: Any, trace: Trace) -> bool:
        del alpha, trace
        if t in ts:
            kept[t] = np.array(w, dtype=np.float64)
        return False

    run = solve_stochastic(formulation, eta0=eta0, max_iter=ts[-1], seed=seed,
                           record_every=every, callback=keep)
    final = np.asarray(run.w, dtype=np.float64)
    steps = [min(t, run.n_iter) for t in ts]
    return [Snapshot(t, n, kept[t] if n < run.n_iter else final, *_record_at(run.trace, n))
            for t, n in zip(ts, steps, strict=True)], run
