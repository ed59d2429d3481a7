r"""The query-level families on shards: RankMM-1/2/3, DORM and SVM MAP, whose loss is a sum
of per-query blocks with a separation oracle, fitted by the n-slack cutting plane.

.. math::

    P(w) = \tfrac12\|w\|^2 + \frac{C}{m} \sum_i L_i(w), \qquad
    L_i(w) = \max_{\pi} c_i(\pi) - g_i(\pi)^\top w,

(m = 1 for DORM and SVM MAP, the number of queries for RankMM). A shard holds whole queries,
so each block is one shard's: :class:`ShardedQueryBlocks` builds the in-memory formulation
of each shard on its worker and offers the cutting plane
(:func:`cvxrank.solvers.cutting_plane.solve_cutting_plane`) the ``separation_oracle`` and
``cut_bounds`` capabilities as the shards' results side by side: every query's most violated
constraint (DORM's linear assignments, SVM MAP's greedy search, RankMM's pair weights) is
computed where its query lives, in parallel over the workers, and only the pieces (B
numbers and B x d gradients a call) travel; the master QP, the certificate and the finish
stay on the client. The pieces are the in-memory oracle's, block by block: the run is the
in-memory run, up to the order of the primal value's sum.

What the shards do not offer: the dual point of RankMM's pair weights (its pairs stay on the
workers: the run returns no ``alpha``), and the dual solvers (``apg``, SGP, SEG), which step
through the pairs.

References
----------
.. [1] S. Agarwal and M. Collins, "Maximum margin ranking algorithms for information
   retrieval", ECIR 2010, Sects. 3.1-3.3.
.. [2] Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", 2007, (27), Alg. 2.
.. [3] Y. Yue, T. Finley, F. Radlinski and T. Joachims, "A support vector method for
   optimizing average precision", SIGIR 2007.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from cvxrank.data.ranking_data import RankingData
from cvxrank.distributed.objective import ShardedObjective
from cvxrank.distributed.shards import ShardedRankingData
from cvxrank.formulations.base import no_pairs_error
from cvxrank.numerics.cuts import QueryCuts


@dataclass(frozen=True)
class Blocks:
    """What the client learns of a shard's formulation when it is built: its name, method
    and capabilities, and its blocks (the queries with pairs, numbered in the shard).

    Attributes
    ----------
    name : str
    method : str or None
    capabilities : frozenset of str
    queries_with_pairs : ndarray of int64
    """

    name: str
    method: str | None
    capabilities: frozenset[str]
    queries_with_pairs: np.ndarray


def build(data: RankingData, family: type, C: float, params: dict[str, Any]) -> Any:
    """The shard's formulation ``family(data, C=C, **params)`` on aligned arrays, or None
    for a shard without preference pairs (no query with two grades: no block)."""
    from cvxrank.data.pairs import count_pairs
    from cvxrank.distributed.tasks import aligned

    if not count_pairs(data).sum():
        return None
    return family(aligned(data), C=C, **params)


def blocks(formulation: Any) -> tuple[Blocks | None, float]:
    """The shard's :class:`Blocks` (None without blocks), and the compute seconds."""
    if formulation is None:
        return None, 0.0
    return Blocks(formulation.name, formulation.method, frozenset(formulation.capabilities),
                  np.asarray(formulation.queries_with_pairs, dtype=np.int64)), 0.0


def cuts(formulation: Any, w: np.ndarray) -> tuple[QueryCuts | None, float]:
    """The shard's most violated pieces at ``w`` (its blocks' part of the oracle, without
    RankMM's pair weights, which stay on the worker), and the compute seconds."""
    started = time.perf_counter()
    if formulation is None:
        return None, 0.0
    found = formulation.separation_oracle(w)
    return (QueryCuts(loss=found.loss, offset=found.offset, gradient=found.gradient,
                      loss_error=found.loss_error, gradient_error=found.gradient_error),
            time.perf_counter() - started)


def loss_sum(formulation: Any, w: np.ndarray) -> tuple[float, float]:
    r"""The shard's :math:`\sum_i L_i(w)` (its formulation's query losses), and the compute
    seconds."""
    started = time.perf_counter()
    if formulation is None:
        return 0.0, 0.0
    return float(np.sum(formulation.query_losses(w))), time.perf_counter() - started


def bounds(formulation: Any) -> tuple[tuple[float, np.ndarray] | None, float]:
    r"""The shard's part of the iteration bound: R (a bound on its pieces' gradient norms)
    and its blocks' losses at w = 0 (:meth:`cut_bounds`), and the compute seconds."""
    started = time.perf_counter()
    if formulation is None:
        return None, 0.0
    _, radius, losses = formulation.cut_bounds()
    return (float(radius), np.asarray(losses, dtype=np.float64)), time.perf_counter() - started


class ShardedQueryBlocks(ShardedObjective):
    """A query-level family's primal over query-aligned shards (module docstring).

    Parameters
    ----------
    data : ShardedRankingData
    family : type
        The in-memory formulation: :class:`~cvxrank.formulations.rankmm.RankMM`,
        :class:`~cvxrank.formulations.dorm.DORM`, :class:`~cvxrank.formulations.svmmap.SVMMAP`,
        or a researcher's subclass of :class:`~cvxrank.formulations.structured.PermutationSVM`
        (picklable: Dask sends it to the workers), with the ``separation_oracle`` and
        ``cut_bounds`` capabilities.
    C : float
        The loss weight, as the family's.
    **params
        The family's other parameters (``loss="ndcg@10"``, ``threshold=1.0``, ...), the same
        on every shard.

    Attributes
    ----------
    name, method : str
        The in-memory formulation's (``"dorm-ndcg"``, ``"dorm"``): the solvers, the registry
        and the reports treat it as that formulation.
    m : int
        The count C is divided by, as in memory: every query of the shards, with pairs or
        not, for a family whose ``mean_over_queries`` is true (RankMM), else 1 (DORM, SVM
        MAP).
    queries_with_pairs : ndarray of int64
        The blocks: each shard's queries with pairs, numbered among all shards' queries in
        shard order.
    capabilities : frozenset of str
        ``separation_oracle`` and ``cut_bounds``.

    Raises
    ------
    ValueError
        For data without preference pairs, a family without a separation oracle, or the
        family's own refusals (raised as its shard's formulation is built).
    """

    capabilities = frozenset({"separation_oracle", "cut_bounds"})

    def __init__(self, data: ShardedRankingData, family: type, *, C: float = 1.0,
                 **params: Any) -> None:
        if data.n_pairs == 0:
            raise no_pairs_error(data.source)
        super().__init__(data, build, C=C, family=family, params=dict(params))
        found = [part for part, _ in self.map(blocks)]
        built = [part for part in found if part is not None]
        needed = {"separation_oracle", "cut_bounds"}
        if not needed <= built[0].capabilities:
            raise ValueError(f"{built[0].name} has no separation oracle with cut bounds: it "
                             "is not a query-level family of the n-slack cutting plane")
        self.name, self.method = built[0].name, built[0].method
        offsets = np.cumsum([0] + [int(s.query_ids.size) for s in data.summaries[:-1]])
        self.queries_with_pairs = np.concatenate(
            [part.queries_with_pairs + offset
             for part, offset in zip(found, offsets, strict=True) if part is not None])
        self.m = data.n_queries if getattr(family, "mean_over_queries", False) else 1

    def sizes(self) -> dict[str, int]:
        """``n_blocks`` (the queries with pairs), ``n_pairs`` (all shards') and
        ``n_shards``."""
        return {"n_blocks": int(self.queries_with_pairs.size), "n_pairs": self.data.n_pairs,
                "n_shards": self.data.n_shards}

    # -- the capabilities, as the shards' results side by side -------------------------------
    def separation_oracle(self, w: np.ndarray) -> QueryCuts:
        """Every block's most violated piece at ``w``, computed where its query lives, in
        block order."""
        found = [part for part, _ in self.map(cuts, np.asarray(w, dtype=np.float64))
                 if part is not None]

        def joined(name: str) -> np.ndarray | None:
            parts = [getattr(part, name) for part in found]
            return None if any(p is None for p in parts) else np.concatenate(parts)

        return QueryCuts(loss=joined("loss"), offset=joined("offset"),
                         gradient=np.concatenate([part.gradient for part in found]),
                         loss_error=joined("loss_error"),
                         gradient_error=joined("gradient_error"))

    def query_losses(self, w: np.ndarray) -> np.ndarray:
        """Every block's loss at ``w`` (exact, by the oracle)."""
        return self.separation_oracle(w).loss

    def cut_bounds(self) -> tuple[float, float, np.ndarray]:
        r"""The n-slack cutting plane's iteration-bound numbers
        (:func:`cvxrank.solvers.cutting_plane.iteration_bound`): the weight C/m of each
        block's loss, the largest of the shards' R and the blocks' losses at w = 0."""
        found = [part for part, _ in self.map(bounds) if part is not None]
        return (self.C / self.m, max(radius for radius, _ in found),
                np.concatenate([losses for _, losses in found]))

    def primal_value(self, w: np.ndarray) -> float:
        """P(w), the shards' loss sums added on the client."""
        w = np.asarray(w, dtype=np.float64)
        total = sum(value for value, _ in self.map(loss_sum, w))
        return float(0.5 * (w @ w) + (self.C / self.m) * total)
