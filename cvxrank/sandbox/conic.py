r"""Support functions of sets given by CVXPY constraints, written with the dual cone.

The dual of a user's pairwise formulation (:meth:`~cvxrank.sandbox.pairwise.
PairwiseFormulation.dual`) needs conjugates: the loss's :math:`\ell^*` and, with a weight set
S, :math:`h(v) = \sup_{w \in S} v^\top w - \tfrac12\|w\|^2`. CVXPY already describes the
sets behind them: :math:`c\,\ell^*(y / c) = \sigma_E(y, -c)` for :math:`c > 0` with the
epigraph :math:`E = \{(t, s) : \ell(t) \le s\}`, and S itself. CVXPY writes any such set
as :math:`\{x : \exists z,\ A [x; z] + b \in K\}` (its conic form, ``scs_coniclift``), and
conic duality gives

.. math::

    \sigma(y) = \sup\{y^\top x : A[x; z] + b \in K\}
              = \min\{b^\top \eta : A^\top \eta + [y; 0] = 0,\ \eta \in K^*\}

(CVXPY's own ``suppfunc`` transform, whose canonicalization this module follows), and the
Lagrange dual of :math:`\min_{w \in S} \tfrac12\|w\|^2 - y^\top w` gives h
(:meth:`ConicSet.quadratic_support`). The loss's set is lifted once, for one scalar pair;
:meth:`ConicSet.support` then writes the sum of the support functions of many columns
:math:`y_k` with one matrix of dual variables, every cone vectorized over the columns
(``cp.suppfunc`` on the p-vector epigraph makes one second-order cone constraint per pair
and takes tens of seconds to compile at 4,000 pairs).

Linear, second-order and exponential cones are handled (power cones are not: CVXPY's
lift refuses them).

References
----------
.. [1] R. T. Rockafellar, *Convex Analysis*, 1970, Sect. 13 (support functions) and
   Thm. 13.2 (conjugates of positively homogeneous functions).
.. [2] A. Ben-Tal and A. Nemirovski, *Lectures on Modern Convex Optimization*, 2001,
   Sect. 2.3 (conic duality).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from cvxrank.utils.lazy_sparse import sp

if TYPE_CHECKING:
    import cvxpy as cp


class ConicSet:
    """A convex set of :math:`\\mathbb{R}^n` given by CVXPY constraints, in conic form.

    Parameters
    ----------
    size : int
        n, the dimension of the set.
    constraints : callable
        ``constraints(x)``: the CVXPY constraints (DCP, without parameters) on a variable
        ``x`` of length n; auxiliary variables are allowed.

    Attributes
    ----------
    has_exponential_cones : bool
        Whether the conic form uses exponential cones (interior-point solvers reach a
        looser accuracy on them).
    """

    def __init__(self, size: int,
                 constraints: Callable[[cp.Variable], list[cp.Constraint]]) -> None:
        import cvxpy as cp
        from cvxpy.transforms.suppfunc import scs_cone_selectors, scs_coniclift

        x = cp.Variable(size)
        A, b, cones = scs_coniclift(x, constraints(x))
        self.size = int(size)
        self.AT = sp.csr_matrix(A.T)
        self.b = np.asarray(b, dtype=float)
        self.selectors = scs_cone_selectors(cones)
        if self.selectors["psd"]:
            raise NotImplementedError("sets with semidefinite cones are not supported")
        self.has_exponential_cones = bool(self.selectors["exp"].size)

    def support(self, Y: cp.Expression) -> tuple[cp.Expression, list[cp.Constraint]]:
        r""":math:`\sum_k \sigma(Y_{:,k})` as a CVXPY expression and its constraints.

        Parameters
        ----------
        Y : cp.Expression of shape (n, p)
            One point per column (affine in the variables and parameters: the result is
            DPP when Y is).

        Returns
        -------
        (expression, constraints)
            The sum is the minimum of the expression, linear in the dual variables
            :math:`\eta` (r x p), over the constraints; minimized with it (or maximized
            with its negative), it is the support function's value.
        """
        import cvxpy as cp

        n = self.size
        eta = cp.Variable((self.AT.shape[1], Y.shape[1]))
        lifted = self.AT @ eta
        constraints = [lifted[:n, :] + Y == 0, *self._dual_cone(eta)]
        if self.AT.shape[0] > n:
            constraints.append(lifted[n:, :] == 0)
        return cp.sum(self.b @ eta), constraints

    def quadratic_support(self, y: cp.Expression) -> tuple[cp.Expression, list[cp.Constraint]]:
        r""":math:`-h(y)`, :math:`h(y) = \sup_{w \in S}\, y^\top w - \tfrac12\|w\|^2`, as
        the maximum of a concave expression over its constraints.

        The Lagrange dual of :math:`\min_{w \in S} \tfrac12\|w\|^2 - y^\top w` over the
        conic form (strong duality, Slater):

        .. math::

            -h(y) = \max\{-\tfrac12\|y + A_w^\top \mu\|^2 - b^\top\mu :
                           A_z^\top \mu = 0,\ \mu \in K^*\},

        with :math:`A = [A_w\ A_z]` split between the set's variable and the auxiliary
        ones, and the minimizer :math:`w = y + A_w^\top \mu = \Pi_S(y)`. The quadratic
        stays a quadratic, which interior-point solvers handle exactly: written as the
        support function of :math:`\{(w, s) : w \in S, \tfrac12\|w\|^2 \le s\}` through
        a second-order cone, its optimal value was 3e-8 off at C = 1e-2 and 4e-6 at 1e-4.
        """
        import cvxpy as cp

        n = self.size
        mu = cp.Variable(self.AT.shape[1])
        constraints = self._dual_cone(mu)
        if self.AT.shape[0] > n:
            constraints.append(self.AT[n:] @ mu == 0)
        return -0.5 * cp.sum_squares(y + self.AT[:n] @ mu) - self.b @ mu, constraints

    def _dual_cone(self, eta: cp.Variable) -> list[cp.Constraint]:
        """``eta`` (r, or r x p: a column each) in the dual of the lift's cone."""
        import cvxpy as cp
        from cvxpy.constraints.exponential import ExpCone

        out = []
        if self.selectors["nonneg"].size:
            out.append(eta[self.selectors["nonneg"]] >= 0)
        for cone in self.selectors["soc"]:
            out.append(cp.SOC(eta[cone[0]], eta[cone[1:]], axis=0) if eta.ndim == 2
                       else cp.SOC(eta[cone[0]], eta[cone[1:]]))
        for u, v, w in np.reshape(self.selectors["exp"], (-1, 3)):
            # (u, v, w) in the dual of SCS's exponential cone, as CVXPY's suppfunc maps it
            out.append(ExpCone(-eta[v], -eta[u], np.e * eta[w]))
        return out
