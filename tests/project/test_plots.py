"""plots: the drawn data are the suboptimality, seeds give a median and a band, and the
convergence figures are readable (log axes where solvers differ by orders of magnitude,
deterministic and stochastic solvers apart, legends outside the data, the gap definition on
the y axis, the proven rates as guides on every panel that has a rate, a time axis that
starts at 0, one median line per solver, coinciding curves kept apart). The index of
``figures/`` is tested in ``tests/verification/test_figures_index.py``."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from cvxrank import tolerances
from cvxrank.certificates.validate import SUBLINEAR_TAIL, RateSpec
from cvxrank.core.trace import Run, Status, Trace
from cvxrank.data.instances import Instance
from cvxrank.plots import (
    DPI,
    GUIDE_GID,
    GUIDE_OFFSET,
    MAX_GRID,
    TOL_GID,
    UNDER_STYLE,
    coinciding_solvers,
    figure_for_formulation,
    new_figure,
    plot_rate_guide,
    plot_suboptimality,
    relative_suboptimality,
    set_log_x,
    symlog_threshold,
    wants_log_axis,
    write_figures,
)

P_STAR = 25.0
O_1_K = RateSpec.sublinear(-1)
INSTANCE = Instance("toy", n_queries=2, docs_per_query=3, n_features=2, seed=0,
                    params={"C": 0.5})


def _run(primal: np.ndarray, dual: np.ndarray | None = None, seed: int = 0,
         iteration: np.ndarray | None = None, dt: float = 0.01, setup: float = 0.0,
         time: np.ndarray | None = None) -> Run:
    n = primal.size
    dual = np.full(n, np.nan) if dual is None else dual
    k = np.arange(n) if iteration is None else iteration
    clock = setup + dt * (k + 1) + 0.001 * seed if time is None else time
    tr = Trace(iteration=[int(i) for i in k], time=[float(c) for c in clock],
               primal=list(primal), dual=list(dual), gap=list(primal - dual),
               step=[np.nan] * n)
    return Run(w=np.zeros(1), alpha=None, trace=tr, status=Status.CONVERGED, message="",
               n_iter=int(k[-1]), solver="toy", formulation="toy", setup_time=setup)


def _lines(ax, label):
    return [ln for ln in ax.get_lines() if ln.get_label() == label]


def _guides(ax):
    return [ln for ln in ax.get_lines() if ln.get_gid() == GUIDE_GID]


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
    assert not _guides(ax)  # no rate given: no guide


def test_time_axis_and_the_one_gap_definition() -> None:
    primal = 0.5 + np.array([1.0, 0.1, 0.01])
    run = _run(primal)
    ax = plot_suboptimality(run, 0.5, x="time", label="x")
    (line,) = ax.get_lines()  # no dual values: no dual curve
    np.testing.assert_allclose(line.get_xdata(), run.trace.time)
    expected = [tolerances.relative_gap(p, 0.5) for p in primal]
    np.testing.assert_allclose(line.get_ydata(), expected, rtol=1e-15)
    np.testing.assert_allclose(relative_suboptimality(run, 0.5), expected, rtol=1e-15)
    assert ax.get_xlabel() == "solver time [s]"
    assert tolerances.RELATIVE_GAP_DEFINITION in ax.get_ylabel()
    with pytest.raises(ValueError, match="x must be"):
        plot_suboptimality(run, 0.5, x="epoch")


def test_elapsed_time_starts_at_the_first_record() -> None:
    run = _run(0.5 + np.array([1.0, 0.1, 0.01]), setup=5.0848)  # set-up dominates
    ax = plot_suboptimality(run, 0.5, x="elapsed", label="x")
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_xdata(), np.asarray(run.trace.time) - run.trace.time[0])
    assert line.get_xdata()[0] == 0.0 and ax.get_xlabel() == "solver time after set-up [s]"


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


def test_median_against_time_is_one_line_over_the_same_seeds() -> None:
    # five seeds on the same iterations; one starts late on the clock (a cold start) and
    # they end at different times: the median against time is taken per iteration and
    # placed at the seeds' median time, so it is one line, non-decreasing in time, through
    # the median of all five seeds at every record
    k = np.arange(0, 1000, 25)
    runs = []
    for s, (start, dt) in enumerate([(0.0, 1e-3), (0.7, 1e-3), (0.0, 2e-3), (0.0, 1.5e-3),
                                     (0.0, 0.8e-3)]):
        runs.append(_run(P_STAR + P_STAR * (1.0 + 0.1 * s) / (k + 1), seed=s, iteration=k,
                         time=start + dt * (k + 1)))
    for x in ("time", "elapsed"):
        ax = plot_suboptimality(runs, P_STAR, x=x, label="sgp")
        (median,) = _lines(ax, "sgp, median")
        xs, ys = median.get_xdata(), median.get_ydata()
        assert len(xs) == len(k) and np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))
        assert np.all(np.diff(xs) >= 0)
        np.testing.assert_allclose(ys, 1.2 / (k + 1), rtol=1e-9)  # the third of five
    ax = plot_suboptimality(runs, P_STAR, x="elapsed", label="sgp")
    xs = _lines(ax, "sgp, median")[0].get_xdata()
    assert xs[0] == 0.0
    np.testing.assert_allclose(xs, 1e-3 * k)  # the median clock since the first record


def test_median_grid_is_geometric_on_a_log_axis() -> None:
    k = np.arange(5000)
    runs = [_run(P_STAR + P_STAR / (k + 1) ** e, seed=i) for i, e in enumerate((1, 1.2))]
    linear_x = _lines(plot_suboptimality(runs, P_STAR, x="time", label="s"),
                      "s, median")[0].get_xdata()
    log_ax = set_log_x(new_figure().add_subplot(), "time")
    log_x = _lines(plot_suboptimality(runs, P_STAR, x="time", label="s", ax=log_ax),
                   "s, median")[0].get_xdata()
    # 10,000 distinct times: both grids have MAX_GRID points; the first decade of time
    # holds a tiny part of the linear grid and a quarter of the geometric one
    assert len(linear_x) == len(log_x) == MAX_GRID
    first_decade = 10 * min(linear_x)
    assert np.mean(linear_x < first_decade) < 0.01
    assert np.mean(log_x < first_decade) > 0.25


# --------------------------------------------------------------------------- rate guides


def test_sublinear_guide_has_the_proven_slope_over_the_last_decade() -> None:
    k = np.arange(0, 2001)
    s = 3.0 / (k + 1) ** 1.5  # faster than the proven O(1/k)
    ax = plot_rate_guide(RateSpec.sublinear(-1), k, s, color="C0", label="pg: proven O(1/k)")
    (guide,) = _guides(ax)
    gx, gy = guide.get_xdata(), guide.get_ydata()
    slope = np.polyfit(np.log(gx), np.log(gy), 1)[0]
    assert slope == pytest.approx(-1.0, abs=1e-9)
    assert gx[0] == pytest.approx(2000 / SUBLINEAR_TAIL) and gx[-1] == pytest.approx(2000)
    assert gy[0] == pytest.approx(GUIDE_OFFSET * s[200])  # anchored above the curve
    assert guide.get_label() == "pg: proven O(1/k)"


def test_linear_guide_contracts_by_the_proven_factor() -> None:
    k = np.arange(0, 101)
    s = 0.5 ** k
    ax = plot_rate_guide(RateSpec.linear(0.9), k, s)
    (guide,) = _guides(ax)
    gx, gy = guide.get_xdata(), guide.get_ydata()
    per_iteration = np.exp(np.polyfit(gx, np.log(gy), 1)[0])
    assert per_iteration == pytest.approx(0.9, rel=1e-9)
    assert gx[0] == pytest.approx(50.0) and gy[0] == pytest.approx(GUIDE_OFFSET * s[50])
    assert "(1 - 1.0e-01)^k" in guide.get_label()


@pytest.mark.parametrize("rate", [RateSpec.newton(15), RateSpec.linear()])
def test_no_guide_without_a_rate_curve(rate) -> None:
    k = np.arange(10)
    ax = plot_rate_guide(rate, k, 0.1 ** k)
    assert not _guides(ax)


@pytest.mark.parametrize("k", [[0.0], [0.0, 1.0]])
def test_no_guide_on_a_window_of_one_point(k) -> None:
    s = np.full(len(k), 0.5)  # a sublinear window starts at k = 1: empty, or one point
    assert not _guides(plot_rate_guide(RateSpec.sublinear(-1), np.array(k), s))


def test_guide_goes_on_the_curve_the_rate_is_about() -> None:
    k = np.arange(200)
    primal = P_STAR + P_STAR / (k + 1)
    dual = P_STAR - 0.01 * P_STAR / (k + 1) ** 2
    run = _run(primal, dual)
    for measure, curve in (("primal", 1 / (k + 1)), ("dual", 0.01 / (k + 1) ** 2)):
        ax = plot_suboptimality(run, P_STAR, label="s",
                                rate=RateSpec.sublinear(-1, measure=measure))
        (guide,) = _guides(ax)
        start = int(round(guide.get_xdata()[0]))
        assert guide.get_ydata()[0] == pytest.approx(GUIDE_OFFSET * curve[start])
    ax = plot_suboptimality(run, P_STAR, x="time", rate=RateSpec.sublinear(-1))
    assert not _guides(ax)  # the rate is per iteration
    # "auto", as validate fits it: a primal solver's run (no alpha) whose certified bound
    # draws a dual curve gets its guide on the primal curve, a dual solver's on the dual one
    for alpha, curve in ((None, 1 / (k + 1)), (np.zeros(3), 0.01 / (k + 1) ** 2)):
        ax = plot_suboptimality(run.replace(alpha=alpha), P_STAR, label="s",
                                rate=RateSpec.sublinear(-1))
        assert len(ax.get_lines()) == 3  # primal, dual and the guide
        (guide,) = _guides(ax)
        start = int(round(guide.get_xdata()[0]))
        assert guide.get_ydata()[0] == pytest.approx(GUIDE_OFFSET * curve[start])


# --------------------------------------------------------------------------- figures


def _outcome(solver: str, runs: list[Run], *, rate: RateSpec = O_1_K,
             stochastic: bool = False, tol: float = 1e-6, formulation: str = "f",
             passed: bool = True):
    entry = SimpleNamespace(formulation=formulation, solver=solver, method="toy", params={},
                            rate=rate, stochastic=stochastic, tol=tol,
                            instance_params=lambda instance: dict(instance.params))
    ref = SimpleNamespace(p_star=P_STAR, d_star=P_STAR, rel_gap=0.0)
    return SimpleNamespace(
        entry=entry, formulation=formulation, solver=solver, instance=INSTANCE, results=runs,
        seeds=list(range(len(runs))), reference=ref, passed=passed, n_pairs=100,
        validation=SimpleNamespace(rate=rate, measure="primal"),
    )


def _newton_and_first_order(n_first_order: int) -> list[SimpleNamespace]:
    """A 7-iteration Newton run and a linearly converging first-order run."""
    kn = np.arange(8)
    newton = _run(P_STAR + P_STAR * 10.0 ** (-(2.0 ** kn) + 1))
    kf = np.arange(n_first_order)
    first = _run(P_STAR + P_STAR * 0.97 ** kf)
    return [_outcome("prsvm+", [newton], rate=RateSpec.newton(15), tol=1e-8),
            _outcome("pg", [first], rate=RateSpec.linear(0.98))]


def test_figure_for_formulation_two_panels_several_solvers(tmp_path) -> None:
    k = np.arange(20)
    outs = [_outcome("pg", [_run(P_STAR + P_STAR / (k + 1))]),
            _outcome("apg", [_run(P_STAR + P_STAR / (k + 1) ** 2)], rate=RateSpec.sublinear(-2))]
    fig = figure_for_formulation(outs)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    left, right = fig.axes
    assert left.get_xlabel() == "iteration"
    assert right.get_xlabel() == "solver time after set-up [s]"
    for ax in (left, right):
        assert {"pg", "apg"} <= {ln.get_label() for ln in ax.get_lines()}
    (apg,) = _lines(left, "apg")
    np.testing.assert_allclose(apg.get_ydata(), 1.0 / (k + 1) ** 2)
    with pytest.raises(ValueError, match="several formulations"):
        figure_for_formulation(outs + [_outcome("pg", outs[0].results, formulation="g")])
    written = write_figures(outs, tmp_path / "figs")
    assert [p.suffix for p in written] == [".png", ".csv"]
    assert written[0].stat().st_size > 1000
    small = write_figures(outs, tmp_path / "small", small=True)
    from PIL import Image

    with Image.open(written[0]) as full, Image.open(small[0]) as compact:
        assert compact.mode == "P" and full.mode != "P"  # a palette PNG, at the same size
        assert compact.width == full.width == round(fig.get_figwidth() * DPI)
    assert small[0].stat().st_size < written[0].stat().st_size
    lines = written[1].read_text().splitlines()
    assert lines[0] == "formulation,solver,instance,seed,iteration,time,primal,dual,gap,p_star"
    assert len(lines) == 1 + 2 * 20


def test_log_x_axes_when_iteration_counts_differ_100x() -> None:
    fig = figure_for_formulation(_newton_and_first_order(800))  # 7 against 799 iterations
    left, right = fig.axes
    assert left.get_xscale() == "symlog"  # iteration 0 stays on the axis
    assert right.get_xscale() == "symlog"  # the solver times differ as much; 0 stays on it
    fig = figure_for_formulation(_newton_and_first_order(30))  # 7 against 29: linear
    assert [ax.get_xscale() for ax in fig.axes] == ["linear", "linear"]
    assert wants_log_axis([7, 70]) and not wants_log_axis([7, 69])
    assert not wants_log_axis([5.0])


def test_power_law_rates_get_log_axes_even_alone() -> None:
    k = np.arange(300)
    out = _outcome("apg", [_run(P_STAR + P_STAR / (k + 1) ** 2)], rate=RateSpec.sublinear(-2))
    fig = figure_for_formulation([out])
    assert [ax.get_xscale() for ax in fig.axes] == ["symlog", "symlog"]
    right = fig.axes[1]
    assert right.get_lines()[0].get_xdata()[0] == 0.0
    # linear up to the power of ten below the first positive time, only decades labelled
    assert right.xaxis.get_transform().linthresh == pytest.approx(0.01)
    fig.canvas.draw()
    assert all(not t.get_text() for t in right.xaxis.get_minorticklabels())
    assert symlog_threshold([np.array([0.0, 0.0034, 0.5])]) == pytest.approx(1e-3)
    assert symlog_threshold([np.array([0.0])]) == pytest.approx(1e-3)


def test_legend_outside_every_axes_and_gap_definition_on_y() -> None:
    outs = _newton_and_first_order(800)
    k = np.arange(0, 3000, 10)
    outs.append(_outcome("sgd", [_run(P_STAR + P_STAR / (k + 1), seed=s, iteration=k)
                                 for s in range(3)], stochastic=True, tol=1e-3))
    fig = figure_for_formulation(outs)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 2  # one per row
    boxes = [ax.get_window_extent(renderer) for ax in fig.axes]
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert not any(box.overlaps(b) for b in boxes)
        assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1)
    for ax in fig.axes[0::2]:  # left panels carry the y label
        assert tolerances.RELATIVE_GAP_DEFINITION in ax.get_ylabel()


def test_stochastic_solvers_in_their_own_row() -> None:
    outs = _newton_and_first_order(100)
    k = np.arange(0, 3000, 10)
    outs.append(_outcome("sgd", [_run(P_STAR + P_STAR * (1 + 0.1 * s) / (k + 1), seed=s,
                                      iteration=k) for s in range(5)],
                         stochastic=True, tol=1e-3))
    fig = figure_for_formulation(outs)
    assert len(fig.axes) == 4
    top, bottom = fig.axes[:2], fig.axes[2:]
    for ax in top:
        assert {ln.get_label() for ln in ax.get_lines()} >= {"prsvm+", "pg"}
        assert "sgd, median" not in {ln.get_label() for ln in ax.get_lines()}
        assert not [c for c in ax.collections if isinstance(c, PolyCollection)]
    for ax in bottom:
        assert "sgd, median" in {ln.get_label() for ln in ax.get_lines()}
        assert not {"prsvm+", "pg"} & {ln.get_label() for ln in ax.get_lines()}
        (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
        assert band.get_label() == "sgd, minmax over 5 seeds"
    assert "stochastic" in bottom[0].get_title() and "deterministic" in top[0].get_title()
    assert fig.get_suptitle() == "f on toy (100 dual variables, C=0.5)"
    legend = [t.get_text() for t in fig.axes[3].get_legend().get_texts()]
    assert any("min-max over 5 seeds" in t for t in legend)


def test_guides_tolerances_and_newton_note_in_the_figure() -> None:
    outs = _newton_and_first_order(400)
    fig = figure_for_formulation(outs)
    left, right = fig.axes
    (newton,), (pg,) = _lines(left, "prsvm+"), _lines(left, "pg")
    assert newton.get_marker() == "o" and pg.get_marker() == "None"  # 8 records, 400
    (guide,) = _guides(left)  # pg's linear rate; Newton has none
    assert guide.get_label().startswith("pg: proven") and guide.get_color() == "C1"
    assert not _guides(right)
    tols = {ln.get_label() for ln in left.get_lines() if ln.get_gid() == TOL_GID}
    assert tols == {"tol 1e-08 (prsvm+)", "tol 1e-06 (pg)"}
    legend = [t.get_text() for t in right.get_legend().get_texts()]
    assert legend[:2] == ["prsvm+", "pg"]
    assert any(t.startswith("prsvm+: proven Newton") for t in legend)
    assert guide.get_label() in legend and "tol 1e-08 (prsvm+)" in legend
    failed = _newton_and_first_order(400)
    failed[1].passed = False
    legend = [t.get_text() for t in figure_for_formulation(failed).axes[1].get_legend()
              .get_texts()]
    assert "pg (failed)" in legend


def test_legend_names_a_long_set_up() -> None:
    k = np.arange(5)
    slow = _outcome("kernel", [_run(P_STAR + P_STAR * 0.1 ** k, setup=9.13)],
                    rate=RateSpec.newton(15))
    fast = _outcome("newton", [_run(P_STAR + P_STAR * 0.2 ** k, setup=0.001)],
                    rate=RateSpec.newton(15))
    fig = figure_for_formulation([slow, fast])
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert legend[:2] == ["kernel (set-up 9.1 s)", "newton"]
    (kernel,) = _lines(fig.axes[1], "kernel")  # the axis starts at 0, not at 9.13 s
    assert kernel.get_xdata()[0] == 0.0 and max(fig.axes[1].get_xlim()) < 1.0


def test_every_stochastic_rate_gets_its_guide_on_the_curve_it_is_about() -> None:
    # RankMM's stochastic dual solvers: the proven rate is about the dual, so the dual
    # median is drawn (dashed) and the guide goes on it; SGD's is about the primal
    k = np.arange(0, 5000, 25)
    runs = [_run(P_STAR + P_STAR * (1 + 0.1 * s) / np.sqrt(k + 1),
                 dual=P_STAR - P_STAR * (1 + 0.1 * s) / (k + 1), seed=s, iteration=k)
            for s in range(5)]
    dual_rate = RateSpec.sublinear(-0.5, measure="dual")
    sgp = _outcome("sgp", runs, rate=dual_rate, stochastic=True, tol=1e-3)
    sgp.validation = SimpleNamespace(rate=dual_rate, measure="dual")
    sgd = _outcome("sgd", runs, rate=RateSpec.sublinear(-1, measure="primal"),
                   stochastic=True, tol=1e-3)
    for outcome, curve in ((sgp, 1.2 / (k + 1)), (sgd, 1.2 / np.sqrt(k + 1))):
        fig = figure_for_formulation([outcome])
        left = fig.axes[0]
        (guide,) = _guides(left)
        start = int(np.searchsorted(k, guide.get_xdata()[0]))
        assert guide.get_ydata()[0] == pytest.approx(GUIDE_OFFSET * curve[start], rel=1e-6)
        drawn = {ln.get_label() for ln in left.get_lines()}
        assert ("sgp (dual), median" in drawn) == (outcome is sgp)
        legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
        assert any(t.startswith("dashed: dual") for t in legend) == (outcome is sgp)


def test_coinciding_curves_stay_apart() -> None:
    # two implementations of one algorithm (EG's factored and plain steps): the same
    # curve per iteration; the first is drawn broad and pale under the second on the
    # iteration panel only, and the legend says so
    k = np.arange(0, 3000, 25)
    runs = [_run(P_STAR + P_STAR * (1 + 0.1 * s) / (k + 1), seed=s, iteration=k)
            for s in range(3)]
    slower = [_run(P_STAR + P_STAR * (1 + 0.1 * s) / (k + 1), seed=s, iteration=k, dt=0.02)
              for s in range(3)]
    seg = _outcome("seg", runs, stochastic=True, tol=1e-3)
    pairs = _outcome("seg-pairs", slower, stochastic=True, tol=1e-3)
    other = _outcome("other", [_run(P_STAR + P_STAR * 2 / (k + 1), seed=s, iteration=k)
                               for s in range(3)], stochastic=True, tol=1e-3)
    assert coinciding_solvers([seg, pairs, other]) == {"seg-pairs": "seg"}
    fig = figure_for_formulation([seg, pairs, other])
    left, right = fig.axes
    (under,), (over,) = _lines(left, "seg, median"), _lines(left, "seg-pairs, median")
    assert under.get_linewidth() == UNDER_STYLE["linewidth"] > over.get_linewidth()
    assert under.get_alpha() == UNDER_STYLE["alpha"] and under.get_zorder() < over.get_zorder()
    np.testing.assert_allclose(under.get_ydata(), over.get_ydata())
    assert _lines(right, "seg, median")[0].get_linewidth() == over.get_linewidth()
    legend = [t.get_text() for t in right.get_legend().get_texts()]
    assert any(t.startswith("seg-pairs\n(per iteration: the curve of seg") for t in legend)


def test_no_pyplot_figures_left_behind() -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plot_suboptimality(_run(P_STAR + np.array([1.0, 0.5])), P_STAR)
    assert plt.get_fignums() == before
