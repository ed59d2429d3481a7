"""Grids over shards (issue 36): ``cvxrank grid --backend dask --shards N`` fits every grid
point of a fold over the fold's training data split by query on the workers, and selects and
reports as the in-memory grid does.

Every grid fit certifies the measures it reports (``Task.certify``), so each reported
measure is the optimum's on both sides: the selections and the measures must be equal, the
objectives equal to the solvers' tolerance.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from toolbox import write_letor_folds

import cvxrank.cli.main as cli_main
from cvxrank.experiments.grid import Grid
from cvxrank.experiments.letor import GridResult, run_letor_grid

pytest.importorskip("dask.distributed")

pytestmark = pytest.mark.slow

OHSUMED = Path("letor3_ohsumed") / "QueryLevelNorm"


@pytest.fixture(scope="module")
def letor_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two folds of small synthetic LETOR files (noisy grades, so that C matters)."""
    return write_letor_folds(tmp_path_factory.mktemp("letor"), n_queries=12,
                             docs_per_query=(6, 14), n_features=6, noise=1.5)


def assert_same_grid(sharded: GridResult, memory: GridResult, rel: float) -> None:
    """The same selections, the same certified measures at every point, the objectives
    within ``rel``."""
    assert [f.fold for f in sharded.folds] == [f.fold for f in memory.folds]
    for mine, theirs in zip(sharded.folds, memory.folds, strict=True):
        assert mine.selected == theirs.selected, mine.fold
        for a, b in zip(mine.results, theirs.results, strict=True):
            assert a.error is None and b.error is None
            assert a.run.objective == pytest.approx(b.run.objective, rel=rel)
            for split in ("vali", "test"):
                for measure, value in a.measures[split].items():
                    if (a.certified[split][measure]["certified"]
                            and b.certified[split][measure]["certified"]):
                        assert value == b.measures[split][measure], (mine.fold, measure)


@pytest.mark.parametrize(("method", "loss", "values"), [
    ("ranksvm", "squared_hinge", (1e-3, 1e-2, 1e-1, 1.0)),
    ("ranksvm", "hinge", (1e-2, 1e-1)),
    ("irsvm", "squared_hinge", (1e-1, 1.0)),
    ("rankmm", "average", (1.0, 10.0)),
    ("dorm", "ndcg@10", (1.0, 10.0)),
])
def test_a_grid_over_shards_selects_as_in_memory(letor_dir, method, loss, values) -> None:
    grid = Grid.from_dict({"C": values})
    memory = run_letor_grid(letor_dir, method=method, loss=loss, grid=grid, select="map")
    sharded = run_letor_grid(letor_dir, method=method, loss=loss, grid=grid, select="map",
                             backend="dask", workers=2, shards=3)
    assert_same_grid(sharded, memory, rel=1e-6)


def test_ohsumed_five_folds_over_shards_select_as_in_memory(shared_data) -> None:
    """The acceptance run: OHSUMED's five folds, squared hinge, C in {1e-5, 5e-5, 1e-4,
    5e-4}, MAP on vali; each fold's training data in 4 shards on 2 workers."""
    grid = Grid.from_dict({"C": (1e-5, 5e-5, 1e-4, 5e-4)})
    root = shared_data / OHSUMED
    memory = run_letor_grid(root, method="ranksvm", loss="squared_hinge", grid=grid,
                            select="map")
    sharded = run_letor_grid(root, method="ranksvm", loss="squared_hinge", grid=grid,
                             select="map", backend="dask", workers=2, shards=4)
    assert_same_grid(sharded, memory, rel=1e-9)


def test_shards_are_an_option_of_the_dask_backend(letor_dir, capsys) -> None:
    code = cli_main.main(["grid", "--method", "ranksvm", "--data", str(letor_dir),
                          "--param", "C=0.1", "--shards", "2"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--shards is an option of --backend dask" in err
    with pytest.raises(ValueError, match="shards are for the dask backend"):
        run_letor_grid(letor_dir, method="ranksvm", grid=Grid.from_dict({"C": (0.1,)}),
                       shards=2)
