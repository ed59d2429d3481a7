r"""The pair losses that come with cvxrank, as :class:`~cvxrank.losses.pair_loss_type.PairLoss`
objects.

The RankSVM family's three (Chapelle & Keerthi 2010, eq. (1) and Sect. 4.1), piecewise
(:class:`~cvxrank.losses.pieces.Pieces`), so PRSVM+, the 1-slack and the shards know them by
their structure:

* :data:`hinge` :math:`\max(0, 1 - t)`;
* :data:`squared_hinge` :math:`\max(0, 1 - t)^2`;
* :data:`huber` :math:`\max(0, 1 - t)^2 - \max(0, -t)^2` (0 for t >= 1, :math:`(1 - t)^2` on
  [0, 1], :math:`1 - 2t` below).

Each moves to another margin with :meth:`~cvxrank.losses.pair_loss_type.PairLoss.with_margin`; a
researcher's piecewise loss is one :meth:`~cvxrank.losses.pair_loss_type.PairLoss.piecewise` call.
The smooth classics (:func:`logistic`, RankNet's; :func:`exponential`, RankBoost's) and the
hinge smoothed over a width (:func:`smoothed_hinge`) are made on demand, checked against
their CVXPY forms when made; the three above are checked by the test suite (made at import,
they do not import CVXPY).

References
----------
.. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010, eq. (1), Sect. 4.1.
.. [2] C. Burges et al., "Learning to rank using gradient descent", ICML 2005 (RankNet).
.. [3] Y. Freund, R. Iyer, R. Schapire and Y. Singer, "An efficient boosting algorithm for
   combining preferences", JMLR 4, 2003 (RankBoost).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from cvxrank.losses.pair_loss_type import PairLoss
from cvxrank.losses.pieces import Ramp
from cvxrank.utils.named import by_name

if TYPE_CHECKING:
    import cvxpy as cp


def _huber(t: cp.Expression) -> cp.Expression:
    import cvxpy as cp

    return cp.huber(cp.pos(1.0 - t), 1.0)


#: :math:`\max(0, 1 - t)`: Herbrich's and Joachims' RankSVM.
hinge = PairLoss.piecewise("hinge", [1.0], [1.0], power=1, check=False)

#: :math:`\max(0, 1 - t)^2`: Chapelle & Keerthi's eq. (1) (PRSVM, PRSVM+).
squared_hinge = PairLoss.piecewise("squared_hinge", [1.0], [1.0], power=2, check=False)

#: Chapelle & Keerthi's Huber loss (Sect. 4.1): the squared hinge capped at width 1.
huber = PairLoss.piecewise("huber", [1.0, 0.0], [1.0, -1.0], power=2, expression=_huber,
                           check=False)

#: The RankSVM family's losses by name (the names the command line, the estimators and
#: model files take).
BUILT_IN: dict[str, PairLoss] = {x.name: x for x in (hinge, squared_hinge, huber)}


def pair_loss(loss: str | PairLoss) -> PairLoss:
    """The pair loss named ``loss`` (:data:`BUILT_IN`), or ``loss`` itself when it is one.

    Raises
    ------
    ValueError
        For a name that is not a built-in loss, or an object that is not a
        :class:`~cvxrank.losses.pair_loss_type.PairLoss`.
    """
    return by_name(loss, PairLoss, BUILT_IN, "loss", " or a cvxrank.losses.PairLoss")


def ramp_of(loss: str | PairLoss) -> tuple[PairLoss, Ramp]:
    """The pair loss ``loss`` (an object, or a built-in one's name) and its ramp
    (:meth:`cvxrank.losses.Pieces.ramp`: the shape the RankSVM family runs).

    Raises
    ------
    ValueError
        For an unknown name, or a loss that is not a ramp (a smooth loss without pieces, or
        pieces of more knots), naming where such a loss runs.
    """
    loss = pair_loss(loss)
    ramp = loss.ramp
    if ramp is None:
        raise ValueError(
            f"loss {loss.name!r}: the RankSVM family runs a ramp (a hinge or squared hinge of "
            "one knot, any margin and scale, or a Huber pair of knots: PairLoss.piecewise); "
            "a smooth loss or one of more knots runs in cvxrank.sandbox.PairwiseFormulation")
    return loss, ramp


def unit_loss(ramp: Ramp) -> PairLoss:
    """The loss of a unit ramp (knot 1, scale 1, :meth:`~cvxrank.losses.Ramp.unit`):
    :data:`hinge`, :data:`squared_hinge`, :data:`huber`, or a Huber loss of another width."""
    ramp = ramp.unit()
    if ramp.linear:
        return hinge
    if not ramp.capped:
        return squared_hinge
    width = ramp.width
    if width == 1.0:
        return huber
    return PairLoss.piecewise(
        f"huber-width{width:g}", [1.0, 1.0 - width], [1.0, -1.0], power=2,
        expression=functools.partial(_capped, width=width), check=False)


def _capped(t: cp.Expression, width: float) -> cp.Expression:
    import cvxpy as cp

    return cp.huber(cp.pos(1.0 - t), width)


def _expit(x: np.ndarray) -> np.ndarray:
    """:func:`scipy.special.expit` (imported on use: scipy.special costs a process 30 ms of
    start-up that no other loss needs)."""
    from scipy.special import expit

    return expit(x)


def logistic(scale: float = 1.0) -> PairLoss:
    r"""RankNet's pair loss :math:`\ell(t) = \log(1 + e^{-\sigma t})` (Burges et al. 2005).

    :math:`\ell' = -\sigma\,\mathrm{expit}(-\sigma t) \in (-\sigma, 0)`,
    :math:`0 < \ell'' \le \sigma^2 / 4`.
    """
    import cvxpy as cp

    s = float(scale)
    return PairLoss(
        f"logistic-{s:g}" if s != 1 else "logistic",
        lambda t: cp.logistic(-s * t),
        lambda t: np.logaddexp(0.0, -s * t),
        lambda t: -s * _expit(-s * t),
        lambda t: s * s * _expit(s * t) * _expit(-s * t),
        slope_range=(-s, 0.0), curvature_range=(0.0, s * s / 4.0))


def exponential(scale: float = 1.0) -> PairLoss:
    r"""RankBoost's pair loss :math:`\ell(t) = e^{-\sigma t}` (Freund et al. 2003)."""
    import cvxpy as cp

    s = float(scale)
    return PairLoss(
        f"exponential-{s:g}" if s != 1 else "exponential",
        lambda t: cp.exp(-s * t),
        lambda t: np.exp(-s * t),
        lambda t: -s * np.exp(-s * t),
        lambda t: s * s * np.exp(-s * t))


def smoothed_hinge(margin: float = 1.0, width: float = 1.0) -> PairLoss:
    r"""The hinge smoothed by a quadratic of width :math:`\delta` (Huber):
    :math:`\ell(t) = 0` for :math:`t \ge m`, :math:`(m - t)^2 / (2\delta)` on
    :math:`[m - \delta, m]`, :math:`m - t - \delta/2` below (half of Chapelle & Keerthi's
    Huber loss, Sect. 4.1, at :math:`\delta = 1`); pieces at m and :math:`m - \delta`."""
    m, d = float(margin), float(width)
    if not d > 0:
        raise ValueError(f"width must be > 0, got {width}")
    return PairLoss.piecewise(
        f"smoothed_hinge-{m:g}-{d:g}", [m, m - d], [0.5 / d, -0.5 / d], power=2,
        expression=functools.partial(_smoothed, margin=m, width=d))


def _smoothed(t: cp.Expression, margin: float, width: float) -> cp.Expression:
    import cvxpy as cp

    return cp.huber(cp.pos(margin - t), width) / (2.0 * width)
