"""plots: the drawn data are the suboptimality, seeds give a median and a band."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from cvxrank.instances import Instance
from cvxrank.plots import (
    figure_for_formulation,
    plot_suboptimality,
    relative_suboptimality,
    write_figures,
)
from cvxrank.registry import Entry
from cvxrank.trace import SolverResult, Trace
from cvxrank.validate import RateSpec

P_STAR = 25.0


def _run(primal: np.ndarray, dual: np.ndarray | None = None, seed: int = 0) -> SolverResult:
    n = primal.size
    dual = np.full(n, np.nan) if dual is None else dual
    tr = Trace(iteration=list(range(n)), time=list(0.01 * np.arange(n) + 0.001 * seed),
               primal=list(primal), dual=list(dual), gap=list(primal - dual),
               step=[np.nan] * n)
    return SolverResult(w=np.zeros(1), alpha=None, trace=tr, converged=True, message="",
                        n_iter=n - 1, solver="toy", formulation="toy")


def _lines(ax, label):
    return [ln for ln in ax.get_lines() if ln.get_label() == label]


def test_single_run_plots_exact_suboptimality() -> None:
    k = np.arange(50)
    primal = P_STAR + P_STAR * 0.8 ** k
    dual = P_STAR - P_STAR * 0.7 ** k
    primal[10] = P_STAR - 1e-9  # below p*: not drawable on a log axis
    run = _run(primal, dual)
    ax = plot_suboptimality(run, P_STAR, label="pg")
    (line,) = _lines(ax, "pg")
    expected = (primal - P_STAR) / P_STAR
    expected[10] = np.nan
    np.testing.assert_array_equal(line.get_xdata(), k)
    np.testing.assert_allclose(line.get_ydata(), expected, rtol=1e-15)
    (dline,) = _lines(ax, "pg (dual)")
    np.testing.assert_allclose(dline.get_ydata(), (P_STAR - dual) / P_STAR, rtol=1e-15)
    np.testing.assert_allclose(dline.get_ydata(), 0.7 ** k, rtol=1e-6)
    assert dline.get_linestyle() == "--" and dline.get_color() == line.get_color()
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "iteration"
    assert not ax.collections  # one run: no band


def test_time_axis_and_scale_below_one() -> None:
    primal = 0.5 + np.array([1.0, 0.1, 0.01])
    run = _run(primal)
    ax = plot_suboptimality(run, 0.5, x="time", label="x")
    (line,) = ax.get_lines()  # no dual values: no dual curve
    np.testing.assert_allclose(line.get_xdata(), run.trace.time)
    np.testing.assert_allclose(line.get_ydata(), [1.0, 0.1, 0.01])  # max(1, |p*|) = 1
    np.testing.assert_allclose(relative_suboptimality(run, 0.5), [1.0, 0.1, 0.01])
    assert ax.get_xlabel() == "solver time [s]"
    with pytest.raises(ValueError, match="x must be"):
        plot_suboptimality(run, 0.5, x="epoch")


def test_several_seeds_median_and_band() -> None:
    k = np.arange(30)
    factors = [0.5, 0.6, 0.8]
    runs = [_run(P_STAR + P_STAR * f ** k, seed=i) for i, f in enumerate(factors)]
    ax = plot_suboptimality(runs, P_STAR, label="sgd")
    (median,) = _lines(ax, "sgd, median")
    np.testing.assert_allclose(median.get_xdata(), k)
    np.testing.assert_allclose(median.get_ydata(), 0.6 ** k, rtol=1e-10)
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 1 and bands[0].get_label() == "sgd, minmax over 3 seeds"
    ys = np.concatenate([p.vertices[:, 1] for p in bands[0].get_paths()])
    assert ys.max() == pytest.approx(1.0) and ys.min() == pytest.approx(0.5 ** 29, rel=1e-9)
    ax = plot_suboptimality(runs, P_STAR, label="q", band="quartile")
    assert [c for c in ax.collections if isinstance(c, PolyCollection)]


def test_seeds_of_different_lengths() -> None:
    runs = [_run(P_STAR + P_STAR * 0.5 ** np.arange(n)) for n in (10, 20)]
    ax = plot_suboptimality(runs, P_STAR, label="s")
    (median,) = _lines(ax, "s, median")
    y = median.get_ydata()
    assert len(y) == 20 and np.all(np.isfinite(y))
    np.testing.assert_allclose(y[10:], 0.5 ** np.arange(10, 20))  # only the longer run left


def _outcome(solver: str, runs: list[SolverResult], instance: Instance, formulation="f"):
    entry = Entry(formulation, solver, lambda d, p: None, lambda f: None,  # type: ignore
                  RateSpec.sublinear(-1))
    ref = SimpleNamespace(p_star=P_STAR, d_star=P_STAR, rel_gap=0.0)
    return SimpleNamespace(
        entry=entry, formulation=formulation, solver=solver, instance=instance, results=runs,
        seeds=list(range(len(runs))), reference=ref, passed=True, n_pairs=100,
    )


def test_figure_for_formulation_two_panels_several_solvers(tmp_path) -> None:
    inst = Instance("toy", n_queries=2, docs_per_query=3, n_features=2, seed=0,
                    params={"C": 0.5})
    k = np.arange(20)
    outs = [_outcome("pg", [_run(P_STAR + P_STAR / (k + 1))], inst),
            _outcome("apg", [_run(P_STAR + P_STAR / (k + 1) ** 2)], inst)]
    fig = figure_for_formulation(outs)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    left, right = fig.axes
    assert left.get_xlabel() == "iteration" and right.get_xlabel() == "solver time [s]"
    for ax in (left, right):
        assert {"pg", "apg"} <= {ln.get_label() for ln in ax.get_lines()}
    (apg,) = _lines(left, "apg")
    np.testing.assert_allclose(apg.get_ydata(), 1.0 / (k + 1) ** 2)
    with pytest.raises(ValueError, match="several formulations"):
        figure_for_formulation(outs + [_outcome("pg", outs[0].results, inst, formulation="g")])
    written = write_figures(outs, tmp_path / "figs")
    assert [p.suffix for p in written] == [".png", ".csv"]
    assert written[0].stat().st_size > 1000
    lines = written[1].read_text().splitlines()
    assert lines[0] == "formulation,solver,instance,seed,iteration,time,primal,dual,gap,p_star"
    assert len(lines) == 1 + 2 * 20


def test_no_pyplot_figures_left_behind() -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plot_suboptimality(_run(P_STAR + np.array([1.0, 0.5])), P_STAR)
    assert plt.get_fignums() == before
