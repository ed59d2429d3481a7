"""The benchopt benchmark ``benchmarks/benchopt_ranksvm/`` (``docs/benchopt.md``).

* ``benchopt test`` passes on it: every dataset, the objective and every solver on the small
  simulated instance (LIBLINEAR ranksvm where it can be built, else skipped as not installed);
* ``benchopt run`` on a small simulated configuration writes a results file whose curves are
  right: no solver beats the certified optimum by more than its certificate and the rounding
  of the objective allows, PRSVM+ (squared hinge) and the 1-slack cutting plane (hinge) descend
  to it, and the suboptimality and the distance to ``w_ref`` shrink together.

Both run benchopt as a fresh process with its cache, its output and the data folder in a
temporary directory (nothing is written into the benchmark folder; the real data are never
read: the LETOR dataset is skipped). Neither depends on the network or on thread counts: the
checks are on objective values, not times.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("benchopt")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "benchopt_ranksvm"

#: The small simulated problem of the run (400 documents, 2,153 pairs).
DATASET = "simulated[n_queries=20,docs_per_query=20,n_features=10,seed=0]"

#: Relative suboptimality PRSVM+ and the 1-slack must end below.
NEAR_ZERO = 1e-10

TIMEOUT = 600


def benchopt(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``python -m benchopt ARGS`` with its cache, the data folder and ``PATH``'s python (which
    ``benchopt test`` runs pytest with) pointing at this interpreter and ``tmp_path``."""
    env = dict(os.environ)
    env["BENCHOPT_CACHE"] = str(tmp_path / "cache")
    env["CVXRANK_SHARED_DATA"] = str(tmp_path / "no-data")  # the LETOR dataset skips
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("PYTEST_ADDOPTS", None)
    before = sorted(p.relative_to(BENCHMARK) for p in BENCHMARK.rglob("*")
                    if "__pycache__" not in p.parts)
    done = subprocess.run([sys.executable, "-m", "benchopt", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    after = sorted(p.relative_to(BENCHMARK) for p in BENCHMARK.rglob("*")
                   if "__pycache__" not in p.parts)
    assert after == before, "benchopt wrote into the benchmark folder"
    return done


def test_benchopt_test_passes(tmp_path: Path) -> None:
    done = benchopt(["test", str(BENCHMARK), "--skip-install", "--skip-env",
                     "-p", "no:cacheprovider", "-q"], tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The results of ``benchopt run`` on :data:`DATASET`, both losses at C = 0.01."""
    tmp_path = tmp_path_factory.mktemp("benchopt-run")
    out = tmp_path / "results.parquet"
    solvers = ["prsvm-plus", "prsvm", "1-slack", "apg", "clarabel", "linearsvc"]
    done = benchopt(["run", str(BENCHMARK), "-d", DATASET,
                     "-o", "RankSVM[loss=[squared_hinge,hinge],C=0.01]",
                     *[arg for name in solvers for arg in ("-s", name)],
                     "--max-runs", "30", "--timeout", "5", "--no-plot", "--no-display",
                     "--output", str(out)], tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert out.is_file(), done.stdout[-2000:]
    return pd.read_parquet(out)


def curve(results: pd.DataFrame, solver: str, loss: str) -> pd.DataFrame:
    """One solver's curve, in benchopt's order (increasing precision)."""
    rows = results[(results["solver_name"] == solver) & (results["p_obj_loss"] == loss)]
    assert len(rows) >= 3, (solver, loss, len(rows))
    return rows


@pytest.mark.slow  # the benchopt run: about 10 s
def test_the_run_covers_every_solver_its_loss_allows(results: pd.DataFrame) -> None:
    ran = {(loss, solver) for loss, solver in
           results[["p_obj_loss", "solver_name"]].drop_duplicates().itertuples(index=False)}
    assert ran == {("squared_hinge", s) for s in ("prsvm-plus", "prsvm", "apg", "clarabel",
                                                  "linearsvc")} | {
        ("hinge", s) for s in ("1-slack", "apg", "clarabel", "linearsvc")}


@pytest.mark.slow
def test_no_solver_beats_the_certified_optimum(results: pd.DataFrame) -> None:
    """``P(w) - P(w_ref) >= -(reference_gap + rounding of P(w_ref) + rounding of P(w))``."""
    bound = -(results["objective_reference_gap"] + results["objective_reference_value_error"]
              + results["objective_value_error"])
    below = results[results["objective_suboptimality"] < bound]
    assert below.empty, below[["solver_name", "p_obj_loss", "objective_suboptimality"]]
    # the certificate itself: a tiny certified gap at each (loss, C)
    relative = results["objective_reference_gap"] / results["objective_value"].abs()
    assert (relative <= 1e-9).all()
    assert (results["objective_value_error"] <= 1e-8 * results["objective_value"]).all()


@pytest.mark.slow
@pytest.mark.parametrize(("solver", "loss"), [("prsvm-plus", "squared_hinge"),
                                              ("1-slack", "hinge")])
def test_the_certified_solvers_descend_to_the_optimum(results: pd.DataFrame, solver: str,
                                                      loss: str) -> None:
    rows = curve(results, solver, loss)
    relative = rows["objective_relative_suboptimality"].to_numpy()
    distance = rows["objective_distance"].to_numpy()
    assert relative[0] > 1e-2  # w = 0, far from the optimum
    assert abs(relative[-1]) <= NEAR_ZERO
    assert distance[-1] <= 1e-4 * distance[0]
    # each point at least as good as the one before it, to rounding (PRSVM+'s line search and
    # the cutting plane's best point never go up)
    assert np.all(np.diff(relative) <= 1e-13), relative
    assert np.all(np.diff(rows["time"].to_numpy()) >= 0)


@pytest.mark.slow
def test_every_solver_ends_near_the_optimum(results: pd.DataFrame) -> None:
    """On this well-conditioned problem every solver ends within 1e-5 (relative) of p* when
    benchopt's criterion or its timeout stops it (LinearSVC's hinge, LIBLINEAR's dual
    coordinate descent, stalls at about 1e-6 here whatever its iteration limit)."""
    last = results.groupby(["p_obj_loss", "solver_name"])[
        "objective_relative_suboptimality"].last()
    assert (last.abs() <= 1e-5).all(), last
