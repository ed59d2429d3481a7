r"""RankSVM on sharded data: the same solvers and certificates, every sum computed where its
shard lives.

:class:`ShardedRankSVM` is the :class:`~cvxrank.formulations.ranksvm.RankSVM` objective of
a :class:`~cvxrank.distributed.shards.ShardedRankingData`. It holds one RankSVM per shard
on the workers and offers the client the same contract as an in-memory formulation, so
that :func:`cvxrank.fitting.fit_formulation` runs the usual solvers on it, with the usual
stopping tests, certificates (the certified gap and the model radius :math:`\|w - w^*\|
\le r`) and measures certified on a test set:

* **PRSVM+ and PRSVM** (squared hinge, Huber; :mod:`cvxrank.solvers.newton`) through
  :class:`ShardedNewtonModel`: the loss value, the margin-weighted hinge sum of the
  squared-hinge dual certificate and :math:`X^\top \partial L/\partial s` in one call per
  point, then one call per Hessian-vector product :math:`X^\top H_L X v` (or per Jacobi
  diagonal, or per Newton matrix); each call sends w (and v) to every shard and sums the
  d numbers (d x d for the Newton matrix) they return. CG, the line search and the
  certificate run on the client.
* **The 1-slack cutting plane** (hinge; :mod:`cvxrank.solvers.one_slack`): the oracle at w
  is the sum of the shards' losses and subgradients; the master QP stays on the client.
  The exact finish takes each shard's margin band (the pairs near their margin, and sums
  over those below it) and solves the merged band on the client: any split of the pairs
  gives a feasible dual point, so its bound is certified whatever each shard's band.

The sums are the in-memory solver's sums in another order: the optimum is the same to
rounding, the iterates differ in their last digits.
:func:`~cvxrank.distributed.objective.fit_sharded` adds the time split of the run (compute
on the workers, communication, master on the client) to the run's ``info``.

References
----------
.. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010, eqs. (1), (3), (5)-(7).
.. [2] T. Joachims, "Training linear SVMs in linear time", KDD 2006.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cvxrank.data.scales import badly_scaled
from cvxrank.distributed import tasks
from cvxrank.distributed.objective import ShardedObjective
from cvxrank.distributed.shards import ShardedRankingData
from cvxrank.formulations.base import no_pairs_error
from cvxrank.formulations.irsvm import IRSVM, swap_drop_tau, swap_drops
from cvxrank.formulations.ranksvm import (
    GradeTable,
    Loss,
    MarginBand,
    RankSVM,
    accurate_gradient,
    loss_capabilities,
    primal_rounding,
    squared_hinge_dual_bound,
)
from cvxrank.losses import ramp_of
from cvxrank.numerics import rounding
from cvxrank.numerics.cuts import QueryCuts
from cvxrank.numerics.rounding import LossRounding
from cvxrank.solvers.newton import ScoreError
from cvxrank.solvers.one_slack import cut_rounding


@dataclass(frozen=True)
class LossSums:
    """The loss of all shards at one point: its value, margin-weighted hinge sum and
    :math:`X^\\top \\partial L / \\partial s` (what the Newton loop and its certificate read
    of an evaluation), with the summed rounding bound of the shards' evaluations and the
    1- and 2-norms of the gradient in the scores (:mod:`cvxrank.numerics.rounding`)."""

    value: float
    margin_hinge: float
    gradient: np.ndarray
    loss_rounding: LossRounding
    grad_norms: tuple[float, float]

    @staticmethod
    def of(results: list[tasks.Terms]) -> LossSums:
        """The sums of the shards' :class:`~cvxrank.distributed.tasks.Terms` (a loss's, or
        any call's: ``gradient`` then holds the summed vectors or matrices, and the
        rounding bound is 0 where the terms carry none)."""
        value = float(sum(r.value for r in results))
        margin_hinge = float(sum(r.margin_hinge for r in results))
        vectors = [r.vector for r in results if r.vector is not None]
        gradient = vectors[0].copy()
        for vector in vectors[1:]:
            gradient += vector
        bound = LossRounding(0.0, 0.0, 0.0, 0.0, 0.0)
        for r in results:
            if r.rounding is not None:
                bound = bound + r.rounding
        l1 = float(sum(r.grad_norms[0] for r in results))
        l2 = math.sqrt(sum(r.grad_norms[1] for r in results))
        return LossSums(value, margin_hinge, gradient, bound, (l1, l2))


class ShardedRankSVM(ShardedObjective):
    """The RankSVM primal :math:`\\tfrac12\\|w\\|^2 + C \\sum_k L_k(X_k w)` over query-aligned
    shards (module docstring).

    Parameters
    ----------
    data : ShardedRankingData
    C : float
        Loss weight, as :class:`~cvxrank.formulations.ranksvm.RankSVM`'s.
    loss : PairLoss or {"hinge", "squared_hinge", "huber"}
        As :class:`~cvxrank.formulations.ranksvm.RankSVM`'s: a built-in loss or a
        researcher's ramp (picklable by cloudpickle, as Dask sends it to the workers).
    level_weight, level_margin : mapping or callable, optional
        Structured weights and margins per pair of grades, as RankSVM's (picklable: they
        are sent to the workers). Per-query weights and explicit per-pair weights are not
        offered on shards.

    Attributes
    ----------
    name : str
        ``"ranksvm-<loss name>"``, the in-memory formulation's: the solvers, the registry and
        the reports treat it as that formulation.
    capabilities : frozenset of str
        ``loss_subgradient`` (the 1-slack); ``margin_band`` (piecewise linear: the exact
        finish); ``pairwise_newton``, ``sorted_pairs`` and ``accurate_gradient`` (piecewise
        quadratic: PRSVM and PRSVM+, the last certificate in double-word arithmetic);
        ``primal_certificate`` (a squared hinge).
    clock : dict
        :class:`~cvxrank.distributed.objective.ShardedObjective`'s time split.

    Raises
    ------
    ValueError
        For C outside :data:`cvxrank.tolerances.C_RANGE`, an unknown loss, data without
        preference pairs (the in-memory formulation's checks and messages).
    UsageError
        For features whose squares overflow.
    """

    #: The row of :data:`cvxrank.methods.METHODS` whose solvers ``"auto"`` tries.
    method = "ranksvm"

    #: The in-memory formulation built on each shard.
    family: type = RankSVM

    def __init__(self, data: ShardedRankingData, *, C: float = 1.0, loss: Loss = "hinge",
                 level_weight: GradeTable | None = None,
                 level_margin: GradeTable | None = None) -> None:
        self._build(data, C, loss, {"level_weight": level_weight, "level_margin": level_margin})

    def _build(self, data: ShardedRankingData, C: float, loss: Loss,
               options: dict[str, Any]) -> None:
        """Build :attr:`family` with ``options`` on every shard, after the in-memory
        formulation's checks on what the client knows of the shards."""
        self.loss, ramp = ramp_of(loss)
        if data.n_pairs == 0:
            raise no_pairs_error(data.source)
        super().__init__(data, tasks.shard, C=C, loss=self.loss, family=self.family,
                         options=options)
        self.ramp = ramp.unit()
        self.name = f"{self.method}-{self.loss.name}"
        # every shard's pairs are all of its queries' (no explicit pairs): PRSVM+'s sorted
        # passes wherever Newton applies
        capabilities = loss_capabilities(ramp)
        if "pairwise_newton" in capabilities:
            capabilities.add("sorted_pairs")
        self.capabilities = frozenset(capabilities)

    def sizes(self) -> dict[str, int]:
        """``n_dual`` and ``n_pairs`` (the preference pairs of all shards), ``n_shards``."""
        return {"n_dual": self.data.n_pairs, "n_pairs": self.data.n_pairs,
                "n_shards": self.data.n_shards}

    # -- calls on the shards ----------------------------------------------------------------
    def sum_terms(self, function: Callable[..., tasks.Terms], *args: Any
                  ) -> tuple[float, float, np.ndarray]:
        """The sums over shards of ``function``'s :class:`~cvxrank.distributed.tasks.Terms`:
        value, margin-weighted hinge sum and vector (zeros where every shard has none)."""
        sums = LossSums.of(self.map(function, *args))
        return sums.value, sums.margin_hinge, sums.gradient

    def loss_sums(self, w: np.ndarray, engine: str = "auto") -> LossSums:
        """The loss of every shard at ``w``, summed (:class:`LossSums`)."""
        return LossSums.of(self.map(tasks.loss, engine, np.asarray(w, dtype=np.float64)))

    # -- the objective ----------------------------------------------------------------------
    def primal_value(self, w: np.ndarray) -> float:
        """P(w), summed over the shards."""
        w = np.asarray(w, dtype=np.float64)
        return float(0.5 * (w @ w) + self.C * self.loss_sums(w).value)

    def primal_bounds(self, w: np.ndarray) -> tuple[float, float]:
        """P(w) and a bound on its rounding
        (:func:`~cvxrank.formulations.ranksvm.primal_rounding`)."""
        w = np.asarray(w, dtype=np.float64)
        sums = self.loss_sums(w)
        return (float(0.5 * (w @ w) + self.C * sums.value),
                primal_rounding(self.data, self.C, w, sums.value, sums.loss_rounding))

    def dual_value_at(self, w: np.ndarray, evaluation: LossSums | None = None,
                      loss_gradient: np.ndarray | None = None) -> float:
        """The squared-hinge dual value at the KKT point of ``w``
        (:func:`~cvxrank.formulations.ranksvm.squared_hinge_dual_bound`), else NaN."""
        if "primal_certificate" not in self.capabilities:
            return float("nan")
        sums = self.loss_sums(w) if evaluation is None else evaluation
        gradient = sums.gradient if loss_gradient is None else loss_gradient
        return squared_hinge_dual_bound(self.C, sums.value, sums.margin_hinge, gradient)

    @property
    def n_dual(self) -> int:
        """The preference pairs of all shards (the dual variables of the RankSVM dual)."""
        return self.data.n_pairs

    def compensated_gradient(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The gradient in double-word arithmetic without the pairs and its error bound per
        feature, each shard's part computed where it lives
        (:meth:`~cvxrank.formulations.ranksvm.RankSVM.compensated_loss_gradient`); None when
        a shard's features are sparse."""
        w = np.asarray(w, dtype=np.float64)
        parts = [part for part, _ in self.map(tasks.compensated_part, w)]
        if any(part is None for part in parts):
            return None
        return accurate_gradient(w, self.C, parts)

    def accurate_gradient(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The gradient in double-word arithmetic and its error bound per feature, each
        shard's part computed where it lives
        (:func:`~cvxrank.formulations.ranksvm.accurate_gradient`)."""
        w = np.asarray(w, dtype=np.float64)
        parts = [part for part, _ in self.map(tasks.accurate_part, w)]
        return accurate_gradient(w, self.C, parts)

    def newton_model(self, engine: str, start: np.ndarray | None = None
                     ) -> ShardedNewtonModel:
        """The :class:`~cvxrank.solvers.newton.NewtonModel` of PRSVM (``"pairs"``) or
        PRSVM+ (``"sorted"``) on the shards, at ``start`` (None: w = 0)."""
        return ShardedNewtonModel(self, engine, start)

    def loss_cuts(self) -> Callable[[np.ndarray], QueryCuts]:
        r"""The 1-slack oracle (:func:`cvxrank.solvers.one_slack.loss_cuts`) on the shards:
        :math:`R(v) \ge c - g^\top v` with the loss and :math:`g = -X^\top \partial_s R`
        summed."""

        def oracle(w: np.ndarray) -> QueryCuts:
            sums = self.loss_sums(w)
            g = -sums.gradient
            loss_error, gradient_error = cut_rounding(self.data, w, sums.loss_rounding, None,
                                                      grad_norms=sums.grad_norms)
            return QueryCuts(loss=np.array([sums.value]), offset=np.array([sums.value + g @ w]),
                             gradient=g[None, :], loss_error=np.array([loss_error]),
                             gradient_error=np.array([gradient_error]))

        return oracle

    def margin_band(self, w: np.ndarray, radii: Sequence[float], *,
                    max_pairs: int = 100_000) -> MarginBand | None:
        """The hinge pairs near their margin at ``w`` (:meth:`~cvxrank.formulations.
        ranksvm.RankSVM.margin_band`), each shard's band for the widest of ``radii`` whose
        window fits its share of ``max_pairs``, merged; None when a shard's does not fit.
        The merged ``radius`` is the smallest of the shards' (any split of the pairs gives a
        feasible dual point: the finish's bound is certified whatever the shards chose)."""
        if not self.ramp.linear:
            raise ValueError(f"{self.name}: the margin band is a piecewise-linear loss's")
        found = self.map(tasks.band, np.asarray(w, dtype=np.float64),
                         [float(r) for r in radii],
                         max(1, int(max_pairs) // self.data.n_shards))
        bands = [band for band, _ in found]
        if any(band is None for band in bands):
            return None
        return MarginBand(
            radius=min(band.radius for band in bands),
            difference=np.concatenate([band.difference for band in bands]),
            margin=np.concatenate([band.margin for band in bands]),
            weight=np.concatenate([band.weight for band in bands]),
            violated_sum=np.sum([band.violated_sum for band in bands], axis=0),
            violated_margin=float(sum(band.violated_margin for band in bands)),
            violated_error=float(sum(band.violated_error for band in bands)),
            violated_margin_error=float(sum(band.violated_margin_error for band in bands)),
            residual_error=max(band.residual_error for band in bands),
            smallest_margin=min(band.smallest_margin for band in bands))


class ShardedIRSVM(ShardedRankSVM):
    r"""IR SVM (:class:`~cvxrank.formulations.irsvm.IRSVM`) over query-aligned shards: the
    RankSVM on the shards with pair weights :math:`\tau_{t(k)} \mu_{q(k)}`.

    :math:`\mu_q = 1/n_q` is each query's own (computed on its shard); :math:`\tau`, a mean
    over every query of the data, is reduced from the shards' per-query terms
    (:func:`~cvxrank.formulations.irsvm.swap_drops`, joined in shard order: the in-memory
    :math:`\tau` of the shards' queries in that order, to the last digit) and built into
    each shard's IR SVM.

    Parameters
    ----------
    data : ShardedRankingData
    C : float
    loss : PairLoss or {"hinge", "squared_hinge", "huber"}
    tau : mapping or callable, optional
        :math:`\tau` per pair of grades; default the data's NDCG@1 swap drops
        (:func:`~cvxrank.formulations.irsvm.ndcg1_swap_drop`), reduced from the shards.
    """

    method = "irsvm"
    family = IRSVM

    def __init__(self, data: ShardedRankingData, *, C: float = 1.0, loss: Loss = "hinge",
                 tau: GradeTable | None = None) -> None:
        if tau is None:
            drops: dict[tuple[float, float], list[float]] = {}
            client = data.client
            for part in client.gather(client.map(swap_drops, data.futures, pure=False)):
                for key, values in part.items():
                    drops.setdefault(key, []).extend(values)
            tau = swap_drop_tau(drops)
        self.tau = tau
        self._build(data, C, loss, {"tau": tau})


class ShardedNewtonModel:
    """The :class:`~cvxrank.solvers.newton.NewtonModel` of :class:`ShardedRankSVM`: the
    iterate's loss and gradient come in one call to the shards, each Hessian product,
    diagonal or Newton matrix in one more, each trial point of the line search in one more
    (its scores from the iterate's, :meth:`cvxrank.distributed.tasks.Shard.trial`). The
    calls name the points by w: what the workers keep of them is a cache, re-evaluated
    from the shard when lost (:mod:`cvxrank.distributed.tasks`)."""

    def __init__(self, objective: ShardedRankSVM, engine: str,
                 start: np.ndarray | None = None) -> None:
        self._f = objective
        self._engine = engine
        self.n_features = objective.data.n_features
        self.scaled = badly_scaled(objective.data)  # type: ignore[arg-type]
        self._w = (np.zeros(self.n_features) if start is None
                   else np.array(start, dtype=np.float64))
        self.evaluation = objective.loss_sums(self._w, engine)  # each shard's X_k w afresh
        self._trial: tuple[np.ndarray, LossSums, ScoreError] | None = None
        self._direction = np.zeros(self.n_features)
        self._score_error = ScoreError.at(objective.data.column_scales, start)

    def loss_gradient(self) -> np.ndarray:
        return self.evaluation.gradient

    def hessian_product(self, v: np.ndarray) -> np.ndarray:
        return self._f.sum_terms(tasks.hessian_product, self._engine,
                                 self._w, np.asarray(v, dtype=np.float64))[2]

    def hessian_diagonal(self) -> np.ndarray:
        return self._f.sum_terms(tasks.diagonal, self._engine, self._w)[2]

    def newton_matrix(self) -> np.ndarray:
        return self._f.sum_terms(tasks.matrix, self._engine, self._w)[2]

    def set_direction(self, direction: np.ndarray) -> None:
        self._direction = np.asarray(direction, dtype=np.float64)

    def try_step(self, w_new: np.ndarray, t: float) -> LossSums:
        w_new = np.array(w_new, dtype=np.float64)
        trial = LossSums.of(self._f.map(tasks.trial_loss, self._engine, self._w,
                                        self._direction, float(t), w_new))
        # a shard that lost the iterate's scores computes X_k w_new afresh, which the
        # accumulated bound covers (it adds each step's product rounding)
        self._trial = (w_new, trial, self._score_error.after(t * self._direction, w_new))
        return trial

    def accept(self) -> None:
        self._w, self.evaluation, self._score_error = self._trial
        self._trial = None

    def gradient_error(self, w: np.ndarray, C: float) -> np.ndarray:
        data = self._f.data
        l1, l2 = self.evaluation.grad_norms
        return rounding.gradient_error(
            w, C, data.column_scales, data.column_norms, data.n_documents, l1, l2,
            self.evaluation.loss_rounding.grad_bound(self._score_error.value))
