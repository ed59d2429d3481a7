"""Pair losses as objects: one type, :class:`PairLoss`, for the built-in losses and a
researcher's own (:mod:`cvxrank.losses.pair_loss_type`, its structure :mod:`cvxrank.losses.pieces`,
the built-in ones :mod:`cvxrank.losses.library`).

>>> import cvxrank.losses
>>> cvxrank.losses.squared_hinge.pieces.knots
(1.0,)
>>> cvxrank.losses.squared_hinge.with_margin(2.0).ramp.knot
2.0
"""

from cvxrank.losses.library import (
    BUILT_IN,
    exponential,
    hinge,
    huber,
    logistic,
    pair_loss,
    ramp_of,
    smoothed_hinge,
    squared_hinge,
    unit_loss,
)
from cvxrank.losses.pair_loss_type import ExpressionMismatchError, PairLoss, check_agreement
from cvxrank.losses.pieces import Pieces, Ramp

__all__ = ["BUILT_IN", "ExpressionMismatchError", "PairLoss", "Pieces", "Ramp",
           "check_agreement", "exponential", "hinge", "huber", "logistic", "pair_loss",
           "ramp_of", "smoothed_hinge", "squared_hinge", "unit_loss"]
