"""The base class of the benchmark's cvxrank solvers: a hand-written solver driven by
benchopt's callback.

Every cvxrank solver takes a ``callback(k, w, alpha, trace)`` that it calls after each
recorded iteration (:class:`cvxrank.core.trace.SolverOptions`), and stops when it returns
True. Here that callback stores ``w`` and calls benchopt's, which evaluates the objective at
``w`` off the clock and returns False once benchopt's stopping criterion holds. The solver
itself runs with the tolerance :data:`TOL` (a certified relative duality gap at rounding level,
far below any fit's) and an iteration limit out of reach, so that benchopt decides when to
stop; a solver that certifies :data:`TOL` or can make no more progress (a Newton line search
at rounding level, a cutting plane without a violated cut) ends the run itself. Each run
builds a fresh :class:`~cvxrank.formulations.ranksvm.RankSVM`, so that its set-up (the sorted
blocks, the pairs) is on the solver's clock as in ``cvxrank fit``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from benchopt import BaseSolver
from benchopt.stopping_criterion import SufficientProgressCriterion

from cvxrank.core.trace import Run, SolverOptions
from cvxrank.data import RankingData
from cvxrank.fitting import find_solve
from cvxrank.formulations.ranksvm import RankSVM

#: benchopt's stopping rule for the callback solvers: stop once the objective improved by less
#: than ``EPS`` times its largest improvement over ``PATIENCE`` evaluations (rounding level;
#: benchopt's default 1e-10 would stop the curves far above it), or at ``--timeout``.
EPS = 1e-14
PATIENCE = 5

#: The iteration limit the cvxrank solvers run with (benchopt stops them first).
MAX_ITER = 10**8

#: The certified relative duality gap at which a cvxrank solver ends its run itself.
TOL = 1e-14


def progress_criterion(strategy: str) -> SufficientProgressCriterion:
    """benchopt's sufficient-progress criterion for ``strategy`` with :data:`EPS` and
    :data:`PATIENCE`."""
    return SufficientProgressCriterion(eps=EPS, patience=PATIENCE, strategy=strategy)


def unsupported(loss: str, losses: tuple[str, ...], name: str) -> tuple[bool, str | None]:
    """benchopt's ``skip`` answer for a solver that handles only ``losses``."""
    if loss in losses:
        return False, None
    return True, f"{name} does not solve the {loss} RankSVM (only {', '.join(losses)})"


class CvxrankSolver(BaseSolver):
    """A cvxrank solver (:attr:`solver`, a name of :func:`cvxrank.fitting.available_solvers`)
    on the losses :attr:`losses`, sampled by benchopt's callback."""

    sampling_strategy = "callback"
    stopping_criterion = progress_criterion("callback")

    #: The cvxrank solver's name.
    solver: str = ""
    #: The losses it solves.
    losses: tuple[str, ...] = ()

    def skip(self, data: RankingData, C: float, loss: str) -> tuple[bool, str | None]:
        """Skip the losses this solver does not solve."""
        return unsupported(loss, self.losses, self.name)

    def set_objective(self, data: RankingData, C: float, loss: str) -> None:
        """Keep the problem; the formulation is built by each run."""
        self.data, self.C, self.loss = data, float(C), loss
        self.w = np.zeros(data.n_features)
        self.last_run: Run | None = None

    def warm_up(self) -> None:
        """Two iterations, so that the kernels are loaded before the timed run."""
        self.run_once(2)

    def run(self, callback: Callable[[], bool]) -> None:
        """Run the cvxrank solver until benchopt's callback (or the solver) stops it.

        A cvxrank solver calls its callback at each recorded iteration but the one it stops
        at (its tolerance met); when it ends the run itself, the point it returns is given to
        benchopt's callback once more, so that the curve ends there.
        """
        formulation = RankSVM(self.data, C=self.C, loss=self.loss)
        solve = find_solve(formulation, self.solver)
        stopped = False

        def step(k: int, w: np.ndarray, alpha: np.ndarray | None, trace: Any) -> bool:
            nonlocal stopped
            self.w = w
            stopped = not callback()
            return stopped

        self.last_run = solve(formulation, SolverOptions(tol=TOL, max_iter=MAX_ITER,
                                                         callback=step))
        self.w = self.last_run.w
        if not stopped:
            callback()

    def get_result(self) -> dict[str, np.ndarray]:
        """The current iterate ``w`` (a copy: the solver may update its own in place)."""
        return {"w": np.array(self.w, dtype=float, copy=True)}
