"""RankMM's convergence experiment (Agarwal & Collins 2010, Sects. 3.1-3.3), on a tiny instance.

The runs, the references and the probe of the paper's projection order; the figures and the
CSVs behind them; ``cvxrank reproduce rankmm-convergence``.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from cvxrank import plots
from cvxrank.cli.main import main as cli_main
from cvxrank.data import make_synthetic, write_svmlight
from cvxrank.experiments.rankmm_convergence import figures
from cvxrank.experiments.rankmm_convergence.protocol import SERIES, run_convergence
from cvxrank.experiments.rankmm_convergence.report import (
    FIGURES,
    summary_markdown,
    write_convergence,
)

STEPS, SEEDS = 300, 2


@pytest.fixture(scope="module")
def data():
    return make_synthetic(n_queries=6, docs_per_query=(5, 10), n_features=4, n_grades=3, seed=2)


@pytest.fixture(scope="module")
def result(data):
    return run_convergence(data, C=10.0, seeds=SEEDS, steps=STEPS, source="tiny")


@pytest.mark.slow  # a reproduction's series
def test_every_series_runs_against_its_reference(result) -> None:
    assert list(result.duals) == ["average", "max", "max_average"]
    for spec in SERIES:
        dual = result.duals[spec.loss.name]
        runs = dual.runs[spec.key]
        assert len(runs) == (SEEDS if spec.stochastic else 1)
        assert dual.reference.rel_gap <= 1e-7
        if spec.stochastic:
            assert all(r.n_iter == STEPS for r in runs) and dual.eta0[spec.key] > 0
        else:  # the same number of passes over the data
            assert runs[0].n_iter == int(np.ceil(STEPS / dual.n_blocks))
        for trace in dual.in_passes(spec.key):
            assert trace.iteration[-1] == pytest.approx(STEPS / dual.n_blocks, rel=0.2)
        # every record is feasible: D(alpha) <= d* <= p* <= P(w)
        ref = dual.reference
        for r in runs:
            assert np.all(np.asarray(r.trace.dual) <= ref.d_star * (1 + 1e-9))
            assert np.all(np.asarray(r.trace.primal) >= ref.p_star * (1 - 1e-9))


def test_factored_and_plain_eg_have_the_same_iterates(result) -> None:
    dual = result.duals["max"]
    for a, b in zip(dual.runs["seg"], dual.runs["seg-pairs"], strict=True):
        np.testing.assert_allclose(a.trace.primal, b.trace.primal, rtol=1e-10)


def test_projection_probe(result) -> None:
    dual = result.duals["max_average"]
    assert len(dual.projection_difference) == SEEDS
    for record, run in zip(dual.projection_difference, dual.runs["sgp-exact"], strict=True):
        assert record["passes"].size == len(run.trace) - 1  # every record but the last
        assert np.all((record["differ"] >= 0) & (record["differ"] <= 1))
        assert np.all(record["distance"] >= 0)


def test_summaries_and_markdown(result) -> None:
    rows = result.summaries()
    assert [r["series"] for r in rows] == [s.key for s in SERIES]
    assert {r["proven"] for r in rows} == {"O(1/sqrt(T))", "O(1/T)", "O(1/k^2)"}
    text = summary_markdown(result)
    assert text.count("\n| ") == len(SERIES) + 1  # header and one row per series
    json.dumps(result.to_dict())


@pytest.mark.slow  # a reproduction run
def test_figures_and_csvs(result, tmp_path) -> None:
    files = write_convergence(result, tmp_path)
    assert set(files) == ({f"{n}.png" for n in FIGURES} | {f"{n}.csv" for n in FIGURES}
                          | {"rankmm-convergence.csv"})
    for name in FIGURES:
        assert files[f"{name}.png"].stat().st_size > 10_000
    with files["rankmm-eg.csv"].open() as handle:
        rows = list(csv.DictReader(handle))
    assert {r["series"] for r in rows} == {"seg", "seg-pairs"}
    expected = sum(len(r.trace) for k in ("seg", "seg-pairs") for r in result.duals["max"].runs[k])
    assert len(rows) == expected
    with files["rankmm-projection.csv"].open() as handle:
        series = {r["series"] for r in csv.DictReader(handle)}
    assert series == {"sgp-exact", "sgp-paper", "difference"}
    fig = figures.figure_rankmm_duals(result)
    axes = fig.get_axes()
    assert len(axes) == 6
    assert all(ax.get_xscale() == "log" and ax.get_yscale() == "log" for ax in axes)
    guides = [ln for ax in axes for ln in ax.get_lines() if ln.get_gid() == plots.GUIDE_GID]
    assert len(guides) == 6  # one proven rate per series, on the per-pass panels


def test_plot_series_validates_x(result) -> None:
    with pytest.raises(ValueError, match="x must be one of"):
        figures.plot_rankmm_series(result.duals["max"], ["seg"], x="epoch")


@pytest.mark.parametrize("kwargs, message", [
    ({"steps": 0}, "steps"), ({"seeds": []}, "seed"), ({"step_scale": -1.0}, "step_scale"),
    ({"losses": ["hinge"]}, "unknown losses"),
])
def test_run_convergence_refuses_bad_options(data, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        run_convergence(data, **kwargs)


@pytest.mark.slow  # a reproduction run
def test_cli_reproduce(capsys, data, tmp_path) -> None:
    train = tmp_path / "train.txt"
    write_svmlight(data, train)
    out = tmp_path / "out"
    code = cli_main(["reproduce", "rankmm-convergence", "--data", str(train), "--steps", "200",
                     "--seeds", "2", "--out", str(out), "--json"])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(stdout)
    assert report["source"] == "train.txt" and report["steps"] == 200
    assert set(report["references"]) == {"average", "max", "max_average"}
    assert all((out / name).exists() for name in report["files"])
    code = cli_main(["reproduce", "rankmm-convergence", "--seeds", "0", "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("cvxrank: error: ") and err.count("\n") == 1
