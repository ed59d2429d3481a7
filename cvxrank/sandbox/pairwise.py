r"""A pairwise ranking formulation built from a user's loss (and, optionally, a weight set).

:class:`PairwiseFormulation` is the RankSVM problem with any convex pair loss
(:class:`~cvxrank.losses.pair_loss_type.PairLoss`), over all the preference pairs
:math:`k = (i_k, j_k)` (:math:`y_i > y_j`, same query) with weights :math:`c_k > 0`, the
pair operator A (:math:`(A X w)_k = w^\top(x_{i_k} - x_{j_k})`, :math:`M = A X`) and,
optionally, a closed convex set S of weights (:class:`~cvxrank.sandbox.sets.
ConstraintSet`):

.. math::

    P(w) = \tfrac12\|w\|^2 + C \sum_k c_k\, \ell\big((M w)_k\big), \quad w \in S,

    D(\alpha) = -h(M^\top \alpha) - \sum_k C c_k\, \ell^*\Big(-\frac{\alpha_k}{C c_k}\Big),
    \qquad h(v) = \sup_{w \in S}\, v^\top w - \tfrac12\|w\|^2,

with :math:`w(\alpha) = \Pi_S(M^\top \alpha)` (:math:`h(v) = \tfrac12\|v\|^2` and
:math:`w = M^\top\alpha` without S) and the dual variables in the box
:math:`-C c_k\,\mathrm{hi} \le \alpha_k \le -C c_k\,\mathrm{lo}` of the loss's slope range
(:math:`[0, \infty)` for a nonincreasing loss with unbounded slope). It is the Fenchel dual
(Rockafellar 1970, Thm. 31.2): the Lagrangian of :math:`t = M w` minimized over t gives the
conjugates, over :math:`w \in S` gives h.

What each side is made of:

* **the certified reference** (:func:`cvxrank.certificates.reference.solve_reference`): the primal
  in CVXPY with the user's atom, the pair differences :math:`t = A s` (:math:`s = X w`) as a
  constraint whose multiplier CVXPY returns is the dual point :math:`\alpha`
  (:attr:`~PairwiseFormulation.dual_from_primal`), and d* the numpy :math:`D(\alpha)`: one
  conic solve, and a dual value exact to rounding, whatever the solver's tolerance. C is a
  ``cp.Parameter`` (DPP).
* **the dual in CVXPY** (:meth:`~cvxrank.formulations.base.Formulation.dual`, for whoever
  wants to look at it or solve it): :math:`\ell^*` as the support function of the loss's
  epigraph and h through the conic form of S, which CVXPY derives from their own constraints
  (:mod:`cvxrank.sandbox.conic`), so the user writes no conjugate. Its optimal value is as
  accurate as the solver's tolerance on it allows (1e-8 to 1e-7 relative at Clarabel's
  1e-9 on exponential cones): good for looking, not for certifying to 1e-7.
* **numpy**: the loss engine (value, gradient and Hessian-vector products in the document
  scores through A, as PRSVM's :class:`~cvxrank.formulations.pair_losses.ExplicitPairLoss`),
  the dual value through the conjugate computed from the derivatives
  (:meth:`~cvxrank.losses.pair_loss_type.PairLoss.conjugate`) and h through the projection
  (:math:`h(v) = v^\top \pi - \tfrac12\|\pi\|^2`, :math:`\pi = \Pi_S(v)`).

Capabilities (:mod:`cvxrank.core.capabilities`): ``primal_certificate`` always (any w certifies
the bound :math:`D(\alpha(w))` with :math:`\alpha_k(w) = -C c_k \ell'(t_k)`, which costs no
conjugate: :math:`\ell^*(\ell'(t)) = t\ell'(t) - \ell(t)`); ``pairwise_newton`` without a
weight set (PRSVM, ``prsvm``); ``dual_gradient`` when the loss's conjugate is smooth
(``curvature_range[0] > 0``: ``pg``, ``apg``).

References
----------
.. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010, eq. (1), Sect. 3 (operator A, PRSVM).
.. [2] R. T. Rockafellar, *Convex Analysis*, 1970, Thm. 31.2 (Fenchel duality).
.. [3] C. Burges et al., ICML 2005 (RankNet's logistic pair loss).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from cvxrank.data.pairs import DEFAULT_MAX_PAIRS, PairSet, build_pairs, count_pairs
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import LossWeighted, ProjectableDual, squared_operator_norm
from cvxrank.formulations.pair_losses import LossEvaluation
from cvxrank.losses.pair_loss_type import PairLoss
from cvxrank.numerics import rounding
from cvxrank.numerics.rounding import LossRounding
from cvxrank.numerics.sets import Box
from cvxrank.sandbox.conic import ConicSet
from cvxrank.sandbox.sets import ConstraintSet
from cvxrank.tolerances import FEASIBILITY
from cvxrank.utils.lazy_sparse import sp

if TYPE_CHECKING:
    import cvxpy as cp

#: Clarabel's settings for the reference's primal solve. At the default tolerances (1e-10)
#: it stalls near a relative gap of 1e-9 on exponential cones (the logistic and exponential
#: losses) and on some second-order ones (a ball of weights) and reports
#: ``optimal_inaccurate``, even on 200 pairs; at 1e-9 with interior steps of at most 0.9 of
#: the way to the boundary (default 0.99) it certified every problem tried (see
#: :attr:`PairwiseFormulation.reference_options`). The certificate is unchanged: p* and the
#: numpy dual value at CVXPY's multipliers agree to 1e-7 (they agree to about 1e-10).
REFERENCE_OPTIONS = {"CLARABEL": {"tol_gap_abs": 1e-9, "tol_gap_rel": 1e-9, "tol_feas": 1e-9,
                                  "max_iter": 500, "max_step_fraction": 0.9}}


@dataclass
class PairLossEvaluation(LossEvaluation):
    """:class:`~cvxrank.formulations.pair_losses.LossEvaluation` plus the Fenchel sum
    :math:`\\sum_k c_k\\,(t_k \\ell'(t_k) - \\ell(t_k)) = \\sum_k c_k\\, \\ell^*(\\ell'(t_k))`,
    the conjugate part of the certified dual bound (``margin_hinge`` is NaN)."""

    fenchel: float = float("nan")


class PairLossEngine:
    """The loss :math:`L(s) = \\sum_k c_k \\ell((A s)_k)` of document scores s through the
    pair operator A: value, gradient :math:`A^\\top (c \\odot \\ell'(As))` and Hessian-vector
    products :math:`A^\\top (c \\odot \\ell''(As) \\odot A\\delta)`, O(p) each (PRSVM's
    engine, Chapelle & Keerthi Sect. 3, for any loss).

    Parameters
    ----------
    A : sparse matrix of shape (p, n)
    weight : ndarray of shape (p,)
    loss : PairLoss
    """

    def __init__(self, A: sp.spmatrix, weight: np.ndarray, loss: PairLoss) -> None:
        self.A = sp.csr_matrix(A)
        self.AT = self.A.T.tocsr()
        self.weight = np.asarray(weight, dtype=np.float64)
        self.loss = loss

    def evaluate(self, s: np.ndarray) -> PairLossEvaluation:
        """Value, gradient, Hessian-vector product and Fenchel sum at the scores ``s``."""
        t = self.A @ s
        c, loss = self.weight, self.loss
        values = loss.value(t)
        slope = loss.derivative(t)
        curvature: list[np.ndarray] = []  # the second derivative, on the first product

        def hessp(delta: np.ndarray) -> np.ndarray:
            if not curvature:
                curvature.append(c * loss.second_derivative(t))
            return self.AT @ (curvature[0] * (self.A @ delta))

        return PairLossEvaluation(float(c @ values), self.AT @ (c * slope), float("nan"),
                                  hessp, self._rounding(s, values, slope),
                                  fenchel=float(c @ (t * slope - values)))

    def _rounding(self, s: np.ndarray, values: np.ndarray, slope: np.ndarray
                  ) -> Callable[[], LossRounding]:
        r"""The rounding bound of an evaluation (:class:`~cvxrank.numerics.rounding.LossRounding`),
        taking the loss's own numpy value and derivative to be within 8 units of rounding
        (its functions are the user's): :math:`t = As` is one rounding of
        :math:`2\|s\|_\infty`; the value sums p terms and moves by :math:`\sum_k c_k
        |\ell'|` per unit of t plus half the largest curvature times W per its square; each
        document's gradient sums its pairs' and moves by the curvature per unit of t (a loss
        of unbounded curvature, a kink, gives its subgradient at the computed t)."""
        c = self.weight
        high = float(self.loss.curvature_range[1])
        curvature = high if math.isfinite(high) else 0.0
        total = float(np.abs(c).sum())
        degree = int(np.diff(self.AT.indptr).max(initial=0))

        def bound() -> LossRounding:
            u = rounding.UNIT_ROUNDOFF
            base = 2.0 * u * float(np.abs(s).max(initial=0.0))
            size = float(np.abs(c) @ np.abs(values))
            slopes = float(np.abs(c) @ np.abs(slope))
            return LossRounding(
                value=(rounding.gamma(c.size + 3) + 8.0 * u) * size + slopes * base
                + 0.5 * curvature * total * base * base,
                value_slope=2.0 * slopes, value_curvature=2.0 * curvature * total,
                grad=(rounding.gamma(degree + 3) + 8.0 * u) * 2.0 * slopes
                + 2.0 * curvature * total * base,
                grad_slope=4.0 * curvature * total)

        return bound


class PairwiseFormulation(ProjectableDual, LossWeighted):
    """RankSVM with a user's pair loss and, optionally, a set of weights (module docstring).

    Parameters
    ----------
    data : RankingData
        Training data.
    loss : PairLoss
        The pair loss (checked against its CVXPY form when it was made).
    C : float
        Loss weight (a ``cp.Parameter``; change it with :meth:`set_params`).
    pair_weight : array of shape (p,), optional
        Weights :math:`c_k > 0` in the order of :func:`~cvxrank.data.pairs.build_pairs`
        (default ones).
    weight_set : ConstraintSet, optional
        The set S of weights; its projection is checked against CVXPY in dimension d here.
    pairs : PairSet, optional
        The preference pairs (default: all, built on first use).
    max_pairs : int
        Refusal limit of :func:`~cvxrank.data.pairs.build_pairs`.

    Attributes
    ----------
    name : str
        ``pairwise-<loss>`` or ``pairwise-<loss>-<set>``.
    capabilities : frozenset of str
        See the module docstring.
    dual_from_primal : bool
        True: the reference certifies the primal with CVXPY's own multipliers of its
        constraint ``t = A s`` (the dual point alpha) and the numpy dual value there
        (:func:`~cvxrank.certificates.reference.solve_reference`): one solve, whose dual value is
        exact where the conic :meth:`dual`'s is only as good as the solver's tolerance.
    reference_options : dict
        :data:`REFERENCE_OPTIONS`.
    """

    dual_from_primal = True
    reference_options = REFERENCE_OPTIONS

    def __init__(self, data: RankingData, loss: PairLoss, *, C: float = 1.0,
                 pair_weight: np.ndarray | None = None,
                 weight_set: ConstraintSet | None = None, pairs: PairSet | None = None,
                 max_pairs: int = DEFAULT_MAX_PAIRS) -> None:
        super().__init__(data, C=C)
        self.loss = loss
        self.weight_set = weight_set
        self.name = f"pairwise-{loss.name}" + (f"-{weight_set.name}" if weight_set else "")
        self._given_pairs = pairs
        self._max_pairs = max_pairs
        self._n_pairs = pairs.n_pairs if pairs is not None else int(count_pairs(data).sum())
        if self._n_pairs == 0:
            raise ValueError(f"{data.source or 'the data'}: no preference pairs")
        self._pair_weight = None if pair_weight is None else _positive(pair_weight,
                                                                       self._n_pairs)
        if weight_set is not None:
            weight_set.verify(data.n_features)
        capabilities = {"primal_certificate"}
        if weight_set is None:
            capabilities.add("pairwise_newton")
        if loss.smooth_conjugate:
            capabilities.add("dual_gradient")
        self.capabilities = frozenset(capabilities)
        self._engine: PairLossEngine | None = None
        self._op_norm_sq: float | None = None

    # -- data ----------------------------------------------------------------------------
    @property
    def X(self) -> np.ndarray | sp.csr_matrix:  # noqa: N802 (the papers' name)
        """The feature matrix."""
        return self.data.X

    @cached_property
    def pairs(self) -> PairSet:
        """The preference pairs (built on first use)."""
        if self._given_pairs is not None:
            return self._given_pairs
        return build_pairs(self.data, max_pairs=self._max_pairs)

    @cached_property
    def pair_weight(self) -> np.ndarray:
        """The pair weights :math:`c_k`."""
        return self._pair_weight if self._pair_weight is not None else np.ones(self._n_pairs)

    @property
    def n_dual(self) -> int:
        """Number of dual variables: the pairs."""
        return self._n_pairs

    def sizes(self) -> dict[str, int]:
        """``n_dual`` and ``n_pairs``."""
        return {"n_dual": self._n_pairs, "n_pairs": self._n_pairs}

    def _extra_key(self) -> str:
        h = hashlib.sha1(self.loss.fingerprint.encode())
        if self.weight_set is not None:
            h.update(self.weight_set.fingerprint(self.data.n_features).encode())
        if self._pair_weight is not None:
            h.update(self._pair_weight.tobytes())
        if self._given_pairs is not None:
            h.update(self._given_pairs.upper.tobytes() + self._given_pairs.lower.tobytes())
        return h.hexdigest()[:16]

    # -- the loss engine (pairwise_newton) -------------------------------------------------
    def loss_engine(self, kind: str = "pairs") -> PairLossEngine:
        """The engine through the pair operator (``kind`` ``"pairs"`` or ``"auto"``; a
        user's loss has no sorted O(n log n) engine)."""
        if kind not in ("pairs", "auto"):
            raise ValueError(f"{self.name}: only the pair engine ('pairs') evaluates a "
                             f"user's loss; got {kind!r}")
        if self._engine is None:
            self._engine = PairLossEngine(self.pairs.A, self.pair_weight, self.loss)
        return self._engine

    def evaluate_loss(self, w: np.ndarray) -> PairLossEvaluation:
        """The loss engine at the scores ``X w``."""
        return self.loss_engine().evaluate(self.X @ np.asarray(w, dtype=np.float64))

    # -- numpy evaluators ----------------------------------------------------------------
    def _regularizer(self, v: np.ndarray) -> tuple[float, np.ndarray]:
        """``(h(v), Pi_S(v))`` (module docstring)."""
        if self.weight_set is None:
            return 0.5 * float(v @ v), v
        pi = self.weight_set.project(v)
        return float(v @ pi - 0.5 * (pi @ pi)), pi

    def _weights_of(self, alpha: np.ndarray) -> np.ndarray:
        """``M^T alpha = X^T A^T alpha``."""
        return np.asarray(self.X.T @ (self.pairs.A.T @ np.asarray(alpha, dtype=np.float64)))

    def primal_value(self, w: np.ndarray) -> float:
        """P(w); ``inf`` for w farther than :data:`~cvxrank.tolerances.FEASIBILITY` (times
        ``max(1, |w|_inf)``) from the weight set."""
        w = np.asarray(w, dtype=np.float64)
        if self.weight_set is not None and self.weight_set.violation(w) > FEASIBILITY * max(
                1.0, float(np.abs(w).max(initial=0.0))):
            return float("inf")
        return float(0.5 * (w @ w) + self.C * self.evaluate_loss(w).value)

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """:math:`w(\\alpha) = \\Pi_S(M^\\top \\alpha)`."""
        return self._regularizer(self._weights_of(alpha))[1]

    def dual_value(self, alpha: np.ndarray) -> float:
        """D(alpha) at the projection of ``alpha`` onto the dual box (the conjugate is
        infinite outside it; :meth:`dual_infeasibility` reports the distance)."""
        alpha = self.dual_set.project(np.asarray(alpha, dtype=np.float64))
        scale = self.C * self.pair_weight
        conjugate = float(scale @ self.loss.conjugate(-alpha / scale))
        return -self._regularizer(self._weights_of(alpha))[0] - conjugate

    def dual_value_at(self, w: np.ndarray, evaluation: PairLossEvaluation | None = None,
                      loss_gradient: np.ndarray | None = None) -> float:
        r"""The dual bound certified by w: :math:`D(\alpha(w))`, :math:`\alpha_k(w) = -C c_k
        \ell'(t_k)`, i.e. :math:`-h(-C X^\top \nabla_s L) - C \sum_k c_k (t_k \ell'(t_k) -
        \ell(t_k))` from one loss evaluation (``evaluation``, if the caller holds it, and
        ``loss_gradient`` its :math:`X^\top \nabla_s L`)."""
        ev = self.evaluate_loss(w) if evaluation is None else evaluation
        if loss_gradient is None:
            loss_gradient = np.asarray(self.X.T @ ev.grad)
        v = -self.C * loss_gradient
        return -self._regularizer(v)[0] - self.C * ev.fenchel

    @cached_property
    def dual_set(self) -> Box:
        """The box ``-C c hi <= alpha <= -C c lo`` of the loss's slope range."""
        lo, hi = self.loss.slope_range

        def bound(edge: float) -> float | np.ndarray:
            if not np.isfinite(edge) or edge == 0:
                return -edge + 0.0
            return -edge * self.pair_weight

        return Box(bound(hi), bound(lo), scale=self.hyper_parameter("C"))

    # -- dual_gradient (a smooth conjugate) ------------------------------------------------
    def neg_dual_grad(self, alpha: np.ndarray) -> np.ndarray:
        """Gradient of -D: :math:`M \\Pi_S(M^\\top\\alpha) - \\nabla\\ell^*(-\\alpha / (C c))`."""
        alpha = np.asarray(alpha, dtype=np.float64)
        w = self.primal_from_dual(alpha)
        slope = self.loss.conjugate_argmax(-alpha / (self.C * self.pair_weight))
        return self.pairs.A @ (self.X @ w) - slope

    def dual_lipschitz(self) -> float:
        """``||X^T A^T||^2 + 1 / (C min c low)`` (a projection is 1-Lipschitz; the
        conjugate's derivative is ``1/low``-Lipschitz)."""
        if self._op_norm_sq is None:
            self._op_norm_sq = squared_operator_norm(self.X, self.pairs.A)
        low = self.loss.curvature_range[0]
        return self._op_norm_sq + 1.0 / (self.C * float(self.pair_weight.min()) * low)

    def dual_strong_convexity(self) -> float:
        """``1 / (C max c high)`` (0 when the loss's curvature is unbounded)."""
        high = self.loss.curvature_range[1]
        if not np.isfinite(high) or high == 0:
            return 0.0
        return 1.0 / (self.C * float(self.pair_weight.max()) * high)

    def dual_start(self) -> np.ndarray:
        """The projection of 0 onto the dual box."""
        return self.dual_set.project(np.zeros(self._n_pairs))

    # -- CVXPY reference ---------------------------------------------------------------------
    @property
    def _loss_cone(self) -> ConicSet:
        """The loss's epigraph :math:`\\{(t, s) : \\ell(t) \\le s\\}` in conic form."""
        return self._cached("loss-cone", lambda: ConicSet(
            2, lambda x: [self.loss.expression(x[:1]) <= x[1:]]))

    @property
    def _weight_cone(self) -> ConicSet:
        """The weight set S in conic form."""
        return self._cached("weight-cone", lambda: ConicSet(self.data.n_features,
                                                            self.weight_set.constraints))

    @property
    def w_variable(self) -> cp.Variable:
        """The weights ``w`` of :meth:`primal`."""
        return self._variable("w", self.data.n_features)

    @property
    def alpha_variable(self) -> cp.Variable:
        """The pair multipliers ``alpha``: CVXPY's dual variable of the primal's constraint
        ``t = A s`` (:attr:`dual_from_primal`; read after a solve of :meth:`primal`)."""
        self.primal()
        return self._cvxpy["link"].dual_variables[0]

    def _build_primal(self) -> cp.Problem:
        import cvxpy as cp

        w, s = self.w_variable, self._variable("s", self.data.n_documents)
        t = self._variable("t", self._n_pairs)
        link = self._cached("link", lambda: t == self.pairs.A @ s)  # multiplier: alpha
        loss = self.pair_weight @ self.loss.expression(t)
        constraints = [s == self.X @ w, link]
        if self.weight_set is not None:
            constraints += self.weight_set.constraints(w)
        return cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + self.parameter("C") * loss),
                          constraints)

    def _build_dual(self) -> cp.Problem:
        # In beta = alpha / C, whose size does not depend on C: both conjugate terms are
        # positively homogeneous, sum_k sigma_E(-C beta_k, -C c_k) = C sum_k sigma_E(-beta_k,
        # -c_k), and the cone variables keep the size of the loss, not of C (at C = 5e-5 on
        # 10^4 pairs, alpha's form left Clarabel's dual value 1e-7 off).
        import cvxpy as cp

        beta, u = self._variable("beta", self._n_pairs), self._variable("u", self.data.n_documents)
        C = self.parameter("C")
        v = C * (self.X.T @ u)
        conjugate, constraints = self._loss_cone.support(cp.vstack([-beta, -self.pair_weight]))
        constraints.append(u == self.pairs.A.T @ beta)
        if self.weight_set is None:
            minus_h = -0.5 * cp.sum_squares(v)
        else:
            minus_h, more = self._weight_cone.quadratic_support(v)
            constraints += more
        return cp.Problem(cp.Maximize(minus_h - C * conjugate), constraints)


def _positive(values: np.ndarray, size: int) -> np.ndarray:
    """A read-only copy of per-pair weights, checked: shape (size,), finite, > 0."""
    out = np.array(values, dtype=np.float64)
    if out.shape != (size,) or not np.all(np.isfinite(out) & (out > 0)):
        raise ValueError(f"pair_weight must be {size} finite values > 0 (one per pair)")
    out.flags.writeable = False
    return out
