"""Properties of the SVMlight reader and writer (hypothesis)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.datasets import load_svmlight_file

from cvxrank.data import RankingData, read_svmlight, write_svmlight
from cvxrank.data.ranking_data import MAX_GRADE
from cvxrank.errors import DataFormatError

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any finite float: tiny (subnormal) and huge magnitudes included.
finite = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True, width=64)
magnitudes = st.one_of(
    finite,
    st.floats(min_value=-1e-300, max_value=1e-300, allow_subnormal=True),
    st.floats(min_value=1e300, max_value=1.7e308),
    st.integers(-10, 10).map(float),
)
# Grades the reader accepts: 0..MAX_GRADE, integers or not (tiny fractions included).
labels = st.one_of(
    st.integers(0, 4).map(float),
    st.integers(0, MAX_GRADE).map(float),
    st.floats(min_value=0.0, max_value=MAX_GRADE, allow_nan=False, allow_subnormal=True),
)
# Comment text that survives a text-mode line: no control characters (hence no line
# breaks), no surrogates; the reader strips the comment, so generate it stripped.
comment_text = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=20).map(
    str.strip
)
docid_token = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
    min_size=1,
    max_size=12,
).filter(lambda s: s.split() == [s] and "#" not in s)


@st.composite
def ranking_data(draw, sparse: bool | None = None, with_text: bool = True) -> RankingData:
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=6))
    n = sum(sizes)
    d = draw(st.integers(1, 7))
    values = draw(hnp.arrays(np.float64, (n, d), elements=magnitudes))
    density = draw(st.sampled_from([0.0, 0.2, 0.7, 1.0]))
    keep = draw(hnp.arrays(np.float64, (n, d), elements=st.floats(0, 1, exclude_max=True)))
    values[keep >= density] = 0.0
    y = draw(st.lists(labels, min_size=n, max_size=n))
    qids = draw(
        st.lists(
            st.integers(-(2**40), 2**40), min_size=len(sizes), max_size=len(sizes), unique=True
        )
    )
    qid = np.repeat(qids, sizes)
    if sparse is None:
        sparse = draw(st.booleans())
    X = sp.csr_matrix(values) if sparse else values
    data = RankingData.from_arrays(X, y, qid=qid)
    if not with_text:
        return data
    kind = draw(st.sampled_from(["none", "docid", "comment"]))
    if kind == "docid":
        docid = draw(st.lists(docid_token, min_size=n, max_size=n))
        return RankingData(data.X, data.y, data.qid, docid=np.array(docid, dtype=object))
    if kind == "comment":
        comment = draw(st.lists(st.one_of(st.none(), comment_text), min_size=n, max_size=n))
        return RankingData(data.X, data.y, data.qid, comment=np.array(comment, dtype=object))
    return data


def _dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory for the module (hypothesis reruns a test body many times)."""
    return tmp_path_factory.mktemp("properties")


_counter = itertools.count()


def _roundtrip(data: RankingData, workdir: Path, **kwargs) -> tuple[RankingData, Path]:
    path = workdir / f"data{next(_counter)}.txt"
    write_svmlight(data, path)
    return read_svmlight(path, **kwargs), path


@SETTINGS
@given(ranking_data())
def test_write_read_round_trip_is_exact(workdir: Path, data: RankingData):
    back, path = _roundtrip(data, workdir, n_features=data.n_features)
    assert back.X.shape == data.X.shape
    np.testing.assert_array_equal(_dense(back.X), _dense(data.X))
    np.testing.assert_array_equal(back.y, data.y)
    np.testing.assert_array_equal(back.qid, data.qid)
    np.testing.assert_array_equal(back.query_ptr, data.query_ptr)
    if data.docid is not None:
        assert back.docid is not None and list(back.docid) == list(data.docid)
    if data.comment is not None:
        expected = list(data.comment)
        if all(c is None for c in expected):
            assert back.comment is None
        else:
            assert list(back.comment) == expected
    if data.docid is None and data.comment is None:
        assert back.docid is None and back.comment is None
    assert back.n_lines == data.n_documents
    np.testing.assert_array_equal(back.line, np.arange(1, data.n_documents + 1))
    # writing what was read and reading it again is a fixed point (a docid-only row is
    # written "#docid = X" and comes back as the comment "docid = X", written "# docid = X")
    again = path.with_name(path.stem + "-again.txt")
    write_svmlight(back, again)
    third = read_svmlight(again, n_features=data.n_features)
    np.testing.assert_array_equal(_dense(third.X), _dense(back.X))
    np.testing.assert_array_equal(third.y, back.y)
    assert third.docid is None if back.docid is None else list(third.docid) == list(back.docid)
    if data.docid is None:
        assert again.read_bytes() == path.read_bytes()


@SETTINGS
@given(ranking_data(with_text=False))
def test_reader_agrees_with_sklearn(workdir: Path, data: RankingData):
    back, path = _roundtrip(data, workdir)
    X, y, qid = load_svmlight_file(str(path), query_id=True, zero_based=False)
    # both use the largest index as the width (sklearn at least 1, for a file of no features)
    assert X.shape[1] == max(back.n_features, 1)
    np.testing.assert_array_equal(_dense(back.X), X.toarray()[:, : back.n_features])
    np.testing.assert_array_equal(back.y, y)
    np.testing.assert_array_equal(back.qid, qid)


@SETTINGS
@given(ranking_data(with_text=False), st.data())
def test_layout_does_not_change_the_data(workdir: Path, data: RankingData, draw):
    """Blank lines, comment lines, extra whitespace, CRLF and the order of the index:value
    tokens on a line change nothing but the line numbers, which stay right."""
    _, path = _roundtrip(data, workdir)
    reference = read_svmlight(path, n_features=data.n_features)
    out: list[str] = []
    data_lines: list[int] = []
    for line in path.read_text().splitlines():
        for _ in range(draw.draw(st.integers(0, 2))):
            out.append(draw.draw(st.sampled_from(["", "   ", "\t", "# a comment", "  #x:1 y"])))
        head, feats = line.split()[:2], line.split()[2:]
        feats = draw.draw(st.permutations(feats))
        sep = draw.draw(st.sampled_from([" ", "\t", "  ", " \t "]))
        trail = draw.draw(st.sampled_from(["", " ", "\t"]))
        out.append(sep.join(head + list(feats)) + trail)
        data_lines.append(len(out))
    newline = draw.draw(st.sampled_from(["\n", "\r\n"]))
    messy = path.with_name(path.stem + "-messy.txt")
    messy.write_bytes(newline.join(out).encode() + newline.encode())
    got = read_svmlight(messy, n_features=data.n_features)
    np.testing.assert_array_equal(_dense(got.X), _dense(reference.X))
    np.testing.assert_array_equal(got.y, reference.y)
    np.testing.assert_array_equal(got.qid, reference.qid)
    np.testing.assert_array_equal(got.line, data_lines)
    assert got.n_lines == len(out)


@SETTINGS
@given(ranking_data(with_text=False), ranking_data(with_text=False))
def test_concatenating_files_stacks_the_data(workdir: Path, a: RankingData, b: RankingData):
    """As OHSUMED's train.txt is the concatenation of three test files."""
    if set(a.query_ids.tolist()) & set(b.query_ids.tolist()):
        return  # a query split across the two files is (rightly) an error
    d = max(a.n_features, b.n_features)
    _, pa = _roundtrip(a, workdir)
    _, pb = _roundtrip(b, workdir)
    cat = pa.with_name(pa.stem + "-cat.txt")
    cat.write_bytes(pa.read_bytes() + pb.read_bytes())
    got = read_svmlight(cat, n_features=d)
    pad = lambda X: np.pad(_dense(X), ((0, 0), (0, d - X.shape[1])))  # noqa: E731
    np.testing.assert_array_equal(_dense(got.X), np.vstack([pad(a.X), pad(b.X)]))
    np.testing.assert_array_equal(got.y, np.r_[a.y, b.y])
    np.testing.assert_array_equal(got.query_ids, np.r_[a.query_ids, b.query_ids])


@SETTINGS
@given(ranking_data(with_text=False))
def test_dense_and_sparse_reads_agree(workdir: Path, data: RankingData):
    _, path = _roundtrip(data, workdir)
    dense = read_svmlight(path, dense=True)
    sparse = read_svmlight(path, dense=False)
    assert isinstance(dense.X, np.ndarray) and sp.issparse(sparse.X)
    np.testing.assert_array_equal(dense.X, sparse.X.toarray())


# Malformed tokens, and the lenient spellings that are refused so that every SVMlight reader
# reads a file alike (index 1.0, 1e0 or +1; value 1_000, infinity; an index above the limit).
BAD_TOKENS = [
    "3:", ":5", "a:1", "1:2:3", "1:x", "1:nan", "2:inf", "0:1", "7", "1.5:2",
    "1.0:2", "1e0:2", "+1:2", "1:1_000", "1:Infinity", "1:1e999", f"{2**24 + 1}:1",
    f"{2**63}:1",
]


@SETTINGS
@given(ranking_data(with_text=False), st.data())
def test_one_bad_token_is_reported_at_its_line(workdir: Path, data: RankingData, draw):
    _, path = _roundtrip(data, workdir)
    lines = path.read_text().splitlines()
    row = draw.draw(st.integers(0, len(lines) - 1))
    token = draw.draw(st.sampled_from(BAD_TOKENS))
    parts = lines[row].split()
    where = draw.draw(st.integers(2, len(parts)))
    lines[row] = " ".join(parts[:where] + [token] + parts[where:])
    bad = path.with_name(path.stem + "-bad.txt")
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError) as info:
        read_svmlight(bad)
    assert info.value.line == row + 1
    assert str(info.value).startswith(f"{bad}:{row + 1}: ")
