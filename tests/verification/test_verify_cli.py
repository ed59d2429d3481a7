"""``cvxrank verify`` and ``cvxrank figures``: exit codes, table, JSON, figures, failures."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace

import numpy as np
import pytest
from toolbox import install_clock

from cvxrank import registry
from cvxrank.certificates.validate import RateSpec
from cvxrank.cli import main as cli_main
from cvxrank.core import trace as trace_module
from cvxrank.core.capabilities import SOLVERS, solver
from cvxrank.data.instances import QUICK
from cvxrank.registry import Entry
from cvxrank.solvers import solve_projected_gradient
from cvxrank.utils.output_files import MANIFEST
from cvxrank.verification.sweep import TRACE_COLUMNS, run_verification


@pytest.fixture
def cli(capsys):
    """Run ``cvxrank ARGS`` in-process; returns (exit code, stdout, stderr)."""
    def run(*args: str) -> tuple[int, str, str]:
        code = cli_main.main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.mark.slow  # a verify sweep
def test_quick_verify_passes_and_writes_figures(cli, tmp_path, monkeypatch) -> None:
    # the solvers' times are read from a clock that ticks at every reading: every run takes
    # time on any machine (the references may come from the session's cache, timed on the
    # wall clock: their times are only checked to be recorded)
    install_clock(monkeypatch, trace_module)
    figs = tmp_path / "figs"
    code, out, err = cli("verify", "--json", "--figures", str(figs))
    assert code == 0, err
    report = json.loads(out)
    assert report["passed"] is True and report["failed"] == []
    n_entries = len(registry.entries())
    assert len(report["pairs"]) == n_entries * len(QUICK)
    alternations = {e.name for e in registry.entries() if e.check == "alternation"}
    assert alternations  # ConeRank's
    for pair in report["pairs"]:
        assert pair["passed"] and pair["reasons"] == []
        if f"{pair['formulation']}/{pair['solver']}" in alternations:
            # judged by monotone descent: largest relative rise 0, no rate, no reference
            assert pair["rel_gap"] <= pair["tol"] and pair["fitted_label"] == "monotone"
            assert pair["rate_ok"] is None and pair["fitted"] is None
            continue
        assert 0 <= abs(pair["rel_gap"]) <= pair["tol"]
        assert pair["rate_ok"] is True and pair["fitted"] is not None
        assert math.isfinite(pair["reference_time"]) and pair["reference_time"] >= 0
        assert pair["solver_time"] > 0
        assert pair["speedup"] == pytest.approx(pair["reference_time"] / pair["solver_time"])
    pngs = sorted(figs.glob("*.png"))
    csvs = sorted(figs.glob("*.csv"))
    formulations = {e.formulation for e in registry.entries() if e.check == "reference"}
    assert len(pngs) == len(csvs) == len(formulations) * len(QUICK)
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    for path in csvs:
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert tuple(rows[0]) == TRACE_COLUMNS
        assert {r["formulation"] for r in rows} == {path.name.split("_quick-")[0]}
        # weak duality on every recorded point that has a dual value
        assert all(float(r["primal"]) >= float(r["dual"]) - 1e-9 for r in rows
                   if r["dual"] != "nan")
    with open(figs / f"ranksvm-squared_hinge_{QUICK[0].name}.csv", newline="") as fh:
        solvers = {r["solver"] for r in csv.DictReader(fh)}
    assert solvers == {e.solver for e in registry.entries()
                       if e.formulation == "ranksvm-squared_hinge"}
    assert sorted(report["figures"]) == sorted(str(p) for p in pngs + csvs)


@pytest.mark.slow  # a verify run over every pair
def test_table_lists_every_pair(cli) -> None:
    code, out, err = cli("verify", "--no-figures", "--only", "*/apg")
    assert code == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("formulation"))
    for col in ("rel.gap", "duality.gap", "fitted rate", "proven rate", "ref[s]", "solver[s]",
                "speed-up"):
        assert col in lines[header]
    rows = lines[header + 1: header + 1 + 2 * len(QUICK)]
    assert all(" apg " in r and r.rstrip().endswith("ok") for r in rows)
    assert any("O(1/k^2)" in r for r in rows)
    assert "all passed" in out


@solver("broken", needs=("dual_gradient",))
def _broken_solve(formulation, options):
    """A solver whose w is pushed off the optimum after a clean run."""
    result = solve_projected_gradient(formulation, options)
    return replace(result, w=result.w + 0.1 * (1.0 + np.abs(result.w)), solver="broken")


@solver("crashy", needs=())
def _crashing_solve(formulation, options):
    raise RuntimeError("numerical meltdown")


# the two serve this module's entries only: not listed among the solvers other tests see
for _name in ("broken", "crashy"):
    SOLVERS.pop(_name)


@pytest.mark.slow  # a verify run over every pair
def test_broken_solver_makes_verify_fail_and_names_it(cli, monkeypatch, tmp_path) -> None:
    good = registry.find_entry("ranksvm-hinge", "apg")
    broken = Entry("ranksvm-hinge", "ranksvm", _broken_solve, RateSpec.sublinear(-1),
                   loss="hinge")
    crashing = Entry("ranksvm-squared_hinge", "ranksvm", _crashing_solve, RateSpec.linear(),
                     loss="squared_hinge")
    monkeypatch.setattr(registry, "REGISTRY", [good, broken, crashing])
    code, out, err = cli("verify", "--figures", str(tmp_path))
    assert code == 1
    for inst in QUICK:
        assert f"verify failed: ranksvm-hinge/broken on {inst.name}: relative objective gap" in err
        assert (f"verify failed: ranksvm-squared_hinge/crashy on {inst.name}: the solver "
                "(seed 0) raised RuntimeError: numerical meltdown") in err
        assert f"ranksvm-hinge/apg on {inst.name}" not in err
    assert f"{2 * len(QUICK)} FAILED" in out
    assert list(tmp_path.glob("ranksvm-hinge_*.png"))  # figures are still written

    code, out, _ = cli("verify", "--json", "--no-figures")
    report = json.loads(out)
    assert code == 1 and report["passed"] is False
    assert sorted(report["failed"]) == sorted(
        f"{name} on {inst.name}" for name in ("ranksvm-hinge/broken",
                                              "ranksvm-squared_hinge/crashy") for inst in QUICK)


def test_stochastic_entry_runs_every_seed(monkeypatch) -> None:
    seen: list[int] = []

    @solver("noisy", needs=("dual_gradient",))
    def solve(formulation, options):
        seen.append(options.seed)
        return solve_projected_gradient(formulation, options)

    entry = Entry("ranksvm-squared_hinge", "ranksvm", solve, RateSpec.linear(),
                  loss="squared_hinge", stochastic=True, seeds=(3, 4, 5))
    (outcome,) = run_verification([entry], QUICK[:1])
    assert seen == [3, 4, 5] and outcome.seeds == [3, 4, 5] and len(outcome.results) == 3
    assert outcome.passed and outcome.validation.n_runs == 3


@pytest.mark.parametrize("args, message", [
    (("--only", "no-such-pair"), "--only 'no-such-pair' matches no registered pair"),
    (("--reference-solver", "NOPE"), "reference solver 'NOPE' is not an installed"),
])
def test_bad_input_exits_2(cli, args, message) -> None:
    code, out, err = cli("verify", "--no-figures", *args)
    assert code == 2 and out == ""
    assert err.startswith("cvxrank: error: ") and message in err
    assert err.count("\n") == 1


@pytest.mark.slow  # a verify sweep
def test_figures_command(cli, tmp_path) -> None:
    out_dir = tmp_path / "out"
    code, out, err = cli("figures", "--quick", "--only", "ranksvm-squared_hinge/*",
                         "--out", str(out_dir))
    assert code == 0, err
    written = out.split()
    assert len(written) == 2 * len(QUICK) + 1  # a PNG and a CSV per instance, the index
    files = [p for p in out_dir.iterdir() if p.name != MANIFEST]
    assert sorted(written) == sorted(str(p) for p in files)
    assert "formulation" not in out  # no table
    assert {p.suffix for p in files} == {".png", ".csv", ".md"}


def test_verify_writes_its_figures_outside_the_tracked_figures_folder(
        cli, tmp_path, monkeypatch) -> None:
    # `make verify` must leave `git status` clean: by default the figures go to a folder
    # inside results/ (git-ignored), never to figures/ (the curated figures kept in git)
    from cvxrank.cli.verify import DEFAULT_FIGURES

    assert DEFAULT_FIGURES == "results/verify-figures"
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("verify", "--only", "ranksvm-squared_hinge/prsvm+")
    assert code == 0, err
    written = sorted(p.name for p in (tmp_path / DEFAULT_FIGURES).iterdir())
    assert written == sorted([MANIFEST] + [f"ranksvm-squared_hinge_{i.name}{x}" for i in QUICK
                                           for x in (".png", ".csv")])
    assert f"to {DEFAULT_FIGURES}" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]
    code, out, err = cli("verify", "--only", "ranksvm-squared_hinge/prsvm+",
                         "--no-figures", "--json")
    assert code == 0 and json.loads(out)["figures"] == []
