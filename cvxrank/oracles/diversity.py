r"""Le & Smola's diversity constraints (Sect. 5.1): at most one document per group on top.

A query has :math:`l` documents split into disjoint groups :math:`B_s` (a site, a domain, a
topic) that form a partition of :math:`\{1, \dots, l\}`. Among the top :math:`n` positions
at most one document of each group may appear. The training-time problem is the integer
program (33)

.. math::

    \max_\pi\; \operatorname{tr} \pi^\top C = \sum_{i, j} \pi_{ij} C_{ij}
    \quad\text{s.t.}\quad
    \sum_i \pi_{ij} = 1 \;\; (j = 1, \dots, n), \qquad
    \sum_j \sum_{i \in B_s} \pi_{ij} \le 1 \;\; (\text{all } B_s), \qquad
    \pi \in \{0, 1\}^{l \times n},

with :math:`\pi_{ij} = 1` when document :math:`i` takes position :math:`j` and :math:`C`
the gain of that pair (for the score (30), :math:`C_{ij} = b(y)_i\, a_j`; for the most
violated constraint (8), the assignment gain of (24) restricted to the top :math:`n`
columns). The constraints are (31) (every top position is filled) and (32) (no group twice).

**Total unimodularity (Theorem 3, Corollary 4).** Every variable :math:`\pi_{ij}` has
coefficient 1 in exactly two constraint rows: the position row :math:`j` of (31) and the row
of the one group that holds :math:`i` in (32). With the rows split into {positions} and
{groups}, Heller and Tompkins' condition holds, the matrix is totally unimodular (so is it
with the bounds :math:`0 \le \pi \le 1` appended), and every vertex of the LP relaxation
:math:`\pi \in [0, 1]^{l \times n}` is integral. A *vertex* solver (HiGHS' simplex) therefore
returns the integer optimum; an interior-point solver (Clarabel) returns the centre of the
optimal face, integral only when the optimum is unique. "A document takes at most one
position" is not written in (33b) and need not be: each document lies in exactly one group,
so it follows from (32).

**Where it fails.** The paper's extension to weighted, overlapping sets
:math:`\sum_{ij} \pi_{ij} w_{is} \le 1` breaks the argument (a variable can appear in more
than two rows), as the paper says. :func:`diversity_lp` accepts such a weight matrix, states
that the result is then only an upper bound of the integer program, and the tests exhibit
instances where the LP optimum is fractional and strictly larger.

**Test time.** With a linear scorer, the paper ranks the best-scored document of each group
and nothing else on top (:func:`diverse_ranking`); for decreasing positive position weights
this is the optimum of (33) with :math:`C_{ij} = g_i c_j` (rearrangement inequality plus an
exchange argument), which the tests check against enumeration.

Rankings are ``order`` arrays as in :mod:`cvxrank.oracles.dorm`: ``order[p]`` is the
document at position ``p`` (0-based), here of length :math:`n` (the top positions only).

References
----------
.. [1] Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures",
   arXiv:0704.3359, 2007, Sect. 5.1, Eqs. (30)-(33), Theorem 3, Corollary 4.
.. [2] I. Heller and C. B. Tompkins, "An extension of a theorem of Dantzig's", in Linear
   Inequalities and Related Systems, Princeton, 1956.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import cvxpy as cp
import numpy as np
import numpy.typing as npt

from cvxrank.errors import SolverError

__all__ = [
    "INTEGRALITY_TOLERANCE",
    "DiversityLP",
    "constraint_matrix",
    "diverse_ranking",
    "diversity_integer_optimum",
    "diversity_lp",
    "group_matrix",
]

INTEGRALITY_TOLERANCE = 1e-6
"""An LP solution is integral when every entry is within this of 0 or 1."""


@dataclass(frozen=True)
class DiversityLP:
    r"""The solution of the LP relaxation of (33).

    Attributes
    ----------
    pi : numpy.ndarray, shape (l, n)
        The relaxed assignment :math:`\pi \in [0, 1]^{l \times n}` (documents x positions).
    value : float
        The LP optimum :math:`\operatorname{tr} \pi^\top C`.
    integral : bool
        Whether every entry of ``pi`` is within :data:`INTEGRALITY_TOLERANCE` of 0 or 1.
    order : numpy.ndarray of int64, shape (n,), or None
        When ``integral``: ``order[p]`` is the document at position ``p`` (the rounded
        ``pi``); otherwise None.
    partition : bool
        Whether the groups were a partition with unit weights, the case of Corollary 4 in
        which the constraint matrix is totally unimodular and ``value`` is the integer
        optimum. Otherwise ``value`` is only an upper bound of it.
    solver : str
        The CVXPY solver used.
    """

    pi: np.ndarray
    value: float
    integral: bool
    order: np.ndarray | None
    partition: bool
    solver: str


def group_matrix(groups: npt.ArrayLike, documents: int) -> tuple[np.ndarray, bool]:
    r"""The weights :math:`w_{is}` of the group constraints, one row per group.

    Parameters
    ----------
    groups : array_like
        Either a 1-D array of ``l`` integer labels (document ``i`` belongs to the set
        :math:`B_s` with :math:`s` = ``groups[i]``; the paper's partition in (32)), or a 2-D
        array of shape (S, l) of nonnegative weights :math:`w_{is}` (row ``s`` the set
        :math:`s`), the paper's weighted, possibly overlapping extension.
    documents : int
        The number of documents :math:`l`.

    Returns
    -------
    W : numpy.ndarray, shape (S, l)
        ``W[s, i]`` = :math:`w_{is}` (for labels, 1 when ``groups[i]`` is the ``s``-th
        distinct label in increasing order, else 0).
    partition : bool
        Whether ``W`` is 0/1 with exactly one 1 per column (a partition).
    """
    groups = np.asarray(groups)
    if groups.ndim == 1:
        if groups.shape != (documents,) or not np.issubdtype(groups.dtype, np.integer):
            raise ValueError(f"group labels must be {documents} integers, got {groups!r}")
        _, inverse = np.unique(groups, return_inverse=True)
        W = np.zeros((inverse.max() + 1, documents))
        W[inverse, np.arange(documents)] = 1.0
        return W, True
    W = np.asarray(groups, dtype=np.float64)
    if W.ndim != 2 or W.shape[1] != documents:
        raise ValueError(f"a group weight matrix must have shape (S, {documents}), got {W.shape}")
    if not np.all(np.isfinite(W) & (W >= 0)):
        raise ValueError("group weights must be finite and nonnegative")
    partition = bool(np.all((W == 0) | (W == 1)) and np.all(W.sum(axis=0) == 1))
    return W, partition


def constraint_matrix(
    groups: npt.ArrayLike, documents: int, n: int
) -> tuple[np.ndarray, np.ndarray]:
    r"""The constraint rows of (31) and (32) over :math:`\operatorname{vec}(\pi)`.

    The variable :math:`\pi_{ij}` is entry ``i * n + j`` (row-major).

    Parameters
    ----------
    groups : array_like
        Group labels or weights, as in :func:`group_matrix`.
    documents, n : int
        Documents :math:`l` and top positions :math:`n` (:math:`1 \le n \le l`).

    Returns
    -------
    A_positions : numpy.ndarray, shape (n, l * n)
        Rows of (31): ``A_positions @ vec(pi) == 1``, one per position :math:`j`.
    A_groups : numpy.ndarray, shape (S, l * n)
        Rows of (32) (or the weighted extension): ``A_groups @ vec(pi) <= 1``, row ``s``
        holding :math:`w_{is}` at every :math:`\pi_{ij}`.
    """
    if not 1 <= n <= documents:
        raise ValueError(f"need 1 <= n <= l, got n={n}, l={documents}")
    W, _ = group_matrix(groups, documents)
    A_positions = np.kron(np.ones((1, documents)), np.eye(n))
    A_groups = np.kron(W, np.ones((1, n)))
    return A_positions, A_groups


def _gain(C: npt.ArrayLike) -> np.ndarray:
    C = np.asarray(C, dtype=np.float64)
    if C.ndim != 2 or not 1 <= C.shape[1] <= C.shape[0] or not np.all(np.isfinite(C)):
        raise ValueError(f"C must be a finite (l, n) matrix with 1 <= n <= l, got {C.shape}")
    return C


def diversity_lp(
    C: npt.ArrayLike,
    groups: npt.ArrayLike,
    *,
    solver: Literal["HIGHS", "CLARABEL"] = "HIGHS",
) -> DiversityLP:
    r"""Solve the LP relaxation of (33) in CVXPY.

    .. math::

        \max_{\pi \in [0, 1]^{l \times n}}\; \operatorname{tr} \pi^\top C
        \quad\text{s.t.}\quad A_{\mathrm{pos}} \operatorname{vec}(\pi) = 1 \;(31),\qquad
        A_{\mathrm{grp}} \operatorname{vec}(\pi) \le 1 \;(32),

    with the rows of :func:`constraint_matrix`. For a partition, Corollary 4 makes the
    optimum that of the integer program (33); HiGHS (simplex, a vertex) then returns an
    integral :math:`\pi`, Clarabel (interior point) one only when the optimum is unique.

    Parameters
    ----------
    C : array_like, shape (l, n)
        Gain of document :math:`i` at position :math:`j` (documents x top positions).
    groups : array_like
        Group labels, shape (l,), or weights, shape (S, l) (:func:`group_matrix`).
    solver : {"HIGHS", "CLARABEL"}
        The CVXPY solver.

    Returns
    -------
    DiversityLP

    Raises
    ------
    ValueError
        If the groups cannot fill the ``n`` positions (a partition into fewer than ``n``
        groups), or on malformed input.
    SolverError
        If the solver does not report an optimum (e.g. an infeasible weighted system).

    References
    ----------
    Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", Sect. 5.1,
    Eqs. (31)-(33), Theorem 3, Corollary 4.
    """
    C = _gain(C)
    documents, n = C.shape
    W, partition = group_matrix(groups, documents)
    if partition and W.shape[0] < n:
        raise ValueError(f"{W.shape[0]} groups cannot fill {n} positions, one per group")
    A_positions, A_groups = constraint_matrix(groups, documents, n)
    x = cp.Variable(documents * n)
    problem = cp.Problem(
        cp.Maximize(C.ravel() @ x),
        [A_positions @ x == 1, A_groups @ x <= 1, x >= 0, x <= 1],
    )
    problem.solve(solver=solver)
    if problem.status != cp.OPTIMAL:
        raise SolverError(f"diversity LP: {solver} returned status {problem.status!r}")
    pi = np.clip(x.value.reshape(documents, n), 0.0, 1.0)
    integral = bool(np.max(np.abs(pi - np.round(pi))) <= INTEGRALITY_TOLERANCE)
    order = np.argmax(pi, axis=0).astype(np.int64) if integral else None
    return DiversityLP(pi, float(problem.value), integral, order, partition, solver)


def diversity_integer_optimum(
    C: npt.ArrayLike, groups: npt.ArrayLike
) -> tuple[float, np.ndarray | None]:
    r"""The integer optimum of (33) by enumerating every assignment of the top positions.

    Enumerates the :math:`l! / (l - n)!` orders of :math:`n` distinct documents and keeps
    those meeting (32) (or its weighted extension) within 1e-12. Feasible only for small
    queries; it is the reference of the tests.

    Parameters
    ----------
    C : array_like, shape (l, n)
        Gain of document :math:`i` at position :math:`j`.
    groups : array_like
        Group labels, shape (l,), or weights, shape (S, l) (:func:`group_matrix`).

    Returns
    -------
    value : float
        :math:`\max \operatorname{tr} \pi^\top C` over the integer points of (33b)
        (``-inf`` when there is none).
    order : numpy.ndarray of int64, shape (n,), or None
        An optimal order (the first in lexicographic order), None when infeasible.
    """
    C = _gain(C)
    documents, n = C.shape
    W, _ = group_matrix(groups, documents)
    orders = np.array(list(itertools.permutations(range(documents), n)), dtype=np.int64)
    feasible = np.all(W[:, orders].sum(axis=2) <= 1 + 1e-12, axis=0)
    if not feasible.any():
        return -np.inf, None
    orders = orders[feasible]
    values = C[orders, np.arange(n)].sum(axis=1)
    best = int(np.argmax(values))
    return float(values[best]), orders[best]


def diverse_ranking(
    scores: npt.ArrayLike, groups: npt.ArrayLike, n: int | None = None
) -> np.ndarray:
    r"""Sect. 5.1's test-time rule: the best document of each group, ranked by score.

    "Simply pick the highest ranking document from each set :math:`B_s` and use the latter
    to obtain an overall ranking." Ties go to the lower document index, both within a group
    and in the final ranking. For scores :math:`g` and position weights :math:`c_1 > \dots
    > c_n > 0`, the first ``n`` entries solve (33) with :math:`C_{ij} = g_i c_j`.

    Parameters
    ----------
    scores : array_like, shape (l,)
        Scores :math:`g(d, q) = \langle w, \phi(d, q)\rangle` of the documents.
    groups : array_like of int, shape (l,)
        Group labels (a partition, as in (32)).
    n : int, optional
        Keep the top ``n`` (at most the number of groups); all group representatives when
        None.

    Returns
    -------
    numpy.ndarray of int64
        ``order[p]`` is the document at position ``p``: one document per group, by
        descending score.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.size == 0 or not np.all(np.isfinite(scores)):
        raise ValueError(f"scores must be a non-empty finite 1-D array, got {scores!r}")
    W, partition = group_matrix(groups, scores.size)
    if not partition:
        raise ValueError("the test-time rule needs group labels (a partition)")
    by_score = np.lexsort((np.arange(scores.size), -scores))
    label = np.argmax(W, axis=0)[by_score]
    _, first = np.unique(label, return_index=True)
    order = by_score[np.sort(first)]
    if n is not None:
        if not 1 <= n <= order.size:
            raise ValueError(f"n must be in 1..{order.size} (the number of groups), got {n}")
        order = order[:n]
    return order.astype(np.int64)
