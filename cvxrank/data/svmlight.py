"""SVMlight / LETOR text files, one document per line: ``label qid:N i:v i:v # comment``.

The reader keeps what scikit-learn's :func:`sklearn.datasets.load_svmlight_file` drops (the
comment, hence LETOR's ``docid``, and the line of every row) and reports malformed input by
file and line. The tests check that both readers give the same ``X``, ``y`` and ``qid``.
A well-formed file is read with whole-file numpy operations; any other is read again line by
line, which names the first bad line. A file of :func:`compiled_min_bytes` or more (every file
once ``make install`` has compiled the kernel ahead of time) is read in blocks by a compiled
kernel (:mod:`cvxrank.data.svmlight_compiled`: little memory beyond the final arrays), and
its parsed arrays are kept in a disk cache
(:mod:`cvxrank.data.parsed_cache`) that a second read maps into memory.
"""

from __future__ import annotations

import gzip
import io
import itertools
import math
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TextIO

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from cvxrank.compiled import aot
from cvxrank.data.ranking_data import MAX_GRADE, RankingData
from cvxrank.errors import DataFormatError
from cvxrank.utils.lazy_sparse import sp

_DOCID = re.compile(r"docid\s*=\s*(\S+)")

#: Reader default: build a dense matrix when at least this fraction of entries is stored.
DENSE_THRESHOLD = 0.5

#: Most features (columns) a file may have: a feature index above it is an error. 2^24 is four
#: orders of magnitude above the public learning-to-rank sets (LETOR 45-46, MSLR-WEB 136,
#: Istella 220, Yahoo! LTR 700 features), keeps column indices in int32, and bounds every
#: vector of length d that a fit allocates (weights, gradients, CG directions) at 128 MiB;
#: without it an index of 10^12 in a file read as CSR only fails later, in ``fit``, asking
#: for terabytes.
MAX_FEATURES = 2**24

#: A number in a data file (label or feature value): an optional sign, digits with an
#: optional decimal point, an optional exponent. Python's ``float`` also reads ``1_000``,
#: where C's ``strtod`` and ``scanf`` (SVMlight, svm_rank) stop at the ``_`` and read 1: it is
#: refused, so that every tool reads the file alike (``inf`` and ``nan`` are refused as not
#: finite).
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

#: A feature index: decimal digits only (``1.0:``, ``1e0:``, ``+1:`` are refused).
_INDEX = re.compile(r"[0-9]+")

#: A query id after ``qid:``: a decimal integer that fits in int64.
_QID = re.compile(r"[+-]?[0-9]+")

#: The first two bytes of a gzip file (RFC 1952).
GZIP_MAGIC = b"\x1f\x8b"

#: Smallest file (bytes on disk) read by the compiled parser when it is compiled just in time
#: (no ahead-of-time module, :mod:`cvxrank.compiled.aot`): it then pays a fixed 0.4 s in a
#: fresh process (importing numba and loading its kernel from numba's cache) but then reads
#: about 200 MB/s where the numpy path reads 40-50 MB/s, in a fraction of the memory.
#: ``benchmarks/bench_reader.py --crossover`` (prefixes of a dense 46-feature file, fresh
#: processes, medians of 3) measured text path / compiled path: 0.30 / 0.53 s at 16 MiB,
#: 0.60 / 0.62 s at 24 MiB, 0.69 / 0.67 s at 32 MiB, 1.30 / 0.73 s at 48 MiB; the peak memory
#: above the imports is 208 / 138 MiB at 16 MiB (numba's import is 100 MiB of the latter).
COMPILED_MIN_BYTES = 24 * 2**20

#: Smallest file read by the compiled parser when ``make install`` compiled it ahead of time
#: (loading it costs under a millisecond): every file. OHSUMED's Fold1 ``train.txt`` (4.5 MB)
#: reads in 0.029 s of CPU against the numpy path's 0.079 s.
AHEAD_OF_TIME_MIN_BYTES = 0

#: The characters of a number of :data:`_NUMBER`, removed by ``str.translate`` to check a whole
#: file's values at once.
_NUMBER_CHARS = str.maketrans("", "", "0123456789.eE+-")


def open_data_file(path: str | os.PathLike[str]) -> TextIO:
    """Open a data file as UTF-8 text, refusing anything but a regular file; a gzip file
    (recognized by its magic bytes, whatever its name) is decompressed as it is read.

    A device (``/dev/zero``), a FIFO or a socket could be read forever or block; a directory
    gets a clearer message than ``open``'s.

    Raises
    ------
    DataFormatError
        If ``path`` is not a regular file.
    FileNotFoundError, PermissionError
        As ``open`` does (naming the file).
    """
    path = os.fspath(path)
    if _is_gzip(path):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _is_gzip(path: str) -> bool:
    """Whether the regular file ``path`` starts with :data:`GZIP_MAGIC`.

    Raises
    ------
    DataFormatError
        If ``path`` is not a regular file.
    """
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise DataFormatError(
            path, None, "not a regular file (a directory, device, FIFO or socket); give a file"
        )
    with open(path, "rb") as probe:
        return probe.read(2) == GZIP_MAGIC


def parse_number(path: str, lineno: int, token: str, what: str) -> float:
    """Read one number of a text file: plain decimal notation, finite.

    Parameters
    ----------
    path, lineno : str, int
        Where the token is, for the message.
    token : str
        The text.
    what : str
        What the number is (``"label"``, ``"score"``, ...), for the message.

    Raises
    ------
    DataFormatError
        If the token is not a number, not finite, or not in the plain decimal notation of
        ``_NUMBER`` (``1_000`` is refused although Python's ``float`` reads it).
    """
    try:
        value = float(token)
    except ValueError:
        raise DataFormatError(path, lineno, f"{what} {token!r} is not a number") from None
    if not math.isfinite(value):
        raise DataFormatError(path, lineno, f"{what} is {token!r}; expected a finite number")
    if not _NUMBER.fullmatch(token):
        raise DataFormatError(
            path, lineno, f"{what} {token!r} is not a plain decimal number (sign, digits, "
            "point, exponent; no '_')"
        )
    return value


def _parse_label(path: str, lineno: int, token: str) -> float:
    value = parse_number(path, lineno, token, "label")
    if value < 0:
        raise DataFormatError(
            path, lineno, f"label {token} is negative; grades are relevance levels >= 0"
        )
    if value > MAX_GRADE:
        raise DataFormatError(
            path, lineno, f"label {token} is above the largest grade {MAX_GRADE} "
            "(cvxrank.data.ranking_data.MAX_GRADE, LightGBM's limit: beyond it the gain "
            "2^y - 1 of NDCG is not exact and overflows at 1024)"
        )
    return value


def _parse_qid(path: str, lineno: int, token: str) -> int:
    text = token[4:]
    if not _QID.fullmatch(text):
        raise DataFormatError(path, lineno, f"query id {token!r} is not qid:<integer>")
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise DataFormatError(
            path, lineno, f"query id {text} does not fit in a 64-bit integer"
        )
    return value


def _parse_features(
    path: str, lineno: int, tokens: list[str], zero_based: bool, n_features: int | None
) -> tuple[list[int], list[float]]:
    """Check and convert the ``index:value`` tokens of one line (the slow, careful path)."""
    indices: list[int] = []
    values: list[float] = []
    lowest = 0 if zero_based else 1
    for tok in tokens:
        idx_s, sep, val_s = tok.partition(":")
        if not sep or not idx_s or not val_s:
            raise DataFormatError(path, lineno, f"feature {tok!r} is not of the form index:value")
        if not _INDEX.fullmatch(idx_s):
            raise DataFormatError(
                path, lineno, f"feature index {idx_s!r} in {tok!r} is not an integer (digits "
                "only)"
            )
        idx = int(idx_s)
        if idx < lowest:
            raise DataFormatError(
                path, lineno, f"feature index {idx} is below {lowest} (zero_based={zero_based})"
            )
        col = idx - lowest
        if n_features is not None and col >= n_features:
            raise DataFormatError(
                path, lineno, f"feature index {idx} is beyond the declared {n_features} features"
            )
        if col >= MAX_FEATURES:
            raise DataFormatError(
                path, lineno, f"feature index {idx_s} is above the limit of {MAX_FEATURES:,} "
                "features (cvxrank.data.svmlight.MAX_FEATURES)"
            )
        indices.append(col)
        values.append(parse_number(path, lineno, val_s, f"value of feature {idx}"))
    if len(set(indices)) != len(indices):
        raise DataFormatError(path, lineno, "a feature index appears twice on the line")
    return indices, values


def read_svmlight(
    path: str | os.PathLike[str],
    *,
    n_features: int | None = None,
    zero_based: bool = False,
    require_qid: bool = True,
    allow_qid: bool = True,
    dense: bool | None = None,
    dtype: type = np.float64,
    cache: bool | None = None,
) -> RankingData:
    """Read an SVMlight/LETOR ranking file.

    Each data line reads ``label qid:N index:value ... # comment``; blank lines and lines that
    start with ``#`` are skipped (and counted in :attr:`RankingData.n_lines`). A ``docid = X``
    in the comment (LETOR 3.0 and 4.0) is kept as :attr:`RankingData.docid`.

    The grammar is strict, so that the file means the same to every SVMlight reader: a label
    is a grade in ``[0, MAX_GRADE]`` written as a plain decimal number (sign, digits, point,
    exponent: no ``1_000``, ``inf`` or ``nan``), as is a feature value (any finite number); a
    feature index is digits only (not ``1.0`` or ``+1``) and at most :data:`MAX_FEATURES`; a
    query id is an integer that fits in int64.

    A file of :func:`compiled_min_bytes` or more is read by the compiled parser, in blocks
    (its memory is the final arrays and one block); the same values, errors and messages.

    Parameters
    ----------
    path : path-like
        The file (a regular file: devices, FIFOs and directories are refused).
    n_features : int, optional
        Declared number of features (at most :data:`MAX_FEATURES`); an index beyond it is an
        error. By default the largest index seen.
    zero_based : bool, default False
        Whether feature indices start at 0 (SVMlight and LETOR start at 1).
    require_qid : bool, default True
        Raise on a line without ``qid:``. With False, a file with no qid at all is read as
        one row per line with ``qid`` 0 for every row (callers then give group sizes, see
        :func:`cvxrank.data.lightgbm.read_lightgbm`); mixing lines with and without qid is
        always an error.
    allow_qid : bool, default True
        With False, a ``qid:`` field is an error (a LightGBM file, whose queries come from
        group sizes that would silently override the qids).
    dense : bool, optional
        Force a dense array (True) or CSR (False); by default dense when at least
        ``DENSE_THRESHOLD`` of the entries are stored. A forced dense matrix larger than the
        machine's memory is refused.
    dtype : {np.float64, np.float32}, default np.float64
        The dtype of ``X`` (scikit-learn's convention: each value is read as a double, then
        rounded to float32). Grades stay float64.
    cache : bool, optional
        Keep the parsed arrays in the disk cache of :mod:`cvxrank.data.parsed_cache` and read
        an unchanged file from it (memory-mapped, read-only arrays). By default for files of
        :data:`~cvxrank.data.parsed_cache.CACHE_MIN_BYTES` or more; never when the
        environment sets ``CVXRANK_READ_CACHE=0``.

    Returns
    -------
    RankingData

    Raises
    ------
    DataFormatError
        On a malformed line (missing or negative label, label above ``MAX_GRADE``, bad
        ``index:value``, a number that is not plain decimal or not finite, missing or
        unwanted qid, feature index beyond ``n_features`` or ``MAX_FEATURES``, non-contiguous
        query), an empty file, a file that is not a regular file, or a dense matrix too large
        for memory; the message names the file and (for a line) the line.
    ValueError
        If ``n_features`` is negative or above ``MAX_FEATURES``, or ``dtype`` is not float64
        or float32.
    """
    from cvxrank.data import parsed_cache

    path = os.fspath(path)
    if n_features is not None and not 0 <= n_features <= MAX_FEATURES:
        raise ValueError(f"n_features must lie in [0, {MAX_FEATURES:,}], got {n_features}")
    dtype = np.dtype(dtype)
    if dtype not in (np.float64, np.float32):
        raise ValueError(f"dtype must be float64 or float32, got {dtype}")
    compressed = _is_gzip(path)
    size = os.stat(path).st_size
    key = None
    if parsed_cache.wanted(cache, size):
        key = parsed_cache.entry_key(path, {
            "n_features": n_features, "zero_based": zero_based, "require_qid": require_qid,
            "allow_qid": allow_qid, "dense": dense, "dtype": dtype.str,
        })
        entry = parsed_cache.load(key)
        if entry is not None:
            try:
                parsed, comments = _from_entry(*entry)
                _check_contiguous(path, parsed.qid, parsed.line)
                return _ranking_data(path, parsed, comments)
            except (ValueError, TypeError, KeyError) as exc:  # arrays that do not fit together
                parsed_cache.discard(key, exc)
    options = (zero_based, n_features, require_qid, allow_qid)
    parsed = None
    if size >= compiled_min_bytes():
        parsed = _read_compiled(path, compressed, options, dense, dtype)
    if parsed is None:
        parsed = _read_text(path, options, dense, dtype)
    _check_contiguous(path, parsed.qid, parsed.line)
    data = _ranking_data(path, parsed, _comment_list(parsed.comments))
    if key is not None:
        parsed_cache.store(key, *parsed.entry())
    return data


@dataclass
class _File:
    """A parsed file: ``X`` (dense, or CSR with sorted indices), grades, qids, line numbers,
    the number of lines, and the comments: None, a list (``None`` where a line has none) or
    :func:`_pack_comments`'s arrays."""

    X: np.ndarray | sp.csr_matrix
    y: np.ndarray
    qid: np.ndarray
    line: np.ndarray
    n_lines: int
    comments: list | tuple[np.ndarray, np.ndarray, np.ndarray] | None

    def entry(self) -> tuple[dict[str, np.ndarray], dict[str, object]]:
        """The arrays and metadata stored in the parsed-file cache."""
        arrays = {"y": self.y, "qid": self.qid, "line": self.line}
        if sp.issparse(self.X):
            arrays.update(data=self.X.data, indices=self.X.indices, indptr=self.X.indptr)
        else:
            arrays["X"] = self.X
        comments = self.comments
        if isinstance(comments, list):
            comments = _pack_comments(comments)
        if comments is not None:
            arrays.update(zip(("comment_bytes", "comment_offsets", "comment_present"),
                              comments, strict=True))
        return arrays, {"n_lines": self.n_lines, "shape": list(self.X.shape)}


def _from_entry(arrays: dict[str, np.ndarray], meta: dict) -> tuple[_File, list | None]:
    """The file and comment list of a cache entry."""
    shape = tuple(meta["shape"])
    if "X" in arrays:
        X = arrays["X"]
    else:
        X = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape)
        X.has_sorted_indices = True
    packed = None
    if "comment_bytes" in arrays:
        packed = (arrays["comment_bytes"], arrays["comment_offsets"],
                  arrays["comment_present"])
    parsed = _File(X, arrays["y"], arrays["qid"], arrays["line"], int(meta["n_lines"]), packed)
    return parsed, _comment_list(packed)


def _ranking_data(path: str, parsed: _File, comments: list | None) -> RankingData:
    docid = None
    if comments is not None:
        docid = [None if c is None else _match_docid(c) for c in comments]
    return RankingData(
        parsed.X,
        parsed.y,
        parsed.qid,
        docid=np.asarray(docid, dtype=object) if docid and any(
            d is not None for d in docid) else None,
        comment=_object_array(comments) if comments is not None and any(
            c is not None for c in comments) else None,
        source=path,
        line=parsed.line,
        n_lines=parsed.n_lines,
    )


def _object_array(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _pack_comments(comments: list) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Comments (``None`` where a line has none) as one UTF-8 buffer, the ``n + 1`` offsets of
    each comment in it, and whether each line has one; None when no line has one."""
    present = np.array([c is not None for c in comments], dtype=bool)
    if not present.any():
        return None
    encoded = [b"" if c is None else c.encode("utf-8") for c in comments]
    offsets = np.zeros(len(comments) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets, present


def _comment_list(comments: list | tuple | None) -> list | None:
    """The comments as a list of str (``None`` where a line has none)."""
    if comments is None or isinstance(comments, list):
        return comments
    buffer, offsets, present = comments
    text = bytes(buffer)
    bounds = zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)
    if text.isascii():
        decoded = text.decode("ascii")
        out = [decoded[a:b] for a, b in bounds]
    else:  # the kernel strips ASCII whitespace only; str.strip also strips the rest
        out = [text[a:b].decode("utf-8").strip() for a, b in bounds]
    for i in np.flatnonzero(~np.asarray(present, dtype=bool)).tolist():
        out[i] = None
    return out


def _read_text(
    path: str, options: tuple, dense: bool | None, dtype: np.dtype
) -> _File:
    """Read the file as text: the numpy fast path, else the careful path."""
    with open_data_file(path) as fh:
        try:
            lines = fh.read().split("\n")
        except UnicodeDecodeError:
            # Line by line: a malformed line decoded ahead of the bad bytes is reported
            # first (the text is decoded in blocks), else the decoding error is raised.
            fh.seek(0)
            parsed = _parse_lines(path, fh, *options)
        else:
            if not lines[-1]:  # the text after the last line break
                lines.pop()
            parsed = _parse_fast(lines, *options) or _parse_lines(path, lines, *options)
    labels, qid, comments, line, n_lines, indptr, indices, values = parsed
    n = len(labels)
    n_features = options[1]
    if n_features is not None:
        width = n_features
    else:
        width = int(indices.max()) + 1 if indices.size else 0
    X = sp.csr_matrix((values, indices, indptr), shape=(n, width))
    X.sort_indices()
    if dense is None:
        dense = X.nnz >= DENSE_THRESHOLD * max(1, n * width)
    elif dense:
        _check_dense_fits(path, n, width, dtype.itemsize)
    if dense:
        X = X.toarray()
    X = X.astype(dtype, copy=False)
    return _File(X, labels, qid, line, n_lines, comments)


def compiled_min_bytes() -> int:
    """Smallest file read by the compiled parser: :data:`AHEAD_OF_TIME_MIN_BYTES` when its
    ahead-of-time module is built for this version of the kernel (:mod:`cvxrank.compiled.aot`), else
    :data:`COMPILED_MIN_BYTES` (the file must pay for loading numba)."""
    from cvxrank.data import svmlight_compiled

    if aot.load(svmlight_compiled.__file__) is not None:
        return AHEAD_OF_TIME_MIN_BYTES
    return COMPILED_MIN_BYTES


def _read_compiled(
    path: str, compressed: bool, options: tuple, dense: bool | None, dtype: np.dtype
) -> _File | None:
    """Read the file with the compiled parser; None when it leaves the file to the text
    path (an empty file, or text it does not read: see
    :class:`~cvxrank.data.svmlight_compiled.ScanResult`).

    Raises
    ------
    DataFormatError
        For a malformed file: the careful path, given the lines up to the one the kernel
        found, raises what it raises on the whole file.
    """
    from cvxrank.data.svmlight_compiled import read_blocks_compiled

    zero_based, n_features, require_qid, allow_qid = options
    result = read_blocks_compiled(
        path, compressed, zero_based=zero_based, n_features=n_features,
        require_qid=require_qid, allow_qid=allow_qid, dense=dense, dtype=dtype,
        max_features=MAX_FEATURES, max_grade=MAX_GRADE, dense_threshold=DENSE_THRESHOLD,
        check_dense=lambda n, width: _check_dense_fits(path, n, width, dtype.itemsize),
    )
    if result.status == "error":
        with open_data_file(path) as fh:
            _parse_lines(path, itertools.islice(fh, result.error_line), *options)
        return None  # not reached unless the kernel and the careful path disagree
    if result.status != "ok":
        return None
    if result.dense:
        X = result.X
    else:
        X = sp.csr_matrix((result.data, result.indices, result.indptr),
                          shape=(len(result.y), result.width))
        X.sort_indices()
    return _File(X, result.y, result.qid, result.line, result.n_lines, result.comments)


#: What both parsers of :func:`read_svmlight` return: labels, qids, comments (None where a
#: line has none), line numbers, the number of lines, and the CSR ``indptr``, ``indices``,
#: ``data`` of the features (in file order, not yet sorted within a row).
_Parsed = tuple[
    np.ndarray, np.ndarray, list, np.ndarray, int, np.ndarray, np.ndarray, np.ndarray
]


def _parse_lines(
    path: str,
    lines: Iterable[str],
    zero_based: bool,
    n_features: int | None,
    require_qid: bool,
    allow_qid: bool,
) -> _Parsed:
    """Parse the lines one by one, checking each as it comes (the careful path).

    Malformed input goes through here (:func:`_parse_fast` gives up on it) and is reported at
    its line: the first line with a bad label, qid or token shape, else the first line with a
    bad feature (:func:`_convert_all`).
    """
    labels: list[float] = []
    qids: list[int] = []
    comments: list[str | None] = []
    numbers: list[int] = []
    row_lengths: list[int] = []
    tokens: list[str] = []
    has_qid: bool | None = None
    lineno = 0
    for lineno, raw in enumerate(lines, start=1):
        body, hash_, comment = raw.partition("#")
        parts = body.split()
        if not parts:  # a blank line or a comment line
            continue
        labels.append(_parse_label(path, lineno, parts[0]))
        this_has_qid = len(parts) > 1 and parts[1].startswith("qid:")
        if this_has_qid and not allow_qid:
            raise DataFormatError(
                path, lineno, f"{parts[1]} in a file read without query ids (LightGBM: "
                "queries come from the group sizes, which would override the qids); read "
                "it as SVMlight (--format svmlight)"
            )
        if has_qid is None:
            has_qid = this_has_qid
        if this_has_qid != has_qid or (require_qid and not this_has_qid):
            raise DataFormatError(
                path, lineno, "missing qid:N after the label" if not this_has_qid
                else "qid:N on this line but not on the lines before it"
            )
        if this_has_qid:
            qids.append(_parse_qid(path, lineno, parts[1]))
            feats = parts[2:]
        else:
            feats = parts[1:]
        if any(t.count(":") != 1 for t in feats):
            _parse_features(path, lineno, feats, zero_based, n_features)
        tokens.extend(feats)
        row_lengths.append(len(feats))
        comments.append(comment.strip() if hash_ else None)
        numbers.append(lineno)
    if not labels:
        raise DataFormatError(path, None if lineno == 0 else lineno, "no data lines (empty file)")
    indices, values = _convert_all(path, tokens, row_lengths, numbers, zero_based, n_features)
    n = len(labels)
    return (
        np.asarray(labels),
        np.asarray(qids if has_qid else np.zeros(n), dtype=np.int64),
        comments,
        np.asarray(numbers, dtype=np.int64),
        lineno,
        np.r_[0, np.cumsum(row_lengths)].astype(np.int64),
        indices,
        values,
    )


# --------------------------------------------------------------------------- the fast path
#
# A file without errors is read by _parse_fast: one pass of Python over the lines for the
# label, the qid and the comment, then every "index:value" token of the file at once with
# numpy. Whenever it meets anything it does not read exactly as _parse_lines does (any error,
# but also non-ASCII text among the features, a token longer than _MAX_TOKEN characters), it
# gives up and _parse_lines reads the lines again: every error is reported by that one code.

#: The longest token (``index:value``) the fast path reads; a longer one sends the file to
#: the careful path (the fast path holds a ``tokens x (longest + 1)`` byte matrix).
_MAX_TOKEN = 63

#: The ASCII characters that ``str.split`` treats as whitespace.
_SPACE_BYTES = bytes([9, 10, 11, 12, 13, 28, 29, 30, 31, 32])

#: Which bytes below 32 are whitespace (the others are control characters, kept in a token).
_IS_SPACE_BELOW_32 = np.zeros(32, dtype=bool)
_IS_SPACE_BELOW_32[[b for b in _SPACE_BYTES if b < 32]] = True

# States of the token automaton. It reads the bytes of one token and the whitespace after it
# and ends in _END (a token of _INDEX ":" _NUMBER without exponent), _END_EXP (with exponent)
# or _REJECT (anything else); both ends and _REJECT are absorbing.
(
    _REJECT, _START, _IN_INDEX, _AFTER_COLON, _PLUS, _MINUS, _LEADING_DOT,
    _IN_INT, _IN_FRAC, _AFTER_DOT, _AFTER_E, _EXP_SIGN, _IN_EXP, _END, _END_EXP,
) = range(15)


def _token_automaton() -> np.ndarray:
    """The transitions of the token automaton: ``table[256 * state + byte]`` is the next
    state times 256, so that a state plus a byte indexes the table."""
    table = np.full((15, 256), _REJECT, dtype=np.uint16)
    digits, space = list(b"0123456789"), list(_SPACE_BYTES)

    def go(states: tuple[int, ...], chars: bytes | list[int], to: int) -> None:
        for state in states:
            table[state, list(chars)] = to

    go((_START, _IN_INDEX), digits, _IN_INDEX)
    go((_IN_INDEX,), b":", _AFTER_COLON)
    go((_AFTER_COLON,), b"+", _PLUS)
    go((_AFTER_COLON,), b"-", _MINUS)
    go((_AFTER_COLON, _PLUS, _MINUS, _IN_INT), digits, _IN_INT)
    go((_AFTER_COLON, _PLUS, _MINUS), b".", _LEADING_DOT)
    go((_IN_INT,), b".", _AFTER_DOT)
    go((_LEADING_DOT, _AFTER_DOT, _IN_FRAC), digits, _IN_FRAC)
    go((_IN_INT, _AFTER_DOT, _IN_FRAC), b"eE", _AFTER_E)
    go((_IN_INT, _AFTER_DOT, _IN_FRAC), space, _END)
    go((_AFTER_E,), b"+-", _EXP_SIGN)
    go((_AFTER_E, _EXP_SIGN, _IN_EXP), digits, _IN_EXP)
    go((_IN_EXP,), space, _END_EXP)
    table[_END, :] = _END
    table[_END_EXP, :] = _END_EXP
    return (table * 256).ravel()


_AUTOMATON = _token_automaton()

#: Powers of ten, exact up to 10**22 (those the fast path divides by).
_POW10 = np.array([float(10**k) for k in range(_MAX_TOKEN + 1)])


def _state(name: int) -> np.uint16:
    return np.uint16(256 * name)


def _parse_fast(
    lines: list[str],
    zero_based: bool,
    n_features: int | None,
    require_qid: bool,
    allow_qid: bool,
) -> _Parsed | None:
    """Parse a well-formed file quickly; None for anything else (then :func:`_parse_lines`).

    The result is the same as :func:`_parse_lines`'s, value for value; whatever that function
    would refuse, this one gives up on (it never raises :class:`DataFormatError`).
    """
    labels: list[float] = []
    qid_text: list[str] = []
    feats: list[str] = []
    comments: list[str | None] = []
    numbers: list[int] = []
    known_labels: dict[str, float] = {}
    has_qid: bool | None = None
    last_qid = None  # the qid text of the line before, already checked
    for lineno, raw in enumerate(lines, start=1):
        body, hash_, comment = raw.partition("#")
        parts = body.split(None, 2)
        if not parts:
            continue
        label = known_labels.get(parts[0])
        if label is None:
            if not _NUMBER.fullmatch(parts[0]):
                return None
            label = known_labels[parts[0]] = float(parts[0])
        labels.append(label)
        if len(parts) > 1 and parts[1].startswith("qid:"):
            if has_qid is False or not allow_qid:
                return None
            has_qid = True
            q = parts[1][4:]
            if q != last_qid:
                if len(q) > 20 or not _QID.fullmatch(q):
                    return None
                last_qid = q
            qid_text.append(q)
            feats.append(parts[2] if len(parts) > 2 else "")
        else:
            if has_qid or require_qid:
                return None
            has_qid = False
            feats.append(" ".join(parts[1:]))
        comments.append(comment.strip() if hash_ else None)
        numbers.append(lineno)
    if not labels:
        return None
    y = np.array(labels)
    if not (np.all(np.isfinite(y)) and y.min() >= 0 and y.max() <= MAX_GRADE):
        return None
    if has_qid:
        try:
            qid = np.array([int(q) for q in qid_text], dtype=np.int64)
        except OverflowError:  # outside int64
            return None
    else:
        qid = np.zeros(len(labels), dtype=np.int64)
    features = _features_fast(feats, zero_based, n_features)
    if features is None:
        return None
    return (y, qid, comments, np.asarray(numbers, dtype=np.int64), len(lines), *features)


def _features_fast(
    feats: list[str], zero_based: bool, n_features: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Read the ``index:value`` tokens of every row (``feats[i]`` the text of row ``i``) at
    once: CSR ``indptr``, column indices and values, or None if any token is not valid.

    The text is laid out as bytes and each token is read by the token automaton, one
    column of a ``tokens x (longest token + 1)`` byte matrix at a time, which also gathers
    the digits of the index and of the value. A value without exponent whose digits make an
    integer below 2**53 with at most 22 of them after the point is that integer divided by a
    power of ten, both exact, hence correctly rounded as ``float`` would read it; any other
    value that the automaton accepts is read by ``float``.
    """
    text = "\n".join(feats)
    if not text.isascii():
        return None
    b = np.frombuffer(b" " + text.encode("ascii") + b" " * (_MAX_TOKEN + 1), dtype=np.uint8)
    low = b[b < 32]
    if not np.all(_IS_SPACE_BELOW_32[low]):
        return None  # a control character other than whitespace: part of a token
    space = b <= 32
    change = np.flatnonzero(space[:-1] != space[1:]) + 1
    starts, ends = change[0::2], change[1::2]
    n = starts.size
    lengths = np.fromiter(map(len, feats), dtype=np.int64, count=len(feats))
    row_starts = np.cumsum(lengths + 1) - lengths  # where each row's text begins in b
    indptr = np.r_[np.searchsorted(starts, row_starts), n].astype(np.int64)
    if n == 0:
        return indptr, np.zeros(0, dtype=np.int64), np.zeros(0)
    longest = int((ends - starts).max())
    if longest > _MAX_TOKEN:
        return None
    columns = np.ascontiguousarray(sliding_window_view(b, longest + 1)[starts].T)

    state = np.full(n, _state(_START), dtype=np.uint16)
    index = np.zeros(n)
    mantissa = np.zeros(n)
    n_frac = np.zeros(n, dtype=np.uint8)
    negative = np.zeros(n, dtype=bool)
    one, nine, zero_char = np.uint8(1), np.uint8(9), np.uint8(48)
    for column in columns:
        state = _AUTOMATON.take(state + column)
        if not np.all(state):  # some token is rejected
            return None
        digit = column - zero_char  # the digit where the byte is one
        for acc, took in (
            (index, state == _state(_IN_INDEX)),
            (mantissa, (state == _state(_IN_INT)) | (state == _state(_IN_FRAC))),
        ):
            if took.any():  # acc = 10 * acc + digit where a digit was read into it
                acc *= took * nine + one
                acc += took * digit
        n_frac += state == _state(_IN_FRAC)
        negative |= state == _state(_MINUS)
    plain = state == _state(_END)
    if not np.all(plain | (state == _state(_END_EXP))):
        return None  # a token does not end (cannot happen: the last column is whitespace)

    lowest = 0 if zero_based else 1
    limit = MAX_FEATURES if n_features is None else n_features
    if not (index.min() >= lowest and index.max() - lowest < limit):
        return None
    cols = index.astype(np.int64) - lowest
    exact = plain & (mantissa < 2.0**53) & (n_frac <= 22)
    values = mantissa / _POW10[n_frac]
    np.negative(values, out=values, where=negative)
    for i in np.flatnonzero(~exact).tolist():
        values[i] = float(text[starts[i] - 1 : ends[i] - 1].partition(":")[2])
    if not np.all(np.isfinite(values)):
        return None
    # a feature twice on a line: rows whose indices do not increase, sorted and compared
    rows = np.repeat(np.arange(len(feats)), np.diff(indptr))
    step = np.diff(cols)
    if np.any((step <= 0) & (rows[1:] == rows[:-1])):
        keys = np.sort(rows * (MAX_FEATURES + 1) + cols)
        if np.any(keys[1:] == keys[:-1]):
            return None
    return indptr, cols, values


def physical_memory() -> int | None:
    """Bytes of physical memory of this machine (None where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover (not POSIX)
        return None


def _check_dense_fits(path: str, n: int, width: int, itemsize: int = 8) -> None:
    """Refuse a dense ``n x width`` matrix of ``itemsize``-byte values larger than the
    physical memory."""
    need = itemsize * n * width
    have = physical_memory()
    if have is not None and need > have:
        raise DataFormatError(
            path, None, f"a dense {n:,} x {width:,} matrix would take {need / 2**30:,.1f} GiB, "
            f"more than this machine's {have / 2**30:,.1f} GiB; read it as CSR (dense=False)"
        )


def _match_docid(comment: str) -> str | None:
    """The ``docid = X`` of a comment (:data:`_DOCID`'s first match), None without one."""
    if comment.startswith("docid = "):
        # LETOR's own layout, read without the regular expression (half the time of the
        # docids, some 5 ms of an OHSUMED fold): the match is at position 0 and X is the
        # first run of non-whitespace after the "=" (str.split and the pattern's \s are the
        # same set, str.isspace); nothing but whitespace after it means no match anywhere.
        rest = comment[8:].split(None, 1)
        return rest[0] if rest else None
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
    """Convert every ``index:value`` token at once; on failure find the offending line.

    The fast path checks the whole file's tokens with string and array operations: indices
    are ASCII digits, values use only the characters of a plain decimal number (then numpy's
    conversion accepts exactly :data:`_NUMBER`), indices lie in range and values are finite.
    Anything else goes through :func:`_parse_features` line by line, which names the line.
    """
    if not tokens:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    lowest = 0 if zero_based else 1
    limit = MAX_FEATURES if n_features is None else n_features
    flat = " ".join(tokens).replace(":", " ").split()
    pairs = None
    if len(flat) == 2 * len(tokens):  # a token like "3:" or ":5" would shift the pairs
        index_text, value_text = "".join(flat[0::2]), "".join(flat[1::2])
        if index_text.isascii() and index_text.isdigit() and not value_text.translate(
            _NUMBER_CHARS
        ):
            try:
                pairs = np.array(flat, dtype=np.float64).reshape(-1, 2)
            except ValueError:
                pairs = None
    if pairs is not None:
        idx = pairs[:, 0]
        if (
            np.all(np.isfinite(pairs[:, 1]))
            and idx.min() >= lowest
            and idx.max() - lowest < limit
        ):
            cols = idx.astype(np.int64) - lowest
            starts = np.r_[0, np.cumsum(row_lengths)]
            for r in np.flatnonzero(np.diff(starts) > 1):
                seg = cols[starts[r] : starts[r + 1]]
                if np.unique(seg).size != seg.size:
                    raise DataFormatError(
                        path, lines[r], "a feature index appears twice on the line"
                    )
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

    Raises
    ------
    ValueError
        If a grade lies outside ``[0, MAX_GRADE]`` or the data has more than
        :data:`MAX_FEATURES` features: :func:`read_svmlight` would refuse the file.
    """
    bad = np.flatnonzero((data.y < 0) | (data.y > MAX_GRADE))
    if bad.size:
        raise ValueError(
            f"grade {data.y[bad[0]]:g} of row {bad[0]} is outside [0, {MAX_GRADE}]; "
            "read_svmlight would refuse the file"
        )
    if data.n_features > MAX_FEATURES:
        raise ValueError(
            f"{data.n_features:,} features is above the limit of {MAX_FEATURES:,}; "
            "read_svmlight would refuse the file"
        )
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
