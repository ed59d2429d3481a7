"""Every ``cvxrank reproduce`` experiment takes ``--quick``, a small run for checks, and the
options given explicitly win over its preset."""

from __future__ import annotations

import json

import pytest

from cvxrank.cli.main import build_parser
from cvxrank.cli.main import main as cli_main
from cvxrank.experiments.chapelle.fig3 import Fig3Config
from cvxrank.experiments.chapelle.table3 import Table3Config


def _experiments() -> list[str]:
    parser = build_parser(["reproduce"])
    reproduce = next(a for a in parser._actions if a.dest == "command").choices["reproduce"]
    action = next(a for a in reproduce._actions if a.dest == "reproduce_command")
    return sorted(action.choices)


@pytest.mark.parametrize("experiment", _experiments())
def test_every_experiment_takes_quick(experiment) -> None:
    parser = build_parser(["reproduce"])
    argv = ["reproduce", experiment, "--quick"]
    if experiment not in ("chapelle-fig3", "rankmm-convergence", "le-smola-digits"):
        argv += ["--data", "somewhere"]
    args = parser.parse_args(argv)
    assert args.quick is True


def test_the_quick_presets_are_small_and_explicit_options_win() -> None:
    assert Table3Config.quick(data="x").folds == (1,)
    assert Table3Config.quick(data="x").max_train_queries == 20
    assert Table3Config.quick(data="x", folds=(2, 3)).folds == (2, 3)
    assert Fig3Config.quick().sizes == (300, 600, 1200) and Fig3Config.quick().repeat == 1
    assert Fig3Config().sizes != Fig3Config.quick().sizes


@pytest.mark.slow  # two reproduction runs
def test_quick_figure_and_convergence_runs(tmp_path, capsys) -> None:
    out = tmp_path / "f3"
    assert cli_main(["reproduce", "chapelle-fig3", "--quick", "--out", str(out),
                     "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sizes"] == [300, 600, 1200] and report["repeat"] == 1
    assert sorted({r["n"] for r in report["runs"]}) == [300, 600, 1200]
    out = tmp_path / "rc"
    assert cli_main(["reproduce", "rankmm-convergence", "--quick", "--steps", "500",
                     "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["seeds"]) == 2 and report["steps"] == 500
