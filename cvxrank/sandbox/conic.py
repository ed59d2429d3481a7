r"""Support functions of sets given by CVXPY constraints, written with the dual cone.

A dual problem needs conjugates: the loss's :math:`\ell^*` and, with a weight set S,
:math:`h(v) = \sup_{w \in S} v^\top w - \tfrac12\|w\|^2`. Both are support functions of
convex sets that CVXPY already describes: :math:`\ell^*(y) = \sigma_E(y, -1)` for the
epigraph :math:`E = \{(t, s) : \ell(t) \le s\}`, and more generally
:math:`c\,\ell^*(y / c) = \sigma_E(y, -c)` for :math:`c > 0`. CVXPY writes any such set as
:math:`\{x : \exists z,\ A [x; z] + b \in K\}` (its conic form, ``scs_coniclift``), and
conic duality gives

.. math::

    \sigma(y) = \sup\{y^\top x : A[x; z] + b \in K\}
              = \min\{b^\top \eta : A^\top \eta + [y; 0] = 0,\ \eta \in K^*\}

(CVXPY's own ``suppfunc`` transform, whose canonicalization this module follows). The
loss's set is lifted once, for one scalar pair; :meth:`ConicSet.support` then writes the
sum of the support functions of many columns :math:`y_k` with one matrix of dual variables,
every cone vectorized over the columns (``cp.suppfunc`` on the p-vector epigraph makes one
second-order cone constraint per pair and takes tens of seconds to compile at 4,000 pairs).

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
import scipy.sparse as sp

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
        from cvxpy.constraints.exponential import ExpCone

        n = self.size
        rows, p = self.AT.shape[1], Y.shape[1]
        eta = cp.Variable((rows, p))
        lifted = self.AT @ eta
        constraints = [lifted[:n, :] + Y == 0]
        if self.AT.shape[0] > n:
            constraints.append(lifted[n:, :] == 0)
        if self.selectors["nonneg"].size:
            constraints.append(eta[self.selectors["nonneg"], :] >= 0)
        for cone in self.selectors["soc"]:
            constraints.append(cp.SOC(eta[cone[0], :], eta[cone[1:], :], axis=0))
        for u, v, w in np.reshape(self.selectors["exp"], (-1, 3)):
            # (u, v, w) in the dual of SCS's exponential cone, as CVXPY's suppfunc maps it
            constraints.append(ExpCone(-eta[v, :], -eta[u, :], np.e * eta[w, :]))
        return cp.sum(self.b @ eta), constraints
