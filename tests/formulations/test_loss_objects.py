"""Pair losses as objects (:mod:`cvxrank.losses`): the built-in ones fit as their names do,
and a researcher's ramp runs on the solvers its structure allows, reaching an optimum that an
independent CVXPY problem, written here from the loss's own expression, certifies."""

from __future__ import annotations

import json
import sys
import textwrap

import cvxpy as cp
import numpy as np
import pytest

import cvxrank.cli.main as cli_main
import cvxrank.losses
from cvxrank.certificates.reference import solve_reference
from cvxrank.data import make_synthetic, write_svmlight
from cvxrank.estimators import RankSVMRanker, load_model
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.losses import PairLoss
from cvxrank.solvers import solvers_for

#: A researcher's piecewise-quadratic loss (the squared hinge with margin 2) and
#: piecewise-linear one (the hinge with margin 2, at slope 0.5), each made once.
SQUARED_2 = PairLoss.piecewise("squared_hinge_2", [2.0], [1.0], power=2)
HINGE_2 = PairLoss.piecewise("hinge_2", [2.0], [0.5], power=1)


def data(seed: int):
    return make_synthetic(n_queries=6, docs_per_query=8, n_features=5, seed=seed)


def direct_optimum(f: RankSVM, loss: PairLoss, C: float) -> float:
    """min 1/2 ||w||^2 + C sum_k loss(w . (x_i - x_j)) by Clarabel, from ``loss.expression``
    on explicitly formed pair differences (no folding, no pair operator)."""
    P = f.pairs
    X = np.asarray(f.data.X.toarray() if hasattr(f.data.X, "toarray") else f.data.X)
    D = X[P.upper] - X[P.lower]
    w = cp.Variable(X.shape[1])
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w)
                                     + C * cp.sum(loss.expression(D @ w))))
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert problem.status == cp.OPTIMAL
    return float(problem.value)


@pytest.mark.parametrize("loss", list(cvxrank.losses.BUILT_IN.values()),
                         ids=lambda loss: loss.name)
def test_the_built_in_losses_agree_with_their_cvxpy_forms(loss: PairLoss) -> None:
    """Made at import without the check (no CVXPY import), they pass it here."""
    cvxrank.losses.check_agreement(loss)
    assert cvxrank.losses.pair_loss(loss.name) is loss


def test_a_loss_object_fits_exactly_as_its_name() -> None:
    train = data(0)
    by_name = RankSVMRanker(loss="squared_hinge", C=0.1).fit(train.X, train.y,
                                                            qid=train.qid)
    by_object = RankSVMRanker(loss=cvxrank.losses.squared_hinge, C=0.1).fit(
        train.X, train.y, qid=train.qid)
    assert by_object.solver_ == by_name.solver_ == "prsvm+"
    assert by_object.objective_ == by_name.objective_
    np.testing.assert_array_equal(by_object.coef_, by_name.coef_)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("loss", "solver", "C"), [(SQUARED_2, "prsvm+", 0.05),
                                                   (SQUARED_2, "prsvm", 0.05),
                                                   (HINGE_2, "1-slack", 0.2)])
def test_a_researchers_ramp_reaches_the_cvxpy_optimum(loss, solver, C, seed) -> None:
    f = RankSVM(data(seed), C=C, loss=loss)
    assert solver in solvers_for(f)
    run = fit_formulation(f, solver)
    ref = solve_reference(f)
    direct = direct_optimum(f, loss, C)
    assert run.converged and run.solver == solver
    assert ref.p_star == pytest.approx(direct, rel=1e-7)
    assert f.primal_value(run.w) == pytest.approx(direct, rel=1e-6)
    assert f.primal_value(run.w) >= ref.d_star - 1e-9 * abs(ref.d_star)


def test_the_margin_moves_the_built_in_loss() -> None:
    """The squared hinge moved to margin 2 is the researcher's, and is the built-in squared
    hinge with every pair's margin 2 (RankSVM's level_margin): the same optimum."""
    train = data(3)
    moved = RankSVM(train, C=0.1, loss=cvxrank.losses.squared_hinge.with_margin(2.0))
    own = RankSVM(train, C=0.1, loss=SQUARED_2)
    margins = RankSVM(train, C=0.1, loss="squared_hinge", level_margin=lambda hi, lo: 2.0)
    values = [fit_formulation(f, "prsvm+").objective for f in (moved, own, margins)]
    assert values[0] == pytest.approx(values[2], rel=1e-12)
    assert values[1] == pytest.approx(values[2], rel=1e-12)


def test_a_loss_the_family_cannot_run_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="PairwiseFormulation"):
        RankSVM(data(0), C=1.0, loss=cvxrank.losses.logistic())
    with pytest.raises(ValueError, match="loss must be one of"):
        RankSVM(data(0), C=1.0, loss="logistic")
    with pytest.raises(ValueError, match="not convex"):
        PairLoss.piecewise("concave", [1.0], [-1.0], power=1)


@pytest.fixture
def loss_module(tmp_path, monkeypatch):
    """A module ``my_losses`` on the path holding the two losses."""
    (tmp_path / "my_losses.py").write_text(textwrap.dedent("""
        from cvxrank.losses import PairLoss
        squared_2 = PairLoss.piecewise("squared_hinge_2", [2.0], [1.0], power=2)
        hinge_2 = PairLoss.piecewise("hinge_2", [2.0], [0.5], power=1)
        """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("my_losses", None)


@pytest.mark.parametrize(("name", "loss", "C"), [("squared_2", SQUARED_2, 0.05),
                                                 ("hinge_2", HINGE_2, 0.2)])
def test_cvxrank_fit_takes_a_loss_as_module_object(loss_module, capsys, name, loss, C) -> None:
    train = data(4)
    path = loss_module / "train.txt"
    write_svmlight(train, path)
    model = loss_module / "model.json"
    code = cli_main.main(["fit", "--train", str(path), "--loss", f"my_losses:{name}",
                          "--C", str(C), "--json", "--save-model", str(model)])
    out = capsys.readouterr().out
    assert code == 0, out
    report = json.loads(out)
    f = RankSVM(train, C=C, loss=loss)
    assert report["loss"] == f"my_losses:{name}"
    assert report["objective"] == pytest.approx(direct_optimum(f, loss, C), rel=1e-6)
    saved = load_model(model)
    assert saved.loss.name == loss.name
    np.testing.assert_allclose(saved.predict(train.X), train.X @ saved.coef_, rtol=1e-12,
                               atol=1e-12)


def test_an_unimportable_loss_is_a_one_line_error(loss_module, capsys) -> None:
    path = loss_module / "train.txt"
    write_svmlight(data(0), path)
    code = cli_main.main(["fit", "--train", str(path), "--loss", "my_losses:nothing"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot import" in err and len(err.strip().splitlines()) == 1
