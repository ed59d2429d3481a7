"""The compiled block reader and the parsed-file cache of read_svmlight.

read_svmlight reads a file of compiled_min_bytes() or more with the numba kernel of
cvxrank.data.svmlight_compiled (every file when it is compiled ahead of time; here forced on
small files by setting the thresholds to 0) and
keeps large files' arrays in the cache of cvxrank.data.parsed_cache. Both must give what the
text path and scikit-learn give, and the same errors.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_svmlight_file
from test_data_io import BAD_INPUTS, EXOTIC_VALUES, LIGHTGBM, MQ2008, OHSUMED

from cvxrank.data import parsed_cache, svmlight, svmlight_compiled
from cvxrank.data.normalize import query_minmax
from cvxrank.data.svmlight import read_svmlight
from cvxrank.errors import CacheWarning, DataFormatError
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.ranksvm import RankSVM


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test here writes to the user's cache unless it sets its own directory."""
    monkeypatch.setenv("CVXRANK_READ_CACHE", "0")


@pytest.fixture()
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file read by the compiled parser; the scan of each must succeed on its own."""
    monkeypatch.setattr(svmlight, "COMPILED_MIN_BYTES", 0)


def _read(path: Path, how: str, monkeypatch: pytest.MonkeyPatch, **kwargs):
    limit = 0 if how == "compiled" else 2**62
    monkeypatch.setattr(svmlight, "COMPILED_MIN_BYTES", limit)
    monkeypatch.setattr(svmlight, "AHEAD_OF_TIME_MIN_BYTES", limit)
    return read_svmlight(path, **kwargs)


def _scan(path: Path, **kwargs) -> svmlight_compiled.ScanResult:
    """The compiled reader's own result (not the text path's after a fallback)."""
    options = {"zero_based": False, "n_features": None, "require_qid": True,
               "allow_qid": True, "dense": None, "dtype": np.float64} | kwargs
    with open(path, "rb") as fh:
        compressed = fh.read(2) == svmlight.GZIP_MAGIC
    return svmlight_compiled.read_blocks_compiled(
        str(path), compressed, **options, max_features=svmlight.MAX_FEATURES,
        max_grade=svmlight.MAX_GRADE, dense_threshold=svmlight.DENSE_THRESHOLD,
        check_dense=lambda n, width: None)


def _dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def _same(a, b) -> None:
    """Two RankingData are the same, bit for bit (signs of zeros included)."""
    assert sp.issparse(a.X) == sp.issparse(b.X)
    assert a.X.dtype == b.X.dtype and a.X.shape == b.X.shape
    A, B = _dense(a.X), _dense(b.X)
    np.testing.assert_array_equal(A, B)
    np.testing.assert_array_equal(np.signbit(A), np.signbit(B))
    if sp.issparse(a.X):
        np.testing.assert_array_equal(a.X.indptr, b.X.indptr)
        np.testing.assert_array_equal(a.X.indices, b.X.indices)
    for name in ("y", "qid", "line", "query_ptr"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.n_lines == b.n_lines
    for name in ("comment", "docid"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None)
        if x is not None:
            assert x.dtype == object and list(x) == list(y)


def _all_agree(path: Path, monkeypatch: pytest.MonkeyPatch, sklearn: bool = True, **kwargs):
    """The compiled and text paths give the same data, which scikit-learn's reader gives."""
    scan_options = {k: v for k, v in kwargs.items() if k != "dtype"}
    assert _scan(path, **scan_options).status == "ok"
    fast = _read(path, "compiled", monkeypatch, **kwargs)
    text = _read(path, "text", monkeypatch, **kwargs)
    _same(fast, text)
    if sklearn:
        X, y, qid = load_svmlight_file(str(path), query_id=True,
                                       zero_based=kwargs.get("zero_based", False),
                                       n_features=kwargs.get("n_features"))
        np.testing.assert_array_equal(_dense(fast.X), X.toarray())
        np.testing.assert_array_equal(fast.y, y)
        if kwargs.get("require_qid", True):
            np.testing.assert_array_equal(fast.qid, qid)
    return fast


# --------------------------------------------------------------------------- real files


@pytest.mark.parametrize("rel, qid", [(f"{OHSUMED}/Fold1/train.txt", True),
                                      (f"{MQ2008}/Fold1/train.txt", True),
                                      (f"{LIGHTGBM}/rank.train", False)])
def test_real_files(shared_data: Path, monkeypatch, rel: str, qid: bool):
    kwargs = {} if qid else {"require_qid": False, "allow_qid": False}
    data = _all_agree(shared_data / rel, monkeypatch, **kwargs)
    if qid:
        assert data.docid is not None


# --------------------------------------------------------------------------- generated files


def _random_file(path: Path, rng: np.random.Generator, n: int, d: int, density: float,
                 comments: bool = True, newline: str = "\n") -> None:
    lines = ["# a header", ""]
    qid = 7
    for i in range(n):
        if rng.random() < 0.2:
            qid += int(rng.integers(1, 5))
        cols = np.flatnonzero(rng.random(d) < density) + 1
        values = rng.standard_normal(cols.size) * 10.0 ** rng.integers(-8, 8, cols.size)
        feats = " ".join(f"{c}:{v!r}" if rng.random() < 0.5 else f"{c}:{v:.6g}"
                         for c, v in zip(cols.tolist(), values.tolist(), strict=True))
        line = f"{rng.integers(0, 5)} qid:{qid} {feats}"
        if comments and rng.random() < 0.7:
            line += f" #docid = D{i} extra  "
        lines.append(line)
        if rng.random() < 0.05:
            lines.append("  # between lines")
    path.write_bytes(newline.join(lines).encode())  # no line break at the end


@pytest.mark.parametrize("density", [0.9, 0.1])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_generated_files(tmp_path: Path, monkeypatch, density: float, newline: str):
    path = tmp_path / "gen.txt"
    _random_file(path, np.random.default_rng(int(density * 10)), 300, 30, density,
                 newline=newline)
    data = _all_agree(path, monkeypatch)
    assert sp.issparse(data.X) == (density < 0.5)
    assert data.comment is not None and data.docid is not None


def test_small_blocks_and_batches(tmp_path: Path, monkeypatch):
    """Blocks of 64 bytes (most lines cut, some longer than a block), 3 slow values per
    batch, a line of 3000 features in decreasing order (scratch growth)."""
    path = tmp_path / "gen.txt"
    _random_file(path, np.random.default_rng(5), 200, 12, 0.8)
    long_line = "1 qid:99999 " + " ".join(f"{j}:{j}.5e-3" for j in range(3000, 0, -1))
    with open(path, "a", encoding="ascii") as fh:
        fh.write(f"\n{long_line} # the last line\n")
    expected = _read(path, "text", monkeypatch)
    monkeypatch.setattr(svmlight_compiled, "BLOCK_BYTES", 64)
    monkeypatch.setattr(svmlight_compiled, "SLOW_BATCH", 3)
    assert _scan(path).status == "ok"
    _same(_read(path, "compiled", monkeypatch), expected)


def test_gzip_comments_and_options(tmp_path: Path, monkeypatch):
    plain = tmp_path / "plain.txt"
    _random_file(plain, np.random.default_rng(3), 150, 20, 0.6)
    packed = tmp_path / "packed.bin"  # gzip recognized by its magic bytes, not its name
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for kwargs in ({}, {"dense": True}, {"dense": False}, {"n_features": 25},
                   {"zero_based": True}, {"dtype": np.float32}):
        _same(_read(packed, "compiled", monkeypatch, **kwargs),
              _read(plain, "text", monkeypatch, **kwargs))


@pytest.mark.parametrize("text, qid", [
    (f"1 qid:{-(2**63)} 1:1\n0 qid:-9223372036854775808 2:1\n", [-(2**63)] * 2),
    (f"1 qid:{2**63 - 1} 1:1\n0 qid:+0009223372036854775807 2:1\n", [2**63 - 1] * 2),
    ("1 qid:-0 1:1\n0 qid:0000000000000000000000000003 2:1\n", [0, 3]),
    ("1 qid:5\n0 qid:5 # no features\n\n1 qid:6\t1:1\x0b2:2\x1c3:3", [5, 5, 6]),
])
def test_qid_edge_cases(tmp_path: Path, monkeypatch, text: str, qid: list[int]):
    path = tmp_path / "q.txt"
    path.write_text(text)
    data = _all_agree(path, monkeypatch, sklearn=False)
    assert data.qid.tolist() == qid


def test_no_qid_file(tmp_path: Path, monkeypatch):
    path = tmp_path / "noq.txt"
    path.write_text("1 1:0.5 3:2\n0 2:1\n")
    data = _all_agree(path, monkeypatch, require_qid=False)
    assert data.qid.tolist() == [0, 0]


@pytest.mark.parametrize("value", EXOTIC_VALUES)
def test_exotic_values(tmp_path: Path, monkeypatch, value: str):
    path = tmp_path / "v.txt"
    path.write_text(f"1 qid:1 1:0.5 0003:{value} 2:-7\n0 qid:1 2:{value}\n")
    data = _all_agree(path, monkeypatch, sklearn=False)
    assert _dense(data.X)[0, 2] == float(value)


NUMBER = st.builds(
    lambda sign, whole, point, frac, exp: sign + whole + point + frac + exp,
    st.sampled_from(["", "+", "-"]),
    st.text("0123456789", max_size=25),
    st.sampled_from(["", "."]),
    st.text("0123456789", max_size=25),
    st.one_of(st.just(""), st.builds(lambda e, s, d: e + s + str(d), st.sampled_from("eE"),
                                     st.sampled_from(["", "+", "-"]),
                                     st.integers(0, 400))),
).filter(lambda t: any(c.isdigit() for c in t.replace("E", "e").split("e")[0]))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(NUMBER, min_size=1, max_size=8))
def test_values_are_read_as_float_reads_them(tmp_path: Path, monkeypatch, values: list[str]):
    monkeypatch.setattr(svmlight, "COMPILED_MIN_BYTES", 0)
    path = tmp_path / "h.txt"
    path.write_text("".join(f"1 qid:1 {j + 1}:{v}\n" for j, v in enumerate(values)))
    expected = [float(v) for v in values]
    if not all(np.isfinite(expected)):
        with pytest.raises(DataFormatError, match="finite"):
            read_svmlight(path, dense=False)
        return
    got = read_svmlight(path, dense=False).X.data  # one value per row, in file order
    np.testing.assert_array_equal(got.view(np.int64), np.array(expected).view(np.int64))


# --------------------------------------------------------------------------- one pass
#
# A plain file longer than one block is read in one pass into arrays sized from its first
# block (svmlight_compiled._read_one_pass); when that guess fails it is read in two passes.
# Small blocks make the files here take that path.


@pytest.fixture()
def outcomes(monkeypatch: pytest.MonkeyPatch) -> list:
    """What each one-pass read returned: its status, or None when it left the file to the
    two passes."""
    seen: list = []
    original = svmlight_compiled._read_one_pass

    def spy(*args, **kwargs):
        result = original(*args, **kwargs)
        seen.append(None if result is None else result.status)
        return result

    monkeypatch.setattr(svmlight_compiled, "_read_one_pass", spy)
    return seen


def _two_passes(path: Path, monkeypatch: pytest.MonkeyPatch, **kwargs):
    """The compiled reader's two passes alone (the reader before the one-pass read)."""
    with monkeypatch.context() as m:
        m.setattr(svmlight_compiled, "_read_one_pass", lambda *args, **kw: None)
        return _read(path, "compiled", monkeypatch, **kwargs)


def _owns_exact_arrays(path: Path, **kwargs) -> None:
    """The arrays of the compiled reader own their memory (no view of a larger buffer), as
    the two passes' do."""
    result = _scan(path, **kwargs)
    assert result.status == "ok"
    arrays = [result.y, result.qid, result.line]
    arrays += [result.X] if result.dense else [result.data, result.indices, result.indptr]
    if result.comments is not None:
        arrays += result.comments[:2]
    for array in arrays:
        assert array.base is None and array.flags.c_contiguous


@pytest.mark.parametrize("density", [0.9, 0.1])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("kwargs", [{}, {"dense": True}, {"dense": False}, {"n_features": 40},
                                    {"zero_based": True}, {"dtype": np.float32}],
                         ids=["default", "dense", "csr", "n_features", "zero_based", "float32"])
def test_one_pass_reads_what_two_passes_read(tmp_path: Path, monkeypatch, outcomes,
                                             density: float, newline: str, kwargs: dict):
    path = tmp_path / "gen.txt"
    _random_file(path, np.random.default_rng(21), 400, 30, density, newline=newline)
    monkeypatch.setattr(svmlight_compiled, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(svmlight_compiled, "FIRST_BYTES", 2500)  # pass 1 reads less first
    monkeypatch.setattr(svmlight_compiled, "SLOW_BATCH", 7)
    fast = _read(path, "compiled", monkeypatch, **kwargs)
    assert outcomes and outcomes[-1] in ("ok", None)
    if kwargs in ({}, {"n_features": 40}, {"dtype": np.float32}, {"dense": False}):
        assert outcomes == ["ok"]  # these files take the one pass
    _same(fast, _read(path, "text", monkeypatch, **kwargs))
    _same(fast, _two_passes(path, monkeypatch, **kwargs))
    _owns_exact_arrays(path, **kwargs)


def _lines(*parts: tuple[int, str]) -> str:
    return "".join(text * count for count, text in parts)


DENSE_LINE = "1 qid:1 " + " ".join(f"{j}:0.{j}5" for j in range(1, 11)) + "\n"

# (name, text): files whose first block of 4096 bytes misleads the one-pass read
MISLEADING = [
    ("a wider row later", _lines((200, DENSE_LINE), (1, "0 qid:1 1:1 12:2\n"),
                                 (50, DENSE_LINE))),
    ("many more rows", _lines((100, DENSE_LINE), (6000, "0 qid:2 3:1\n"))),
    ("sparser later", _lines((100, DENSE_LINE),
                             (3000, "0 qid:2 10:1 # " + "x" * 50 + "\n"))),
    ("denser later", _lines((100, "0 qid:1 10:1 # " + "x" * 50 + "\n"), (3000, DENSE_LINE))),
    ("sparse, more entries later", _lines(
        (100, "0 qid:1 500:1 # " + "x" * 40 + "\n"),
        (500, "1 qid:2 " + " ".join(f"{j}:1" for j in range(1, 400, 2)) + "\n"))),
    ("a first line longer than the block", _lines(
        (1, "1 qid:1 " + " ".join(f"{j}:0.5" for j in range(1, 1200)) + "\n"),
        (300, DENSE_LINE))),
]


@pytest.mark.parametrize("text", [case[1] for case in MISLEADING],
                         ids=[case[0] for case in MISLEADING])
def test_one_pass_falls_back_to_two_passes(tmp_path: Path, monkeypatch, outcomes, text: str):
    path = tmp_path / "m.txt"
    path.write_text(text)
    monkeypatch.setattr(svmlight_compiled, "BLOCK_BYTES", 4096)
    fast = _read(path, "compiled", monkeypatch)
    assert outcomes == [None]
    _same(fast, _read(path, "text", monkeypatch))
    _owns_exact_arrays(path)


@pytest.mark.parametrize("first_comments", [False, True])
def test_one_pass_comments_get_room_as_they_come(tmp_path: Path, monkeypatch, outcomes,
                                                 first_comments: bool):
    """Comments that start after the first block (their arrays made then) or grow longer
    (more room for their bytes, several times)."""
    head = DENSE_LINE.replace("\n", " # docid = A1\n") if first_comments else DENSE_LINE
    rows = [head] * 100
    for i in range(400):
        rows.append(DENSE_LINE.replace("\n", f" #docid = D{i} " + "y" * (i * 7 % 900) + "\n")
                    if i % 3 else DENSE_LINE)
    path = tmp_path / "c.txt"
    path.write_text("".join(rows))
    monkeypatch.setattr(svmlight_compiled, "BLOCK_BYTES", 4096)
    fast = _read(path, "compiled", monkeypatch)
    assert outcomes == ["ok"]
    _same(fast, _read(path, "text", monkeypatch))
    assert fast.docid[101] == "D1" and fast.comment[100] is None


def test_one_pass_long_lines_and_slow_values(tmp_path: Path, monkeypatch, outcomes):
    """After the first block, lines longer than several blocks (the buffer grows) holding
    values that numpy's conversion reads, in batches of 3."""
    exotic = " ".join(f"{j}:{EXOTIC_VALUES[j % len(EXOTIC_VALUES)]}" for j in range(1, 700))
    rows = ([DENSE_LINE] * 200 + [f"2 qid:3 {exotic} # long\n"] * 3
            + [DENSE_LINE.replace("qid:1", "qid:4")] * 20)
    path = tmp_path / "l.txt"
    path.write_text("".join(rows))
    monkeypatch.setattr(svmlight_compiled, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(svmlight_compiled, "SLOW_BATCH", 3)
    fast = _read(path, "compiled", monkeypatch, dense=False)
    assert outcomes == ["ok"]
    _same(fast, _read(path, "text", monkeypatch, dense=False))
    X, y, _ = load_svmlight_file(str(path), query_id=True)
    np.testing.assert_array_equal(fast.X.toarray(), X.toarray())


@pytest.mark.parametrize("tail, fragment", [
    ("1 qid:5 1:0.5 2:1 1:0.7\n", "twice"),  # found by the one pass's duplicate check
    ("1 qid:5 1:1_0\n" + DENSE_LINE.replace("qid:1", "qid:6") * 50 + "x qid:7 1:1\n",
     "label 'x' is not a number"),  # a bad label after a bad value: the label's line
    ("1 qid:5 1:1e999\n", "finite"),
    ("1 qid:5 3:0.5 3:0.25\n", "twice"),
])
def test_one_pass_errors_beyond_the_first_block(tmp_path: Path, monkeypatch, outcomes,
                                                tail: str, fragment: str):
    path = tmp_path / "e.txt"
    path.write_text(DENSE_LINE * 200 + tail + DENSE_LINE.replace("qid:1", "qid:9") * 20)
    monkeypatch.setattr(svmlight_compiled, "BLOCK_BYTES", 4096)
    with pytest.raises(DataFormatError, match=fragment) as compiled_error:
        _read(path, "compiled", monkeypatch)
    assert outcomes == ["error"]
    with pytest.raises(DataFormatError) as text_error:
        _read(path, "text", monkeypatch)
    assert str(compiled_error.value) == str(text_error.value)


def test_one_pass_leaves_what_it_does_not_read_to_the_text_path(tmp_path: Path, monkeypatch,
                                                                outcomes):
    path = tmp_path / "u.txt"
    path.write_text(DENSE_LINE * 200 + "1 qid:1 1:0.5\u00a02:1\n", encoding="utf-8")
    monkeypatch.setattr(svmlight_compiled, "BLOCK_BYTES", 4096)
    assert _scan(path).status == "unsupported"
    assert outcomes == ["unsupported"]
    _same(_read(path, "compiled", monkeypatch), _read(path, "text", monkeypatch))


def test_one_pass_forced_dense_within_memory(tmp_path: Path, monkeypatch, outcomes):
    """A forced dense matrix whose one-pass arrays would not fit but whose exact one does is
    read in two passes; one that does not fit is refused as before."""
    path = tmp_path / "d.txt"
    path.write_text("1 qid:1 1:0.5 2:1 3:2\n" * 300)
    monkeypatch.setattr(svmlight_compiled, "BLOCK_BYTES", 1024)
    monkeypatch.setattr(svmlight, "physical_memory", lambda: 8 * 300 * 3)
    data = _read(path, "compiled", monkeypatch, dense=True)
    assert outcomes == [None] and data.X.shape == (300, 3)
    _same(data, _read(path, "text", monkeypatch, dense=True))
    monkeypatch.setattr(svmlight, "physical_memory", lambda: 8 * 300 * 3 - 1)
    for how in ("compiled", "text"):
        with pytest.raises(DataFormatError, match="a dense 300 x 3 matrix would take"):
            _read(path, how, monkeypatch, dense=True)


@pytest.mark.parametrize("change", ["more rows", "a comment", "fewer rows"])
def test_a_file_changed_between_the_two_passes_is_read_again(tmp_path: Path, monkeypatch,
                                                             change: str):
    """Pass 2 meets what pass 1 did not count: the text path reads the file as it is now."""
    path = tmp_path / "g.txt"
    path.write_text(DENSE_LINE * 50)
    edits = {"more rows": DENSE_LINE * 60, "fewer rows": DENSE_LINE * 40,
             "a comment": DENSE_LINE * 49 + DENSE_LINE.replace("\n", " # late\n")}
    original = svmlight_compiled._run

    def run(opener, st, opt, arrays, **kwargs):
        if opt[svmlight_compiled._FILL] and "room" not in kwargs:  # the exact pass 2
            path.write_text(edits[change])
        return original(opener, st, opt, arrays, **kwargs)

    monkeypatch.setattr(svmlight_compiled, "_run", run)
    data = _read(path, "compiled", monkeypatch)
    assert len(data.y) == {"more rows": 60, "fewer rows": 40, "a comment": 50}[change]
    _same(data, _read(path, "text", monkeypatch))


LINE = st.builds(
    lambda grade, qid, feats, comment: f"{grade} qid:{qid} {feats}{comment}",
    st.integers(0, 4),
    st.integers(0, 3),
    st.lists(st.tuples(st.integers(1, 12), st.sampled_from(["0.5", "-1.25", "3", "1e-3",
                                                             "0.1000000000000000055511151",
                                                             "-0", "7e+22"])),
             max_size=12, unique_by=lambda t: t[0]).map(
        lambda fs: " ".join(f"{i}:{v}" for i, v in fs)),
    st.sampled_from(["", " # c", " #docid = X1 rest", "  #  " + "z" * 40]),
)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.one_of(LINE, st.sampled_from(["", "# a comment line"])),
                      min_size=1, max_size=60),
       block=st.integers(16, 400), dense=st.sampled_from([None, True, False]))
def test_any_block_size_reads_the_same(tmp_path: Path, monkeypatch, lines: list[str],
                                       block: int, dense: bool | None):
    """Whatever the block size (one pass, two passes or a failed guess), the compiled reader
    gives what the text path gives, file after file (query ids sorted to keep queries
    contiguous)."""
    data_lines = sorted((ln for ln in lines if ln and not ln.startswith("#")),
                        key=lambda ln: ln.split()[1])
    others = iter(ln for ln in lines if not ln or ln.startswith("#"))
    text = "\n".join(data_lines + list(others)) + "\n"
    path = tmp_path / "h.txt"
    path.write_text(text)
    monkeypatch.setattr(svmlight_compiled, "BLOCK_BYTES", block)
    try:
        expected = _read(path, "text", monkeypatch, dense=dense)
    except DataFormatError as exc:
        with pytest.raises(DataFormatError) as info:
            _read(path, "compiled", monkeypatch, dense=dense)
        assert str(info.value) == str(exc)
        return
    _same(_read(path, "compiled", monkeypatch, dense=dense), expected)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("block", [None, 24], ids=["one block", "blocks of 24 bytes"])
@pytest.mark.parametrize("text, line, fragment, kwargs", [case[1:] for case in BAD_INPUTS],
                         ids=[case[0] for case in BAD_INPUTS])
def test_bad_input_gives_the_same_error(tmp_path: Path, monkeypatch, text, line, fragment,
                                        kwargs, block):
    """The compiled reader's error is the text parser's, in one block and in blocks of 24
    bytes (most of them found by the one pass)."""
    path = tmp_path / "bad.txt"
    path.write_text(text)
    if block is None:
        expected = "ok" if "first seen at line" in fragment else "error"
        assert _scan(path, **kwargs).status == expected
    else:
        monkeypatch.setattr(svmlight_compiled, "BLOCK_BYTES", block)
    with pytest.raises(DataFormatError) as compiled_error:
        _read(path, "compiled", monkeypatch, **kwargs)
    with pytest.raises(DataFormatError) as text_error:
        _read(path, "text", monkeypatch, **kwargs)
    assert str(compiled_error.value) == str(text_error.value)
    assert compiled_error.value.line == line


@pytest.mark.parametrize("text", [
    "1 qid:1 1:0.5\u00a02:1\n",  # a no-break space: a separator to str.split
    "1 qid:1 1:0.5\r2:1\n",  # a lone carriage return: a line break to Python
    "1 qid:1 1:1\n\u00e9 comment line\n",  # non-ASCII on a line the reader skips
    "1.00000000000000000001 qid:1 1:1\n",  # a label with more digits than the kernel reads
])
def test_what_the_kernel_leaves_to_the_text_path(tmp_path: Path, monkeypatch, text: str):
    path = tmp_path / "u.txt"
    path.write_text(text, encoding="utf-8")
    assert _scan(path).status == "unsupported"
    try:
        expected = _read(path, "text", monkeypatch)
    except DataFormatError as exc:
        with pytest.raises(DataFormatError, match=str(exc.args[0])[:20]):
            _read(path, "compiled", monkeypatch)
    else:
        _same(_read(path, "compiled", monkeypatch), expected)


def test_errors_far_from_the_start_are_found(tmp_path: Path, monkeypatch):
    """A bad feature value before a bad label: the label's line is reported (as by the
    text path, which checks labels on every line before any feature)."""
    good = "0 qid:1 1:0.5 2:0.25 # c\n" * 500
    path = tmp_path / "far.txt"
    path.write_text(good + "1 qid:1 1:1_0\n" + good + "x qid:1 1:1\n")
    monkeypatch.setattr(svmlight_compiled, "BLOCK_BYTES", 256)
    with pytest.raises(DataFormatError, match="label 'x' is not a number") as info:
        _read(path, "compiled", monkeypatch)
    assert info.value.line == 1002


def test_empty_file(tmp_path: Path, monkeypatch):
    path = tmp_path / "e.txt"
    path.write_text("# only a comment\n\n")
    assert _scan(path).status == "empty"
    with pytest.raises(DataFormatError, match="empty"):
        _read(path, "compiled", monkeypatch)


# --------------------------------------------------------------------------- float32


def test_float32_is_float64_rounded(tmp_path: Path, monkeypatch):
    path = tmp_path / "f.txt"
    _random_file(path, np.random.default_rng(9), 100, 10, 0.9)
    wide = _read(path, "compiled", monkeypatch)
    for how in ("compiled", "text"):
        narrow = _read(path, how, monkeypatch, dtype=np.float32)
        assert narrow.X.dtype == np.float32 and narrow.y.dtype == np.float64
        np.testing.assert_array_equal(narrow.X, wide.X.astype(np.float32))
    with pytest.raises(ValueError, match="float64 or float32"):
        read_svmlight(path, dtype=np.int64)


def test_fit_on_float32_data_is_the_fit_on_its_float64_values(tmp_path: Path, monkeypatch):
    path = tmp_path / "f.txt"
    _random_file(path, np.random.default_rng(4), 80, 6, 1.0, comments=False)
    narrow = _read(path, "compiled", monkeypatch, dtype=np.float32)
    wide = narrow.with_features(narrow.X.astype(np.float64))
    a = fit_formulation(RankSVM(narrow, C=0.3, loss="squared_hinge"))
    b = fit_formulation(RankSVM(wide, C=0.3, loss="squared_hinge"))
    np.testing.assert_array_equal(a.w, b.w)


# --------------------------------------------------------------------------- the cache


@pytest.fixture()
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CVXRANK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CVXRANK_READ_CACHE")
    return tmp_path / "cache" / "parsed"


@pytest.mark.parametrize("density", [0.9, 0.1])
def test_cache_hit_is_a_read_only_memory_map(tmp_path: Path, monkeypatch, cache_dir: Path,
                                             density: float):
    path = tmp_path / "c.txt"
    _random_file(path, np.random.default_rng(1), 200, 20, density)
    first = _read(path, "compiled", monkeypatch, cache=True)
    assert len(list(cache_dir.iterdir())) == 1
    second = _read(path, "compiled", monkeypatch, cache=True)
    _same(first, second)
    values = second.X.data if sp.issparse(second.X) else second.X
    base = values
    while base is not None and not isinstance(base, np.memmap):
        base = base.base
    assert not values.flags.writeable and base is not None
    # what a fit does with it: normalize, take queries, solve
    normalized = query_minmax(second.subset(range(second.n_queries // 2)))
    run = fit_formulation(RankSVM(normalized, C=0.3, loss="squared_hinge"))
    again = fit_formulation(RankSVM(query_minmax(first.subset(range(first.n_queries // 2))),
                                    C=0.3, loss="squared_hinge"))
    np.testing.assert_array_equal(run.w, again.w)


def test_cache_options_are_part_of_the_key(tmp_path: Path, monkeypatch, cache_dir: Path):
    path = tmp_path / "c.txt"
    _random_file(path, np.random.default_rng(2), 50, 8, 0.9)
    a = _read(path, "text", monkeypatch, cache=True)
    b = _read(path, "text", monkeypatch, cache=True, dtype=np.float32)
    assert a.X.dtype == np.float64 and b.X.dtype == np.float32
    assert sp.issparse(_read(path, "text", monkeypatch, cache=True, dense=False).X)


def test_changed_file_is_parsed_again(tmp_path: Path, monkeypatch, cache_dir: Path):
    """Same size, same modification time, one digit changed in the middle."""
    path = tmp_path / "c.txt"
    lines = [f"{i % 3} qid:{i // 10} 1:0.{i:06d} 2:1.5" for i in range(60_000)]
    path.write_text("\n".join(lines) + "\n")
    stat = path.stat()
    first = _read(path, "compiled", monkeypatch, cache=True)
    text = path.read_bytes()
    middle = text.index(b"1:0.030000")
    path.write_bytes(text[:middle] + b"1:0.930000" + text[middle + 10:])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    second = _read(path, "compiled", monkeypatch, cache=True)
    assert first.X[30_000, 0] == 0.03 and second.X[30_000, 0] == 0.93
    assert len(list(cache_dir.iterdir())) == 1  # the older entry is removed


@pytest.mark.parametrize("damage", ["truncate", "garbage", "meta", "missing"])
def test_damaged_entry_is_parsed_again(tmp_path: Path, monkeypatch, cache_dir: Path,
                                       damage: str):
    path = tmp_path / "c.txt"
    _random_file(path, np.random.default_rng(6), 100, 10, 0.9)
    first = _read(path, "compiled", monkeypatch, cache=True)
    (entry,) = cache_dir.iterdir()
    target = entry / "X.npy"
    if damage == "truncate":
        target.write_bytes(target.read_bytes()[:-100])
    elif damage == "garbage":
        target.write_bytes(b"\x00" * target.stat().st_size)
    elif damage == "meta":
        (entry / "meta.json").write_text("{not json")
    else:
        target.unlink()
    with pytest.warns(CacheWarning, match="unreadable"):
        second = _read(path, "compiled", monkeypatch, cache=True)
    _same(first, second)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(first, _read(path, "compiled", monkeypatch, cache=True))  # rewritten


def test_unwritable_cache_dir_reads_without_cache(tmp_path: Path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("CVXRANK_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.delenv("CVXRANK_READ_CACHE")
    path = tmp_path / "c.txt"
    _random_file(path, np.random.default_rng(7), 30, 5, 0.9)
    with pytest.warns(CacheWarning, match="reading without it"):
        first = _read(path, "compiled", monkeypatch, cache=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per directory and process
        _same(first, _read(path, "compiled", monkeypatch, cache=True))


def test_cache_switches(tmp_path: Path, monkeypatch, cache_dir: Path):
    path = tmp_path / "c.txt"
    _random_file(path, np.random.default_rng(8), 30, 5, 0.9)
    _read(path, "compiled", monkeypatch)  # small: not cached by default
    assert not cache_dir.exists() or not any(cache_dir.iterdir())
    monkeypatch.setenv("CVXRANK_READ_CACHE", "0")
    _read(path, "compiled", monkeypatch, cache=True)
    assert not cache_dir.exists() or not any(cache_dir.iterdir())
    monkeypatch.setattr(parsed_cache, "CACHE_MIN_BYTES", 0)
    monkeypatch.delenv("CVXRANK_READ_CACHE")
    _read(path, "compiled", monkeypatch)
    assert len(list(cache_dir.iterdir())) == 1


def test_a_failed_read_is_not_cached(tmp_path: Path, monkeypatch, cache_dir: Path):
    path = tmp_path / "bad.txt"
    path.write_text("1 qid:1 1:1\n0 qid:2 1:1\n1 qid:1 1:2\n")
    with pytest.raises(DataFormatError, match="first seen at line 1"):
        _read(path, "compiled", monkeypatch, cache=True)
    assert not cache_dir.exists() or not any(cache_dir.iterdir())


def test_compile_kernels_runs():
    svmlight_compiled.compile_kernels()


def test_no_read_cache_flag(tmp_path: Path, monkeypatch, cache_dir: Path, capsys):
    from cvxrank.cli.main import main

    path = tmp_path / "c.txt"
    _random_file(path, np.random.default_rng(10), 40, 5, 0.9)
    monkeypatch.setattr(parsed_cache, "CACHE_MIN_BYTES", 0)
    assert main(["data", "summary", str(path), "--no-read-cache"]) == 0
    assert not cache_dir.exists() or not any(cache_dir.iterdir())
    assert main(["data", "summary", str(path)]) == 0
    assert len(list(cache_dir.iterdir())) == 1
    capsys.readouterr()


def test_entry_whose_arrays_do_not_fit_together(tmp_path: Path, monkeypatch, cache_dir: Path):
    path = tmp_path / "c.txt"
    _random_file(path, np.random.default_rng(11), 60, 8, 0.9)
    first = _read(path, "compiled", monkeypatch, cache=True)
    (entry,) = cache_dir.iterdir()
    y = np.load(entry / "y.npy")
    np.save(entry / "y.npy", y[:-1])  # a consistent file of the wrong length
    meta = (entry / "meta.json").read_text()
    (entry / "meta.json").write_text(meta.replace(f'[{y.size}]', f'[{y.size - 1}]', 1))
    with pytest.warns(CacheWarning, match="unreadable"):
        second = _read(path, "compiled", monkeypatch, cache=True)
    _same(first, second)


def test_an_edited_label_with_size_and_mtime_restored_is_parsed_again(
        tmp_path: Path, monkeypatch, cache_dir: Path):
    """One label changed (0 -> 2) outside any sampled window, the size and modification
    time put back: the content digest sees it."""
    path = tmp_path / "c.txt"
    lines = [f"{i % 3} qid:{i // 10} 1:0.{i:06d} 2:1.5" for i in range(200_000)]
    path.write_text("\n".join(lines) + "\n")
    stat = path.stat()
    first = _read(path, "compiled", monkeypatch, cache=True)
    text = path.read_bytes()
    at = text.index(b"\n0 qid:10003 ") + 1  # far from the edges, between the windows
    path.write_bytes(text[:at] + b"2" + text[at + 1:])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    second = _read(path, "compiled", monkeypatch, cache=True)
    row = text[:at].count(b"\n")
    assert first.y[row] == 0 and second.y[row] == 2


@pytest.mark.parametrize("fault", ["empty X.npy", "meta without its key", "grade 99",
                                   "grade -1", "one query id"])
def test_a_faulty_entry_is_discarded_and_the_file_parsed_again(
        tmp_path: Path, monkeypatch, cache_dir: Path, fault: str):
    path = tmp_path / "c.txt"
    _random_file(path, np.random.default_rng(12), 80, 6, 0.95)
    first = _read(path, "compiled", monkeypatch, cache=True)
    (entry,) = cache_dir.iterdir()
    if fault == "empty X.npy":
        (entry / "X.npy").write_bytes(b"")
    elif fault == "meta without its key":
        meta = json.loads((entry / "meta.json").read_text())
        del meta["meta"]
        (entry / "meta.json").write_text(json.dumps(meta))
    elif fault.startswith("grade"):
        y = np.load(entry / "y.npy")
        y[0] = 99 if fault == "grade 99" else -1
        np.save(entry / "y.npy", y)
    else:
        qid = np.load(entry / "qid.npy")
        np.save(entry / "qid.npy", np.full_like(qid, qid[0]))
    with pytest.warns(CacheWarning, match="unreadable"):
        second = _read(path, "compiled", monkeypatch, cache=True)
    _same(first, second)
    assert len(list(cache_dir.iterdir())) == 1  # parsed again, stored again


def _cli_bad_files() -> list:
    try:
        from test_bad_input import BAD_FILES, GOOD
    except ModuleNotFoundError:  # tests/data collected without tests/cli (on the path then)
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
        from test_bad_input import BAD_FILES, GOOD

    return [pytest.param(GOOD + text, fragment, id=name) for name, text, fragment in BAD_FILES]


@pytest.mark.parametrize("text, fragment", _cli_bad_files())
def test_command_line_bad_files_give_the_same_error(tmp_path: Path, monkeypatch, text,
                                                    fragment):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(DataFormatError) as compiled_error:
        _read(path, "compiled", monkeypatch)
    with pytest.raises(DataFormatError) as text_error:
        _read(path, "text", monkeypatch)
    assert str(compiled_error.value) == str(text_error.value)
    assert fragment in str(compiled_error.value) and compiled_error.value.line == 5
