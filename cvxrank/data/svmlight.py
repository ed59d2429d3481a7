"""SVMlight / LETOR text files: ``label qid:N i:v ... # comment``.

The reader keeps what scikit-learn's :func:`sklearn.datasets.load_svmlight_file` drops (the
comment, hence LETOR's ``docid``, and the line of every row) and reports malformed input by
file and line. The tests check that both readers give the same ``X``, ``y`` and ``qid``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable

import numpy as np
import scipy.sparse as sp

from cvxrank.data.ranking_data import RankingData
from cvxrank.errors import DataFormatError

_DOCID = re.compile(r"docid\s*=\s*(\S+)")

#: Reader default: build a dense matrix when at least this fraction of entries is stored.
DENSE_THRESHOLD = 0.5


def _parse_number(path: str, lineno: int, token: str, what: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise DataFormatError(path, lineno, f"{what} {token!r} is not a number") from None
    if not math.isfinite(value):
        raise DataFormatError(path, lineno, f"{what} is {token!r}; expected a finite number")
    return value


def _parse_features(
    path: str, lineno: int, tokens: list[str], zero_based: bool, n_features: int | None
) -> tuple[list[int], list[float]]:
    """Check and convert the ``index:value`` tokens of one line (the slow, careful path)."""
    indices: list[int] = []
    values: list[float] = []
    for tok in tokens:
        idx_s, sep, val_s = tok.partition(":")
        if not sep or not idx_s or not val_s:
            raise DataFormatError(path, lineno, f"feature {tok!r} is not of the form index:value")
        try:
            idx = int(idx_s)
        except ValueError:
            raise DataFormatError(
                path, lineno, f"feature index {idx_s!r} in {tok!r} is not an integer"
            ) from None
        lowest = 0 if zero_based else 1
        if idx < lowest:
            raise DataFormatError(
                path, lineno, f"feature index {idx} is below {lowest} (zero_based={zero_based})"
            )
        col = idx - lowest
        if n_features is not None and col >= n_features:
            raise DataFormatError(
                path, lineno, f"feature index {idx} is beyond the declared {n_features} features"
            )
        indices.append(col)
        values.append(_parse_number(path, lineno, val_s, f"value of feature {idx}"))
    if len(set(indices)) != len(indices):
        raise DataFormatError(path, lineno, "a feature index appears twice on the line")
    return indices, values


def read_svmlight(
    path: str | os.PathLike[str],
    *,
    n_features: int | None = None,
    zero_based: bool = False,
    require_qid: bool = True,
    dense: bool | None = None,
) -> RankingData:
    """Read an SVMlight/LETOR ranking file.

    Each data line reads ``label qid:N index:value ... # comment``; blank lines and lines that
    start with ``#`` are skipped (and counted in :attr:`RankingData.n_lines`). A ``docid = X``
    in the comment (LETOR 3.0 and 4.0) is kept as :attr:`RankingData.docid`.

    Parameters
    ----------
    path : path-like
        The file.
    n_features : int, optional
        Declared number of features; an index beyond it is an error. By default the largest
        index seen.
    zero_based : bool, default False
        Whether feature indices start at 0 (SVMlight and LETOR start at 1).
    require_qid : bool, default True
        Raise on a line without ``qid:``. With False, a file with no qid at all is read as
        one row per line with ``qid`` 0 for every row (callers then give group sizes, see
        :func:`cvxrank.data.lightgbm.read_lightgbm`); mixing lines with and without qid is
        always an error.
    dense : bool, optional
        Force a dense array (True) or CSR (False); by default dense when at least
        ``DENSE_THRESHOLD`` of the entries are stored.

    Returns
    -------
    RankingData

    Raises
    ------
    DataFormatError
        On a malformed line (missing label, bad ``index:value``, non-numeric or non-finite
        value, missing qid, feature beyond ``n_features``, non-contiguous query) or an empty
        file; the message names the file and line.
    """
    path = os.fspath(path)
    labels: list[float] = []
    qids: list[int] = []
    comments: list[str | None] = []
    lines: list[int] = []
    row_lengths: list[int] = []
    tokens: list[str] = []
    has_qid: bool | None = None
    lineno = 0
    with open(path, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            body, hash_, comment = raw.partition("#")
            parts = body.split()
            if not parts:  # a blank line or a comment line
                continue
            labels.append(_parse_number(path, lineno, parts[0], "label"))
            this_has_qid = len(parts) > 1 and parts[1].startswith("qid:")
            if has_qid is None:
                has_qid = this_has_qid
            if this_has_qid != has_qid or (require_qid and not this_has_qid):
                raise DataFormatError(
                    path, lineno, "missing qid:N after the label" if not this_has_qid
                    else "qid:N on this line but not on the lines before it"
                )
            if this_has_qid:
                try:
                    qids.append(int(parts[1][4:]))
                except ValueError:
                    raise DataFormatError(
                        path, lineno, f"query id {parts[1]!r} is not qid:<integer>"
                    ) from None
                feats = parts[2:]
            else:
                feats = parts[1:]
            if any(t.count(":") != 1 for t in feats):
                _parse_features(path, lineno, feats, zero_based, n_features)
            tokens.extend(feats)
            row_lengths.append(len(feats))
            comments.append(comment.strip() if hash_ else None)
            lines.append(lineno)
    if not labels:
        raise DataFormatError(path, None if lineno == 0 else lineno, "no data lines (empty file)")
    indices, values = _convert_all(path, tokens, row_lengths, lines, zero_based, n_features)
    n = len(labels)
    if n_features is not None:
        width = n_features
    else:
        width = int(indices.max()) + 1 if indices.size else 0
    indptr = np.r_[0, np.cumsum(row_lengths)].astype(np.int64)
    X = sp.csr_matrix((values, indices, indptr), shape=(n, width))
    X.sort_indices()
    if dense is None:
        dense = X.nnz >= DENSE_THRESHOLD * max(1, n * width)
    docid = [None if c is None else _match_docid(c) for c in comments]
    qid = np.asarray(qids if has_qid else np.zeros(n), dtype=np.int64)
    _check_contiguous(path, qid, np.asarray(lines))
    return RankingData(
        X.toarray() if dense else X,
        np.asarray(labels),
        qid,
        docid=np.asarray(docid, dtype=object) if any(d is not None for d in docid) else None,
        comment=(
            np.asarray(comments, dtype=object) if any(c is not None for c in comments) else None
        ),
        source=path,
        line=np.asarray(lines, dtype=np.int64),
        n_lines=lineno,
    )


def _match_docid(comment: str) -> str | None:
    m = _DOCID.search(comment)
    return m.group(1) if m else None


def _convert_all(
    path: str,
    tokens: list[str],
    row_lengths: list[int],
    lines: list[int],
    zero_based: bool,
    n_features: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Convert every ``index:value`` token at once; on failure find the offending line."""
    if not tokens:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    try:
        flat = np.array(" ".join(tokens).replace(":", " ").split(), dtype=np.float64)
        if flat.size != 2 * len(tokens):  # a token like "3:" or ":5" would shift the pairs
            raise ValueError("misaligned index:value tokens")
        pairs = flat.reshape(-1, 2)
        idx = pairs[:, 0]
        ok = (
            np.all(idx == np.round(idx))
            and np.all(np.isfinite(pairs[:, 1]))
            and np.all(idx >= (0 if zero_based else 1))
            and (n_features is None or np.all(idx - (0 if zero_based else 1) < n_features))
        )
    except ValueError:
        ok = False
    if ok:
        cols = idx.astype(np.int64) - (0 if zero_based else 1)
        starts = np.r_[0, np.cumsum(row_lengths)]
        for r in np.flatnonzero(np.diff(starts) > 1):
            seg = cols[starts[r] : starts[r + 1]]
            if np.unique(seg).size != seg.size:
                raise DataFormatError(path, lines[r], "a feature index appears twice on the line")
        return cols, pairs[:, 1].copy()
    start = 0
    for length, lineno in zip(row_lengths, lines, strict=True):
        _parse_features(path, lineno, tokens[start : start + length], zero_based, n_features)
        start += length
    raise DataFormatError(path, None, "could not convert the features")  # pragma: no cover


def _check_contiguous(path: str, qid: np.ndarray, lines: np.ndarray) -> None:
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    seen: dict[int, int] = {}
    for s in starts:
        q = int(qid[s])
        if q in seen:
            raise DataFormatError(
                path, int(lines[s]),
                f"qid:{q} appears again after other queries (first seen at line {seen[q]}); "
                "the lines of a query must be contiguous",
            )
        seen[q] = int(lines[s])


def write_svmlight(data: RankingData, path: str | os.PathLike[str]) -> None:
    """Write ``data`` as an SVMlight/LETOR file that :func:`read_svmlight` reads back exactly.

    Values are written with Python's shortest round-trip representation; zeros of a dense
    matrix are omitted, as are labels' trailing ``.0``. The comment of each row (or
    ``docid = X`` when only docids are known) follows ``#``.
    """
    X = sp.csr_matrix(data.X)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(_format_rows(data, X))


def _format_rows(data: RankingData, X: sp.csr_matrix) -> Iterable[str]:
    for i in range(data.n_documents):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        feats = " ".join(
            f"{j + 1}:{v!r}" for j, v in zip(X.indices[lo:hi].tolist(), X.data[lo:hi].tolist(),
                                              strict=True)
        )
        label = float(data.y[i])
        head = f"{int(label) if label.is_integer() else repr(label)} qid:{int(data.qid[i])}"
        text = f"{head} {feats}" if feats else head
        if data.comment is not None and data.comment[i] is not None:
            text += f" # {data.comment[i]}"
        elif data.docid is not None and data.docid[i] is not None:
            text += f" #docid = {data.docid[i]}"
        yield text + "\n"
