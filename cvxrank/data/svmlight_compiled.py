"""A compiled SVMlight/LETOR reader for large files: one pass over byte blocks (two when its
guess fails).

:func:`read_blocks_compiled` reads the file in blocks of :data:`BLOCK_BYTES` (a line cut at
the end of a block is carried over to the next) and runs one numba kernel, :func:`_scan`,
over the blocks:

* in **pass 1** it checks the grammar of :func:`cvxrank.data.svmlight.read_svmlight` and
  counts the rows, the stored entries, the largest feature index and the bytes of the
  comments; it records the first line with an error of each kind (see :class:`ScanResult`);
* in **pass 2** it checks every line alike and fills the arrays (a dense ``n x d`` matrix or
  CSR arrays).

Pass 1 runs over the first :data:`FIRST_BYTES` of a plain file only: their counts, scaled
to the file's size (times :data:`ONE_PASS_MARGIN`), size the arrays of a single pass 2 over
the whole file, laid out as those lines ask (dense or CSR, their width); the arrays' pages
are touched only as rows are filled and their unused ends are given back at the end, so the
memory is the final arrays plus one block. When that guess fails (more rows or entries than
the arrays hold, a dense row wider than the first lines', a whole file of the other layout),
the pass stops and the file is read in two passes, as a gzip file or one of at most
:data:`FIRST_BYTES` always is: pass 1 over the whole file, then pass 2 into arrays of the
exact sizes. Both ways give the same arrays, bit for bit, and the same errors. At 10^6 x 46
the single pass reads the file in 1.3 s of CPU where the two passes took 2.6 s (1.0 s of it
pass 1), with the same peak memory (within 2 %).

Numbers are read exactly as Python's ``float`` reads them. A decimal whose significant digits
make an integer below 2**53 and whose power of ten is at most 22 in magnitude is that
integer multiplied or divided by an exact power of ten: one correctly rounded operation
(Clinger's fast path), which is what LETOR's values with 6 to 9 digits take. Every other
value is collected (its place in the output and its bytes) and converted afterwards by
numpy's string-to-float cast (correctly rounded, as ``float``), in batches of
:data:`SLOW_BATCH`. Whether such a value is finite is decided exactly by the kernel from its
digits (an error of the file), so that the conversion meets no error.

``make install`` compiles the kernel ahead of time (``KERNELS.build_ahead()``,
:mod:`cvxrank.compiled.aot`; loaded without numba, so that every file is read here, see
:func:`cvxrank.data.svmlight.compiled_min_bytes`). Without that module it is compiled by
numba on first use (numba is imported then, not with this module) and cached on disk
(``__pycache__``; :func:`compile_kernels` fills the cache).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from cvxrank.compiled.kernels import KernelFile

#: Bytes read from the file per block (the last, partial line of a block is carried over; a
#: line longer than a block doubles the buffer). A block that stays in the CPU's caches
#: between the copy from the file and the kernel's sweep reads faster: 10^6 x 46 dense
#: features took 2.5-2.7 s with 4 MiB blocks against 3.2-3.5 s with 16 MiB.
BLOCK_BYTES = 4 * 2**20

#: Bytes of a plain file that pass 1 reads first (at most :data:`BLOCK_BYTES`): their counts
#: size the arrays of the one-pass read (the kernel's results do not depend on the blocks).
FIRST_BYTES = 2**20

#: Values read by numpy's string conversion per batch (the rest exactly by the kernel).
SLOW_BATCH = 2**14

#: Longest value (in characters) converted in a numpy batch; a longer one goes to ``float``.
_SLOW_WIDTH = 64

# Slots of the state vector shared by the kernel calls of one pass.
(_LINENO, _ROWS, _NNZ, _MAXCOL, _HASQID, _ERR_A, _ERR_B, _UNSUPPORTED, _CBYTES, _CROWS,
 _NSLOW, _NEED_SLOW, _NEED_SCRATCH, _NEED_ROWS, _NEED_NNZ, _NEED_COMMENTS, _NEED_CBYTES,
 _WIDER, _STATE_SIZE) = range(19)

# Slots of the options vector.
_FILL, _DENSE, _WIDTH, _LOWEST, _LIMIT, _REQUIRE, _ALLOW, _MAX_GRADE, _OPTIONS_SIZE = range(9)

# What _number finds: not a number of the grammar, an exact value, a finite value for the
# slow conversion, a value that rounds to infinity, a value within one unit of the 18th
# digit of the largest double (not decided here).
_INVALID, _FAST, _SLOW, _INF, _UNSURE = range(5)

#: 10**k for k = 0..22, all exact doubles.
_POW10 = np.array([float(10**k) for k in range(23)])

#: 10**k for k = 0..18 as int64.
_IPOW10 = np.array([10**k for k in range(19)], dtype=np.int64)

#: The first 18 significant digits of the smallest decimal that rounds to infinity lie
#: above this bound (the midpoint between the largest double and 2**1024 is
#: 1.797693134862315807937...e308).
_BELOW_INF_18 = 179769313486231580


def _is_space(c: int) -> bool:
    """Whether byte ``c`` is ASCII whitespace for ``str.split``."""
    return (9 <= c <= 13) or (28 <= c <= 32)


def _number(buf: np.ndarray, s: int, e: int) -> tuple[int, float, bool]:
    """Read the number ``buf[s:e]`` of the grammar ``[+-]?(D+.?D*|.D+)([eE][+-]?D+)?``.

    Returns ``(kind, value, negative)``: ``kind`` is one of ``_INVALID``, ``_FAST`` (then
    ``value`` is what ``float`` gives), ``_SLOW`` (finite, to be converted), ``_INF`` or
    ``_UNSURE``.
    """
    i = s
    negative = False
    if i < e and (buf[i] == 43 or buf[i] == 45):
        negative = buf[i] == 45
        i += 1
    # The digit loops here and in _plain_number and _scan are written out where they are
    # used: a shared helper returning a tuple made numba's reader half as fast (a cold read of
    # 10^6 x 46 took 6.2 s instead of 3.2 s).
    mantissa = 0  # the first 18 significant digits
    count = 0  # how many of them
    scale = 0  # the value is mantissa * 10**scale, up to the digits dropped
    truncated = False
    digits = 0
    while i < e and 48 <= buf[i] <= 57:
        d = np.int64(buf[i]) - 48
        digits += 1
        if count < 18:
            if mantissa != 0 or d != 0:
                mantissa = mantissa * 10 + d
                count += 1
        else:
            scale += 1
            truncated = truncated or d != 0
        i += 1
    if i < e and buf[i] == 46:
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            d = np.int64(buf[i]) - 48
            digits += 1
            if count < 18:
                if mantissa != 0 or d != 0:
                    mantissa = mantissa * 10 + d
                    count += 1
                scale -= 1
            else:
                truncated = truncated or d != 0
            i += 1
    if digits == 0:
        return _INVALID, 0.0, negative
    if i < e and (buf[i] == 101 or buf[i] == 69):
        i += 1
        exp_negative = False
        if i < e and (buf[i] == 43 or buf[i] == 45):
            exp_negative = buf[i] == 45
            i += 1
        if i == e:
            return _INVALID, 0.0, negative
        exponent = 0
        while i < e and 48 <= buf[i] <= 57:
            exponent = min(exponent * 10 + (np.int64(buf[i]) - 48), 1_000_000_000)
            i += 1
        scale += -exponent if exp_negative else exponent
    if i != e:
        return _INVALID, 0.0, negative
    if mantissa == 0:
        return _FAST, -0.0 if negative else 0.0, negative
    if not truncated and mantissa < 2**53 and -22 <= scale <= 22:
        if scale >= 0:
            value = float(mantissa) * _POW10[scale]
        else:
            value = float(mantissa) / _POW10[-scale]
        return _FAST, -value if negative else value, negative
    magnitude = count + scale  # 10**(magnitude - 1) <= value < 10**magnitude
    if magnitude <= 308:
        return _SLOW, 0.0, negative
    if magnitude >= 310:
        return _INF, 0.0, negative
    top = mantissa * _IPOW10[18 - count]
    if top + 1 <= _BELOW_INF_18:
        return _SLOW, 0.0, negative
    if top > _BELOW_INF_18:
        return _INF, 0.0, negative
    return _UNSURE, 0.0, negative


def _plain_number(buf: np.ndarray, s: int, stop: int) -> tuple[int, float, int]:
    """Read the longest prefix ``[+-]?D*(.D*)?`` from ``s``: ``(_FAST, value, end)`` when it
    has 1 to 15 digits (then ``value`` is exact: the digits' integer, below 2**53, divided by
    an exact power of ten), else ``(_INVALID, 0.0, end)`` (then :func:`_number` decides)."""
    i = s
    negative = False
    if i < stop and (buf[i] == 43 or buf[i] == 45):
        negative = buf[i] == 45
        i += 1
    mantissa = 0
    digits = 0
    while i < stop:
        d = np.int64(buf[i]) - 48
        if d < 0 or d > 9:
            break
        mantissa = mantissa * 10 + d
        digits += 1
        i += 1
    whole = digits
    if i < stop and buf[i] == 46:
        i += 1
        while i < stop:
            d = np.int64(buf[i]) - 48
            if d < 0 or d > 9:
                break
            mantissa = mantissa * 10 + d
            digits += 1
            i += 1
    if 0 < digits <= 15:
        value = float(mantissa) / _POW10[digits - whole]
        return _FAST, -value if negative else value, i
    return _INVALID, 0.0, i


def _skip_space(buf: np.ndarray, i: int, stop: int) -> int:
    """The first index from ``i`` that is not whitespace other than a line feed (``stop``
    at the end); -1 at a carriage return that does not end a line (a line break to Python)."""
    while i < stop:
        c = buf[i]
        if not ((9 <= c <= 13 and c != 10) or 28 <= c <= 32):
            return i
        if c == 13 and i + 1 < stop and buf[i + 1] != 10:
            return -1
        i += 1
    return i


def _token_end(buf: np.ndarray, i: int, stop: int) -> tuple[int, int, int, bool]:
    """Where the token at ``i`` ends (whitespace, ``#`` or ``stop``), its number of ``:``,
    the last one's index, and whether it holds a non-ASCII byte."""
    colons = 0
    colon = -1
    high = False
    while i < stop:
        c = buf[i]
        if c <= 32 and ((9 <= c <= 13) or c >= 28):
            break
        if c == 35:
            break
        if c == 58:
            colons += 1
            colon = i
        elif c >= 128:
            high = True
        i += 1
    return i, colons, colon, high


def _line_end(buf: np.ndarray, i: int, stop: int, check_high: bool) -> int:
    """The index of the line feed from ``i`` (``stop`` without one); -1 at a carriage return
    that does not end a line or, with ``check_high``, at a non-ASCII byte."""
    while i < stop:
        c = buf[i]
        if c == 10:
            return i
        if c == 13 and i + 1 < stop and buf[i + 1] != 10:
            return -1
        if check_high and c >= 128:
            return -1
        i += 1
    return i


def _save(st: np.ndarray, lineno: int, rows: int, nnz: int, maxcol: int, file_qid: int,
          cbytes: int, crows: int, nslow: int, err_b: int) -> None:
    """Store the counts of the lines read so far in the state vector ``st``."""
    st[_LINENO] = lineno
    st[_ROWS] = rows
    st[_NNZ] = nnz
    st[_MAXCOL] = maxcol
    st[_HASQID] = file_qid
    st[_CBYTES] = cbytes
    st[_CROWS] = crows
    st[_NSLOW] = nslow
    st[_ERR_B] = err_b


def _scan(buf, start, stop, final, st, opt, y, qid, line, out, indptr, indices, cbuf, coff,
          chas, slow, scratch):  # noqa: ANN001, ANN202 (numba kernel)
    """Read the complete lines of ``buf[start:stop]`` (and the last, partial one when
    ``final``); return where it stopped (the start of the first line not read).

    Both passes count into ``st`` and record the first line of each error kind, stopping at
    the first line with an error of the line (``_ERR_A``) or that it does not read
    (``_UNSUPPORTED``); pass 2 (``opt[_FILL] == 1``) also fills ``y``, ``qid``, ``line``,
    ``out`` (dense, flat, or the CSR ``data`` with ``indptr``, ``indices``), the comments
    (``cbuf``, ``coff``, ``chas``) and the slow values' places (``slow``). Everything a line
    changes in ``st`` is committed at its end, so that a line can be read again: the kernel
    returns at a line's start when ``slow`` or ``scratch`` is full (``st[_NEED_*]`` then says
    it must grow, else ``slow`` is to be converted), when an array of pass 2 is full
    (``_NEED_ROWS``, ``_NEED_NNZ``, ``_NEED_COMMENTS``: the comments have none yet,
    ``_NEED_CBYTES``: the bytes they need), when a dense row has a feature beyond
    ``opt[_WIDTH]`` (``_WIDER``: its line) or when the line is cut by ``stop``.
    """
    fill = opt[_FILL] != 0
    dense = opt[_DENSE] != 0
    width = opt[_WIDTH]
    lowest = opt[_LOWEST]
    limit = opt[_LIMIT]
    lineno = st[_LINENO]
    rows = st[_ROWS]
    nnz = st[_NNZ]
    maxcol = st[_MAXCOL]
    file_qid = st[_HASQID]
    cbytes = st[_CBYTES]
    crows = st[_CROWS]
    nslow = st[_NSLOW]
    err_b = st[_ERR_B]
    pos = start
    while pos < stop:
        ln = lineno + 1
        i = _skip_space(buf, pos, stop)
        if i < 0:
            st[_UNSUPPORTED] = ln
            return pos
        if i == stop and not final:
            break
        if i == stop or buf[i] == 10 or buf[i] == 35:  # a blank line or a comment line
            j = _line_end(buf, i, stop, True)
            if j < 0:
                st[_UNSUPPORTED] = ln
                return pos
            if j == stop and not final:
                break
            lineno = ln
            pos = j + 1
            continue
        # the label
        te, colons, colon, high = _token_end(buf, i, stop)
        if te == stop and not final:
            break
        if high:
            st[_UNSUPPORTED] = ln
            return pos
        kind, label, negative = _number(buf, i, te)
        if kind == _SLOW and not negative:
            st[_UNSUPPORTED] = ln
            return pos
        if kind != _FAST or label < 0 or label > opt[_MAX_GRADE]:
            st[_ERR_A] = ln
            return pos
        # the query id
        i = _skip_space(buf, te, stop)
        if i < 0:
            st[_UNSUPPORTED] = ln
            return pos
        if i == stop and not final:
            break
        has_qid = False
        te = i
        if i < stop and buf[i] != 10 and buf[i] != 35:
            te, colons, colon, high = _token_end(buf, i, stop)
            if te == stop and not final:
                break
            has_qid = (te - i >= 4 and buf[i] == 113 and buf[i + 1] == 105
                       and buf[i + 2] == 100 and buf[i + 3] == 58)
        if (has_qid and opt[_ALLOW] == 0) or (not has_qid and opt[_REQUIRE] != 0):
            st[_ERR_A] = ln
            return pos
        if file_qid < 0:
            file_qid = 1 if has_qid else 0
        if (file_qid == 1) != has_qid:
            st[_ERR_A] = ln
            return pos
        q = 0
        if has_qid:
            k = i + 4
            q_negative = False
            if k < te and (buf[k] == 43 or buf[k] == 45):
                q_negative = buf[k] == 45
                k += 1
            if k == te:
                st[_ERR_A] = ln
                return pos
            significant = 0
            magnitude = np.uint64(0)
            while k < te:
                if not 48 <= buf[k] <= 57:
                    st[_ERR_A] = ln
                    return pos
                if significant > 0 or buf[k] != 48:
                    significant += 1
                    if significant <= 19:
                        magnitude = magnitude * np.uint64(10) + np.uint64(buf[k] - 48)
                k += 1
            if significant > 19 or magnitude > np.uint64(2**63) or (
                    magnitude == np.uint64(2**63) and not q_negative):
                st[_ERR_A] = ln
                return pos
            if magnitude == np.uint64(2**63):
                q = np.int64(-9223372036854775807) - 1
            else:
                q = -np.int64(magnitude) if q_negative else np.int64(magnitude)
            i = te
        if fill and (rows >= y.shape[0] or rows >= qid.shape[0] or rows >= line.shape[0]
                     or rows + 1 >= indptr.shape[0]
                     or (dense and (rows + 1) * width > out.shape[0])
                     or (coff.shape[0] > 0 and (rows + 1 >= coff.shape[0]
                                                or rows >= chas.shape[0]))):
            st[_NEED_ROWS] = 1  # the arrays of the rows are full
            _save(st, lineno, rows, nnz, maxcol, file_qid, cbytes, crows, nslow, err_b)
            return pos
        # the features
        n_tokens = 0
        increasing = True
        previous = -1
        line_max = -1
        bad = False
        line_slow = nslow
        incomplete = False
        while True:
            i = _skip_space(buf, i, stop)
            if i < 0:
                st[_UNSUPPORTED] = ln
                return pos
            if i == stop:
                incomplete = not final
                break
            if buf[i] == 10 or buf[i] == 35:
                break
            # the common token, digits ':' digits '.' digits, read in one sweep
            colon = i
            index = 0
            while colon < stop:
                d = np.int64(buf[colon]) - 48
                if d < 0 or d > 9:
                    break
                index = index * 10 + d
                colon += 1
            te = -1
            kind = np.int64(_INVALID)  # not a literal: typed as _plain_number returns it
            value = 0.0
            if i < colon < stop and buf[colon] == 58 and colon - i <= 18:  # no int64 overflow
                kind, value, te = _plain_number(buf, colon + 1, stop)
                if te == stop:
                    if not final:
                        incomplete = True
                        break
                elif not (_is_space(buf[te]) or buf[te] == 35):
                    te = -1
            if te < 0:  # any other token
                kind = np.int64(_INVALID)
                te, colons, colon, high = _token_end(buf, i, stop)
                if te == stop and not final:
                    incomplete = True
                    break
                if high:
                    st[_UNSUPPORTED] = ln
                    return pos
                if colons != 1:
                    st[_ERR_A] = ln
                    return pos
                if bad or colon == i or colon == te - 1:
                    bad = True
                    i = te
                    continue
                index = 0
                for k in range(i, colon):
                    if not 48 <= buf[k] <= 57:
                        bad = True
                    index = min(index * 10 + (np.int64(buf[k]) - 48), 1 << 40)
            col = index - lowest
            if bad or index < lowest or col >= limit:
                bad = True
                i = te
                continue
            if kind != _FAST:
                kind, value, negative = _number(buf, colon + 1, te)
            if kind == _UNSURE:
                st[_UNSUPPORTED] = ln
                return pos
            if kind == _INVALID or kind == _INF:
                bad = True
                i = te
                continue
            if n_tokens == scratch.shape[0]:
                st[_NEED_SCRATCH] = 2 * scratch.shape[0]
                _save(st, lineno, rows, nnz, maxcol, file_qid, cbytes, crows, nslow, err_b)
                return pos
            scratch[n_tokens] = col
            if fill:
                if dense:
                    if col >= width:  # beyond the width the one-pass read guessed
                        st[_WIDER] = ln
                        _save(st, lineno, rows, nnz, maxcol, file_qid, cbytes, crows, nslow,
                              err_b)
                        return pos
                    target = rows * width + col
                else:
                    target = nnz + n_tokens
                    if target >= out.shape[0] or target >= indices.shape[0]:
                        st[_NEED_NNZ] = 1
                        _save(st, lineno, rows, nnz, maxcol, file_qid, cbytes, crows, nslow,
                              err_b)
                        return pos
                    indices[target] = col
                if kind == _FAST:
                    out[target] = value + 0.0 if dense else value  # -0.0 as + 0.0 (toarray)
                else:
                    if line_slow == slow.shape[0]:
                        if nslow == 0:
                            st[_NEED_SLOW] = 2 * slow.shape[0]
                        _save(st, lineno, rows, nnz, maxcol, file_qid, cbytes, crows, nslow,
                              err_b)
                        return pos
                    slow[line_slow, 0] = target
                    slow[line_slow, 1] = colon + 1
                    slow[line_slow, 2] = te
                    line_slow += 1
            increasing = increasing and col > previous
            previous = col
            if col > line_max:
                line_max = col
            n_tokens += 1
            i = te
        if incomplete:
            break
        # the comment, without the whitespace around it
        cs = i
        ce = i
        has_comment = i < stop and buf[i] == 35
        if has_comment:
            j = _line_end(buf, i, stop, False)
            if j < 0:
                st[_UNSUPPORTED] = ln
                return pos
            if j == stop and not final:
                break
            cs = i + 1
            ce = j
            while cs < ce and _is_space(buf[cs]):
                cs += 1
            while ce > cs and _is_space(buf[ce - 1]):
                ce -= 1
            i = j
        if fill and has_comment:
            if coff.shape[0] == 0:  # the first comment: the arrays of the comments are made
                st[_NEED_COMMENTS] = 1
                _save(st, lineno, rows, nnz, maxcol, file_qid, cbytes, crows, nslow, err_b)
                return pos
            if cbytes + ce - cs > cbuf.shape[0]:
                st[_NEED_CBYTES] = cbytes + ce - cs
                _save(st, lineno, rows, nnz, maxcol, file_qid, cbytes, crows, nslow, err_b)
                return pos
        if not bad and not increasing:
            seen = np.sort(scratch[:n_tokens])
            for k in range(1, n_tokens):
                if seen[k] == seen[k - 1]:
                    bad = True
        if bad and err_b == 0:
            err_b = ln
        # the line is read: commit it
        if fill:
            y[rows] = label
            qid[rows] = q
            line[rows] = ln
            indptr[rows + 1] = nnz + n_tokens
            if coff.shape[0] > 0:
                if has_comment:
                    cbuf[cbytes:cbytes + ce - cs] = buf[cs:ce]
                    chas[rows] = 1
                coff[rows + 1] = cbytes + ce - cs
        if has_comment:
            cbytes += ce - cs
            crows += 1
        lineno = ln
        rows += 1
        nnz += n_tokens
        nslow = line_slow
        if line_max > maxcol:
            maxcol = line_max
        pos = i + 1
    _save(st, lineno, rows, nnz, maxcol, file_qid, cbytes, crows, nslow, err_b)
    return min(pos, stop)


#: The kernel's argument types, by the dtype of the values it writes (every array
#: C-contiguous): the ahead-of-time module exports one function per dtype.
_SIGNATURE = ("i8(u1[::1], i8, i8, b1, i8[::1], i8[::1], f8[::1], i8[::1], i8[::1], {}[::1], "
              "i8[::1], i4[::1], u1[::1], i8[::1], u1[::1], i8[:, ::1], i8[::1])")
_KERNEL_NAMES = {np.dtype(np.float64): "scan_f8", np.dtype(np.float32): "scan_f4"}

#: The kernel's helpers, inlined into it by numba.
_HELPERS = ("_is_space", "_number", "_plain_number", "_skip_space", "_token_end", "_line_end",
            "_save")


def _compile_helpers() -> None:
    """Make the kernel's helpers numba functions, inlined into it (numba imported here; once
    per process)."""
    from numba import njit
    from numba.core.registry import CPUDispatcher

    module = globals()
    for name in _HELPERS:
        if not isinstance(module[name], CPUDispatcher):
            module[name] = njit(cache=True, nogil=True, inline="always")(module[name])


def _warm(kernels: dict[str, Callable[..., int]]) -> None:
    """Run both passes on a tiny file, into float64 and into float32 (pass 1 always writes
    float64)."""
    text = b"1 qid:1 1:0.5 2:1.25e-400 # c\n"
    for dtype in (np.float64, np.float32):
        _scan_bytes(text, dtype)


#: The kernel file (:class:`~cvxrank.compiled.kernels.KernelFile`): the ahead-of-time module
#: (one function per dtype of the values) or numba's dispatchers of :func:`_scan`.
KERNELS = KernelFile(__file__, {name: (_scan, _SIGNATURE.format(name[-2:]))
                                for name in _KERNEL_NAMES.values()}, _warm,
                     prepare=_compile_helpers)


def _kernel(dtype: np.dtype) -> Callable[..., int]:
    """The compiled :func:`_scan` writing values of ``dtype`` (:data:`KERNELS`)."""
    return KERNELS.dispatchers()[_KERNEL_NAMES[np.dtype(dtype)]]


def compile_kernels() -> None:
    """Compile (or load from numba's on-disk cache) the reader kernel for every argument
    type it is called with (pass 1; pass 2 into float64 and into float32).

    An install step can call it once so that the first large file read by a process only
    loads the kernel; each process still pays for importing numba (0.2-0.5 s) unless the
    ahead-of-time module is built (``KERNELS.build_ahead()``).
    """
    KERNELS.warm_up()


@dataclass
class ScanResult:
    """What :func:`read_blocks_compiled` found.

    Attributes
    ----------
    status : str
        ``"ok"``; ``"error"`` (the file is malformed: the careful reader, given the lines up
        to :attr:`error_line`, raises the same error as on the whole file); ``"unsupported"``
        (something this reader does not decide, such as non-ASCII text before a ``#``, a lone
        carriage return, a label that is not a short decimal: read the file another way);
        ``"empty"`` (no data line).
    error_line : int
        The line to read up to when :attr:`status` is ``"error"``.
    y, qid, line, indptr, indices, data, X, comments, n_lines, width, dense
        The parsed file when :attr:`status` is ``"ok"``: ``X`` dense (then ``indptr``,
        ``indices``, ``data`` are None) or the CSR arrays (then ``X`` is None);
        ``comments`` is None or ``(bytes, offsets, present)``.
    """

    status: str
    error_line: int = 0
    y: np.ndarray | None = None
    qid: np.ndarray | None = None
    line: np.ndarray | None = None
    X: np.ndarray | None = None
    indptr: np.ndarray | None = None
    indices: np.ndarray | None = None
    data: np.ndarray | None = None
    comments: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    n_lines: int = 0
    width: int = 0
    dense: bool = False


def read_blocks_compiled(
    path: str,
    compressed: bool,
    *,
    zero_based: bool,
    n_features: int | None,
    require_qid: bool,
    allow_qid: bool,
    dense: bool | None,
    dtype: type,
    max_features: int,
    max_grade: float,
    dense_threshold: float,
    check_dense: Callable[[int, int], None],
) -> ScanResult:
    """Parse an SVMlight file with the compiled kernel (the module docstring says how).

    Parameters
    ----------
    path : str
        The file.
    compressed : bool
        Whether it is gzip (decompressed in blocks, once per pass; always read in two
        passes).
    zero_based, n_features, require_qid, allow_qid, dense
        As :func:`cvxrank.data.svmlight.read_svmlight`.
    dtype : type
        ``np.float64`` or ``np.float32``: the dtype of the feature values.
    max_features, max_grade, dense_threshold : int, float, float
        The reader's limits and density rule.
    check_dense : callable
        Called with ``(n, width)`` before a forced dense matrix is allocated (it raises when
        the matrix cannot fit).

    Returns
    -------
    ScanResult
    """
    opener = (lambda: gzip.open(path, "rb")) if compressed else (lambda: open(path, "rb"))
    opt = np.zeros(_OPTIONS_SIZE, dtype=np.int64)
    opt[_LOWEST] = 0 if zero_based else 1
    opt[_LIMIT] = max_features if n_features is None else n_features
    opt[_REQUIRE] = require_qid
    opt[_ALLOW] = allow_qid
    opt[_MAX_GRADE] = int(max_grade)
    limits = {"n_features": n_features, "dense": dense, "dtype": dtype,
              "dense_threshold": dense_threshold, "check_dense": check_dense}
    st = _new_state()
    # pass 1 over the first FIRST_BYTES of a plain file (all of a gzip file): what they hold
    # is what pass 1 over the whole file finds there
    read, whole = _run(opener, st, opt, _no_arrays(), first_block_only=not compressed,
                       block=min(FIRST_BYTES, BLOCK_BYTES))
    if not (whole or st[_ERR_A] or st[_UNSUPPORTED]):
        result = _read_one_pass(opener, os.path.getsize(path), st, read, opt.copy(), **limits)
        if result is not None:
            return result
        st = _new_state()  # the guess failed: pass 1 over the whole file
        _run(opener, st, opt, _no_arrays())
    return _read_two_passes(opener, st, opt, **limits)


def _failure(st: np.ndarray) -> ScanResult | None:
    """The result of a file whose pass found an error or a line it does not read (the first
    in the file), else None."""
    if st[_ERR_A] or st[_UNSUPPORTED]:
        if st[_UNSUPPORTED] and not st[_ERR_A]:
            return ScanResult("unsupported", st[_UNSUPPORTED])
        return ScanResult("error", int(st[_ERR_A]))
    if st[_ERR_B]:
        return ScanResult("error", int(st[_ERR_B]))
    return None


def _result(st: np.ndarray, arrays: list[np.ndarray], X: np.ndarray | None, width: int,
            n_comments: int) -> ScanResult:
    """The result of a complete pass that filled ``arrays`` (each of its final size) and,
    for a dense file, the matrix ``X`` (None for CSR)."""
    y, qid, line, out, indptr, indices, cbuf, coff, chas = arrays
    n = int(st[_ROWS])
    dense = X is not None
    return ScanResult(
        "ok",
        y=y,
        qid=qid if st[_HASQID] == 1 else np.zeros(n, dtype=np.int64),
        line=line,
        X=X,
        indptr=None if dense else indptr,
        indices=None if dense else indices,
        data=None if dense else out,
        comments=(cbuf, coff, chas.view(bool)) if n_comments else None,
        n_lines=int(st[_LINENO]),
        width=width,
        dense=dense,
    )


def _read_two_passes(opener: Callable[[], BinaryIO], st: np.ndarray, opt: np.ndarray, *,
                     n_features: int | None, dense: bool | None, dtype: type,
                     dense_threshold: float, check_dense: Callable[[int, int], None]
                     ) -> ScanResult:
    """Pass 2 into arrays of the exact sizes that pass 1 (its state ``st``) counted."""
    failure = _failure(st)
    if failure is not None:
        return failure
    n, nnz = int(st[_ROWS]), int(st[_NNZ])
    if n == 0:
        return ScanResult("empty")
    width = n_features if n_features is not None else int(st[_MAXCOL]) + 1
    if dense is None:
        dense = nnz >= dense_threshold * max(1, n * width)
    elif dense:
        check_dense(n, width)
    y = np.empty(n)
    qid = np.empty(n, dtype=np.int64)
    line = np.empty(n, dtype=np.int64)
    indptr = np.zeros(n + 1, dtype=np.int64)
    if dense:
        X = np.zeros((n, width), dtype=dtype)
        out = X.reshape(-1)
        indices = np.zeros(0, dtype=np.int32)
    else:
        X = None
        out = np.empty(nnz, dtype=dtype)
        indices = np.empty(nnz, dtype=np.int32)
    n_comments = int(st[_CROWS])
    cbuf = np.empty(int(st[_CBYTES]), dtype=np.uint8)
    coff = np.zeros(n + 1 if n_comments else 0, dtype=np.int64)
    chas = np.zeros(n if n_comments else 0, dtype=np.uint8)
    opt[_FILL] = 1
    opt[_DENSE] = dense
    opt[_WIDTH] = width
    st = _new_state()
    arrays = [y, qid, line, out, indptr, indices, cbuf, coff, chas]
    _, whole = _run(opener, st, opt, arrays)
    if not whole or [int(st[k]) for k in (_ROWS, _NNZ, _CROWS, _CBYTES, _ERR_B)] != [
            n, nnz, n_comments, cbuf.shape[0], 0]:
        return ScanResult("unsupported")  # the file changed between the passes: read it again
    return _result(st, arrays, X, width, n_comments)


def _read_one_pass(opener: Callable[[], BinaryIO], size: int, first: np.ndarray, read: int,
                   opt: np.ndarray, *, n_features: int | None, dense: bool | None,
                   dtype: type, dense_threshold: float,
                   check_dense: Callable[[int, int], None]) -> ScanResult | None:
    """Parse and fill in one pass, into arrays sized from the first block; None when the
    guess fails (the file is then read in two passes, as if this had not run).

    ``first`` is pass 1's state after the first block (its complete lines: ``read`` bytes
    of the file's ``size``, no error of a line). The arrays hold
    :data:`ONE_PASS_MARGIN` times the first block's rows, entries and comment bytes scaled
    to the file's size (their pages are only touched as they are filled; the unused ends
    are given back); the layout is the one the first block asks for (dense when
    ``dense_threshold`` of its entries are stored, ``width`` its largest index). The guess
    fails, and the pass stops, when the rows or the entries outgrow the arrays, a dense row
    has a feature beyond the width, or the whole file asks for the other layout; comments
    get their arrays (and more room) as they come. A file with an error gives the result of
    pass 1 over it: the kernel checks every line alike in both passes.
    """
    rows, nnz = int(first[_ROWS]), int(first[_NNZ])
    if rows == 0 or read <= 0:
        return None
    scale = ONE_PASS_MARGIN * size / read

    def room(count: int) -> int:
        return int(count * scale) + 1024

    width = n_features if n_features is not None else int(first[_MAXCOL]) + 1
    layout = dense if dense is not None else nnz >= dense_threshold * max(1, rows * width)
    cap = room(rows)
    try:
        if dense:
            check_dense(cap, width)
        commented = first[_CROWS] > 0
        arrays = [
            np.empty(cap),
            np.empty(cap, dtype=np.int64),
            np.empty(cap, dtype=np.int64),
            np.zeros(cap * width if layout else room(nnz), dtype=dtype),
            np.zeros(cap + 1, dtype=np.int64),
            np.zeros(0 if layout else room(nnz), dtype=np.int32),
            np.empty(room(int(first[_CBYTES])) if commented else 0, dtype=np.uint8),
            np.zeros(cap + 1 if commented else 0, dtype=np.int64),
            np.zeros(cap if commented else 0, dtype=np.uint8),
        ]
    except (MemoryError, ValueError):  # too large here (DataFormatError is a ValueError):
        # the two passes allocate exactly, or refuse as before
        return None
    opt[_FILL] = 1
    opt[_DENSE] = layout
    opt[_WIDTH] = width
    st = _new_state()
    _run(opener, st, opt, arrays, room=_comment_room)
    if st[_NEED_ROWS] or st[_NEED_NNZ] or st[_WIDER]:
        return None
    failure = _failure(st)
    if failure is not None:
        return failure
    n, nnz = int(st[_ROWS]), int(st[_NNZ])
    if n_features is None and int(st[_MAXCOL]) + 1 != width:
        if layout:
            return None  # not reached: a wider row stops the pass
        width = int(st[_MAXCOL]) + 1
    if dense is None and layout != (nnz >= dense_threshold * max(1, n * width)):
        return None
    if dense:
        check_dense(n, width)
    n_comments = int(st[_CROWS])
    # the final sizes, the arrays shrunk in place (their ends were never touched; no view of
    # them exists); the dense matrix takes its shape
    sizes = [n, n, n, n * width if layout else nnz, n + 1, 0 if layout else nnz,
             int(st[_CBYTES]) if n_comments else 0, n + 1 if n_comments else 0,
             n if n_comments else 0]
    for array, length in zip(arrays, sizes, strict=True):
        if array.shape[0] != length:
            array.resize(length, refcheck=False)
    X = None
    if layout:
        X = arrays[3]
        X.resize((n, width), refcheck=False)
    return _result(st, arrays, X, width, n_comments)


#: How much larger than the first block's counts scaled to the file's size the one-pass
#: read makes its arrays (:func:`_read_one_pass`): a file whose later lines are shorter on
#: average than 1 / ONE_PASS_MARGIN of the first block's is read in two passes. The margin
#: costs address space, not memory: the pages beyond the rows read are never touched.
ONE_PASS_MARGIN = 1.5


def _comment_room(st: np.ndarray, arrays: list[np.ndarray]) -> None:
    """Make the comments' arrays (at the first comment of a one-pass read) or give more room
    to their bytes (the committed bytes copied)."""
    if st[_NEED_COMMENTS]:
        cap = arrays[0].shape[0]
        arrays[7] = np.zeros(cap + 1, dtype=np.int64)
        arrays[8] = np.zeros(cap, dtype=np.uint8)
    if st[_NEED_CBYTES]:
        old = arrays[6]
        new = np.empty(max(int(st[_NEED_CBYTES]), old.shape[0] * 3 // 2 + 4096),
                       dtype=np.uint8)
        used = int(st[_CBYTES])
        new[:used] = old[:used]
        arrays[6] = new
    st[_NEED_COMMENTS] = 0
    st[_NEED_CBYTES] = 0


def _no_arrays() -> list[np.ndarray]:
    """The arrays of pass 1 (none filled)."""
    empty_f = np.zeros(0)
    empty_i = np.zeros(0, dtype=np.int64)
    return [empty_f, empty_i, empty_i, empty_f, empty_i, np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.uint8), empty_i, np.zeros(0, dtype=np.uint8)]


def _new_state() -> np.ndarray:
    st = np.zeros(_STATE_SIZE, dtype=np.int64)
    st[_MAXCOL] = -1
    st[_HASQID] = -1
    return st


def _read_full(fh: BinaryIO, view: memoryview) -> int:
    """Read into ``view`` until it is full or the file ends; the number of bytes read."""
    got = 0
    while got < len(view):
        n = fh.readinto(view[got:])
        if not n:
            break
        got += n
    return got


def _run(opener: Callable[[], BinaryIO], st: np.ndarray, opt: np.ndarray,
         arrays: list[np.ndarray], *,
         room: Callable[[np.ndarray, list[np.ndarray]], None] | None = None,
         first_block_only: bool = False, block: int | None = None) -> tuple[int, bool]:
    """One pass of the kernel over the file's blocks (of ``block`` bytes, by default
    :data:`BLOCK_BYTES`), stopping at an error, at arrays outgrown (``room`` makes room for
    comments in a one-pass read), or (with ``first_block_only``) after the first block.

    Returns
    -------
    (int, bool)
        The bytes of the file before the line where it stopped, and whether it read the
        file to its end.
    """
    out = arrays[3]
    scan = _kernel(out.dtype)
    fill = bool(opt[_FILL])
    dense = bool(opt[_DENSE])
    buf = np.empty(block or BLOCK_BYTES, dtype=np.uint8)
    slow = np.zeros((SLOW_BATCH if fill else 0, 3), dtype=np.int64)
    scratch = np.zeros(1024, dtype=np.int64)
    carry = 0
    base = 0  # where buf[0] is in the file
    with opener() as fh:
        while True:
            got = _read_full(fh, memoryview(buf)[carry:])
            stop = carry + got
            final = carry + got < buf.size
            pos = 0
            while True:
                pos = scan(buf, pos, stop, final, st, opt, *arrays, slow, scratch)
                if st[_ERR_A] or st[_UNSUPPORTED]:
                    return base + pos, False
                if st[_NSLOW]:  # before the block moves: the places are in it
                    _convert_slow(buf, slow[: st[_NSLOW]], out, dense)
                    st[_NSLOW] = 0
                if st[_NEED_SLOW]:
                    slow = np.zeros((int(st[_NEED_SLOW]), 3), dtype=np.int64)
                    st[_NEED_SLOW] = 0
                if st[_NEED_SCRATCH]:
                    scratch = np.zeros(int(st[_NEED_SCRATCH]), dtype=np.int64)
                    st[_NEED_SCRATCH] = 0
                if st[_NEED_ROWS] or st[_NEED_NNZ] or st[_WIDER]:
                    return base + pos, False
                if st[_NEED_COMMENTS] or st[_NEED_CBYTES]:
                    if room is None:  # an exact pass 2 outgrown: the file changed
                        return base + pos, False
                    room(st, arrays)
                if pos >= stop or (not final and _no_line_break(buf, pos, stop)):
                    break
            if final or first_block_only:
                return base + pos, final
            carry = stop - pos
            buf[:carry] = buf[pos:stop]
            base += pos
            if carry == buf.size:  # one line longer than the buffer
                buf = np.concatenate([buf, np.empty(buf.size, dtype=np.uint8)])


def _no_line_break(buf: np.ndarray, pos: int, stop: int) -> bool:
    return buf[pos:stop].tobytes().find(b"\n") < 0


def _convert_slow(buf: np.ndarray, slow: np.ndarray, out: np.ndarray, dense: bool) -> None:
    """Convert the values whose places the kernel recorded (target, start, end) into
    ``out``, as ``float`` would read them (a dense matrix has no -0.0: it is built, as
    scipy's ``toarray`` builds it, by adding each value to +0.0)."""
    if not slow.size:
        return
    starts, ends = slow[:, 1], slow[:, 2]
    lengths = ends - starts
    short = lengths <= _SLOW_WIDTH
    if short.any():
        s, ln = starts[short], lengths[short]
        width = int(ln.max())
        cols = np.arange(width)
        text = buf[np.minimum(s[:, None] + cols, buf.size - 1)]
        text[cols >= ln[:, None]] = 0
        values = text.view(f"S{width}").ravel().astype(np.float64)
        out[slow[short, 0]] = values + 0.0 if dense else values
    for target, start, end in slow[~short].tolist():
        value = float(buf[start:end].tobytes())
        out[target] = value + 0.0 if dense else value


def _scan_bytes(text: bytes, dtype: type) -> None:
    """Run both passes of the kernel on ``text`` (a well-formed file) into ``dtype``."""
    buf = np.frombuffer(text, dtype=np.uint8).copy()
    opt = np.zeros(_OPTIONS_SIZE, dtype=np.int64)
    opt[_LOWEST], opt[_LIMIT], opt[_REQUIRE], opt[_ALLOW], opt[_MAX_GRADE] = 1, 8, 1, 1, 30
    scratch = np.zeros(1024, dtype=np.int64)
    st = _new_state()
    e_f, e_i = np.zeros(0), np.zeros(0, dtype=np.int64)
    _kernel(e_f.dtype)(buf, 0, buf.size, True, st, opt, e_f, e_i, e_i, e_f, e_i,
                       np.zeros(0, np.int32), np.zeros(0, np.uint8), e_i, np.zeros(0, np.uint8),
                       np.zeros((0, 3), np.int64), scratch)
    n, nnz = int(st[_ROWS]), int(st[_NNZ])
    opt[_FILL], opt[_WIDTH] = 1, 8
    st = _new_state()
    _kernel(dtype)(buf, 0, buf.size, True, st, opt, np.zeros(n), np.zeros(n, np.int64),
                   np.zeros(n, np.int64), np.zeros(nnz, dtype), np.zeros(n + 1, np.int64),
                   np.zeros(nnz, np.int32), np.zeros(64, np.uint8), np.zeros(n + 1, np.int64),
                   np.zeros(n, np.uint8), np.zeros((SLOW_BATCH, 3), np.int64), scratch)
