"""One way to see progress: ``--progress`` on every long command, also through a pipe.

Each command runs as a user's process (``python -m cvxrank.cli.main``) with stdout and
stderr piped (not a terminal, where progress is off by default), with ``--progress`` (lines
on stderr) and with ``--no-progress`` (nothing on stderr).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cvxrank.data.svmlight import write_svmlight
from cvxrank.data.synthetic import make_synthetic


@pytest.fixture(scope="module")
def letor_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("progress")
    (root / "Fold1").mkdir()
    for j, split in enumerate(("train", "vali", "test")):
        write_svmlight(make_synthetic(n_queries=6, docs_per_query=(6, 10), n_features=5,
                                      seed=j), root / "Fold1" / f"{split}.txt")
    return root


def cvxrank(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cvxrank.cli.main", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def commands(root: Path, tmp: Path) -> dict[str, list[object]]:
    train = root / "Fold1" / "train.txt"
    only = ("--only", "ranksvm-squared_hinge/prsvm+")
    return {
        "fit": ["fit", "--train", train, "--json"],
        "grid": ["grid", "--method", "ranksvm", "--data", root, "--param", "C=0.01,1",
                 "--select", "map", "--json"],
        "verify": ["verify", *only, "--no-figures", "--json"],
        "figures": ["figures", "--quick", *only, "--out", tmp / "figures", "--json"],
    }


@pytest.mark.parametrize("command", ["fit", "grid", *(pytest.param(c, marks=pytest.mark.slow)
                                                      for c in ("verify", "figures"))])
def test_progress_through_a_pipe(letor_dir, tmp_path, command) -> None:
    args = commands(letor_dir, tmp_path)[command]
    shown = cvxrank(*args, "--progress")
    assert shown.returncode == 0, shown.stderr
    json.loads(shown.stdout)  # the JSON report is untouched on stdout
    assert shown.stderr.strip(), f"{command} --progress printed nothing on stderr"
    if command in ("fit", "grid"):  # the same code path hides it for every command
        hidden = cvxrank(*args, "--no-progress")
        assert hidden.returncode == 0 and hidden.stderr == ""
        json.loads(hidden.stdout)


def test_reproduce_progress_through_a_pipe(shared_data, tmp_path) -> None:
    root = shared_data / "letor3_ohsumed" / "QueryLevelNorm"
    shown = cvxrank("reproduce", "chapelle-table3", "--data", root, "--folds", "1",
                    "--max-train-queries", "10", "--out", tmp_path, "--json", "--progress")
    assert shown.returncode == 0, shown.stderr
    assert "fold 1: PRSVM NDCG@10" in shown.stderr  # a line per fold
    json.loads(shown.stdout)


def test_quiet_hides_progress(letor_dir, tmp_path) -> None:
    hidden = cvxrank(*commands(letor_dir, tmp_path)["fit"], "--progress", "--quiet")
    assert hidden.returncode == 0 and hidden.stderr == ""


def test_list_options_take_spaces_or_commas() -> None:
    """``--folds 1 2``, ``--folds 1,2`` and ``--folds 1,2 5``: the same list on every
    command that takes one (the parser's own reading, no run)."""
    import argparse

    from cvxrank.cli.common import ListOption, positive_int

    parser = argparse.ArgumentParser()
    parser.add_argument("--folds", action=ListOption, element=positive_int)
    for argv, expected in ((["1", "2"], [1, 2]), (["1,2"], [1, 2]), (["1,2", "5"], [1, 2, 5])):
        assert parser.parse_args(["--folds", *argv]).folds == expected
    from cvxrank.cli.main import build_parser

    cli = build_parser(["grid", "reproduce"])
    grid = ["grid", "--method", "ranksvm", "--data", "D", "--param", "C=1", "--select", "map"]
    for argv in ([*grid, "--folds", "1", "2"], [*grid, "--folds", "1,2"],
                 ["reproduce", "chapelle-table3", "--data", "D", "--folds", "1,2"],
                 ["reproduce", "le-smola-ohsumed", "--data", "D", "--folds", "1", "2"]):
        assert cli.parse_args(argv).folds == [1, 2], argv


@pytest.mark.parametrize("argv", [
    ["grid", "--method", "ranksvm", "--data", "D", "--folds", "1,1,2"],
    ["reproduce", "chapelle-table3", "--data", "D", "--folds", "1", "2", "1"],
    ["reproduce", "agarwal-collins-fig1", "--data", "D", "--folds", "3,3"],
    ["reproduce", "conerank-table1", "--data", "D", "--folds", "2,2"],
    ["reproduce", "le-smola-ohsumed", "--data", "D", "--folds", "1,1"]])
def test_a_fold_given_twice_is_refused(argv, capsys) -> None:
    """A fold listed twice would count twice in the mean: a usage error naming it."""
    from cvxrank.cli.main import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "given more than once" in err


def test_conerank_progress_counts_passes(letor_dir) -> None:
    """ConeRank's stochastic Alg. 1 iterates over passes: its progress says so."""
    shown = cvxrank("fit", "--method", "conerank", "--train", letor_dir / "Fold1" / "train.txt",
                    "--max-iter", "2", "--progress")
    assert shown.returncode == 3, shown.stderr  # stopped at its max_iter passes
    assert "conerank squared_distance: pass " in shown.stderr
