r"""Stochastic dual solvers of RankMM (Agarwal & Collins 2010, Sects. 3.1-3.3).

RankMM's three duals (:mod:`cvxrank.formulations.rankmm`) are quadratics over products of
per-query sets: a box (RankMM-1, Sect. 3.1), a simplex with the slack coordinate
:math:`\alpha^i_0` (RankMM-2, Sect. 3.2) and an :math:`\ell_{1,\infty}` ball intersected
with the orthant (RankMM-3, Sect. 3.3). The paper's solvers draw one query i uniformly among
those with preference pairs and update only that query's block :math:`\alpha^i`:

* ``sgp`` -- stochastic gradient projection (Sects. 3.1 and 3.3),
  :math:`\alpha^i \leftarrow \Pi_{\Omega_i}(\alpha^i - \eta_t \nabla^i)`,
  :math:`\eta_t = \eta_0/\sqrt t`, on the box (a clip) or on the :math:`\ell_{1,\infty}` ball
  (the exact Euclidean projection onto ball and orthant, or the paper's order: project onto
  the ball, then set the negative coordinates to 0);
* ``seg`` and ``seg-pairs`` -- stochastic exponentiated gradient (Sect. 3.2) with the
  constant rate :math:`\eta_0`, :math:`\alpha^i_{jk} \leftarrow \alpha^i_{jk}
  e^{-\eta_0 \nabla^i_{jk}} / Z`, :math:`\alpha^i_0 \leftarrow \alpha^i_0 / Z`: ``seg`` keeps
  each query's distribution in the factored form derived below (:math:`O(n_i)` per step),
  ``seg-pairs`` updates the :math:`|R_i|` pair variables explicitly.

Here :math:`\nabla^i` is the gradient of the *printed* objective (Sects. 3.1-3.3). With
:math:`g = s - y`, :math:`s = X w(\alpha)` and the formulation's pair scale :math:`c`
(:math:`\beta = c \odot \alpha`) and :math:`\kappa`,

.. math::

    \nabla_{jk} = \frac{c_{jk}}{\kappa}\,(g_j - g_k) \qquad (= g_j - g_k = \phi_{jk}\cdot w
    - \Delta_{jk} \text{ for RankMM-1 and -2}),

which needs only the scores of query i's documents.

**Cost of a step.** The weights :math:`w = X^\top A^\top (c \odot \alpha)` are maintained
incrementally: a step on query i computes :math:`s_i = X_i w` (:math:`O(n_i d)`), the block
update, the change of the per-document coefficients :math:`A_i^\top (c_i \odot
\Delta\alpha^i)` and :math:`w \mathrel{+}= X_i^\top(\cdot)` (:math:`O(n_i d)`); no step touches
another query. The block update is :math:`O(|R_i|)` (box, two ``bincount`` over the query's
local document indices), :math:`O(|R_i| \log |R_i|)` (:math:`\ell_{1,\infty}`, the sort of
the projection), :math:`O(|R_i|)` (``seg-pairs``) or :math:`O(n_i)` (``seg``). A query's
rows are a contiguous block of ``X`` (dense or CSR), copied once per formulation, sorted by
grade level (:class:`QueryBlocks`).

**Certificates.** Every iterate is feasible (a projection or a normalized distribution), so
:math:`D(\alpha) \le d^* = p^* \le P(w(\alpha))` and the relative duality gap
:math:`(P(w) - D(\alpha))/P(w)` certifies both. It is evaluated every ``record_every`` steps
(default ``max_iter // 200``), where :math:`w` is also recomputed exactly (from
:math:`\alpha`, or from ``seg``'s per-document coefficients); the largest relative drift of
the incremental :math:`w` seen at those points is ``Run.info["w_drift"]`` (for ``seg`` and
``seg-pairs`` also the final :math:`X^\top\gamma` against the materialized :math:`\alpha`'s)
and the trace column ``w_drift``. The returned ``w`` is ``formulation.primal_from_dual(alpha)``.

Factored exponentiated gradient (``seg``)
-----------------------------------------
Start from the uniform distribution of every query, :math:`\alpha^i_{jk} = \alpha^i_0 =
1/(|R_i| + 1)` (:meth:`~cvxrank.formulations.rankmm.RankMM.dual_start`), i.e.
:math:`\alpha^i_{jk} = u_j v_k / Z_i`, :math:`\alpha^i_0 = u_0 / Z_i` with
:math:`u = v = u_0 = 1`. The gradient of a pair is a difference of two per-document terms,
:math:`\nabla_{jk} = g_j - g_k`, so

.. math::

    \alpha_{jk}\, e^{-\eta \nabla_{jk}} = \frac{(u_j e^{-\eta g_j})\,(v_k e^{\eta g_k})}{Z_i},

and the EG step keeps the product form **exactly** (no approximation): :math:`u_j \leftarrow
u_j e^{-\eta g_j}` and :math:`v_k \leftarrow v_k e^{\eta g_k}` for every document of the
query, :math:`u_0` unchanged and :math:`Z_i \leftarrow u_0 + \sum_{(j,k) \in R_i} u_j v_k`.
Since every document receives opposite updates as an upper and as a lower end and both start
at 1, :math:`v_j = 1/u_j` throughout, so one log-weight per document suffices:
:math:`\theta_j = \log u_j`, :math:`\alpha_{jk} = e^{\theta_j - \theta_k + \nu_i}`,
:math:`\alpha_0 = e^{\lambda_i}`, with the normalizing offsets :math:`\nu_i = \lambda_i =
-\log(|R_i| + 1)` at the start. With the query's grade levels :math:`1, \dots, R` and the
level sums :math:`U_\ell = \sum_{y_j = \ell} e^{\theta_j}`, :math:`V_\ell = \sum_{y_k =
\ell} e^{-\theta_k}`,

.. math::

    \sum_{(j,k) \in R_i} e^{\theta_j - \theta_k} = \sum_{\ell} U_\ell \sum_{\ell' < \ell}
    V_{\ell'}, \qquad Z_i = e^{\lambda_i} + e^{\nu_i} \sum_\ell U_\ell V_{<\ell},

and :math:`\nu_i, \lambda_i \leftarrow \nu_i - \log Z_i, \lambda_i - \log Z_i`. The weights
need :math:`A^\top \alpha` per document, a sum over its pairs as upper and as lower end:

.. math::

    (A^\top \alpha)_j = e^{\theta_j + \nu_i} V_{<y_j} - e^{-\theta_j + \nu_i} U_{>y_j},

with :math:`V_{<\ell} = \sum_{\ell' < \ell} V_{\ell'}` and :math:`U_{>\ell} = \sum_{\ell' >
\ell} U_{\ell'}` prefix sums over the levels. The per-document coefficients
:math:`\gamma = (C/m) A^\top \alpha` give :math:`w = X^\top \gamma` and the dual value without
the pairs: :math:`\sum_{jk} \alpha_{jk}\Delta_{jk} = \sum_j y_j (A^\top\alpha)_j` (each pair
counts :math:`y_j` at its upper and :math:`-y_k` at its lower end), so
:math:`D(\alpha) = y^\top \gamma - \tfrac12 \|w\|^2`.

Cost: the level sums, the prefix sums over the :math:`R_i` levels, :math:`Z_i` and the
coefficients are :math:`O(n_i + R_i)` (``reduceat`` on the query's documents, stored sorted
by level once); with :math:`s_i = X_i w` and :math:`w \mathrel{+}= X_i^\top
\Delta\gamma_i`, a step is :math:`O(n_i d)` and never touches the :math:`|R_i|` pair
variables (against :math:`O(|R_i| + n_i d)` for ``seg-pairs``). The sums are taken in the
log domain, each level shifted by its own largest :math:`\pm\theta_j` (so no term
overflows and a level whose terms are all tiny is not rounded to zero against another
level's); :math:`Z_i` is computed first, so each coefficient is a shifted
:math:`e^{\pm\theta_j - t_\ell} \le 1` times a level factor that is a sum of normalized
probabilities, at most 1: two exponentials per document. :math:`\alpha` itself
(:math:`O(p)`) is materialized only for the returned :class:`~cvxrank.core.trace.Run`.

Step sizes
----------
A user's ``eta0`` is the paper's absolute :math:`\eta_0` (``sgp``: :math:`\eta_t =
\eta_0/\sqrt t`, Sect. 3.1; EG: the constant :math:`\eta_0`, Sect. 3.2). The paper selects
it from the grid :math:`10^{-2} \dots 10^{-6}` by validation MAP (Sect. 4). The default
(``eta0=None``) does the same without validation data: :func:`pilot_eta0` runs a short
pilot (:data:`PILOT_PASSES` passes over the queries) at each multiple of the theory's
worst-case step (:func:`default_eta0`) in :data:`PILOT_MULTIPLES` and keeps the one with the
smallest certified duality gap; the pilots are on the solver's clock (set-up time).

The worst-case steps: for ``sgp`` :math:`1/\max_i L_i`, with :math:`L_i = \|X_i^\top
A_i^\top \mathrm{diag}(c_i)\|_2^2 / \kappa` the Lipschitz constant of the block gradient
(computed once per formulation, per query, by
:func:`~cvxrank.formulations.base.squared_operator_norm`): every step is then a descent step
on its block. For EG :math:`1/\bar A`: EG with :math:`\eta \le 1/|A|_\infty`,
:math:`|A|_\infty` the largest entry of :math:`A = (C/m) Q`, converges at :math:`O(1/T)` in
expectation for the randomized online version (Collins et al. 2008, batch and online EG on
max-margin duals; the bound Sect. 3.2 quotes). By Cauchy-Schwarz the largest entry of
:math:`Q` is on its diagonal, :math:`\max_{(j,k)} \|x_j - x_k\|^2`; it is bounded per
query by :math:`(2 \max_j \|x_j - \bar x_i\|)^2` (:math:`\bar x_i` the query's mean
document, :math:`O(n d)`), at most 4 times the query's squared diameter, so :math:`\bar A =
(C/m) \max_i 4 \max_j \|x_j - \bar x_i\|^2 \ge |A|_\infty`.

Why a pilot: the worst-case steps are far too small in practice, by a factor that depends
on the data and C. Measured (median of 3 seeds, 200 passes, relative gaps
:math:`(P(w) - p^*)/p^*` against Clarabel's optimum on the six ``verify`` instances at C =
0.5 to 2): the box dual reaches :math:`10^{-5}` or less at 10x to 1000x
:math:`1/\max_i L_i`; the :math:`\ell_{1,\infty}` dual needs 1000x (:math:`10^{-4}` to
:math:`10^{-3}`; 10x leaves :math:`10^{-2}`) but 1000x diverges on the six-query instance
of ``tests/solvers/test_rankmm_solvers.py``, where 10x works; EG reaches :math:`10^{-4}` to
:math:`10^{-5}` at 10x :math:`1/\bar A` and oscillates at 30x. On OHSUMED Fold1 train
(``benchmarks/bench_rankmm_solvers.py``, C = 10 and 1) the certified gap :math:`10^{-3}`
takes 1000x the box step 0.1 s (1x: not in 120 s at C = 10), 1000x the
:math:`\ell_{1,\infty}` step 0.6-6 s (1x: not in 120 s), 10x the EG step 0.5 s (1x:
4.5-5.7 s; 1000x: still 0.05-0.4 after 120 s). Larger C make every dual harder for these
steps (at C = 5 to 20 on the verify instances EG at 10x is still at :math:`10^{-3}` to
:math:`3 \cdot 10^{-2}` after 100 passes).

Rates (what ``verify`` checks): the expected suboptimality of the projection methods is
:math:`O(1/\sqrt T)` (:math:`O(m^2/\epsilon^2)` steps, Sects. 3.1 and 3.3), that of EG
:math:`O(1/T)` (:math:`O(1/\epsilon)`, Sect. 3.2).

References
----------
.. [1] S. Agarwal and M. Collins, "Maximum Margin Ranking Algorithms for Information
   Retrieval", ECIR 2010, Sects. 3.1-3.3.
.. [2] M. Collins, A. Globerson, T. Koo, X. Carreras and P. L. Bartlett, "Exponentiated
   gradient algorithms for conditional random fields and max-margin Markov networks", JMLR 9,
   2008 (EG, the step :math:`1/|A|_\infty`, the factored updates of structured problems).
.. [3] A. Quattoni, X. Carreras, M. Collins and T. Darrell, "An efficient projection for
   :math:`\ell_{1,\infty}` regularization", ICML 2009.
"""

from __future__ import annotations

import copy
import math
import weakref
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from cvxrank import tolerances
from cvxrank.core.capabilities import solver
from cvxrank.core.trace import Run, SolverOptions, TraceRecorder
from cvxrank.data.ranking_data import largest_distance_to_mean
from cvxrank.formulations.base import squared_operator_norm
from cvxrank.numerics.sets import Box, L1InfLayout
from cvxrank.solvers.stochastic import RECORDS
from cvxrank.utils.lazy_sparse import sp

Projection = Literal["exact", "paper"]

#: Multiples of :func:`default_eta0` the pilot of :func:`pilot_eta0` tries: decades for
#: ``sgp`` (whose steps decay), half-decades below the point where EG's constant step
#: oscillates on the verify instances (30x, which a short pilot cannot see).
PILOT_MULTIPLES = {"sgp": (1.0, 10.0, 100.0, 1e3, 1e4), "eg": (1.0, 10**0.5, 10.0)}

#: Length of each pilot run, in passes over the queries with pairs (at most a fifth of
#: the run's ``max_iter``): shorter pilots prefer the steps that are best early, which
#: for the decaying steps of ``sgp`` are too small for the rest of the run.
PILOT_PASSES = 50

#: Draws of queries made at once.
DRAW_CHUNK = 4096
#: Steps between the checks of the time budget and of a Ctrl-C (:meth:`~cvxrank.core.trace.
#: TraceRecorder.stop_due`) between two records.
STOP_CHECK = 64

#: Default number of steps of the stochastic solvers.
MAX_ITER = 100_000


# -- per-query blocks, built once per formulation ----------------------------------------
@dataclass(eq=False)
class QueryBlocks:
    r"""The queries with pairs as blocks of contiguous, level-sorted rows (C-free).

    Block b is the b-th query of ``queries_with_pairs``; its documents are sorted by grade
    level (stable) and stored as rows ``doc_ptr[b]:doc_ptr[b+1]`` of :attr:`X`; its pairs are
    ``pair_ptr[b]:pair_ptr[b+1]`` of the formulation's pairs (sorted by query), with their
    ends as positions inside the block. :attr:`X` is a copy of the rows of ``X`` (the steps
    read each query's rows as one contiguous block).

    Attributes
    ----------
    X : ndarray or csr_matrix
        The rows of the queries with pairs, block by block, each sorted by level.
    y : ndarray
        Their grades.
    doc_ptr, pair_ptr : ndarray of int64, shape (B + 1,)
        Offsets of each block's documents and pairs.
    upper, lower : ndarray of int64, shape (p,)
        Position of each pair's ends inside its block.
    level_start, level_size : list of ndarray
        Per block, the offsets (inside the block) and sizes of its grade levels.
    pair_block : ndarray of int64, shape (p,)
        The block of each pair.
    """

    X: np.ndarray | sp.csr_matrix
    y: np.ndarray
    doc_ptr: np.ndarray
    pair_ptr: np.ndarray
    upper: np.ndarray
    lower: np.ndarray
    level_start: list[np.ndarray]
    level_size: list[np.ndarray]
    pair_block: np.ndarray
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def n_blocks(self) -> int:
        """Number of blocks B (queries with pairs)."""
        return int(self.doc_ptr.size - 1)

    def features(self) -> list[np.ndarray | sp.csr_matrix]:
        """Each block's rows of :attr:`X` (views of a dense X; CSR slices of a sparse one)."""
        if "features" not in self._cache:
            ptr = self.doc_ptr
            self._cache["features"] = [self.X[ptr[b]:ptr[b + 1]] for b in range(self.n_blocks)]
        return self._cache["features"]

    def lipschitz_base(self, formulation: Any) -> np.ndarray:
        r""":math:`\|X_i^\top A_i^\top \mathrm{diag}(c^0_i)\|_2^2` per block, :math:`c^0` the
        C-free pair scale (1 or :math:`1/|P_{ik}|`); cached."""
        if "lipschitz" not in self._cache:
            base = np.asarray(formulation.pair_scale, dtype=np.float64)
            feats, out = self.features(), np.empty(self.n_blocks)
            for b in range(self.n_blocks):
                a, z = self.pair_ptr[b], self.pair_ptr[b + 1]
                n_b = int(self.doc_ptr[b + 1] - self.doc_ptr[b])
                k = z - a
                ends = np.c_[self.upper[a:z], self.lower[a:z]].ravel()
                values = np.repeat(base[a:z], 2) * np.tile([1.0, -1.0], k)
                A_b = sp.csr_matrix((values, ends, np.arange(0, 2 * k + 1, 2)), shape=(k, n_b))
                out[b] = squared_operator_norm(feats[b], A_b)
            self._cache["lipschitz"] = out
        return self._cache["lipschitz"]

    def l1inf_layouts(self, formulation: Any) -> list[L1InfLayout]:
        r"""Per block, the :class:`~cvxrank.numerics.sets.L1InfLayout` of its pairs grouped by lower
        document (RankMM-3's :math:`P_{ik}`, :attr:`RankMM.lower_group`); cached."""
        if "layouts" not in self._cache:
            group, _, _ = formulation.lower_group
            pptr = self.pair_ptr
            self._cache["layouts"] = [
                L1InfLayout(group[pptr[b]:pptr[b + 1]] - group[pptr[b]:pptr[b + 1]].min())
                for b in range(self.n_blocks)]
        return self._cache["layouts"]

    def max_squared_diameter(self) -> float:
        r""":math:`\max_i (2 \max_j \|x_j - \bar x_i\|)^2`, a bound on the largest squared
        distance between two documents of one query; cached."""
        if "diameter" not in self._cache:
            self._cache["diameter"] = max(
                (2.0 * largest_distance_to_mean(Xb)) ** 2 for Xb in self.features())
        return self._cache["diameter"]


_BLOCKS: weakref.WeakKeyDictionary[Any, QueryBlocks] = weakref.WeakKeyDictionary()


def query_blocks(formulation: Any) -> QueryBlocks:
    """The :class:`QueryBlocks` of a RankMM formulation (built on first use, then cached for
    as long as the formulation lives; they do not depend on C)."""
    if formulation in _BLOCKS:
        return _BLOCKS[formulation]
    data, P = formulation.data, formulation.pairs
    queries = np.asarray(formulation.queries_with_pairs)
    qptr, level = data.query_ptr, np.asarray(formulation.grade_level)
    rows = np.concatenate([qptr[q] + np.argsort(level[qptr[q]:qptr[q + 1]], kind="stable")
                           for q in queries])
    sizes = qptr[queries + 1] - qptr[queries]
    doc_ptr = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    pair_ptr = np.r_[P.pair_ptr[queries], P.n_pairs].astype(np.int64)  # sorted by query
    # position of every row inside its block
    position = np.empty(data.n_documents, dtype=np.int64)
    block_of_row = np.repeat(np.arange(queries.size), sizes)
    position[rows] = np.arange(rows.size) - doc_ptr[block_of_row]
    X = data.X[rows]
    X = sp.csr_matrix(X) if sp.issparse(X) else np.ascontiguousarray(X, dtype=np.float64)
    level_start, level_size = [], []
    for b in range(queries.size):
        lv = level[rows[doc_ptr[b]:doc_ptr[b + 1]]]
        start = np.flatnonzero(np.r_[True, lv[1:] != lv[:-1]])
        level_start.append(start)
        level_size.append(np.diff(np.r_[start, lv.size]))
    blocks = QueryBlocks(
        X=X, y=np.asarray(data.y, dtype=np.float64)[rows], doc_ptr=doc_ptr,
        pair_ptr=pair_ptr, upper=position[P.upper], lower=position[P.lower],
        level_start=level_start, level_size=level_size,
        pair_block=np.repeat(np.arange(queries.size), np.diff(pair_ptr)),
    )
    _BLOCKS[formulation] = blocks
    return blocks


# -- shared pieces -----------------------------------------------------------------------
def _check_eta0(eta0: float | None) -> None:
    if eta0 is None:
        return
    try:
        value = float(eta0)
    except (TypeError, ValueError):
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"eta0 must be a finite number > 0 (or None for the default step), "
                         f"got {eta0!r}")


def default_eta0(formulation: Any) -> float:
    r"""The default :math:`\eta_0` of RankMM's stochastic solvers (module docstring).

    The worst-case step of the theory, the unit of :func:`pilot_eta0`'s grid.
    Box and l1,inf blocks (``"average"`` and ``"max_average"``, ``sgp``):
    :math:`1/\max_i L_i`, the block Lipschitz constants :math:`L_i = \|X_i^\top A_i^\top
    \mathrm{diag}(c_i)\|_2^2/\kappa` of the printed objective. Simplex blocks (``"max"``,
    ``seg``, ``seg-pairs``): :math:`1/\bar A`,
    :math:`\bar A = (C/m) \max_i (2 \max_j \|x_j - \bar x_i\|)^2 \ge |A|_\infty`
    (Collins et al. 2008). Both are computed once per formulation (:class:`QueryBlocks`).

    Parameters
    ----------
    formulation : RankMM

    Returns
    -------
    float
    """
    blocks = query_blocks(formulation)
    if "simplex_dual_blocks" in formulation.capabilities:
        bound = float(formulation.C) / formulation.m * blocks.max_squared_diameter()
    else:
        bound = float(blocks.lipschitz_base(formulation).max()) / float(formulation.kappa)
    return 1.0 / bound if bound > 0 else 1.0


def pilot_eta0(formulation: Any, solve: Any, family: str, *, max_iter: int,
               seed: int | np.random.Generator | None, seconds_left: float | None = None,
               **options: Any) -> float:
    r"""The default :math:`\eta_0`: the best of a short pilot over a grid of steps.

    The paper selects :math:`\eta_0` from a grid by validation MAP (Sect. 4); without
    validation data, each multiple of :func:`default_eta0` in :data:`PILOT_MULTIPLES`
    runs ``solve`` for :data:`PILOT_PASSES` passes over the queries (at most a fifth of
    ``max_iter`` steps) with the run's seed, and the step whose certified relative duality
    gap :math:`(P(w) - D(\alpha))/P(w)` is smallest at the end of its pilot is returned (a
    diverging step loses). The caller runs the pilot on its own clock, as set-up; under a
    time budget the pilots share at most half of the ``seconds_left`` (each stops at its
    share; with no time left, the unit step itself is returned).

    Parameters
    ----------
    formulation : RankMM
    solve : callable
        The solver (called with an explicit ``eta0``, so it does not recurse).
    family : {"sgp", "eg"}
        Which grid of :data:`PILOT_MULTIPLES`.
    max_iter : int
        The run's ``max_iter`` (the pilot takes at most a fifth of it).
    seed : int, Generator or None
        The run's seed.
    seconds_left : float or None
        The run's time budget left (None: no budget).
    **options
        Further options of ``solve`` (``projection``).

    Returns
    -------
    float
    """
    base = default_eta0(formulation)
    n_blocks = int(formulation.queries_with_pairs.size)
    steps = max(1, min(PILOT_PASSES * n_blocks, max_iter // 5))
    best_dual, best_eta = -math.inf, base
    multiples = PILOT_MULTIPLES[family]
    share = None if seconds_left is None else 0.5 * seconds_left / len(multiples)
    if share is not None and share <= 0:
        return base
    for multiple in multiples:
        # a copy of a Generator: the pilots see the run's draws and leave them to the run
        pilot_seed = copy.deepcopy(seed) if isinstance(seed, np.random.Generator) else seed
        run = solve(formulation, tol=0.0, max_iter=steps, seed=pilot_seed, eta0=multiple * base,
                    record_every=steps, time_budget=share, **options)
        dual = float(run.trace.dual[-1])
        if math.isfinite(dual) and dual > best_dual:
            best_dual, best_eta = dual, multiple * base
    return best_eta


def _recorder(formulation: Any, options: SolverOptions,
              record_every: int | None) -> TraceRecorder:
    """The run's recorder; its clock starts here, so the set-up counts as set-up time."""
    if record_every is not None and record_every < 1:
        raise ValueError(f"record_every must be >= 1, got {record_every}")
    every = record_every or max(1, int(options.max_iter or 0) // RECORDS)
    return TraceRecorder(formulation, options, record_every=every)


def _relative_drift(w: np.ndarray, exact: np.ndarray) -> float:
    """``||w - exact|| / ||exact||`` (the absolute difference when ``exact`` is 0)."""
    diff = float(np.linalg.norm(w - exact))
    norm = float(np.linalg.norm(exact))
    return diff / norm if norm > 0 else diff


def _draws(rng: np.random.Generator, n_blocks: int, count: int) -> np.ndarray:
    return rng.integers(0, n_blocks, size=count)


def _pair_ends(blocks: QueryBlocks) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per block, the positions of its pairs' upper and lower ends inside the block."""
    pptr = blocks.pair_ptr
    up = [blocks.upper[pptr[b]:pptr[b + 1]] for b in range(blocks.n_blocks)]
    lo = [blocks.lower[pptr[b]:pptr[b + 1]] for b in range(blocks.n_blocks)]
    return up, lo


class _State:
    """A stochastic run's iterate between two steps, as :func:`_passes` drives it.

    A solver's subclass holds its dual iterate (or ``seg``'s factored form of it), the
    incremental weights :attr:`w` and the pieces of a step, and gives the step on one
    block, the record and the weights recomputed exactly.

    Attributes
    ----------
    n_blocks : int
        Number of blocks (queries with pairs) the steps draw from.
    w : ndarray
        The weights, updated incrementally by :meth:`step` and replaced by
        :meth:`exact_weights` after every pass.
    """

    n_blocks: int
    w: np.ndarray

    def record(self, rec: TraceRecorder, t: int, drift: float) -> bool:
        """Record step ``t`` (``drift`` the last pass's ``w_drift``); True while the run
        goes on."""
        raise NotImplementedError

    def step(self, b: int, t: int) -> None:
        """Step ``t`` (counted from 1) on block ``b``: its dual block and :attr:`w`."""
        raise NotImplementedError

    def exact_weights(self) -> np.ndarray:
        """The weights of the current iterate, computed afresh."""
        raise NotImplementedError


def _passes(rec: TraceRecorder, seed: int | np.random.Generator | None,
            state: _State) -> tuple[int, float]:
    """Steps on uniformly drawn blocks until the recorder stops the run.

    Records at step 0 and after every pass of ``record_every`` steps, each pass ending with
    the exact weights (:meth:`_State.exact_weights`) replacing the incremental ones; between
    records the time budget and a Ctrl-C are checked every :data:`STOP_CHECK` steps (a
    pass cut short is recorded at once).

    Parameters
    ----------
    rec : TraceRecorder
        The run's recorder (``max_iter``, ``record_every``, the stopping tests).
    seed : int, Generator or None
        The query draws, :data:`DRAW_CHUNK` at a time.
    state : _State
        The solver's iterate, updated in place.

    Returns
    -------
    t : int
        The steps taken.
    drift_max : float
        The largest relative drift of the incremental weights at the end of a pass.
    """
    rng = np.random.default_rng(seed)
    every = rec.record_every
    drift = drift_max = 0.0
    t = 0
    while state.record(rec, t, drift):
        stop = min(rec.max_iter, (t // every + 1) * every)
        while t < stop:
            if t % STOP_CHECK == 0 and rec.stop_due():
                break
            if t % DRAW_CHUNK == 0:
                draws = _draws(rng, state.n_blocks, DRAW_CHUNK)
            b = int(draws[t % DRAW_CHUNK])
            t += 1
            state.step(b, t)
        exact = state.exact_weights()
        drift = _relative_drift(state.w, exact)
        drift_max = max(drift_max, drift)
        state.w = exact
    return t, drift_max


# -- stochastic gradient projection (Sects. 3.1 and 3.3) ----------------------------------
@solver("sgp", needs=("dual_query_blocks", "euclidean_dual_blocks"),
        tol=tolerances.STOCHASTIC_GAP, max_iter=MAX_ITER)
def solve_sgp(
    formulation: Any,
    options: SolverOptions,
    *,
    record_every: int | None = None,
    eta0: float | None = None,
    projection: Projection = "exact",
) -> Run:
    r"""Stochastic gradient projection on RankMM-1's box or RankMM-3's l1,inf dual.

    Each step draws a query i uniformly among those with pairs and sets (Sect. 3.1, and
    Sect. 3.3 for the l1,inf ball)

    .. math::

        \alpha^i \leftarrow \Pi_{\Omega_i}\big(\alpha^i - \eta_t \nabla^i\big), \qquad
        \eta_t = \eta_0 / \sqrt t,

    with :math:`\nabla^i_{jk} = c_{jk}\,((s_j - y_j) - (s_k - y_k))` the printed objective's
    block gradient. :math:`\Omega_i` is the box :math:`[0, C/(m|R_i|)]^{|R_i|}` (RankMM-1;
    :math:`\Pi` a clip, :math:`O(|R_i|)` per step) or :math:`\{\alpha^i \ge 0 : \sum_k
    \max_j \alpha^i_{jk} \le C/m\}` (RankMM-3, :math:`O(|R_i| \log |R_i|)`). See the module
    docstring for the cost of a step, the certificate and the default :math:`\eta_0`.

    Parameters
    ----------
    formulation : RankMM
        With loss ``"average"`` or ``"max_average"`` (the ``dual_query_blocks``
        capability).
    options : SolverOptions
        ``tol``: stop when the certified relative duality gap :math:`(P(w) -
        D(\alpha))/P(w)` is at most ``tol`` (checked every ``record_every`` steps; 0 runs
        ``max_iter`` steps); ``max_iter``: the number of steps T; ``seed``: the query draws;
        ``callback(t, w, alpha, trace)``, ``time_budget`` (checked at the records) and
        ``until`` as :class:`~cvxrank.core.trace.SolverOptions` says.
    record_every : int or None
        Steps between records (default ``max(1, max_iter // 200)``).
    eta0 : float or None
        :math:`\eta_0 > 0`; None for :func:`default_eta0`, :math:`1/\max_i L_i`.
    projection : {"exact", "paper"}
        On the l1,inf ball: the exact Euclidean projection onto ball and orthant, or the
        paper's order (the projection onto the ball, then the negative coordinates set to
        0; feasible, but not the projection onto the intersection). On the box both are the
        clip.

    Returns
    -------
    Run
        ``alpha`` the last iterate, ``w = primal_from_dual(alpha)``; ``info`` with ``eta0``,
        ``projection``, ``w_drift`` and ``n_queries`` (the blocks sampled).

    Raises
    ------
    CapabilityError
        For a formulation without the capability or with loss ``"max"`` (use ``seg``).
    ValueError
        For ``eta0`` not finite and positive, or an unknown ``projection``.

    References
    ----------
    .. [1] S. Agarwal and M. Collins, ECIR 2010, Sects. 3.1 and 3.3.
    .. [2] A. Quattoni et al., ICML 2009 (the l1,inf projection).
    """
    _check_eta0(eta0)
    if projection not in ("exact", "paper"):
        raise ValueError(f"projection must be 'exact' or 'paper', got {projection!r}")
    f = formulation
    rec = _recorder(f, options, record_every)
    blocks = query_blocks(f)
    kappa = float(f.kappa)
    if eta0 is None:  # after the recorder starts: the pilot is on the solver's clock
        eta0 = pilot_eta0(f, solve_sgp, "sgp", max_iter=rec.max_iter, seed=options.seed,
                          seconds_left=rec.seconds_left(), projection=projection)
    state = _SGPState(f, blocks, kappa, projection, float(eta0))
    t, drift_max = _passes(rec, options.seed, state)
    return rec.result(f.primal_from_dual(state.alpha), state.alpha, t, "sgp",
                      eta0=state.eta0, projection=projection, w_drift=drift_max,
                      n_queries=blocks.n_blocks)


class _SGPState(_State):
    r"""The iterate of ``sgp`` (:func:`solve_sgp`): the dual point :attr:`alpha`, the
    incremental ``w`` and what a step needs of the formulation and its blocks.

    Attributes
    ----------
    alpha : ndarray
        The dual iterate (feasible: every step projects its block).
    eta0 : float
        The step's :math:`\eta_0` (:math:`\eta_t = \eta_0/\sqrt t`).
    """

    def __init__(self, formulation: Any, blocks: QueryBlocks, kappa: float,
                 projection: Projection, eta0: float) -> None:
        f = self.formulation = formulation
        self.eta0, self.n_blocks = eta0, blocks.n_blocks
        self.scale = np.asarray(f.pair_scale, dtype=np.float64)
        self.grad_scale = self.scale / kappa
        self.weighted_delta = self.scale * f.pairs.delta
        self.project = _block_projection(f, blocks, projection)
        self.feats = blocks.features()
        self.ptr, self.pptr, self.y = blocks.doc_ptr, blocks.pair_ptr, blocks.y
        self.up, self.lo = _pair_ends(blocks)
        self.sizes = np.diff(self.ptr)
        self.alpha = np.asarray(f.dual_start(), dtype=np.float64).copy()
        self.w = f.primal_from_dual(self.alpha)

    def record(self, rec: TraceRecorder, t: int, drift: float) -> bool:
        """Record step ``t`` with the primal value and the printed dual's value."""
        w, alpha = self.w, self.alpha
        values = (self.formulation.primal_value(w),
                  float(self.weighted_delta @ alpha - 0.5 * (w @ w)))
        return rec.record(t, w=w, alpha=alpha, values=values,
                          step=self.eta0 / math.sqrt(max(t, 1)), extra={"w_drift": drift})

    def step(self, b: int, t: int) -> None:
        r"""Block b's projected step with :math:`\eta_t = \eta_0/\sqrt t`, then ``w``'s
        update through the change of the block's per-document coefficients."""
        eta = self.eta0 / math.sqrt(t)
        Xb, u, v, n_b = self.feats[b], self.up[b], self.lo[b], int(self.sizes[b])
        a, z = self.pptr[b], self.pptr[b + 1]
        g = Xb @ self.w - self.y[self.ptr[b]:self.ptr[b + 1]]
        alpha = self.alpha
        old = alpha[a:z]
        new = self.project(b, old - (eta * self.grad_scale[a:z]) * (g[u] - g[v]))
        change = self.scale[a:z] * (new - old)
        alpha[a:z] = new
        coef = np.bincount(u, change, n_b) - np.bincount(v, change, n_b)
        self.w += Xb.T @ coef

    def exact_weights(self) -> np.ndarray:
        """``primal_from_dual(alpha)``."""
        return self.formulation.primal_from_dual(self.alpha)


def _block_projection(formulation: Any, blocks: QueryBlocks, projection: Projection) -> Any:
    """``project(b, v)``: the projection of block b's pair coordinates onto its set."""
    dual_set = formulation.dual_set
    if isinstance(dual_set, Box):
        _, upper = dual_set.bounds()
        hi = np.asarray(upper)[blocks.pair_ptr[:-1]]  # one bound per query (C / (m |R_i|))

        def clip(b: int, v: np.ndarray) -> np.ndarray:
            return np.minimum(np.maximum(v, 0.0), hi[b])

        return clip
    layouts = blocks.l1inf_layouts(formulation)
    radius = float(formulation.C) / formulation.m

    if projection == "paper":
        def l1inf(b: int, v: np.ndarray) -> np.ndarray:
            return np.where(v > 0, layouts[b].project(np.abs(v), radius).point, 0.0)
    else:
        def l1inf(b: int, v: np.ndarray) -> np.ndarray:
            return layouts[b].project(v, radius).point

    return l1inf


# -- stochastic exponentiated gradient (Sect. 3.2) -----------------------------------------
def _eg_setup(formulation: Any, solve: Any, eta0: float | None,
              rec: TraceRecorder) -> tuple[QueryBlocks, float, float]:
    """Blocks, the coefficient scale C/m and eta0 (:func:`pilot_eta0` if None)."""
    _check_eta0(eta0)
    blocks = query_blocks(formulation)
    if eta0 is None:
        eta0 = pilot_eta0(formulation, solve, "eg", max_iter=rec.max_iter,
                          seed=rec.options.seed, seconds_left=rec.seconds_left())
    return blocks, float(formulation.C) / formulation.m, float(eta0)


class _EGState(_State):
    r"""What the iterates of ``seg`` and ``seg-pairs`` share: the per-document coefficients
    :attr:`coef`, :math:`\gamma = (C/m) A^\top \alpha` (block by block, in the blocks'
    order), ``w`` (:math:`X^\top \gamma`, incremental) and the dual value
    :math:`y^\top \gamma - \tfrac12 \|w\|^2`. A subclass fills :attr:`coef` and ``w`` and
    gives the step and :meth:`dual_point`.

    Attributes
    ----------
    coef : ndarray
        :math:`\gamma`, one coefficient per document of :attr:`QueryBlocks.X`.
    eta0 : float
        The constant rate :math:`\eta_0`.
    record_alpha : bool
        Whether the records get the dual point (``seg-pairs``; ``seg`` records ``w`` only).
    """

    record_alpha = False

    def __init__(self, formulation: Any, blocks: QueryBlocks, c: float, eta0: float) -> None:
        self.formulation, self.blocks, self.c, self.eta0 = formulation, blocks, c, eta0
        self.n_blocks = blocks.n_blocks
        self.feats = blocks.features()
        self.ptr, self.y = blocks.doc_ptr, blocks.y
        self.coef = np.zeros(blocks.y.size)

    def dual_point(self) -> np.ndarray:
        r"""The dual point: the pairs' :math:`\alpha`, then :math:`\alpha^i_0` per block."""
        raise NotImplementedError

    def record(self, rec: TraceRecorder, t: int, drift: float) -> bool:
        """Record step ``t`` with the primal and the dual value (from :attr:`coef`)."""
        w = self.w
        alpha = self.dual_point() if self.record_alpha else None
        values = (self.formulation.primal_value(w), float(self.y @ self.coef - 0.5 * (w @ w)))
        return rec.record(t, w=w, alpha=alpha, values=values, step=self.eta0,
                          extra={"w_drift": drift})

    def exact_weights(self) -> np.ndarray:
        r""":math:`X^\top \gamma`."""
        return np.asarray(self.blocks.X.T @ self.coef, dtype=np.float64).ravel()

    def finish(self, rec: TraceRecorder, t: int, drift_max: float, name: str) -> Run:
        """The run, at the materialized dual point and its ``primal_from_dual``; ``w_drift``
        also counts the last exact weights against those."""
        alpha = self.dual_point()
        w_final = self.formulation.primal_from_dual(alpha)
        drift_max = max(drift_max, _relative_drift(self.w, w_final))
        return rec.result(w_final, alpha, t, name, eta0=self.eta0, w_drift=drift_max,
                          n_queries=self.n_blocks)


@solver("seg", needs=("dual_query_blocks", "simplex_dual_blocks"),
        tol=tolerances.STOCHASTIC_GAP, max_iter=MAX_ITER)
def solve_seg(
    formulation: Any,
    options: SolverOptions,
    *,
    record_every: int | None = None,
    eta0: float | None = None,
) -> Run:
    r"""Stochastic exponentiated gradient on RankMM-2's simplex dual, factored:
    :math:`O(n_i d)` per step (Sect. 3.2; derivation in the module docstring).

    Each step draws a query i uniformly among those with pairs and applies the EG update
    :math:`\alpha^i_{jk} \leftarrow \alpha^i_{jk} e^{-\eta_0 (g_j - g_k)}/Z`,
    :math:`\alpha^i_0 \leftarrow \alpha^i_0/Z`, :math:`g = s - y`, to the query's
    distribution kept as :math:`\alpha^i_{jk} = e^{\theta_j - \theta_k + \nu_i}`: one
    log-weight per document, level sums and prefix sums over the levels; the pair variables
    are formed only for the returned ``alpha``. Exactly the iterates of ``seg-pairs`` (up to
    rounding) for the same seed.

    Parameters
    ----------
    formulation : RankMM
        With loss ``"max"`` (the ``dual_query_blocks`` capability).
    options : SolverOptions
        ``tol``: stop when the certified relative duality gap :math:`(P(w) -
        D(\alpha))/P(w)` is at most ``tol`` (checked every ``record_every`` steps; 0 runs
        ``max_iter`` steps); ``max_iter``: the number of steps T; ``seed``: the query draws
        (the same seed draws the same queries in ``seg`` and ``seg-pairs``);
        ``callback(t, w, alpha, trace)`` at the records (``alpha`` is None in ``seg``),
        ``time_budget`` and ``until`` as :class:`~cvxrank.core.trace.SolverOptions` says.
    record_every : int or None
        Steps between records (default ``max(1, max_iter // 200)``).
    eta0 : float or None
        The constant rate :math:`\eta_0 > 0`; None for :func:`default_eta0`,
        :math:`1/\bar A` with :math:`\bar A = (C/m) \max_i 4 \max_j \|x_j - \bar
        x_i\|^2 \ge |A|_\infty`.

    Returns
    -------
    Run
        ``alpha`` (pairs, then :math:`\alpha^i_0` per query with pairs),
        ``w = primal_from_dual(alpha)``; ``info`` with ``eta0``, ``w_drift`` and
        ``n_queries``.

    Raises
    ------
    CapabilityError
        For a formulation without the capability or with another loss than ``"max"``.
    ValueError
        For ``eta0`` not finite and positive.

    References
    ----------
    .. [1] S. Agarwal and M. Collins, ECIR 2010, Sect. 3.2.
    .. [2] M. Collins et al., JMLR 9, 2008.
    """
    f = formulation
    rec = _recorder(f, options, record_every)
    blocks, c, eta0 = _eg_setup(f, solve_seg, eta0, rec)
    state = _FactoredEG(f, blocks, c, eta0)
    t, drift_max = _passes(rec, options.seed, state)
    return state.finish(rec, t, drift_max, "seg")


class _FactoredEG(_EGState):
    r"""The iterate of ``seg`` (:func:`solve_seg`) in factored form (module docstring):
    :math:`\alpha^i_{jk} = e^{\theta_j - \theta_k + \nu_i}`, :math:`\alpha^i_0 =
    e^{\lambda_i}`, from the uniform distributions of
    :meth:`~cvxrank.formulations.rankmm.RankMM.dual_start`.

    Attributes
    ----------
    theta : ndarray
        One log-weight per document (0 at the start).
    nu, lam : ndarray
        Per block, the offsets :math:`\nu_i` and :math:`\lambda_i` (:math:`-\log(|R_i| +
        1)` at the start).
    """

    def __init__(self, formulation: Any, blocks: QueryBlocks, c: float, eta0: float) -> None:
        super().__init__(formulation, blocks, c, eta0)
        ptr = self.ptr
        self.starts, self.sizes = blocks.level_start, blocks.level_size
        n_pairs = np.diff(blocks.pair_ptr).astype(np.float64)
        self.theta = np.zeros(blocks.y.size)
        self.nu = -np.log1p(n_pairs)  # alpha_jk = exp(theta_j - theta_k + nu_i)
        self.lam = self.nu.copy()     # alpha_0 = exp(lam_i)
        for b in range(self.n_blocks):
            self.coef[ptr[b]:ptr[b + 1]] = _factored_coefficients(
                self.theta[ptr[b]:ptr[b + 1]], self.nu[b], self.lam[b], self.starts[b],
                self.sizes[b], c)[1]
        self.w = self.exact_weights()

    def step(self, b: int, t: int) -> None:
        r"""Block b's EG step on :math:`\theta`, its normalization (:math:`\nu_b`,
        :math:`\lambda_b`) and new coefficients, then ``w``'s update."""
        s, e = self.ptr[b], self.ptr[b + 1]
        Xb = self.feats[b]
        th = self.theta[s:e]
        th -= self.eta0 * (Xb @ self.w - self.y[s:e])
        log_z, cf = _factored_coefficients(th, self.nu[b], self.lam[b], self.starts[b],
                                           self.sizes[b], self.c)
        self.nu[b] -= log_z
        self.lam[b] -= log_z
        self.w += Xb.T @ (cf - self.coef[s:e])
        self.coef[s:e] = cf

    def dual_point(self) -> np.ndarray:
        """The pair variables materialized from the factored form (:math:`O(p)`)."""
        blocks, theta = self.blocks, self.theta
        gu = self.ptr[blocks.pair_block] + blocks.upper
        gl = self.ptr[blocks.pair_block] + blocks.lower
        return np.r_[np.exp(theta[gu] - theta[gl] + self.nu[blocks.pair_block]),
                     np.exp(self.lam)]


def _factored_coefficients(theta: np.ndarray, nu: float, lam: float, start: np.ndarray,
                           size: np.ndarray, c: float) -> tuple[float, np.ndarray]:
    r"""``(log Z, gamma)`` of one query in factored form (module docstring).

    :math:`Z = e^\lambda + e^\nu \sum_{(j,k) \in R_i} e^{\theta_j - \theta_k}` and, with
    the normalized :math:`\alpha_{jk} = e^{\theta_j - \theta_k + \nu - \log Z}`, the
    coefficients
    :math:`\gamma_j = c\,(A^\top \alpha)_j = c\,(e^{\theta_j + \nu} V_{<y_j} - e^{-\theta_j +
    \nu} U_{>y_j})` of the query's documents (sorted by level: ``start``, ``size``).

    Row 0 of the stacked :math:`(\theta, -\theta)` gives the upper ends, row 1 the lower
    ends; the per-level quantities (a few scalars) are plain Python floats. Each level is
    shifted by its largest :math:`\pm\theta`, :math:`t_\ell`, so :math:`e_j =
    e^{\pm\theta_j - t_\ell} \le 1` and :math:`\log U_\ell, \log V_\ell = t_\ell + \log
    \sum_\ell e_j`; the coefficients reuse the same :math:`e_j`: :math:`e^{\theta_j + \nu -
    \log Z} V_{<\ell} = e_j\, e^{t_\ell + \nu - \log Z + \log V_{<\ell}}`, whose level
    factor is the largest row sum of the level's probabilities, at most 1 (no overflow). Two
    exponentials per document; :math:`O(n_i)`.
    """
    n = theta.size
    signed = np.empty((2, n))
    signed[0] = theta
    np.negative(theta, out=signed[1])
    top = np.maximum.reduceat(signed, start, axis=1)
    scaled = np.exp(signed - np.repeat(top, size, axis=1))
    sums = np.add.reduceat(scaled, start, axis=1)
    # per level (a handful of scalars): log U_l, log V_l, their prefix sums, log Z
    (top_u, top_v), (sum_u, sum_v) = top.tolist(), sums.tolist()
    log_u = [t + math.log(x) for t, x in zip(top_u, sum_u, strict=True)]
    log_v = [t + math.log(x) for t, x in zip(top_v, sum_v, strict=True)]
    n_levels = len(log_u)
    below = [-math.inf] * n_levels  # log V_{<l}
    above = [-math.inf] * n_levels  # log U_{>l}
    for level in range(1, n_levels):
        below[level] = _logaddexp(below[level - 1], log_v[level - 1])
        above[n_levels - 1 - level] = _logaddexp(above[n_levels - level], log_u[n_levels - level])
    log_pairs = -math.inf
    for level in range(1, n_levels):
        log_pairs = _logaddexp(log_pairs, log_u[level] + below[level])
    log_z = _logaddexp(lam, nu + log_pairs)
    shift = nu - log_z
    factor = np.array([[math.exp(t + shift + b) for t, b in zip(top_u, below, strict=True)],
                       [math.exp(t + shift + a) for t, a in zip(top_v, above, strict=True)]])
    ends = scaled * np.repeat(factor, size, axis=1)
    gamma = c * (ends[0] - ends[1])
    return log_z, gamma


def _logaddexp(a: float, b: float) -> float:
    """``log(exp(a) + exp(b))`` of two floats (either may be ``-inf``)."""
    if a < b:
        a, b = b, a
    return a if b == -math.inf else a + math.log1p(math.exp(b - a))


@solver("seg-pairs", needs=("dual_query_blocks", "simplex_dual_blocks"),
        tol=tolerances.STOCHASTIC_GAP, max_iter=MAX_ITER)
def solve_seg_pairs(
    formulation: Any,
    options: SolverOptions,
    *,
    record_every: int | None = None,
    eta0: float | None = None,
) -> Run:
    r"""Stochastic exponentiated gradient on RankMM-2's simplex dual, on
    the explicit pair variables: :math:`O(|R_i| + n_i d)` per step (Sect. 3.2).

    Each step draws a query i uniformly among those with pairs and updates
    :math:`\log \alpha^i_{jk} \mathrel{-}= \eta_0 ((s_j - y_j) - (s_k - y_k))`, then
    normalizes the query's :math:`|R_i| + 1` probabilities (log-sum-exp with
    :math:`\alpha^i_0`); the per-document coefficients :math:`(C/m) A_i^\top \alpha^i` follow
    by two ``bincount``. The reference implementation of ``seg``'s factored step.

    Parameters, returns, raises and references: those of :func:`solve_seg` (the same
    signature and the same run for the same seed, to rounding).
    """
    f = formulation
    rec = _recorder(f, options, record_every)
    blocks, c, eta0 = _eg_setup(f, solve_seg_pairs, eta0, rec)
    state = _PairsEG(f, blocks, c, eta0)
    t, drift_max = _passes(rec, options.seed, state)
    return state.finish(rec, t, drift_max, "seg-pairs")


class _PairsEG(_EGState):
    r"""The iterate of ``seg-pairs`` (:func:`solve_seg_pairs`): the explicit
    :math:`\log \alpha` of the pairs and :math:`\log \alpha^i_0` per block, from
    :meth:`~cvxrank.formulations.rankmm.RankMM.dual_start`.

    Attributes
    ----------
    log_alpha : ndarray
        The pairs' log-probabilities.
    lam : ndarray
        Per block, :math:`\log \alpha^i_0`.
    """

    record_alpha = True

    def __init__(self, formulation: Any, blocks: QueryBlocks, c: float, eta0: float) -> None:
        super().__init__(formulation, blocks, c, eta0)
        self.pptr = blocks.pair_ptr
        self.up, self.lo = _pair_ends(blocks)
        self.sizes = np.diff(self.ptr)
        ptr, pptr, up, lo, sizes = self.ptr, self.pptr, self.up, self.lo, self.sizes
        start = np.asarray(formulation.dual_start(), dtype=np.float64)
        p = blocks.upper.size
        self.log_alpha = np.log(start[:p])
        self.lam = np.log(start[p:])
        for b in range(self.n_blocks):
            al = np.exp(self.log_alpha[pptr[b]:pptr[b + 1]])
            self.coef[ptr[b]:ptr[b + 1]] = c * (np.bincount(up[b], al, sizes[b])
                                                - np.bincount(lo[b], al, sizes[b]))
        self.w = self.exact_weights()

    def step(self, b: int, t: int) -> None:
        r"""Block b's EG step on the pairs' log-probabilities, their normalization
        (log-sum-exp with :math:`\alpha^b_0`) and new coefficients, then ``w``'s update."""
        s, e, a, z = self.ptr[b], self.ptr[b + 1], self.pptr[b], self.pptr[b + 1]
        Xb, u, v, n_b = self.feats[b], self.up[b], self.lo[b], int(self.sizes[b])
        g = Xb @ self.w - self.y[s:e]
        la = self.log_alpha[a:z]
        la -= self.eta0 * (g[u] - g[v])
        lam = self.lam
        peak = max(float(la.max()), float(lam[b]))
        log_z = peak + math.log(float(np.exp(la - peak).sum()) + math.exp(lam[b] - peak))
        la -= log_z
        lam[b] -= log_z
        al = np.exp(la)
        cf = self.c * (np.bincount(u, al, n_b) - np.bincount(v, al, n_b))
        self.w += Xb.T @ (cf - self.coef[s:e])
        self.coef[s:e] = cf

    def dual_point(self) -> np.ndarray:
        r"""The pairs' probabilities, then :math:`\alpha^i_0` per block."""
        return np.r_[np.exp(self.log_alpha), np.exp(self.lam)]
