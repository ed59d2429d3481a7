r"""Cutting planes of a query-level loss: what a separation oracle returns.

A loss that is a sum over queries of polyhedral convex functions,
:math:`\sum_i L_i(w)`, each the maximum of affine functions of w (a pairwise hinge summed,
averaged or maximized over a query's pairs), is minorized at any point by the affine piece
active there (its linearization):

.. math::

    L_i(v) \ge c_i - g_i^\top v \quad \text{for all } v, \qquad \text{with equality at } v = w.

In the dual the piece is a weighting :math:`\pi^i \ge 0` of the query's pairs,
:math:`c_i = \sum_{(j,k)} \pi^i_{jk} \Delta_{jk}` and :math:`g_i = \sum_{(j,k)}
\pi^i_{jk}(x_j - x_k)`, taken from the loss's own dual set at unit scale (Joachims 2006,
Le & Smola Alg. 2 for the same construction over structured outputs). A cutting-plane
solver (:mod:`cvxrank.solvers.cutting_plane`) keeps the pieces; a nonnegative combination of
them whose weights sum to at most the loss weight of their query is a feasible dual point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class QueryCuts:
    r"""The active affine pieces :math:`L_i(v) \ge c_i - g_i^\top v` of every block at w.

    Attributes
    ----------
    loss : ndarray of shape (B,)
        :math:`L_i(w)` of each block (a query with preference pairs).
    offset : ndarray of shape (B,)
        :math:`c_i`.
    gradient : ndarray of shape (B, d)
        :math:`g_i` (so :math:`-g_i` is a subgradient of :math:`L_i` at w).
    pair_weight : ndarray of shape (p,) or None
        :math:`\pi`: the pair weights of every block's piece, side by side (each pair
        belongs to one block, ``pair_block``); None when the pieces are not pair weightings
        (DORM's permutations), and then the cutting plane returns no dual point.
    pair_block : ndarray of int64, shape (p,) or None
        The block of each pair.
    loss_error, gradient_error : ndarray of shape (B,) or None
        Bounds on the rounding of each block's computed loss at w and of its gradient (the
        2-norm of :math:`\hat g_i - g_i`), when the oracle has them
        (:mod:`cvxrank.numerics.rounding`); None: the cutting plane bounds the rounding of the
        pieces' own arithmetic only (:func:`cvxrank.solvers.cutting_plane.cut_error`).
    """

    loss: np.ndarray
    offset: np.ndarray
    gradient: np.ndarray
    pair_weight: np.ndarray | None = None
    pair_block: np.ndarray | None = None
    loss_error: np.ndarray | None = None
    gradient_error: np.ndarray | None = None

    @property
    def n_blocks(self) -> int:
        """Number of blocks B."""
        return int(self.loss.size)

    def supports(self) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """Per block, ``(pairs, weights)``: its pairs of nonzero weight and their weights
        (pairs are sorted by block, as a formulation's pairs are by query); None per block
        when the pieces carry no pair weights."""
        if self.pair_weight is None or self.pair_block is None:
            return [None] * self.n_blocks
        nz = np.flatnonzero(self.pair_weight)
        ends = np.searchsorted(self.pair_block[nz], np.arange(1, self.n_blocks + 1))
        return [(idx, self.pair_weight[idx]) for idx in np.split(nz, ends[:-1])]
