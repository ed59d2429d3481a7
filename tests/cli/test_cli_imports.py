"""``cvxrank --help``, ``--version``, ``data`` and ``evaluate`` stay light: no CVXPY, no sklearn;
a small PRSVM+ ``fit`` imports no numba.

Each command runs in a fresh interpreter, which then reports which heavy packages it
imported (importing CVXPY alone takes seconds of CPU).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("cvxpy", "sklearn", "numba", "matplotlib", "cvxrank.fitting", "cvxrank.formulations")

PROBE = """
import importlib, json, os, sys
if os.environ.get("PRELOAD"):
    importlib.import_module(os.environ["PRELOAD"])
from cvxrank.cli.main import main
code = main(sys.argv[1:])
sys.stdout.flush()
heavy = [m for m in json.loads(os.environ["HEAVY"]) if m in sys.modules]
print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
"""


def imported(*argv: object, preload: str = "") -> tuple[int, list[str]]:
    """Run ``cvxrank *argv`` in a new interpreter: its exit code and the heavy modules loaded
    (``preload``: a module the interpreter imports first)."""
    env = {**os.environ, "HEAVY": json.dumps(HEAVY), "PRELOAD": preload}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *map(str, argv)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    report = json.loads(result.stderr.strip().splitlines()[-1])
    return report["code"], report["heavy"]


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "d.txt"
    data.write_text("2 qid:1 1:1 #docid = a\n0 qid:1 1:0 #docid = b\n1 qid:2 1:3 #docid = c\n")
    scores = tmp_path / "s.txt"
    scores.write_text("1\n0\n1\n")
    return data, scores


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["data", "--help"],
        ["data", "summary", "--synthetic", "--json"],
        ["data", "summary", "{data}"],
        ["evaluate", "--help"],
        ["evaluate", "--data", "{data}", "--scores", "{scores}", "--preset", "trec"],
        ["evaluate", "--data", "{data}", "--scores", "{scores}", "--k", "nan"],
        ["nonsense"],
    ],
)
def test_light_commands_do_not_import_cvxpy_or_sklearn(files, argv):
    data, scores = files
    code, heavy = imported(*(a.format(data=data, scores=scores) for a in argv))
    assert code in (0, 2)
    assert heavy == []


def test_the_probe_sees_heavy_imports():
    """The probe itself works: a module imported before ``main`` is reported."""
    code, heavy = imported("--version", preload="sklearn")
    assert code == 0 and "sklearn" in heavy


def test_a_small_prsvm_plus_fit_imports_neither_numba_nor_cvxpy(files):
    """A small PRSVM+ fit does not load numba (0.55-1.0 s of start-up: it runs the passes
    compiled ahead of time, or without them the numpy passes,
    :mod:`cvxrank.formulations.sorted_kernels`), nor CVXPY or scikit-learn."""
    data, _ = files
    code, heavy = imported("fit", "--method", "ranksvm", "--loss", "squared_hinge",
                           "--train", data, "--json")
    assert code == 0
    assert not {"numba", "cvxpy", "sklearn", "matplotlib"} & set(heavy)


def test_the_help_lists_every_metric_preset() -> None:
    """The presets the options' help names (without importing numpy) are the metrics
    module's, and ``fit``, ``grid`` and ``evaluate`` list them."""
    from cvxrank.cli.common import PRESET_NAMES
    from cvxrank.metrics import PRESETS

    assert PRESET_NAMES == tuple(PRESETS)
    for command in ("fit", "grid", "evaluate"):
        shown = subprocess.run([sys.executable, "-m", "cvxrank.cli.main", command, "--help"],
                               capture_output=True, text=True, check=True).stdout
        assert ", ".join(PRESET_NAMES) in " ".join(shown.split()), command
