"""The ranking data set: features, grades and queries.

A :class:`RankingData` holds a feature matrix ``X`` (dense array or CSR), graded relevance
labels ``y`` and a query id per row. The rows of a query are contiguous; they keep the order in
which they were given (file order for data read from disk), which is also the order that
LETOR's evaluation scripts use to break ties in the scores.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np

from cvxrank.data.scales import column_norms, column_scales
from cvxrank.utils.lazy_sparse import sp

#: The features of a data set: dense, or CSR (a string, so that scipy.sparse is imported
#: only where a sparse matrix is made, :mod:`cvxrank.utils.lazy_sparse`).
Matrix: TypeAlias = "np.ndarray | sp.csr_matrix"

#: Largest grade the readers accept (grades are relevance levels 0..MAX_GRADE). It is the top
#: of LightGBM's default ``label_gain`` (2^i - 1 for i = 0..30; LightGBM refuses larger
#: labels): the exp2 gain 2^y - 1 of the ``letor3``, ``letor4`` and ``lightgbm`` metric presets
#: is then an exact integer below 2^31, where a grade of 1024 would overflow it to infinity.
#: LETOR grades are 0-2, MSLR-WEB, Yahoo! LTR and Istella 0-4.
MAX_GRADE = 30


def _as_matrix(X: object) -> Matrix:
    """Return ``X`` as a C-contiguous array or a canonical CSR matrix, of float32 when ``X``
    holds float32 and of float64 otherwise."""
    dtype = np.float32 if getattr(X, "dtype", None) == np.float32 else np.float64
    if sp.issparse(X):
        M = sp.csr_matrix(X, dtype=dtype)
        M.sum_duplicates()
        M.sort_indices()
        return M
    A = np.ascontiguousarray(X, dtype=dtype)
    if A.ndim != 2:
        raise ValueError(f"X must be 2-D (documents x features), got shape {A.shape}")
    return A


def _first_nonfinite(values: np.ndarray) -> int | None:
    """The index of the first value of the 1-D ``values`` that is not finite (None when all
    are), checked in chunks: no temporary of the size of a large X."""
    step = 2**20
    for start in range(0, values.size, step):
        finite = np.isfinite(values[start:start + step])
        if not finite.all():
            return start + int(np.argmin(finite))
    return None


def squared_distances(X: Matrix, centre: np.ndarray) -> np.ndarray:
    """Squared distance of each row of X to the matching row of ``centre`` (or to its one
    row), for dense or sparse X (no dense copy of a sparse X)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        squares = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        cross = (np.asarray(X @ centre[0]).ravel() if centre.shape[0] == 1
                 else np.asarray(X.multiply(centre).sum(axis=1)).ravel())
        return squares - 2.0 * cross + np.einsum("ij,ij->i", centre, centre)
    diff = np.asarray(X) - centre
    return np.einsum("ij,ij->i", diff, diff)


def largest_distance_to_mean(X: Matrix) -> float:
    r""":math:`\max_j \|x_j - \bar x\|` over the rows of X (twice it bounds the distance
    between any two rows)."""
    centre = np.asarray(X.mean(axis=0)).reshape(1, -1)
    return float(np.sqrt(max(float(np.max(squared_distances(X, centre), initial=0.0)), 0.0)))


def row_scores(X: Matrix, w: np.ndarray) -> np.ndarray:
    """The scores ``X @ w``, computed row by row, so that equal rows get equal scores.

    A BLAS matrix-vector product may split rows into blocks whose rounding differs with
    the row's position (OpenBLAS gave identical documents scores one unit in the last place
    apart), which would make a tie between identical documents depend on rounding; the
    measure certificates (:mod:`cvxrank.certificates.measure_certificate`) and every reported score
    use this one arithmetic. A CSR product is row by row already.
    """
    if sp.issparse(X):
        return np.asarray(X @ w, dtype=np.float64).ravel()
    return np.einsum("ij,j->i", np.asarray(X), np.asarray(w, dtype=np.float64))


def qid_from_group(group: Sequence[int] | np.ndarray) -> np.ndarray:
    """Per-row query index ``0, 0, ..., 1, ...`` from LightGBM-style group sizes.

    Raises
    ------
    ValueError
        If a group size is not a positive integer.
    """
    sizes = np.asarray(group)
    if sizes.ndim != 1 or sizes.size == 0:
        raise ValueError("group must be a non-empty 1-D sequence of query sizes")
    if not np.issubdtype(sizes.dtype, np.integer):
        if not np.all(np.isfinite(sizes)) or np.any(sizes != np.round(sizes)):
            raise ValueError("group sizes must be integers")
        sizes = sizes.astype(np.int64)
    bad = np.flatnonzero(sizes <= 0)
    if bad.size:
        raise ValueError(f"group size at position {bad[0]} is {sizes[bad[0]]}; sizes must be >= 1")
    return np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)


@dataclass(frozen=True, eq=False)
class RankingData:
    """Documents grouped into queries, with graded relevance labels.

    Build it with :meth:`from_arrays` (per-row ``qid`` as in svm_rank, XGBoost and
    scikit-learn, or ``group`` sizes as in LightGBM) or with a reader of
    :mod:`cvxrank.data.io`.

    Parameters
    ----------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_documents, n_features)
        Feature matrix: float64, or float32 when given float32 (half the memory; the
        formulations compute with a float64 copy, :meth:`as_float64`); any other dtype is
        converted to float64. It may be a read-only memory map (a file read from the cache
        of :func:`~cvxrank.data.svmlight.read_svmlight`).
    y : ndarray of shape (n_documents,)
        Relevance grades (finite; larger is more relevant).
    qid : ndarray of shape (n_documents,)
        Integer query id of each row; equal ids are contiguous.
    docid : ndarray of str or None
        Document ids (from LETOR's ``#docid = ...`` comments), if known.
    comment : ndarray of str or None
        The raw comment after ``#`` of each line, if any, so that a writer can reproduce it.
    order : ndarray of int or None
        ``order[i]`` is the position in the caller's arrays of row ``i`` when
        :meth:`from_arrays` had to group non-contiguous query ids (a stable regrouping);
        None when the rows are in the given order.
    source : str or None
        Where the data came from (a file path, ``"synthetic(...)"``, ...).
    line : ndarray of int or None
        1-based line number in ``source`` of each row, for messages and accounting.
    n_lines : int or None
        Total number of lines in ``source`` (data, blank and comment lines).
    """

    X: Matrix
    y: np.ndarray
    qid: np.ndarray
    docid: np.ndarray | None = None
    comment: np.ndarray | None = None
    order: np.ndarray | None = None
    source: str | None = None
    line: np.ndarray | None = None
    n_lines: int | None = None
    query_ptr: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        X = _as_matrix(self.X)
        y = np.asarray(self.y, dtype=np.float64)
        qid = np.asarray(self.qid)
        if not np.issubdtype(qid.dtype, np.integer):
            raise ValueError(f"qid must hold integers, got dtype {qid.dtype}")
        qid = qid.astype(np.int64, copy=False)
        n = X.shape[0]
        if y.shape != (n,) or qid.shape != (n,):
            raise ValueError(
                f"inconsistent shapes: X has {n} rows, y has shape {y.shape}, qid has shape "
                f"{qid.shape}"
            )
        if n == 0:
            raise ValueError(f"no documents{self._where()}")
        bad = _first_nonfinite(y)
        if bad is not None:
            raise ValueError(f"grade of row {bad}{self._where(bad)} is {y[bad]}; must be finite")
        values = X.data if sp.issparse(X) else X.ravel()
        bad = _first_nonfinite(values)
        if bad is not None:
            row = int(np.searchsorted(X.indptr, bad, side="right") - 1) if sp.issparse(X) else (
                bad // X.shape[1]
            )
            raise ValueError(f"non-finite feature value in row {row}{self._where(row)}")
        starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
        if np.unique(qid[starts]).size != starts.size:
            raise ValueError(
                "the rows of each query must be contiguous; use RankingData.from_arrays to "
                "group them"
            )
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "qid", qid)
        object.__setattr__(self, "query_ptr", np.r_[starts, n].astype(np.int64))

    def _where(self, row: int | None = None) -> str:
        if self.source is None:
            return ""
        if row is not None and self.line is not None:
            return f" ({self.source}:{int(self.line[row])})"
        return f" ({self.source})"

    @classmethod
    def from_arrays(
        cls,
        X: object,
        y: object,
        qid: object | None = None,
        group: Sequence[int] | np.ndarray | None = None,
        docid: object | None = None,
        source: str | None = None,
    ) -> RankingData:
        """Build a data set from arrays with per-row ``qid`` or LightGBM ``group`` sizes.

        Exactly one of ``qid`` and ``group`` is given. Rows of a query need not be
        contiguous in ``qid``: they are regrouped stably (queries in order of first
        appearance, rows in their given order) and :attr:`order` records the permutation.
        """
        if (qid is None) == (group is None):
            raise ValueError("give exactly one of qid (per-row query ids) and group (sizes)")
        n = X.shape[0] if hasattr(X, "shape") else len(X)  # type: ignore[arg-type]
        if group is not None:
            q = qid_from_group(group)
            if q.size != n:
                raise ValueError(f"group sizes sum to {q.size} but X has {n} rows")
            return cls(X, np.asarray(y), q, docid=_opt(docid), source=source)
        q = np.asarray(qid)
        if q.shape != (n,):
            raise ValueError(f"qid has shape {q.shape} but X has {n} rows")
        if not np.issubdtype(q.dtype, np.integer):
            _, first, inverse = np.unique(q, return_index=True, return_inverse=True)
            q = np.argsort(np.argsort(first))[inverse].astype(np.int64)
        starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if n else np.array([], int)
        if np.unique(q[starts]).size == starts.size:
            return cls(X, np.asarray(y), q, docid=_opt(docid), source=source)
        _, first, inverse = np.unique(q, return_index=True, return_inverse=True)
        rank_of_first = np.argsort(np.argsort(first))
        order = np.argsort(rank_of_first[inverse], kind="stable")
        d = _opt(docid)
        return cls(
            _as_matrix(X)[order],
            np.asarray(y)[order],
            q[order],
            docid=None if d is None else d[order],
            order=order,
            source=source,
        )

    @property
    def n_documents(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return int(self.X.shape[1])

    @property
    def n_queries(self) -> int:
        """Number of queries."""
        return int(self.query_ptr.size - 1)

    @property
    def query_sizes(self) -> np.ndarray:
        """Documents per query (LightGBM's ``group``)."""
        return np.diff(self.query_ptr)

    @property
    def query_ids(self) -> np.ndarray:
        """The qid of each query, in data order."""
        return self.qid[self.query_ptr[:-1]]

    @property
    def query_index(self) -> np.ndarray:
        """Per-row query index 0..n_queries-1."""
        return np.repeat(np.arange(self.n_queries), self.query_sizes)

    def grade_counts(self) -> dict[float, int]:
        """Number of documents of each grade, by increasing grade."""
        grades, counts = np.unique(self.y, return_counts=True)
        return {_grade_key(g): int(c) for g, c in zip(grades, counts, strict=True)}

    def queries_with_single_grade(self) -> np.ndarray:
        """Query ids whose documents all have the same grade (they give no pairs)."""
        ptr = self.query_ptr
        ymax = np.maximum.reduceat(self.y, ptr[:-1])
        ymin = np.minimum.reduceat(self.y, ptr[:-1])
        return self.query_ids[ymax == ymin]

    def varying_columns(self) -> np.ndarray:
        """The feature columns not constant within every query (exactly), as indices: the
        only ones a loss of score differences within queries reads
        (:mod:`cvxrank.certificates.zero_certificate`)."""
        X = self.X
        dense = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
        starts = np.asarray(self.query_ptr[:-1], dtype=np.int64)
        spread = (np.maximum.reduceat(dense, starts, axis=0)
                  - np.minimum.reduceat(dense, starts, axis=0))
        return np.flatnonzero(np.any(spread != 0.0, axis=0))

    def subset(self, queries: Sequence[int] | np.ndarray) -> RankingData:
        """The data set restricted to the given query indices (0-based, in the given order)."""
        idx = np.asarray(queries, dtype=np.int64)
        if idx.size == 0:
            raise ValueError("subset needs at least one query")
        if idx.min() < 0 or idx.max() >= self.n_queries:
            raise ValueError(f"query indices must lie in [0, {self.n_queries})")
        rows = np.concatenate([np.arange(self.query_ptr[q], self.query_ptr[q + 1]) for q in idx])
        return self.take(rows)

    def take(self, rows: np.ndarray) -> RankingData:
        """The rows ``rows`` (which must keep each query's rows contiguous)."""
        return RankingData(
            self.X[rows],
            self.y[rows],
            self.qid[rows],
            docid=None if self.docid is None else self.docid[rows],
            comment=None if self.comment is None else self.comment[rows],
            source=self.source,
            line=None if self.line is None else self.line[rows],
        )

    @functools.cached_property
    def column_scales(self) -> np.ndarray:
        """The largest magnitude of each feature column
        (:func:`cvxrank.data.scales.column_scales`), computed once: the overflow check of
        every formulation, the Newton solvers' choice of preconditioning and the note of a
        run that stopped short all read it."""
        return column_scales(self.X)

    @functools.cached_property
    def column_norms(self) -> np.ndarray:
        """The 2-norm of each feature column (:func:`cvxrank.data.scales.column_norms`),
        computed once: the certificates' rounding bounds read it
        (:mod:`cvxrank.numerics.rounding`)."""
        return column_norms(self.X)

    def as_float64(self) -> RankingData:
        """The data with a float64 ``X`` (the data itself when ``X`` is float64 already)."""
        if self.X.dtype == np.float64:
            return self
        return self.with_features(self.X.astype(np.float64))

    def with_features(self, X: Matrix) -> RankingData:
        """The same queries and grades with another feature matrix (same number of rows)."""
        return RankingData(
            X,
            self.y,
            self.qid,
            docid=self.docid,
            comment=self.comment,
            order=self.order,
            source=self.source,
            line=self.line,
            n_lines=self.n_lines,
        )

    def pad_features(self, n_features: int) -> RankingData:
        """The data with zero columns appended up to ``n_features`` columns.

        An SVMlight file need not mention trailing zero features, so a test file can have
        fewer columns than the model was trained on; more columns than that is an error.

        Raises
        ------
        ValueError
            If the data has more than ``n_features`` features (naming the source).
        """
        if self.n_features > n_features:
            raise ValueError(
                f"{self.source or 'the data'} has {self.n_features} features but the model "
                f"was trained on {n_features}; it cannot score the extra features"
            )
        if self.n_features == n_features:
            return self
        pad = sp.csr_matrix((self.n_documents, n_features - self.n_features))
        return self.with_features(sp.hstack([sp.csr_matrix(self.X), pad], format="csr"))


def _grade_key(g: float) -> float | int:
    return int(g) if float(g).is_integer() else float(g)


def _opt(values: object | None) -> np.ndarray | None:
    return None if values is None else np.asarray(values, dtype=object)
