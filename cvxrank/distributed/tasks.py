"""What a Dask worker computes on its shards: each function takes one shard and returns a
few numbers per feature, the terms that the client sums over the shards.

Every RankSVM loss separates over queries, and a shard holds whole queries, so the loss of
the data is the sum of the shards' losses, its gradient in w the sum of their
:math:`X_k^\\top \\partial L_k / \\partial s_k`, and its Hessian-vector products the sum of
their :math:`X_k^\\top H_{L_k} X_k v` (Chapelle & Keerthi 2010, eqs. (3), (5), (6), on each
shard). A shard's loss at a point w (its sort, the order the Hessian products reuse) is
kept with the shard on its worker (:class:`Shard`: the iterate's and the last trial's),
so that the Hessian products of a Newton step sort nothing; a worker that does
not hold it (a worker lost and the shard re-read elsewhere, a state evicted) evaluates the
loss again from the shard and w, which gives the same numbers: the state is a cache, never
the only copy of anything.

Each function returns its own compute time (``seconds``, the worker's clock), which the
client sets against the wall time of the call to split it into compute and communication.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.pair_losses import LossEvaluation
from cvxrank.formulations.ranksvm import AccuratePart, MarginBand, RankSVM
from cvxrank.losses import PairLoss
from cvxrank.numerics.rounding import LossRounding
from cvxrank.solvers.newton import FeatureColumns, hessian_diagonal, newton_matrix
from cvxrank.utils.lazy_sparse import sp


@dataclass(frozen=True)
class ShardSummary:
    """What the client learns of a shard when it is read: counts, the query ids (to check
    that no query is split across shards), the column scales (the data's badly-scaled
    test and overflow check take their maximum), the column norms (the certificates'
    rounding bounds, :mod:`cvxrank.numerics.rounding`), the columns that vary within a
    query (the zero model's certificate, :mod:`cvxrank.certificates.zero_certificate`) and
    a fingerprint.

    Attributes
    ----------
    source : str or None
    n_documents, n_features, n_pairs : int
    query_ids : ndarray of int
    column_scales, column_norms : ndarray of shape (n_features,)
    varying_columns : ndarray of int
    fingerprint : str
    """

    source: str | None
    n_documents: int
    n_features: int
    n_pairs: int
    query_ids: np.ndarray
    column_scales: np.ndarray
    column_norms: np.ndarray
    varying_columns: np.ndarray
    fingerprint: str


@dataclass(frozen=True)
class Terms:
    """One shard's part of a sum: ``value`` (the loss), ``margin_hinge``, ``vector`` (a
    d-vector or a d x d matrix) and the worker's compute ``seconds``; for a loss, the
    rounding bound of its evaluation and the 1- and 2-norms of its gradient in the scores
    (``rounding``, ``grad_norms``: :mod:`cvxrank.numerics.rounding`)."""

    value: float
    margin_hinge: float
    vector: np.ndarray | None
    seconds: float
    rounding: LossRounding | None = None
    grad_norms: tuple[float, float] = (0.0, 0.0)


def summarize(data: RankingData) -> ShardSummary:
    """The :class:`ShardSummary` of a shard."""
    from cvxrank.data.pairs import count_pairs
    from cvxrank.formulations.base import data_fingerprint

    return ShardSummary(source=data.source, n_documents=data.n_documents,
                        n_features=data.n_features, n_pairs=int(count_pairs(data).sum()),
                        query_ids=np.asarray(data.query_ids), column_scales=data.column_scales,
                        column_norms=data.column_norms,
                        varying_columns=data.varying_columns(),
                        fingerprint=data_fingerprint(data))


def pad(data: RankingData, n_features: int) -> RankingData:
    """The shard with zero feature columns up to ``n_features`` (an SVMlight file need not
    list trailing zero features)."""
    return data.pad_features(n_features)


@dataclass
class _State:
    """A shard's scores and loss evaluation at one point."""

    scores: np.ndarray
    evaluation: LossEvaluation
    gradient: np.ndarray


def _digest(v: np.ndarray) -> bytes:
    return hashlib.sha1(np.ascontiguousarray(v, dtype=np.float64).tobytes()).digest()


class Shard:
    r"""A shard's RankSVM on its worker, with the loss evaluations it keeps: at most the
    Newton iterate's and the line search's last trial (the module docstring's cache), by a
    digest of w.

    A trial point :math:`w - t\,\delta w` is scored as :math:`s - t X_k \delta w` from the
    iterate's scores (one product with :math:`X_k` per Newton step, as in memory: the
    line search then compares values whose rounding is the same, and the Armijo test holds
    to the last digits); without the iterate's state (a worker lost) it is scored as
    :math:`X_k w`.

    Parameters
    ----------
    formulation : RankSVM or None
        A RankSVM or a subclass (IR SVM); None for a shard without preference pairs (its
        loss is 0).
    parameters : tuple
        ``(C, loss, family, options)`` of the formulation (to build it again where the
        shard is sent, :func:`shard`).
    """

    def __init__(self, formulation: RankSVM | None, parameters: tuple = ()) -> None:
        self.formulation = formulation
        self._parameters = parameters  # (C, loss, family, options)
        self._states: dict[tuple[str, bytes], _State] = {}
        self._image: tuple[bytes, np.ndarray] | None = None  # a direction and X_k times it

    def __reduce__(self) -> tuple[Any, tuple]:
        """Sent to another worker as its data and parameters, and built again there (on
        :func:`aligned` arrays; the kept evaluations are not sent)."""
        if self.formulation is None:
            return (Shard, (None,))
        return (shard, (self.formulation.data, *self._parameters))

    def _evaluate(self, engine: str, key: tuple[str, bytes], scores: np.ndarray,
                  keep: tuple[str, bytes] | None) -> _State:
        f = self.formulation
        evaluation = f.loss_engine(engine).evaluate(scores)
        state = _State(scores, evaluation,
                       np.asarray(f.X.T @ evaluation.grad, dtype=np.float64))
        self._states = {k: v for k, v in self._states.items() if k == keep}
        self._states[key] = state
        return state

    def state(self, engine: str, w: np.ndarray) -> _State:
        """The loss at ``w``: kept from an earlier call, or evaluated (and kept)."""
        key = (engine, _digest(w))
        state = self._states.get(key)
        if state is None:
            scores = np.asarray(self.formulation.X @ np.asarray(w, dtype=np.float64),
                                dtype=np.float64).ravel()
            state = self._evaluate(engine, key, scores, keep=None)
        return state

    def trial(self, engine: str, w: np.ndarray, direction: np.ndarray, t: float,
              w_new: np.ndarray) -> _State:
        """The loss at the trial point ``w_new = w - t * direction`` (class docstring); the
        states of w and of this trial are kept."""
        key = (engine, _digest(w_new))
        if key in self._states:
            return self._states[key]
        base_key = (engine, _digest(w))
        base = self._states.get(base_key)
        if base is None:
            return self.state(engine, w_new)
        digest = _digest(direction)
        if self._image is None or self._image[0] != digest:
            self._image = (digest, np.asarray(self.formulation.X @ direction,
                                              dtype=np.float64).ravel())
        return self._evaluate(engine, key, base.scores - t * self._image[1], keep=base_key)


def aligned(data: RankingData) -> RankingData:
    """``data`` with its feature arrays aligned in memory (copied when they are not).

    Dask hands a worker the arrays it received as views into its message frames, which
    need not be aligned to 8 bytes; numpy then takes its slow unaligned loops and BLAS is
    not used: a product with a 500,000 x 46 X took 270 ms instead of 35 ms."""
    X = data.X
    parts = (X.data, X.indices, X.indptr) if sp.issparse(X) else (X,)
    if all(part.flags.aligned for part in parts):
        return data
    if sp.issparse(X):
        X = sp.csr_matrix((X.data.copy(), X.indices.copy(), X.indptr.copy()), shape=X.shape)
    else:
        X = np.array(X, order="C")
    return data.with_features(X)


def shard(data: RankingData, C: float, loss: PairLoss, family: type = RankSVM,
          options: dict[str, Any] | None = None) -> Shard:
    """The shard's :class:`Shard`: its ``family(data, C=C, loss=loss, **options)`` (a
    RankSVM, or IR SVM with the weights reduced over all shards; None without preference
    pairs), on :func:`aligned` arrays."""
    from cvxrank.data.pairs import count_pairs

    if not count_pairs(data).sum():
        return Shard(None)
    options = dict(options or {})
    return Shard(family(aligned(data), C=C, loss=loss, **options), (C, loss, family, options))


def each(function: Callable[..., Any], shards: list[Shard], *args: Any) -> list[Any]:
    """``function(shard, *args)`` for each of a worker's ``shards`` (one task per worker
    and call)."""
    return [function(shard, *args) for shard in shards]


def _loss_terms(state: _State, started: float) -> Terms:
    ev = state.evaluation
    grad = ev.grad
    return Terms(float(ev.value), float(ev.margin_hinge), state.gradient,
                 time.perf_counter() - started, ev.rounding(),
                 (float(np.abs(grad).sum()), float(grad @ grad)))


def loss(shard: Shard, engine: str, w: np.ndarray) -> Terms:
    r"""The shard's loss at ``w``, its margin-weighted hinge sum (the squared-hinge dual
    certificate's, :meth:`~cvxrank.formulations.ranksvm.RankSVM.dual_value_at`) and
    :math:`X_k^\top \partial L_k / \partial s_k`."""
    started = time.perf_counter()
    if shard.formulation is None:
        return Terms(0.0, 0.0, None, 0.0)
    return _loss_terms(shard.state(engine, w), started)


def trial_loss(shard: Shard, engine: str, w: np.ndarray, direction: np.ndarray, t: float,
               w_new: np.ndarray) -> Terms:
    """:func:`loss` at the line search's trial point ``w_new = w - t * direction``
    (:meth:`Shard.trial`)."""
    started = time.perf_counter()
    if shard.formulation is None:
        return Terms(0.0, 0.0, None, 0.0)
    return _loss_terms(shard.trial(engine, w, direction, t, w_new), started)


def _curvature(shard: Shard, engine: str, w: np.ndarray,
               compute: Callable[[RankSVM, Callable[[np.ndarray], np.ndarray]], np.ndarray]
               ) -> Terms:
    r"""``compute(formulation, hessp)`` with the Hessian product of the shard's loss at
    ``w`` (``hessp(delta)``: :math:`H_{L_k} \delta` in the scores)."""
    started = time.perf_counter()
    f = shard.formulation
    if f is None:
        return Terms(0.0, 0.0, None, 0.0)
    hessp = shard.state(engine, w).evaluation.hessp
    return Terms(0.0, 0.0, compute(f, hessp), time.perf_counter() - started)


def hessian_product(shard: Shard, engine: str, w: np.ndarray, v: np.ndarray) -> Terms:
    r""":math:`X_k^\top H_{L_k} X_k v` at ``w``."""
    return _curvature(shard, engine, w, lambda f, hessp: np.asarray(
        f.X.T @ hessp(np.asarray(f.X @ v)), dtype=np.float64))


def diagonal(shard: Shard, engine: str, w: np.ndarray) -> Terms:
    r"""The diagonal of :math:`X_k^\top H_{L_k} X_k` at ``w``."""
    return _curvature(shard, engine, w,
                      lambda f, hessp: hessian_diagonal(FeatureColumns(f.X), hessp))


def matrix(shard: Shard, engine: str, w: np.ndarray) -> Terms:
    r""":math:`X_k^\top H_{L_k} X_k` (d x d) at ``w``."""
    return _curvature(shard, engine, w,
                      lambda f, hessp: newton_matrix(f.X, FeatureColumns(f.X), hessp))


def accurate_part(shard: Shard, w: np.ndarray) -> tuple[AccuratePart, float]:
    r"""The shard's :math:`X_k^\top \partial L_k / \partial s` in double-word arithmetic
    (:meth:`~cvxrank.formulations.ranksvm.RankSVM.accurate_loss_gradient`; zeros for a shard
    without pairs), and the compute seconds."""
    return _double_word_part(shard, w, lambda f: f.accurate_loss_gradient(w))


def compensated_part(shard: Shard, w: np.ndarray) -> tuple[AccuratePart | None, float]:
    r"""The shard's :math:`X_k^\top \partial L_k / \partial s` in double-word arithmetic
    without its pairs (:meth:`~cvxrank.formulations.ranksvm.RankSVM.compensated_loss_gradient`:
    None for sparse features; zeros for a shard without pairs), and the compute seconds."""
    return _double_word_part(shard, w, lambda f: f.compensated_loss_gradient(w))


def _double_word_part(shard: Shard, w: np.ndarray,
                      part: Callable[[Any], AccuratePart | None]
                      ) -> tuple[AccuratePart | None, float]:
    """``part(formulation)`` of the shard (zeros for a shard without pairs), timed."""
    started = time.perf_counter()
    f = shard.formulation
    if f is None:
        zeros = np.zeros(w.size)
        return AccuratePart(zeros, zeros, zeros, zeros), 0.0
    return part(f), time.perf_counter() - started


def band(shard: Shard, w: np.ndarray, radii: list[float],
         max_pairs: int) -> tuple[MarginBand | None, float]:
    """The shard's :meth:`~cvxrank.formulations.ranksvm.RankSVM.margin_band` (hinge), and
    the compute seconds; an empty band for a shard without pairs."""
    started = time.perf_counter()
    f = shard.formulation
    if f is None:
        d = w.size
        return MarginBand(min(radii), np.zeros((0, d)), np.zeros(0), np.zeros(0),
                          np.zeros(d), 0.0), 0.0
    found = f.margin_band(w, radii, max_pairs=max_pairs)
    return found, time.perf_counter() - started
