"""The ``cvxrank data summary`` and ``cvxrank evaluate`` subcommands, run in-process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cvxrank import metrics
from cvxrank.cli.common import read_scores
from cvxrank.cli.main import COMMANDS, build_parser, main
from cvxrank.data import count_pairs, make_synthetic, read_lightgbm, read_svmlight
from cvxrank.errors import DataFormatError

OHSUMED_TRAIN = "letor3_ohsumed/QueryLevelNorm/Fold1/train.txt"
OHSUMED_TEST = "letor3_ohsumed/QueryLevelNorm/Fold1/test.txt"
MQ2008_TEST = "letor4_mq2008/Fold1/test.txt"
RANK_TRAIN = "lightgbm_lambdarank/rank.train"


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: object) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    assert err == ""
    return json.loads(out)


def measures(report: dict) -> dict:
    """The measures of an ``evaluate --json`` report: without ``k``, ``k_requested``, ``ties``."""
    return {key: v for key, v in report.items() if key not in ("k", "k_requested", "ties")}


def assert_one_line_error(code: int, out: str, err: str, *fragments: str) -> str:
    assert code == 2
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("cvxrank: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    return err


# --------------------------------------------------------------------------- data summary


def test_summary_ohsumed_acceptance(capsys, shared_data: Path):
    path = shared_data / OHSUMED_TRAIN
    report = run_json(capsys, "data", "summary", path)
    assert report["documents"] == 9219
    assert report["queries"] == 63
    assert report["features"] == 45
    assert report["grades"] == {"0": 6052, "1": 1765, "2": 1402}
    assert report["pairs"] == 367663
    assert report["format"] == "svmlight"
    assert report["source"] == str(path)
    assert report["lines"] == {"total": 9219, "data": 9219, "blank": 0, "comment": 0}
    assert report["queries_without_pairs"] == {"count": 1, "qids": [8]}
    dpq = report["documents_per_query"]
    assert dpq["min"] >= 35 and dpq["min"] <= dpq["median"] <= dpq["max"]
    data = read_svmlight(path)
    assert dpq == {
        "min": int(data.query_sizes.min()),
        "median": float(np.median(data.query_sizes)),
        "max": int(data.query_sizes.max()),
    }


def test_summary_text(capsys, shared_data: Path):
    code, out, err = run(capsys, "data", "summary", shared_data / OHSUMED_TRAIN)
    assert code == 0 and err == ""
    assert "9,219" in out and "367,663" in out
    assert "0: 6,052" in out and "1: 1,765" in out and "2: 1,402" in out
    assert "queries without pairs  1 (qid 8)" in out


def test_summary_lightgbm_autodetect(capsys, shared_data: Path):
    path = shared_data / RANK_TRAIN
    report = run_json(capsys, "data", "summary", path)
    assert report["format"] == "lightgbm"
    assert report["query_file"] == f"{path}.query"
    assert (report["documents"], report["queries"], report["features"]) == (3005, 201, 300)
    assert report["grades"] == {"0": 645, "1": 1211, "2": 858, "3": 222, "4": 69}
    data = read_lightgbm(path)
    assert report["pairs"] == int(count_pairs(data).sum())
    assert report["documents_per_query"]["min"] == 1
    assert report["documents_per_query"]["max"] == 27
    # the single-document query is kept and reported
    assert report["queries_without_pairs"]["count"] >= 1
    explicit = run_json(capsys, "data", "summary", path, "--format", "lightgbm")
    assert explicit == report
    code, out, err = run(capsys, "data", "summary", path, "--format", "svmlight")
    assert_one_line_error(code, out, err, f"{path}:1:", "qid")


def test_summary_mq2008_single_grade_queries(capsys, shared_data: Path):
    report = run_json(capsys, "data", "summary", shared_data / MQ2008_TEST)
    assert (report["documents"], report["queries"]) == (2874, 156)
    data = read_svmlight(shared_data / MQ2008_TEST)
    single = data.queries_with_single_grade()
    assert report["queries_without_pairs"]["qids"] == single.tolist()
    assert report["queries_without_pairs"]["count"] == single.size > 0


def test_summary_accounts_for_every_line(capsys, tmp_path: Path):
    path = tmp_path / "small.txt"
    path.write_text(
        "# a header\n\n2 qid:4 1:1 2:0.5 #docid = a\n0 qid:4 1:0.5\n  \n"
        "1 qid:9 2:3\n1 qid:9 1:2\n# the end\n"
    )
    report = run_json(capsys, "data", "summary", path)
    assert report["lines"] == {"total": 8, "data": 4, "blank": 2, "comment": 2}
    assert report["documents"] == 4
    assert report["queries"] == 2
    assert report["features"] == 2
    assert report["pairs"] == 1
    assert report["queries_without_pairs"] == {"count": 1, "qids": [9]}
    assert report["documents_per_query"] == {"min": 2, "median": 2, "max": 2}
    assert report["format"] == "svmlight" and report["query_file"] is None


def test_summary_lightgbm_detection_rules(capsys, tmp_path: Path):
    data = tmp_path / "r.train"
    data.write_text("1 1:1\n0 1:2\n2 2:1\n")
    (tmp_path / "r.train.query").write_text("2\n1\n")
    report = run_json(capsys, "data", "summary", data)
    assert report["format"] == "lightgbm"
    assert (report["queries"], report["pairs"]) == (2, 1)
    other = tmp_path / "sizes.txt"
    other.write_text("3\n")
    report = run_json(capsys, "data", "summary", data, "--query", other)
    assert (report["queries"], report["pairs"], report["query_file"]) == (1, 3, str(other))
    # a file with qid: is SVMlight even when a .query file sits beside it
    withqid = tmp_path / "q.txt"
    withqid.write_text("1 qid:1 1:1\n0 qid:1 1:2\n")
    (tmp_path / "q.txt.query").write_text("1\n1\n")
    report = run_json(capsys, "data", "summary", withqid)
    assert (report["format"], report["queries"]) == ("svmlight", 1)
    # sizes that do not add up
    (tmp_path / "r.train.query").write_text("2\n2\n")
    code, out, err = run(capsys, "data", "summary", data)
    assert_one_line_error(code, out, err, "r.train.query", "add up to 4", "3 data lines")


def test_summary_synthetic(capsys):
    report = run_json(capsys, "data", "summary", "--synthetic")
    data = make_synthetic(seed=0)
    assert report["format"] == "synthetic"
    assert report["lines"] is None
    assert (report["documents"], report["queries"], report["features"]) == (400, 20, 10)
    assert report["pairs"] == int(count_pairs(data).sum())
    assert report["grades"] == {str(g): c for g, c in data.grade_counts().items()}
    assert report["synthetic"]["seed"] == 0
    other = run_json(
        capsys,
        "data",
        "summary",
        "--synthetic",
        "--seed",
        "3",
        "--n-queries",
        "5",
        "--docs-per-query",
        "7",
        "--n-features",
        "4",
        "--n-grades",
        "4",
        "--noise",
        "0.1",
    )
    assert (other["documents"], other["queries"], other["features"]) == (35, 5, 4)
    assert set(other["grades"]) <= {"0", "1", "2", "3"}
    code, out, err = run(capsys, "data", "summary", "--synthetic")
    assert code == 0 and "documents" in out and "pairs" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["data", "summary"], "data summary: give a data FILE or --synthetic"),
        (["data", "summary", "x.txt", "--synthetic"], "not both"),
        (["data", "summary", "x.txt", "--seed", "3"], "--seed: only with --synthetic"),
        (["data", "summary", "--synthetic", "--format", "lightgbm"], "apply to FILE"),
        (["data", "summary", "--synthetic", "--n-queries", "0"], "--n-queries: expected an"),
        (["data", "summary", "x.txt", "--format", "csv"], "invalid choice: 'csv'"),
        (["data"], "data: the following arguments are required: SUBCOMMAND"),
        ([], "the following arguments are required: COMMAND"),
        (["nonsense"], "invalid choice: 'nonsense'"),
        (["evaluate", "--data", "x.txt"],
         "evaluate: one of the arguments --scores --model is required"),
    ],
)
def test_usage_errors_are_one_line(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert_one_line_error(code, out, err, fragment, "--help')")
    assert "usage:" not in err


def test_help_and_version(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name in COMMANDS:
        assert name in out
    code, out, _ = run(capsys, "data", "summary", "--help")
    assert code == 0 and "--synthetic" in out and "--json" in out
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("cvxrank ")


def test_every_subcommand_has_json():
    parser = build_parser(COMMANDS)
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, subparser in sub.choices.items():
        leaves = [subparser]
        nested = [a for a in subparser._actions if a.dest.endswith("_command")]
        if nested:
            leaves = list(nested[0].choices.values())
        for leaf in leaves:
            assert any("--json" in a.option_strings for a in leaf._actions), name


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("1 qid:1 1:0.5\nqid:1 1:0.5\n", ":2: label"),
        ("1 qid:1 1:0.5\n0 qid:1 1:nan\n", ":2: value of feature 1"),
        ("1 qid:1 1:0.5\n0 qid:2 1:1\n1 qid:1 1:1\n", ":3: qid:1 appears again"),
        ("", "empty"),
    ],
)
def test_summary_bad_file_is_one_line(capsys, tmp_path: Path, text, fragment):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    code, out, err = run(capsys, "data", "summary", path, "--json")
    assert_one_line_error(code, out, err, str(path), fragment)


def test_missing_file_is_one_line(capsys, tmp_path: Path):
    path = tmp_path / "nope.txt"
    code, out, err = run(capsys, "data", "summary", path)
    assert_one_line_error(code, out, err, str(path), "No such file")
    code, out, err = run(capsys, "evaluate", "--data", path, "--scores", path)
    assert_one_line_error(code, out, err, str(path))


# --------------------------------------------------------------------------- evaluate


def _write_scores(path: Path, scores) -> Path:
    path.write_text("".join(f"{float(s)!r}\n" for s in scores))
    return path


@pytest.fixture()
def ohsumed_test(shared_data: Path, tmp_path: Path):
    """OHSUMED Fold1 test data and a scores file holding its feature 1 column."""
    path = shared_data / OHSUMED_TEST
    data = read_svmlight(path)
    return path, data, _write_scores(tmp_path / "scores.txt", data.X[:, 0])


def test_evaluate_letor3_equals_metrics(capsys, ohsumed_test):
    path, data, scores = ohsumed_test
    got = run_json(capsys, "evaluate", "--data", path, "--scores", scores)
    expected = metrics.evaluate(data.y, data.X[:, 0], data.query_ptr, preset="letor3", k=10)
    assert measures(got) == expected  # JSON floats round-trip exactly
    assert got["k"] == 10 and "k_requested" not in got
    got = measures(got)
    keys = [f"ndcg@{i}" for i in range(1, 11)] + [f"p@{i}" for i in range(1, 11)]
    assert set(got) == set(keys) | {"map", "mrr"}


@pytest.mark.parametrize("preset", ["letor3", "letor4", "trec", "sklearn", "lightgbm"])
def test_evaluate_presets_and_k(capsys, ohsumed_test, preset):
    path, data, scores = ohsumed_test
    got = run_json(
        capsys, "evaluate", "--data", path, "--scores", scores, "--preset", preset, "--k", "5"
    )
    expected = metrics.evaluate(
        data.y, data.X[:, 0], data.query_ptr, preset=preset, k=5, docid=data.docid
    )
    assert measures(got) == expected
    assert "ndcg@5" in got and "ndcg@6" not in got and "p@5" in got
    assert ("mean_ndcg" in got) == (preset == "letor4")


def test_evaluate_per_query(capsys, ohsumed_test):
    path, data, scores = ohsumed_test
    got = measures(run_json(capsys, "evaluate", "--data", path, "--scores", scores, "--per-query"))
    per_query = got.pop("per_query")
    expected = metrics.evaluate(
        data.y, data.X[:, 0], data.query_ptr, preset="letor3", k=10, per_query=True
    )
    expected_per_query = expected.pop("per_query")
    assert got == expected
    assert per_query.pop("qid") == data.query_ids.tolist()
    assert per_query.pop("tied_documents") == metrics.tied_documents(
        data.X[:, 0], data.query_ptr
    ).tolist()
    assert set(per_query) == set(expected_per_query)
    for name, values in per_query.items():
        assert len(values) == data.n_queries
        want = [None if np.isnan(v) else v for v in expected_per_query[name]]
        assert values == want
    assert np.mean(per_query["ndcg@10"]) == pytest.approx(got["ndcg@10"])


def test_evaluate_text_output(capsys, ohsumed_test):
    path, data, scores = ohsumed_test
    code, out, err = run(
        capsys, "evaluate", "--data", path, "--scores", scores, "--preset", "letor4", "--per-query"
    )
    assert code == 0 and err == ""
    expected = metrics.evaluate(data.y, data.X[:, 0], data.query_ptr, preset="letor4")
    assert "NDCG@k" in out and "P@k" in out
    assert f"MAP       {expected['map']:.4f}" in out
    assert f"MRR       {expected['mrr']:.4f}" in out
    assert f"MeanNDCG  {expected['mean_ndcg']:.4f}" in out
    assert f"{expected['ndcg@10']:.4f}" in out
    for qid in data.query_ids:
        assert f"\n{qid:>10}  " in out


def test_evaluate_lightgbm_data(capsys, shared_data: Path, tmp_path: Path):
    path = shared_data / RANK_TRAIN
    data = read_lightgbm(path)
    scores = _write_scores(tmp_path / "s.txt", np.asarray(data.X[:, 10].todense()).ravel())
    got = run_json(capsys, "evaluate", "--data", path, "--scores", scores, "--preset", "lightgbm")
    expected = metrics.evaluate(data.y, np.loadtxt(scores), data.query_ptr, preset="lightgbm")
    assert measures(got) == expected


@pytest.fixture()
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.txt"
    path.write_text("# header\n2 qid:1 1:1\n0 qid:1 1:0\n\n1 qid:2 1:3\n0 qid:2 1:1\n")
    return path


def test_evaluate_scores_align_with_data_lines(capsys, small: Path, tmp_path: Path):
    scores = _write_scores(tmp_path / "s.txt", [1, 0, 0, 1])
    got = run_json(capsys, "evaluate", "--data", small, "--scores", scores, "--k", "2")
    assert got["ndcg@1"] == pytest.approx(0.5)  # query 1 right, query 2 wrong
    assert got["mrr"] == pytest.approx(0.75)


@pytest.mark.parametrize(
    "content, fragments",
    [
        ("1\n0\n0\n", ["s.txt:", "3 scores", "4 data lines", "small.txt"]),
        ("1\n0\n0\n1\n2\n", ["s.txt:", "5 scores", "4 data lines"]),
        ("1\n0\nabc\n1\n", ["s.txt:3:", "'abc' is not a number"]),
        ("1\n0\n0\nnan\n", ["s.txt:4:", "finite"]),
        ("1\ninf\n0\n1\n", ["s.txt:2:", "finite"]),
        ("1\n0\n\n1\n", ["s.txt:3:", "blank"]),
        ("1\n0 1\n0\n1\n", ["s.txt:2:", "one score per line"]),
        ("", ["s.txt", "empty"]),
    ],
)
def test_evaluate_bad_scores(capsys, small: Path, tmp_path: Path, content, fragments):
    scores = tmp_path / "s.txt"
    scores.write_text(content)
    code, out, err = run(capsys, "evaluate", "--data", small, "--scores", scores, "--json")
    assert_one_line_error(code, out, err, *fragments)


def test_evaluate_bad_data_and_preset(capsys, small: Path, tmp_path: Path):
    scores = _write_scores(tmp_path / "s.txt", [1, 0, 0, 1])
    code, out, err = run(
        capsys, "evaluate", "--data", small, "--scores", scores, "--preset", "letor5"
    )
    assert_one_line_error(code, out, err, "letor5", "letor3")
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:x\n")
    code, out, err = run(capsys, "evaluate", "--data", bad, "--scores", scores)
    assert_one_line_error(code, out, err, f"{bad}:1:")
    code, out, err = run(capsys, "evaluate", "--data", small, "--scores", scores, "--k", "0")
    assert_one_line_error(code, out, err, "evaluate: argument --k: expected an integer >= 1")


def test_read_scores(tmp_path: Path):
    path = _write_scores(tmp_path / "s.txt", [0.5, -1e300, 3])
    np.testing.assert_array_equal(read_scores(path, 3), [0.5, -1e300, 3])
    np.testing.assert_array_equal(read_scores(path), [0.5, -1e300, 3])
    path.write_bytes(b"1\r\n 2.5 \r\n")
    np.testing.assert_array_equal(read_scores(path, 2), [1, 2.5])
    with pytest.raises(DataFormatError, match="2 scores .* 3 data lines"):
        read_scores(path, 3)


# --------------------------------------------------------------------------- console script


def test_module_and_console_script_run():
    result = subprocess.run(
        [sys.executable, "-m", "cvxrank.cli.main", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "usage: cvxrank" in result.stdout and "evaluate" in result.stdout
    script = Path(sys.executable).parent / "cvxrank"
    if not script.exists():
        pytest.skip("console script not installed next to the interpreter")
    result = subprocess.run(
        [str(script), "data", "summary", "--synthetic", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["documents"] == 400
    result = subprocess.run(
        [str(script), "data", "summary", "/nonexistent/file.txt"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr == ("cvxrank: error: /nonexistent/file.txt: No such file or directory\n")


def test_binary_file_is_one_line(capsys, small: Path, tmp_path: Path):
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"1 qid:1 1:\xff\xfe\x00\n")
    code, out, err = run(capsys, "data", "summary", binary)
    assert_one_line_error(code, out, err, str(binary), "not a UTF-8 text file")
    code, out, err = run(capsys, "evaluate", "--data", small, "--scores", binary)
    assert_one_line_error(code, out, err, str(binary), "not a UTF-8 text file")


# --------------------------------------------------------------------------- k and ties


def test_evaluate_k_is_clamped_to_the_longest_query(capsys, small: Path, tmp_path: Path):
    """``--k 100000000`` on queries of two documents used to run for minutes."""
    scores = _write_scores(tmp_path / "s.txt", [1, 0, 0, 1])
    got = run_json(capsys, "evaluate", "--data", small, "--scores", scores, "--k", "100000000")
    assert (got["k"], got["k_requested"]) == (2, 100000000)
    data = read_svmlight(small)
    assert measures(got) == metrics.evaluate(data.y, [1, 0, 0, 1], data.query_ptr, k=2)
    code, out, err = run(capsys, "evaluate", "--data", small, "--scores", scores, "--k", "99")
    assert code == 0 and err == ""
    assert "k       2 (--k 99 clamped to the longest query)" in out
    assert "\n  2  " in out and "\n  3  " not in out


def test_evaluate_reports_ties(capsys, small: Path, tmp_path: Path):
    scores = _write_scores(tmp_path / "s.txt", [1, 1, 0.5, 0.25])
    got = run_json(capsys, "evaluate", "--data", small, "--scores", scores, "--per-query")
    assert got["ties"]["documents"] == 2 and got["ties"]["queries"] == 1
    assert got["ties"]["rule"] == "input_order" and "file order" in got["ties"]["description"]
    assert got["per_query"]["tied_documents"] == [2, 0]
    code, out, err = run(capsys, "evaluate", "--data", small, "--scores", scores)
    assert "ties    2 documents share their score with another document of their query " in out
    # trec: no #docid comment in this file, so the file order is kept, and the report says so
    got = run_json(capsys, "evaluate", "--data", small, "--scores", scores, "--preset", "trec")
    assert got["ties"]["rule"] == "input_order"
    assert "no document id" in got["ties"]["description"]
    assert "trec_eval" in got["ties"]["description"]


def test_evaluate_trec_ties_match_trec_eval_on_ohsumed(capsys, shared_data: Path, tmp_path):
    """Tied scores (one feature rounded to 1 decimal): ranked by docno, descending."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    path = shared_data / OHSUMED_TEST
    data = read_svmlight(path)
    tied = np.round(data.X[:, 0], 1)
    scores = _write_scores(tmp_path / "tied.txt", tied)
    got = run_json(capsys, "evaluate", "--data", path, "--scores", scores, "--preset", "trec",
                   "--per-query")
    assert got["ties"]["rule"] == "docid_descending" and got["ties"]["documents"] > 3000
    qrels, run_ = {}, {}
    for q, (a, b) in enumerate(zip(data.query_ptr[:-1], data.query_ptr[1:], strict=True)):
        qrels[str(q)] = {str(d): int(g) for d, g in zip(data.docid[a:b], data.y[a:b],
                                                         strict=True)}
        run_[str(q)] = {str(d): float(s) for d, s in zip(data.docid[a:b], tied[a:b],
                                                         strict=True)}
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank", "ndcg_cut.10",
                                                  "P.5"}).evaluate(run_)
    for ours, theirs in (("map", "map"), ("mrr", "recip_rank"), ("ndcg@10", "ndcg_cut_10"),
                         ("p@5", "P_5")):
        expected = [trec[str(q)][theirs] for q in range(data.n_queries)]
        np.testing.assert_allclose(got["per_query"][ours], expected, rtol=0, atol=1e-12)
        assert got[ours] == pytest.approx(np.mean(expected), abs=1e-12)


def test_file_order_moves_map_for_tied_predictions(capsys, shared_data: Path, tmp_path):
    """Why ``evaluate`` reports ties: OHSUMED lists relevant documents first, so constant
    scores get MAP 0.315 by file order (LETOR's rule) and 0.172 by the reverse file order."""
    from letor_eval_reference import eval_score

    path = shared_data / OHSUMED_TEST
    data = read_svmlight(path)
    constant = _write_scores(tmp_path / "c.txt", np.zeros(data.n_documents))
    got = run_json(capsys, "evaluate", "--data", path, "--scores", constant)
    assert got["ties"]["documents"] == data.n_documents
    assert got["ties"]["queries"] == data.n_queries
    labels, qids = [int(v) for v in data.y], data.qid.tolist()
    forward = eval_score(labels, [0.0] * data.n_documents, qids, 3)["map"]
    backward = eval_score(labels[::-1], [0.0] * data.n_documents, qids[::-1], 3)["map"]
    assert got["map"] == pytest.approx(forward, abs=1e-15)
    assert got["map"] - backward > 0.1


def test_command_summaries_are_the_modules_help():
    """``cvxrank --help`` lists COMMANDS' summaries without importing the modules."""
    for name, summary in COMMANDS.items():
        sub = next(a for a in build_parser([name])._actions if a.dest == "command")
        helps = {action.dest: action.help for action in sub._choices_actions}
        assert helps[name] == summary, name
