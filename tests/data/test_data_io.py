"""Readers and writers of ranking data: real files, generated files and every bad input."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_svmlight_file

from cvxrank.data import (
    RankingData,
    list_folds,
    read_group_sizes,
    read_letor_fold,
    read_lightgbm,
    read_svmlight,
    svmlight,
    write_svmlight,
)
from cvxrank.data.ranking_data import MAX_GRADE
from cvxrank.data.svmlight import MAX_FEATURES
from cvxrank.errors import CvxrankError, DataFormatError

OHSUMED = "letor3_ohsumed/QueryLevelNorm"
MQ2008 = "letor4_mq2008"
LIGHTGBM = "lightgbm_lambdarank"


@functools.cache
def _read(path: str, require_qid: bool = True) -> RankingData:
    return read_svmlight(path, require_qid=require_qid)


def _dense(X: np.ndarray | sp.spmatrix) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X)


# --------------------------------------------------------------------------- real files


@pytest.mark.parametrize(
    "rel, has_qid",
    [
        (f"{OHSUMED}/Fold1/train.txt", True),
        (f"{OHSUMED}/Fold1/test.txt", True),
        (f"{MQ2008}/Fold1/test.txt", True),
        (f"{LIGHTGBM}/rank.train", False),
    ],
)
def test_read_svmlight_matches_sklearn_on_real_files(shared_data: Path, rel: str, has_qid: bool):
    path = shared_data / rel
    data = _read(str(path), has_qid)
    X, y, qid = load_svmlight_file(str(path), query_id=True, zero_based=False)
    assert data.X.shape == X.shape
    np.testing.assert_array_equal(_dense(data.X), X.toarray())
    np.testing.assert_array_equal(data.y, y)
    if has_qid:
        np.testing.assert_array_equal(data.qid, qid)
    else:
        assert qid.size == 0  # sklearn gives no qid; ours is one query of qid 0
        assert np.all(data.qid == 0)
    assert data.n_lines == data.n_documents
    np.testing.assert_array_equal(data.line, np.arange(1, data.n_documents + 1))


# SOURCE.md tables: documents, queries, grade counts.
SOURCE_COUNTS = [
    (f"{OHSUMED}/Fold1/test.txt", 3383, 22, {0: 2794, 1: 274, 2: 315}),
    (f"{OHSUMED}/Fold2/test.txt", 2570, 21, {0: 1751, 1: 451, 2: 368}),
    (f"{OHSUMED}/Fold3/test.txt", 3076, 21, {0: 2162, 1: 501, 2: 413}),
    (f"{OHSUMED}/Fold4/test.txt", 3573, 21, {0: 2139, 1: 813, 2: 621}),
    (f"{OHSUMED}/Fold5/test.txt", 3538, 21, {0: 2457, 1: 546, 2: 535}),
    (f"{OHSUMED}/Fold1/train.txt", 9219, 63, {0: 6052, 1: 1765, 2: 1402}),
    (f"{OHSUMED}/Fold4/train.txt", 9491, 64, {0: 7002, 1: 1271, 2: 1218}),
    (f"{MQ2008}/Fold1/test.txt", 2874, 156, {0: 2319, 1: 378, 2: 177}),
    (f"{MQ2008}/Fold3/test.txt", 3635, 157, {0: 3080, 1: 385, 2: 170}),
    (f"{MQ2008}/Fold1/train.txt", 9630, 471, {0: 7820, 1: 1223, 2: 587}),
]


@pytest.mark.parametrize("rel, docs, queries, grades", SOURCE_COUNTS)
def test_counts_match_source_md(shared_data: Path, rel, docs, queries, grades):
    data = _read(str(shared_data / rel))
    assert data.n_documents == docs
    assert data.n_queries == queries
    assert data.grade_counts() == grades
    assert data.n_features == (45 if rel.startswith(OHSUMED) else 46)
    assert isinstance(data.X, np.ndarray)  # every line has every feature: dense
    assert data.docid is not None and all(d is not None for d in data.docid)


def test_ohsumed_whole_set_totals(shared_data: Path):
    parts = [_read(str(shared_data / f"{OHSUMED}/Fold{k}/test.txt")) for k in range(1, 6)]
    assert sum(p.n_documents for p in parts) == 16140
    assert sum(p.n_queries for p in parts) == 106
    qids = np.concatenate([p.query_ids for p in parts])
    assert np.unique(qids).size == 106  # the five test files do not overlap
    single = sum(p.queries_with_single_grade().size for p in parts)
    assert single == 1  # "One query has only label 0."
    assert min(int(p.query_sizes.min()) for p in parts) >= 35


def test_mq2008_whole_set_totals(shared_data: Path):
    parts = [_read(str(shared_data / f"{MQ2008}/Fold{k}/test.txt")) for k in range(1, 6)]
    assert sum(p.n_documents for p in parts) == 15211
    assert sum(p.n_queries for p in parts) == 784
    all_zero = sum(int(np.sum(np.maximum.reduceat(p.y, p.query_ptr[:-1]) == 0)) for p in parts)
    assert all_zero == 220
    assert sum(int(np.sum(p.query_sizes < 10)) for p in parts) == 403
    assert min(int(p.query_sizes.min()) for p in parts) == 5


def test_ohsumed_docid_from_comment(shared_data: Path):
    data = _read(str(shared_data / f"{OHSUMED}/Fold1/test.txt"))
    first = (shared_data / f"{OHSUMED}/Fold1/test.txt").open().readline()
    assert first.startswith("0 qid:85 1:0.666667")
    assert data.docid[0] == first.split("#docid = ")[1].strip()
    assert data.comment[0] == f"docid = {data.docid[0]}"
    assert data.qid[0] == 85


def test_mq2008_docid_with_inc_and_prob(shared_data: Path):
    path = shared_data / f"{MQ2008}/Fold1/test.txt"
    data = _read(str(path))
    lines = path.read_text().splitlines()
    for i in (0, 1, len(lines) - 1):
        comment = lines[i].split("#", 1)[1].strip()
        assert data.comment[i] == comment
        assert comment.startswith(f"docid = {data.docid[i]} inc = ")
        assert "prob = " in comment
        assert data.docid[i].startswith("GX")


def test_read_lightgbm_rank_train(shared_data: Path):
    data = read_lightgbm(shared_data / f"{LIGHTGBM}/rank.train")
    assert data.n_documents == 3005
    assert data.n_queries == 201
    assert data.grade_counts() == {0: 645, 1: 1211, 2: 858, 3: 222, 4: 69}
    sizes = read_group_sizes(shared_data / f"{LIGHTGBM}/rank.train.query")
    np.testing.assert_array_equal(data.query_sizes, sizes)
    assert sizes.min() == 1 and sizes.max() == 27
    np.testing.assert_array_equal(data.query_ids, np.arange(201))
    assert sp.issparse(data.X) and data.n_features == 300
    assert data.docid is None
    X, y = load_svmlight_file(str(shared_data / f"{LIGHTGBM}/rank.train"), zero_based=False)
    np.testing.assert_array_equal(data.X.toarray(), X.toarray())
    np.testing.assert_array_equal(data.y, y)
    # distinct feature ids used: 218 (SOURCE.md)
    assert np.unique(data.X.indices).size == 218


def test_read_lightgbm_rank_test(shared_data: Path):
    data = read_lightgbm(shared_data / f"{LIGHTGBM}/rank.test")
    assert (data.n_documents, data.n_queries) == (768, 50)
    assert data.grade_counts() == {0: 206, 1: 256, 2: 252, 3: 44, 4: 10}
    assert data.query_sizes.min() == 6 and data.query_sizes.max() == 24


def test_read_letor_fold(shared_data: Path):
    root = shared_data / OHSUMED
    assert list_folds(root) == [1, 2, 3, 4, 5]
    fold = read_letor_fold(root, 1)
    assert set(fold) == {"train", "vali", "test"}
    assert fold["train"].n_documents == 9219
    assert fold["test"].n_documents == 3383
    # Fold1/vali.txt == Fold5/test.txt
    fold5 = read_letor_fold(root / "Fold5", 5, splits=("test",))
    assert set(fold5) == {"test"}
    np.testing.assert_array_equal(fold["vali"].X, fold5["test"].X)
    np.testing.assert_array_equal(fold["vali"].qid, fold5["test"].qid)
    # train = cat of Fold2..4 tests
    tests = [_read(str(root / f"Fold{k}/test.txt")) for k in (2, 3, 4)]
    np.testing.assert_array_equal(fold["train"].X, np.vstack([t.X for t in tests]))
    np.testing.assert_array_equal(fold["train"].y, np.concatenate([t.y for t in tests]))


def test_read_letor_fold_errors(tmp_path: Path):
    (tmp_path / "Fold1").mkdir()
    (tmp_path / "Fold1" / "train.txt").write_text("1 qid:1 1:1\n0 qid:1 1:0\n")
    assert list_folds(tmp_path) == [1]
    got = read_letor_fold(tmp_path, 1, splits=("train",))
    assert got["train"].n_documents == 2
    with pytest.raises(FileNotFoundError, match="vali.txt"):
        read_letor_fold(tmp_path, 1)
    with pytest.raises(ValueError, match="unknown split"):
        read_letor_fold(tmp_path, 1, splits=("training",))


# --------------------------------------------------------------------------- generated files


def _random_data(rng: np.random.Generator, n_queries=7, d=12, density=0.4) -> RankingData:
    sizes = rng.integers(1, 9, size=n_queries)
    n = int(sizes.sum())
    X = rng.standard_normal((n, d)) * 10.0 ** rng.integers(-5, 6, size=(n, d))
    X[rng.random((n, d)) > density] = 0.0
    y = rng.integers(0, 4, size=n).astype(float)
    qid = np.repeat(rng.choice(10_000, size=n_queries, replace=False), sizes)
    docid = np.array([f"D{i}" for i in range(n)], dtype=object)
    return RankingData.from_arrays(X, y, qid=qid, docid=docid)


@pytest.mark.parametrize("seed", range(5))
def test_generated_file_matches_sklearn(tmp_path: Path, seed: int):
    rng = np.random.default_rng(seed)
    data = _random_data(rng, density=0.3 + 0.15 * seed)
    path = tmp_path / "gen.txt"
    write_svmlight(data, path)
    back = read_svmlight(path)
    X, y, qid = load_svmlight_file(str(path), query_id=True, zero_based=False)
    np.testing.assert_array_equal(_dense(back.X), X.toarray())
    np.testing.assert_array_equal(back.y, y)
    np.testing.assert_array_equal(back.qid, qid)
    np.testing.assert_array_equal(back.docid, data.docid)
    width = back.n_features
    np.testing.assert_array_equal(_dense(back.X), _dense(data.X)[:, :width])


def test_blank_and_comment_lines_are_accounted(tmp_path: Path):
    path = tmp_path / "c.txt"
    path.write_text(
        "# header comment\n"
        "\n"
        "2 qid:1 1:0.5 3:1 # docid = a\n"
        "   \n"
        "0 qid:1 2:0.25\n"
        "  # indented comment\n"
        "1 qid:2 1:1 #docid=b extra\n"
    )
    data = read_svmlight(path)
    assert data.n_lines == 7
    np.testing.assert_array_equal(data.line, [3, 5, 7])
    assert list(data.docid) == ["a", None, "b"]
    assert list(data.comment) == ["docid = a", None, "docid=b extra"]
    np.testing.assert_array_equal(_dense(data.X), [[0.5, 0, 1], [0, 0.25, 0], [1, 0, 0]])
    np.testing.assert_array_equal(data.query_ptr, [0, 2, 3])


def test_crlf_tabs_and_options(tmp_path: Path):
    lf = tmp_path / "lf.txt"
    crlf = tmp_path / "crlf.txt"
    lf.write_text("1 qid:3 1:2 2:3\n0 qid:3 2:1\n")
    crlf.write_bytes(b"1\tqid:3\t1:2   2:3\r\n0 qid:3 2:1 \r\n")
    a, b = read_svmlight(lf), read_svmlight(crlf)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert sp.issparse(read_svmlight(lf, dense=False).X)
    assert isinstance(read_svmlight(lf, dense=True).X, np.ndarray)
    assert read_svmlight(lf, n_features=5).X.shape == (2, 5)
    zb = read_svmlight(lf, zero_based=True)
    np.testing.assert_array_equal(zb.X, [[0, 2, 3], [0, 0, 1]])
    noq = tmp_path / "noq.txt"
    noq.write_text("1 1:2\n0 2:1\n")
    data = read_svmlight(noq, require_qid=False)
    np.testing.assert_array_equal(data.qid, [0, 0])


# --------------------------------------------------------------------------- bad input

VALID = "2 qid:1 1:0.5 2:0.1\n1 qid:1 1:0.2 2:0.3\n0 qid:2 1:0.1 2:0.9\n"

# (name, file text, line of the error, fragment of the message, reader kwargs)
BAD_INPUTS = [
    ("missing label (qid first)", VALID + "qid:2 1:0.5\n", 4, "label", {}),
    ("missing label (feature first)", "1:0.5 2:1\n" + VALID, 1, "label", {}),
    ("non-numeric label", VALID + "x qid:2 1:0.5\n", 4, "not a number", {}),
    ("nan label", VALID + "nan qid:2 1:0.5\n", 4, "finite", {}),
    ("bad i:v, empty value", VALID + "1 qid:2 1:0.5 3:\n", 4, "index:value", {}),
    (
        "bad i:v, empty index",
        "1 qid:1 :0.5\n" + VALID.replace("qid:1", "qid:7"),
        1,
        "index:value",
        {},
    ),
    (
        "bad i:v, both sides torn",
        "1 qid:1 3: :5\n" + VALID.replace("qid:1", "qid:7"),
        1,
        "index:value",
        {},
    ),
    ("bad i:v, letters", VALID + "1 qid:2 a:1\n", 4, "not an integer", {}),
    ("bad i:v, two colons", VALID + "1 qid:2 1:2:3\n", 4, "'2:3' is not a number", {}),
    ("bad i:v, no colon", VALID + "1 qid:2 7\n", 4, "index:value", {}),
    ("non-numeric value", VALID + "1 qid:2 1:abc\n", 4, "not a number", {}),
    ("nan value", VALID + "1 qid:2 1:nan\n", 4, "finite", {}),
    ("inf value", VALID + "1 qid:2 2:inf\n", 4, "finite", {}),
    ("-inf value", VALID + "1 qid:2 2:-inf\n", 4, "finite", {}),
    ("index 0 in one-based file", VALID + "1 qid:2 0:1\n", 4, "below 1", {}),
    ("missing qid where required", VALID + "1 1:0.5\n", 4, "missing qid", {}),
    ("missing qid on first line", "1 1:0.5\n" + VALID, 1, "missing qid", {}),
    ("qid on some lines only", "1 1:0.5\n0 2:0.5\n1 qid:1 1:1\n", 3, "qid", {"require_qid": False}),
    ("qid dropped later", VALID + "1 1:0.5\n", 4, "qid", {"require_qid": False}),
    ("bad qid", VALID + "1 qid:two 1:0.5\n", 4, "qid", {}),
    ("beyond n_features", VALID + "1 qid:2 3:0.5\n", 4, "beyond the declared 2", {"n_features": 2}),
    ("duplicate feature", VALID + "1 qid:2 1:0.5 2:1 1:0.7\n" + "0 qid:2 1:0\n", 4, "twice", {}),
    ("duplicate feature, slow path", "1 qid:1 2:1 2:1\n1 qid:1 x:1\n", 1, "twice", {}),
    ("non-contiguous query", VALID + "1 qid:1 1:0.5\n", 4, "first seen at line 1", {}),
    # bounded input and a strict grammar (issue 11): limits and the lenient parses of before
    ("grade 2000", VALID + "2000 qid:2 1:1\n", 4, "above the largest grade 30", {}),
    ("grade 30.5", VALID + "30.5 qid:2 1:1\n", 4, "above the largest grade 30", {}),
    ("negative label", VALID + "-1 qid:2 1:1\n", 4, "label -1 is negative", {}),
    ("label 1_0", VALID + "1_0 qid:2 1:1\n", 4, "not a plain decimal number", {}),
    ("label infinity", VALID + "infinity qid:2 1:1\n", 4, "finite", {}),
    ("index inf", VALID + "1 qid:2 inf:1\n", 4, "'inf' in 'inf:1' is not an integer", {}),
    ("index 2^63", VALID + f"1 qid:2 {2**63}:1\n", 4, "above the limit of 16,777,216", {}),
    ("index 1e12", VALID + "1 qid:2 1000000000000:1\n", 4, "above the limit", {}),
    ("index 2^24 + 1", VALID + f"1 qid:2 {2**24 + 1}:1\n", 4, "above the limit", {}),
    ("index 2^24, zero-based", VALID + f"1 qid:2 {2**24}:1\n", 4, "above the limit",
     {"zero_based": True}),
    ("index 1.0", VALID + "1 qid:2 1.0:1\n", 4, "'1.0' in '1.0:1' is not an integer", {}),
    ("index 1e0", VALID + "1 qid:2 1e0:1\n", 4, "is not an integer", {}),
    ("index +1", VALID + "1 qid:2 +1:1\n", 4, "is not an integer", {}),
    ("index -1", VALID + "1 qid:2 -1:1\n", 4, "is not an integer", {}),
    ("value 1_000", VALID + "1 qid:2 1:1_000\n", 4, "'1_000' is not a plain decimal", {}),
    ("value 0x10", VALID + "1 qid:2 1:0x10\n", 4, "not a number", {}),
    ("value 1e999", VALID + "1 qid:2 1:1e999\n", 4, "finite", {}),
    ("value infinity", VALID + "1 qid:2 1:Infinity\n", 4, "finite", {}),
    ("qid 2^63", VALID + f"1 qid:{2**63} 1:1\n", 4, "does not fit in a 64-bit integer", {}),
    ("qid 1_0", VALID + "1 qid:1_0 1:1\n", 4, "is not qid:<integer>", {}),
    ("qid 1.0", VALID + "1 qid:1.0 1:1\n", 4, "is not qid:<integer>", {}),
    ("qid where forbidden", "1 1:1\n0 1:2\n1 qid:3 1:1\n", 3, "qid:3 in a file read without",
     {"require_qid": False, "allow_qid": False}),
]


@pytest.mark.parametrize(
    "text, line, fragment, kwargs",
    [case[1:] for case in BAD_INPUTS],
    ids=[case[0] for case in BAD_INPUTS],
)
def test_bad_input_names_file_and_line(tmp_path: Path, text, line, fragment, kwargs):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(DataFormatError) as info:
        read_svmlight(path, **kwargs)
    err = info.value
    assert isinstance(err, CvxrankError) and isinstance(err, ValueError)
    assert err.path == str(path)
    assert err.line == line
    assert str(err).startswith(f"{path}:{line}: ")
    assert fragment in str(err)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n  \n"])
def test_empty_file(tmp_path: Path, text: str):
    path = tmp_path / "empty.txt"
    path.write_text(text)
    with pytest.raises(DataFormatError, match="empty") as info:
        read_svmlight(path)
    assert str(info.value).startswith(str(path))


def test_missing_file(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        read_svmlight(tmp_path / "nope.txt")


def test_limits_accept_their_boundary(tmp_path: Path):
    """Index MAX_FEATURES (one-based) and grade MAX_GRADE are read; q id -2^63 too."""
    path = tmp_path / "edge.txt"
    path.write_text(f"{MAX_GRADE} qid:{-(2**63)} 1:1 {MAX_FEATURES}:2.5e-3\n0 qid:{-(2**63)} 1:0\n")
    data = read_svmlight(path)
    assert data.n_features == MAX_FEATURES and sp.issparse(data.X)
    assert data.X[0, MAX_FEATURES - 1] == 2.5e-3
    assert data.y.tolist() == [MAX_GRADE, 0] and data.qid.tolist() == [-(2**63)] * 2
    assert MAX_FEATURES == 2**24 and MAX_GRADE == 30
    with pytest.raises(ValueError, match="n_features must lie in"):
        read_svmlight(path, n_features=MAX_FEATURES + 1)


def _special(tmp_path: Path, kind: str) -> Path:
    if kind == "device":
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero")
        return Path("/dev/zero")
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(tmp_path / "fifo")
        return tmp_path / "fifo"
    (tmp_path / "dir").mkdir()
    return tmp_path / "dir"


@pytest.mark.parametrize("kind", ["device", "fifo", "directory"])
@pytest.mark.parametrize("reader", [read_svmlight, read_group_sizes])
def test_non_regular_files_are_refused_without_reading(tmp_path: Path, kind, reader):
    """``/dev/zero`` used to be read forever (and opening a FIFO would block)."""
    path = _special(tmp_path, kind)
    with pytest.raises(DataFormatError, match="not a regular file") as info:
        reader(path)
    assert info.value.path == str(path) and info.value.line is None


def test_forced_dense_matrix_larger_than_memory_is_refused(tmp_path: Path, monkeypatch):
    path = tmp_path / "wide.txt"
    path.write_text("1 qid:1 1:1 1000:2\n0 qid:1 1:0\n")
    monkeypatch.setattr(svmlight, "physical_memory", lambda: 8 * 2 * 1000 - 1)
    with pytest.raises(DataFormatError, match=r"a dense 2 x 1,000 matrix would take .* CSR"):
        read_svmlight(path, dense=True)
    assert sp.issparse(read_svmlight(path).X)  # the automatic choice is CSR here
    monkeypatch.setattr(svmlight, "physical_memory", lambda: 8 * 2 * 1000)
    assert read_svmlight(path, dense=True).X.shape == (2, 1000)


def test_physical_memory_is_positive():
    assert svmlight.physical_memory() > 2**20


@pytest.mark.parametrize("y", [[1.0, -1.0], [0.0, MAX_GRADE + 1.0]])
def test_writer_refuses_what_the_reader_refuses(tmp_path: Path, y):
    data = RankingData.from_arrays(np.ones((2, 1)), y, qid=[1, 1])
    with pytest.raises(ValueError, match=rf"outside \[0, {MAX_GRADE}\]"):
        write_svmlight(data, tmp_path / "out.txt")
    assert not (tmp_path / "out.txt").exists()


def test_lightgbm_file_with_qid_is_refused(tmp_path: Path):
    """The queries of a LightGBM file come from the .query file; qids are not dropped."""
    data = tmp_path / "rank.train"
    data.write_text("1 qid:1 1:1\n0 qid:1 1:2\n2 qid:2 2:1\n")
    (tmp_path / "rank.train.query").write_text("2\n1\n")
    with pytest.raises(DataFormatError, match="qid:1 in a file read without query ids") as info:
        read_lightgbm(data)
    assert (info.value.path, info.value.line) == (str(data), 1)


def test_lightgbm_query_sizes_must_add_up(tmp_path: Path):
    data = tmp_path / "rank.train"
    data.write_text("1 1:1\n0 1:2\n2 2:1\n")
    (tmp_path / "rank.train.query").write_text("2\n2\n")
    with pytest.raises(DataFormatError, match="add up to 4 but .* has 3 data lines") as info:
        read_lightgbm(data)
    assert info.value.path == str(data) + ".query"
    (tmp_path / "rank.train.query").write_text("2\n1\n")
    ok = read_lightgbm(data)
    np.testing.assert_array_equal(ok.qid, [0, 0, 1])
    np.testing.assert_array_equal(ok.query_ptr, [0, 2, 3])


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("2\nx\n", 2, "not a query size"),
        ("2\n0\n", 2, ">= 1"),
        ("-1\n", 1, ">= 1"),
        ("", None, "empty"),
        ("1.5\n", 1, "not a query size"),
        ("1_0\n", 1, "not a query size"),
        (f"{2**31}\n", 1, "above 2,147,483,647"),
    ],
)
def test_lightgbm_bad_query_file(tmp_path: Path, text, line, fragment):
    query = tmp_path / "q.query"
    query.write_text(text)
    with pytest.raises(DataFormatError) as info:
        read_group_sizes(query)
    assert info.value.line == line
    assert fragment in str(info.value)
    assert str(info.value).startswith(str(query))


# --------------------------------------------------------------------------- RankingData


def test_from_arrays_contiguous_qid():
    X = np.arange(10.0).reshape(5, 2)
    data = RankingData.from_arrays(X, [1, 0, 2, 1, 0], qid=[7, 7, 3, 3, 3])
    assert data.order is None
    np.testing.assert_array_equal(data.query_ptr, [0, 2, 5])
    np.testing.assert_array_equal(data.query_ids, [7, 3])
    np.testing.assert_array_equal(data.query_sizes, [2, 3])
    np.testing.assert_array_equal(data.query_index, [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(data.X, X)


def test_from_arrays_non_contiguous_qid_is_regrouped_stably():
    X = np.arange(12.0).reshape(6, 2)
    y = np.array([0.0, 1, 2, 0, 1, 2])
    qid = np.array([5, 2, 5, 9, 2, 5])
    docid = ["a", "b", "c", "d", "e", "f"]
    data = RankingData.from_arrays(X, y, qid=qid, docid=docid)
    # queries in order of first appearance (5, 2, 9), rows in given order within each
    np.testing.assert_array_equal(data.order, [0, 2, 5, 1, 4, 3])
    np.testing.assert_array_equal(data.qid, [5, 5, 5, 2, 2, 9])
    np.testing.assert_array_equal(data.query_ptr, [0, 3, 5, 6])
    np.testing.assert_array_equal(data.X, X[data.order])
    np.testing.assert_array_equal(data.y, y[data.order])
    assert list(data.docid) == ["a", "c", "f", "b", "e", "d"]
    # every row of the caller lands in the query with its qid
    for i, src in enumerate(data.order):
        assert data.qid[i] == qid[src]


def test_from_arrays_sparse_and_string_qid():
    X = sp.random(6, 4, density=0.5, format="csr", random_state=0)
    data = RankingData.from_arrays(X, np.zeros(6), qid=["b", "b", "a", "a", "b", "c"])
    assert sp.issparse(data.X)
    np.testing.assert_array_equal(data.order, [0, 1, 4, 2, 3, 5])
    np.testing.assert_array_equal(data.X.toarray(), X.toarray()[data.order])
    np.testing.assert_array_equal(data.query_sizes, [3, 2, 1])


def test_from_arrays_group_sizes():
    X = np.ones((5, 3))
    data = RankingData.from_arrays(X, [2, 1, 1, 1, 1], group=[2, 3])
    np.testing.assert_array_equal(data.qid, [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(data.query_ptr, [0, 2, 5])
    assert data.order is None
    assert data.queries_with_single_grade().tolist() == [1]


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"group": [2, 2]}, "sum to 4"),
        ({"group": [3, 0, 2]}, ">= 1"),
        ({"group": [2.5, 2.5]}, "integers"),
        ({"qid": [1, 1, 2, 2]}, "shape"),
        ({"qid": [1, 1, 1, 1, 1], "group": [5]}, "exactly one"),
        ({}, "exactly one"),
    ],
)
def test_from_arrays_bad_queries(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        RankingData.from_arrays(np.ones((5, 2)), np.zeros(5), **kwargs)


@pytest.mark.parametrize(
    "X, y, qid, fragment",
    [
        (np.ones((4, 2)), np.zeros(3), [0, 0, 1, 1], "inconsistent shapes"),
        (np.ones((4, 2)), np.zeros(4), [0, 0, 1], "inconsistent shapes"),
        (np.ones(4), np.zeros(4), [0, 0, 1, 1], "2-D"),
        (np.ones((4, 2)), [0, np.nan, 0, 0], [0, 0, 1, 1], "finite"),
        (np.ones((4, 2)), [0, np.inf, 0, 0], [0, 0, 1, 1], "finite"),
        (np.array([[1, 1], [1, np.inf], [1, 1], [1, 1]]), np.zeros(4), [0, 0, 1, 1], "row 1"),
        (
            sp.csr_matrix(np.array([[1, 0], [0, 1], [np.nan, 0], [0, 0]])),
            np.zeros(4),
            [0, 0, 1, 1],
            "row 2",
        ),
        (np.ones((4, 2)), np.zeros(4), [0, 1, 0, 1], "contiguous"),
        (np.ones((4, 2)), np.zeros(4), [0.0, 0.0, 1.0, 1.0], "integers"),
        (np.ones((0, 2)), np.zeros(0), np.zeros(0, dtype=int), "no documents"),
    ],
)
def test_ranking_data_validation(X, y, qid, fragment):
    with pytest.raises(ValueError, match=fragment):
        RankingData(X, np.asarray(y, dtype=float), np.asarray(qid))


def test_ranking_data_error_names_source_line(tmp_path: Path):
    data = read_svmlight(_write(tmp_path, VALID))
    bad = data.X.copy()
    bad[2, 0] = np.nan
    with pytest.raises(ValueError, match=r"row 2 \(.*:3\)"):
        data.with_features(bad)


def test_subset_and_take(tmp_path: Path):
    data = read_svmlight(_write(tmp_path, VALID))
    sub = data.subset([1, 0])
    np.testing.assert_array_equal(sub.qid, [2, 1, 1])
    np.testing.assert_array_equal(sub.line, [3, 1, 2])
    with pytest.raises(ValueError):
        data.subset([2])
    with pytest.raises(ValueError):
        data.subset([])


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "data.txt"
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- fast reader
# read_svmlight reads a well-formed file with svmlight._parse_fast (whole-file numpy) and
# gives any other file to svmlight._parse_lines (line by line, naming the bad line). The fast
# parser must give up on whatever the careful one refuses, and agree with it otherwise.


def _lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").split("\n")
    if not lines[-1]:
        lines.pop()
    return lines


def _fast_agrees(
    path: Path,
    zero_based: bool = False,
    n_features: int | None = None,
    require_qid: bool = True,
    allow_qid: bool = True,
) -> bool:
    """Whether the fast parser reads the file; when it does, the careful one gives the same."""
    lines = _lines(path)
    options = (zero_based, n_features, require_qid, allow_qid)
    fast = svmlight._parse_fast(lines, *options)
    if fast is None:
        return False
    careful = svmlight._parse_lines(str(path), lines, *options)  # does not raise either
    y, qid, comments, line, n_lines, indptr, indices, values = fast
    y2, qid2, comments2, line2, n_lines2, indptr2, indices2, values2 = careful
    assert comments == comments2 and n_lines == n_lines2
    for a, b in [(y, y2), (qid, qid2), (line, line2), (indptr, indptr2), (indices, indices2),
                 (values, values2)]:
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
        if a.dtype.kind == "f":  # -0.0 too
            np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
    return True


@pytest.mark.parametrize(
    "rel", [f"{OHSUMED}/Fold1/train.txt", f"{MQ2008}/Fold1/train.txt", f"{MQ2008}/Fold1/test.txt"]
)
def test_fast_reader_reads_the_real_files(shared_data: Path, rel: str):
    assert _fast_agrees(shared_data / rel)


def test_fast_reader_reads_lightgbm_files(shared_data: Path):
    path = shared_data / f"{LIGHTGBM}/rank.train"
    assert _fast_agrees(path, require_qid=False, allow_qid=False)


# Valid values that are not a short decimal: read by float, exactly (2**53 + 1, digits beyond
# double precision, underflow to 0 and the smallest subnormal, signs, a bare point, ...).
EXOTIC_VALUES = [
    "9007199254740993", "9007199254740992", "0.1000000000000000055511151231257827",
    "123456789012345.6", "1e-400", "4.9e-324", "1.7976931348623157e308", "-0", "-0.0", ".5",
    "5.", "+1", "-.25", "1E5", "1.e3", "2.5e-3", "0." + "0" * 25 + "1", "1" * 30, "00000.5",
    "0.000000", "-1.2345678901234567e-300", "7e+22", "1.5e22", "3e-22",
]


@pytest.mark.parametrize("value", EXOTIC_VALUES)
def test_fast_reader_reads_values_as_float_does(tmp_path: Path, value: str):
    path = _write(tmp_path, f"1 qid:1 1:0.5 0003:{value} 2:-7\n0 qid:1 2:{value}\n")
    assert _fast_agrees(path)
    data = read_svmlight(path)
    got = _dense(data.X)
    assert got[0, 2] == float(value) and got[1, 1] == float(value)
    assert got[0].tolist()[:2] == [0.5, -7.0]


@pytest.mark.parametrize(
    "text, kwargs",
    [(case[1], case[4]) for case in BAD_INPUTS],
    ids=[case[0] for case in BAD_INPUTS],
)
def test_fast_reader_gives_up_on_every_bad_input(tmp_path: Path, text: str, kwargs: dict):
    """Only an error found after parsing (a query split in two) passes the fast parser."""
    options = {k: v for k, v in kwargs.items() if k != "dense"}
    accepted = _fast_agrees(_write(tmp_path, text), **options)
    assert accepted == ("first seen at line" in _error_message(tmp_path, text, kwargs))


def _error_message(tmp_path: Path, text: str, kwargs: dict) -> str:
    with pytest.raises(DataFormatError) as info:
        read_svmlight(_write(tmp_path, text), **kwargs)
    return str(info.value)


@pytest.mark.parametrize(
    "line, first, fast",
    [
        ("1 qid:1 1:0.5\x1c2:1\x0b3:2", [0.5, 1, 2], True),  # ASCII separators of str.split
        ("1 qid:1 1:0.5\u00a02:1", [0.5, 1, 0], False),  # a no-break space (not ASCII)
        ("1 qid:1 3:" + "0" * 70 + "1", [0, 0, 1], False),  # longer than the fast limit
        ("1 qid:00000000000000000000000001 1:1", [1, 0, 0], False),  # a qid of 26 characters
    ],
)
def test_valid_lines_either_reader_reads(tmp_path: Path, line: str, first: list, fast: bool):
    path = _write(tmp_path, f"{line}\n0 qid:1 2:0.25\n")
    assert (svmlight._parse_fast(_lines(path), False, None, True, True) is not None) == fast
    data = read_svmlight(path, n_features=3)
    np.testing.assert_array_equal(_dense(data.X), [first, [0, 0.25, 0]])
    np.testing.assert_array_equal(data.qid, [1, 1])


def test_undecodable_bytes_after_a_bad_line_report_the_line(tmp_path: Path):
    """The text is decoded in blocks: a bad line ahead of an undecodable block is reported,
    as when the file was only ever read line by line."""
    good = "0 qid:1 1:0.5 2:0.25\n" * 1000  # 21,000 bytes
    path = tmp_path / "bytes.txt"
    path.write_bytes(b"x qid:1 1:1\n" + good.encode() + b"\xff\n")
    with pytest.raises(DataFormatError, match="label 'x' is not a number") as info:
        read_svmlight(path)
    assert info.value.line == 1
    path.write_bytes(good.encode() + b"\xff\n")
    with pytest.raises(UnicodeDecodeError):
        read_svmlight(path)


# Lines of valid and malformed tokens: numbers as the grammar allows them (from_regex) and
# strings of the characters of a token.
# (Mostly valid, so that the fast reader often reads the whole file.)
_grammar_numbers = st.from_regex(svmlight._NUMBER, fullmatch=True)
_valid_features = st.lists(
    st.tuples(
        st.sampled_from(["", "", "", "0", "00"]),
        st.integers(0, 12),
        st.one_of(_grammar_numbers, st.floats(allow_nan=False, allow_infinity=False).map(repr)),
    ),
    unique_by=lambda t: t[1],
    max_size=5,
).map(lambda ts: [f"{zeros}{index}:{value}" for zeros, index, value in ts])
_odd_tokens = st.lists(
    st.text(alphabet="0123456789.:eE+-_x", min_size=1, max_size=8), min_size=1, max_size=1
)
_labels = st.one_of(
    *[st.sampled_from(["0", "1", "2", "-0", "30", "4.5", "1e1", "31"])] * 4, _grammar_numbers
)
_data_lines = st.builds(
    lambda label, qid, good, odd, sep: sep.join([label, qid, *good, *odd]),
    _labels,
    st.sampled_from(["qid:1"] * 8 + ["qid:-3", "qid:x", "", "qid:1_0"]),
    _valid_features,
    st.one_of(*[st.just([])] * 4, _odd_tokens),
    st.sampled_from([" ", " ", "\t", "  "]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(
        st.one_of(*[_data_lines] * 4, st.sampled_from(["", "# c", "  "])), min_size=1, max_size=6
    ),
    zero_based=st.booleans(),
    n_features=st.one_of(st.none(), st.integers(0, 13)),
)
def test_fast_reader_gives_up_or_agrees(tmp_path_factory, lines, zero_based, n_features):
    path = tmp_path_factory.mktemp("fast") / "data.txt"
    path.write_text("\n".join(lines) + "\n")
    if _fast_agrees(path, zero_based, n_features):
        try:
            data = read_svmlight(path, zero_based=zero_based, n_features=n_features)
        except DataFormatError as exc:  # parsed, then refused: a query split by another one
            assert "must be contiguous" in str(exc)
            return
        assert data.n_lines == len(lines)
