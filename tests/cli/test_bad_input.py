"""Bad input on the command line: every case gets exit code 2 and ONE line on stderr.

The README promises ``cvxrank: error: <reason>`` (file and line for a malformed data file)
for bad input, argparse's own errors included; issue 11 lists the inputs that used to give a
traceback, a NaN, a hang or a memory error. Every subcommand is fed malformed files and
out-of-range options here, in-process (``main``) and, for a sample, as the installed console
script (where a traceback would really reach the user).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import cvxrank.cli.evaluate as cli_evaluate
from cvxrank.cli.main import main
from cvxrank.data.ranking_data import MAX_GRADE
from cvxrank.data.svmlight import MAX_FEATURES

GOOD = "2 qid:1 1:0.5 2:0.1\n1 qid:1 1:0.2 2:0.3\n0 qid:2 1:0.1 2:0.9\n1 qid:2 1:0.4 2:0.2\n"

# (name, text of a data file whose 4th line is bad, fragment of the message)
BAD_FILES = [
    ("grade 2000", "2000 qid:2 1:1\n", f"label 2000 is above the largest grade {MAX_GRADE}"),
    ("negative label", "-1 qid:2 1:1\n", "label -1 is negative"),
    ("label 1_0", "1_0 qid:2 1:1\n", "not a plain decimal number"),
    ("feature index inf", "1 qid:2 inf:1\n", "feature index 'inf' in 'inf:1' is not an integer"),
    ("feature index 2^63", f"1 qid:2 {2**63}:1\n", "above the limit of 16,777,216 features"),
    ("feature index 1e12", "1 qid:2 1000000000000:1\n", "above the limit of 16,777,216"),
    ("feature index 1.0", "1 qid:2 1.0:1\n", "feature index '1.0' in '1.0:1' is not an integer"),
    ("feature index +1", "1 qid:2 +1:1\n", "is not an integer"),
    ("feature value 1_000", "1 qid:2 1:1_000\n", "'1_000' is not a plain decimal number"),
    ("feature value 1e999", "1 qid:2 1:1e999\n", "expected a finite number"),
    ("qid 2^64", f"1 qid:{2**64} 1:1\n", "does not fit in a 64-bit integer"),
]


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code: int, out: str, err: str, *fragments: str) -> None:
    """Exit code 2, nothing on stdout, exactly one line on stderr naming the problem."""
    assert code == 2, (code, err)
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith("cvxrank: error: "), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


@pytest.fixture()
def good(tmp_path: Path) -> tuple[Path, Path]:
    """A well-formed data file and a scores file for it."""
    data = tmp_path / "good.txt"
    data.write_text(GOOD)
    scores = tmp_path / "good.scores"
    scores.write_text("1\n0\n0.5\n0.25\n")
    return data, scores


def _command(kind: str, data: Path, scores: Path) -> list[object]:
    return {
        "summary": ["data", "summary", data],
        "evaluate": ["evaluate", "--data", data, "--scores", scores],
        "fit": ["fit", "--train", data, "--C", "1"],
        "fit --test": ["fit", "--train", data.with_name("good.txt"), "--test", data],
    }[kind]


@pytest.mark.parametrize("kind", ["summary", "evaluate", "fit", "fit --test"])
@pytest.mark.parametrize(
    "text, fragment", [case[1:] for case in BAD_FILES], ids=[case[0] for case in BAD_FILES]
)
def test_malformed_data_files(capsys, tmp_path, good, kind, text, fragment):
    """The same refusal, naming file and line, from every subcommand that reads data."""
    bad = tmp_path / "bad.txt"
    bad.write_text("".join(GOOD.splitlines(keepends=True)[:3]) + text)
    scores = tmp_path / "bad.scores"
    scores.write_text("1\n0\n1\n0\n")
    code, out, err = run(capsys, *_command(kind, bad, scores))
    assert_one_line(code, out, err, f"{bad}:4: ", fragment)


def test_feature_index_at_the_limit_is_read(capsys, tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text(f"1 qid:1 1:1 {MAX_FEATURES}:2\n0 qid:1 1:0\n")
    code, out, err = run(capsys, "data", "summary", path)
    assert code == 0 and err == ""
    assert f"{MAX_FEATURES:,}" in out


def _non_regular(tmp_path: Path, kind: str) -> Path:
    if kind == "device":
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero")
        return Path("/dev/zero")
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        path = tmp_path / "fifo"
        os.mkfifo(path)  # opening it for reading would block: it must not be opened
        return path
    path = tmp_path / "folder"
    path.mkdir()
    return path


@pytest.mark.parametrize("kind", ["device", "fifo", "directory"])
@pytest.mark.parametrize("role", ["summary", "evaluate --data", "evaluate --scores", "--query"])
def test_non_regular_files_are_refused(capsys, tmp_path, good, kind, role):
    """``/dev/zero`` was read forever; a FIFO would block; neither is opened now."""
    special = _non_regular(tmp_path, kind)
    data, scores = good
    argv = {
        "summary": ["data", "summary", special],
        "evaluate --data": ["evaluate", "--data", special, "--scores", scores],
        "evaluate --scores": ["evaluate", "--data", data, "--scores", special],
        "--query": ["data", "summary", data, "--format", "lightgbm", "--query", special],
    }[role]
    if role == "--query":
        data.write_text("1 1:1\n0 1:2\n")
    code, out, err = run(capsys, *argv)
    assert_one_line(code, out, err, f"{special}: not a regular file")


# (argv, fragment): out-of-range, NaN and mistyped options of every subcommand.
BAD_OPTIONS = [
    (["data", "summary", "--synthetic", "--noise", "nan"], "--noise: expected a finite number >="),
    (["data", "summary", "--synthetic", "--noise", "-1"], "--noise: expected a finite number"),
    (["data", "summary", "--synthetic", "--noise", "inf"], "--noise: expected a finite number"),
    (["data", "summary", "--synthetic", "--seed", "-1"], "--seed: expected an integer >= 0"),
    (["data", "summary", "--synthetic", "--seed", "nan"], "--seed: expected an integer >= 0"),
    (["data", "summary", "--synthetic", "--seed", "1.5"], "--seed: expected an integer"),
    (["data", "summary", "--synthetic", "--n-grades", "1"], "--n-grades: expected an integer in"),
    (["data", "summary", "--synthetic", "--n-grades", str(MAX_GRADE + 2)], "in [2, 31]"),
    (["data", "summary", "--synthetic", "--n-features", str(MAX_FEATURES + 1)], "--n-features"),
    (["data", "summary", "--synthetic", "--docs-per-query", "0"], "--docs-per-query"),
    (
        ["data", "summary", "--synthetic", "--n-queries", "100000000", "--docs-per-query",
         "100000000", "--n-features", "1000"],
        "more than this machine's",
    ),
    (["evaluate", "--data", "{data}", "--scores", "{scores}", "--k", "nan"], "--k: expected"),
    (["evaluate", "--data", "{data}", "--scores", "{scores}", "--k", "-3"], "--k: expected"),
    (["evaluate", "--data", "{data}", "--scores", "{scores}", "--preset", "x"], "preset 'x'"),
    (["fit", "--train", "{data}", "--C", "nan"],
     "fit: argument --C: expected a finite number in [1e-12, 1e+12]"),
    (["fit", "--train", "{data}", "--C", "0"], "--C: expected a finite number in [1e-12, 1e+12]"),
    (["fit", "--train", "{data}", "--C=-inf"], "--C: expected a finite number in [1e-12"),
    (["fit", "--train", "{data}", "--C", "1e13"], "--C: expected a finite number in [1e-12"),
    (["fit", "--train", "{data}", "--tol", "nan"], "fit: argument --tol: expected"),
    (["fit", "--train", "{data}", "--tol", "-1"], "fit: argument --tol: expected"),
    (["fit", "--train", "{data}", "--max-iter", "0"], "fit: argument --max-iter: expected"),
    (["fit", "--train", "{data}", "--k", "0"], "fit: argument --k: expected"),
    (["reproduce", "chapelle-fig3", "--noise", "nan"], "chapelle-fig3: argument --noise"),
    (["reproduce", "chapelle-fig3", "--max-pairs", "-1"], "argument --max-pairs: expected"),
    (["reproduce", "chapelle-fig3", "--max-pairs", "nan"], "argument --max-pairs: expected"),
    (["reproduce", "chapelle-fig3", "--blas-threads", "-1"], "argument --blas-threads"),
    (
        ["reproduce", "chapelle-fig3", "--blas-threads", str((os.cpu_count() or 1) + 1)],
        "argument --blas-threads: expected an integer in [0, ",
    ),
    (["reproduce", "chapelle-fig3", "--tol", "nan"], "chapelle-fig3: argument --tol"),
    (["reproduce", "chapelle-fig3", "--tol", "0"], "chapelle-fig3: argument --tol"),
    (["reproduce", "chapelle-fig3", "--seed", "-2"], "chapelle-fig3: argument --seed"),
    (["reproduce", "chapelle-fig3", "--seed", "nan"], "chapelle-fig3: argument --seed"),
    (["reproduce", "chapelle-fig3", "--C", "nan"], "chapelle-fig3: argument --C"),
    (["reproduce", "chapelle-fig3", "--c0", "-1"], "chapelle-fig3: argument --c0"),
    (["reproduce", "chapelle-fig3", "--sizes", "100", "0"], "argument --sizes"),
    (["reproduce", "chapelle-fig3", "--d", "0"], "chapelle-fig3: argument --d"),
    (["reproduce", "chapelle-fig3", "--repeat", "0"], "chapelle-fig3: argument --repeat"),
    (["reproduce", "chapelle-table3", "--data", "x", "--C", "nan"], "table3: argument --C"),
    (["reproduce", "chapelle-table3", "--data", "x", "--tol", "inf"], "table3: argument --tol"),
    (["reproduce", "chapelle-table3", "--data", "x", "--linearsvc-tol", "0"], "--linearsvc-tol"),
    (["reproduce", "chapelle-table3", "--data", "x", "--folds", "0"], "argument --folds"),
    (["reproduce", "chapelle-table3", "--data", "x", "--max-train-queries", "0"], "queries"),
    (["reproduce", "chapelle-table3", "--data", "x", "--blas-threads", "nan"], "--blas-threads"),
    # argparse's own errors: unknown option, missing argument, bad choice, no command
    (["data", "summary", "{data}", "--bogus"], "data: unrecognized arguments: --bogus"),
    (["evaluate", "--data", "{data}", "--scores", "{scores}", "--bogus"], "evaluate: unrecog"),
    (["fit", "--train", "{data}", "--bogus"], "fit: unrecognized arguments: --bogus"),
    (["fit", "--train", "{data}", "--method", "svm"], "fit: argument --method: invalid choice"),
    (["fit"], "fit: the following arguments are required: --train"),
    (["verify", "--bogus"], "verify: unrecognized arguments: --bogus"),
    (["figures", "--quick", "extra"], "figures: unrecognized arguments: extra"),
    (["reproduce"], "reproduce: the following arguments are required: EXPERIMENT"),
    (["reproduce", "chapelle-table4"], "invalid choice: 'chapelle-table4'"),
    (["reproduce", "chapelle-table3"], "the following arguments are required: --data"),
    (["--bogus"], "the following arguments are required: COMMAND"),
    (["--bogus", "data", "summary", "{data}"], "unrecognized arguments: --bogus"),
    (["nonsense"], "invalid choice: 'nonsense'"),
    ([], "the following arguments are required: COMMAND"),
]


@pytest.mark.parametrize(
    "argv, fragment", BAD_OPTIONS, ids=[" ".join(a[:3]) + f" [{i}]" for i, (a, _) in
                                        enumerate(BAD_OPTIONS)]
)
def test_bad_options_are_one_line(capsys, good, argv, fragment):
    data, scores = good
    argv = [str(a).format(data=data, scores=scores) for a in argv]
    code, out, err = run(capsys, *argv)
    assert_one_line(code, out, err, fragment)
    assert "usage:" not in err


def test_label_rules_are_the_same_for_fit_and_evaluate(capsys, tmp_path):
    """A label -1 used to be accepted by ``fit`` and refused by ``evaluate``."""
    path = tmp_path / "neg.txt"
    path.write_text("1 qid:1 1:1\n-1 qid:1 1:0\n")
    scores = tmp_path / "s.txt"
    scores.write_text("1\n0\n")
    for argv in (["fit", "--train", path], ["evaluate", "--data", path, "--scores", scores],
                 ["data", "summary", path]):
        code, out, err = run(capsys, *argv)
        assert_one_line(code, out, err, f"{path}:2: label -1 is negative")


def test_lightgbm_format_refuses_qid(capsys, tmp_path):
    """``--format lightgbm`` on a file with ``qid:`` used to drop the qids silently."""
    path = tmp_path / "q.txt"
    path.write_text("1 qid:1 1:1\n0 qid:1 1:2\n1 qid:2 1:1\n")
    (tmp_path / "q.txt.query").write_text("1\n2\n")
    for extra in (["--format", "lightgbm"], ["--query", tmp_path / "q.txt.query"]):
        code, out, err = run(capsys, "data", "summary", path, *extra)
        assert_one_line(code, out, err, f"{path}:1: qid:1 in a file read without query ids",
                        "--format svmlight")
    # without --format, the qids are used and the .query file beside it is ignored
    code, out, err = run(capsys, "data", "summary", path)
    assert code == 0 and "svmlight" in out


@pytest.mark.parametrize(
    "exc, fragment",
    [
        (MemoryError("Unable to allocate 7.28 TiB for an array"), "out of memory (Unable to"),
        (MemoryError(), "out of memory"),
        (OverflowError("Python int too large to convert to C long"), "numeric overflow (Python"),
    ],
)
def test_memory_and_overflow_errors_are_one_line(capsys, good, monkeypatch, exc, fragment):
    """The safety net behind the limits: never a traceback for MemoryError/OverflowError."""
    data, scores = good

    def explode(*args, **kwargs):
        raise exc

    monkeypatch.setattr(cli_evaluate, "read_scores", explode)
    code, out, err = run(capsys, "evaluate", "--data", data, "--scores", scores)
    assert_one_line(code, out, err, fragment)


# ----------------------------------------------------------------- the real console script

SCRIPT_CASES = [
    (["data", "summary", "/dev/zero"], "not a regular file"),
    (["data", "summary", "--synthetic", "--noise", "nan"], "--noise"),
    (["evaluate", "--bogus"], "evaluate: the following arguments are required"),
    (["data", "summary", "{bad}"], ":1: feature index 'inf' in 'inf:1' is not an integer"),
    (["data", "summary", "{grade}"], ":1: label 2000 is above the largest grade"),
]


@pytest.mark.parametrize("argv, fragment", SCRIPT_CASES)
def test_console_script_prints_one_line(tmp_path, argv, fragment):
    if "/dev/zero" in argv and not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 inf:1\n0 qid:1 1:0\n")
    grade = tmp_path / "grade.txt"
    grade.write_text("2000 qid:1 1:1\n0 qid:1 1:0\n")
    argv = [a.format(bad=bad, grade=grade) for a in argv]
    result = subprocess.run(
        [sys.executable, "-m", "cvxrank.cli.main", *argv],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("cvxrank: error: ")
    assert fragment in result.stderr
