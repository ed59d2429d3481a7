r"""Floating-point error bounds of the certificates: every computed gap and gradient norm
comes with a bound on its rounding, so that a radius is never 0 by rounding.

The model is the standard one of IEEE double precision (Higham, *Accuracy and Stability of
Numerical Algorithms*, 2nd ed., 2002, Sects. 2.2 and 3.1): every operation is exact up to a
relative error of at most the unit roundoff :math:`u = 2^{-53}`, so a sum of n terms
accumulated in any order (sequentially, pairwise, in BLAS blocks, across threads) is off by
at most :math:`\gamma_{n-1} \sum |t_i|` with :math:`\gamma_n = n u / (1 - n u)` (Higham
Lemma 3.1 and eq. (4.4)), and an inner product of length n by :math:`\gamma_n \sum |x_i
y_i|`. Neither bound depends on the summation order, the thread count or the CPU's kernels,
which is what makes a certificate hold on every machine. Underflow is ignored (every
quantity bounded here is a sum of terms far above the smallest normal number or exactly 0).

What each certificate bounds (``docs/certificates.md`` states them with their terms):

* a **gap** ``P(w) - D`` computed from the primal and a dual value: the rounding of both
  (:func:`value_error`, from the absolute sums of their terms);
* a **gradient** :math:`\nabla P(w) = w + C X^\top \partial L/\partial s` computed from scores
  ``s`` that a solver updated along its steps: the error of the scores against ``X w``
  (:func:`score_step_error`), of the loss's gradient in the scores at them (the loss engines'
  :class:`LossRounding`) and of the product with :math:`X^\top` (:func:`gradient_error`);
  the radius is then :math:`\|\hat g\| + \|e\|` (:math:`\|w - w^*\| \le \|\nabla P(w)\|`
  for a 1-strongly convex P).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: The unit roundoff of IEEE double precision, :math:`u = 2^{-53}`.
UNIT_ROUNDOFF = 2.0 ** -53


def gamma(n: float) -> float:
    r""":math:`\gamma_n = n u / (1 - n u)`, the relative error bound of n rounded operations
    in sequence (infinite from :math:`n u \ge 1/2`, where the bound stops being useful)."""
    nu = max(float(n), 0.0) * UNIT_ROUNDOFF
    return math.inf if nu >= 0.5 else nu / (1.0 - nu)


def value_error(n_terms: float, absolute_sum: float) -> float:
    r"""The rounding bound of a sum of ``n_terms`` terms whose magnitudes sum to
    ``absolute_sum``, each term itself computed with a few operations:
    :math:`\gamma_{n + 4} \sum |t_i|`."""
    return gamma(n_terms + 4) * abs(float(absolute_sum))


@dataclass(frozen=True)
class LossRounding:
    r"""The rounding of one evaluation of a pairwise loss at computed scores :math:`\hat s`,
    against the loss at exact scores :math:`s` with :math:`\|\hat s - s\|_\infty \le
    \delta`: the value is off by at most ``value + value_slope * delta + value_curvature *
    delta**2`` and the gradient in the scores by at most ``grad + grad_slope * delta`` in
    the 1-norm. The loss engines build it (``LossEvaluation.rounding``) from the absolute
    sums their passes add (:meth:`cvxrank.formulations.pair_losses.SortedPairLoss.evaluate`
    says which).

    Attributes
    ----------
    value, value_slope, value_curvature, grad, grad_slope : float
    """

    value: float
    value_slope: float
    value_curvature: float
    grad: float
    grad_slope: float

    def value_bound(self, delta: float) -> float:
        """The value's error bound for scores off by at most ``delta``."""
        return self.value + self.value_slope * delta + self.value_curvature * delta * delta

    def grad_bound(self, delta: float) -> float:
        """The gradient's error bound (1-norm) for scores off by at most ``delta``."""
        return self.grad + self.grad_slope * delta

    def __add__(self, other: LossRounding) -> LossRounding:
        """The rounding of a sum of two losses over disjoint documents (shards)."""
        return LossRounding(self.value + other.value, self.value_slope + other.value_slope,
                            self.value_curvature + other.value_curvature,
                            self.grad + other.grad, self.grad_slope + other.grad_slope)


def score_bound(column_scales: np.ndarray, w: np.ndarray) -> float:
    r""":math:`\sum_j \max_i |x_{ij}| |w_j| \ge \|X w\|_\infty`: the largest score any
    document can have, from the columns' largest magnitudes (scale-aware: a column of 1e10
    with a weight of 1e-10 counts 1, not 1e10)."""
    return float(np.asarray(column_scales, dtype=np.float64) @ np.abs(w))


def product_error(column_scales: np.ndarray, v: np.ndarray) -> float:
    r"""The rounding of :math:`X v` in the max-norm: each entry is an inner product of
    length d, :math:`|fl(x_i^\top v) - x_i^\top v| \le \gamma_d \sum_j |x_{ij}| |v_j|`."""
    return gamma(np.size(v) + 1) * score_bound(column_scales, v)


def score_step_error(column_scales: np.ndarray, step: np.ndarray, w_new: np.ndarray,
                     scores_max: float) -> float:
    r"""What one update :math:`\hat s \leftarrow \hat s - fl(X (t d))` of a solver's
    scores adds to their error against :math:`X \hat w_{new}`, with
    :math:`\hat w_{new} = fl(\hat w - t d)`: the product's rounding, the subtraction's
    (:math:`u \|\hat s_{new}\|_\infty`, ``scores_max``) and :math:`X` times the rounding
    of the weights' update (:math:`u (|\hat w_{new}| + |t d|)` per weight)."""
    scales = np.asarray(column_scales, dtype=np.float64)
    u = UNIT_ROUNDOFF
    return (product_error(scales, step) + 2.0 * u * float(scores_max)
            + 2.0 * u * (score_bound(scales, w_new) + score_bound(scales, step)))


def gradient_error(w: np.ndarray, C: float, column_scales: np.ndarray,
                   column_norms: np.ndarray, n_documents: int, grad_l1: float,
                   grad_l2: float, grad_error_l1: float) -> np.ndarray:
    r"""Per feature, the rounding of :math:`\hat g = w + C\, fl(X^\top \hat\beta)` against
    :math:`w + C X^\top \beta` (:math:`\hat\beta` the computed gradient of the loss in the
    scores, :math:`\|\hat\beta - \beta\|_1 \le` ``grad_error_l1``):

    .. math::

        e_j = \gamma_{n + 2} \big(|w_j| + C \min(\max_i |x_{ij}| \|\hat\beta\|_1,
        \|X_{:j}\|_2 \|\hat\beta\|_2)\big) + C \max_i |x_{ij}|\, \|\hat\beta - \beta\|_1,

    the first term the inner product's and the addition's rounding
    (:math:`\sum_i |x_{ij} \hat\beta_i|` bounded by Hoelder and Cauchy-Schwarz, column by
    column, so a large column's error is that column's), the second the propagation of the
    loss's own error.
    """
    scales = np.asarray(column_scales, dtype=np.float64)
    products = np.minimum(scales * grad_l1, np.asarray(column_norms, dtype=np.float64)
                          * grad_l2)
    return (gamma(n_documents + 2) * (np.abs(w) + C * products)
            + C * scales * grad_error_l1)
