"""Consistent statuses and messages of ``cvxrank fit`` (issue 31, part 4).

* every method stopped by ``--max-iter`` ends with status ``max_iter`` and exit code 3
  (ConeRank's stochastic solvers too: they have no stopping test), with a one-line reason;
* no report prints nan or inf: a run without a certificate says so in words, its JSON has
  null; ConeRank reports what its convex blocks certify, and those certificates hold
  against the blocks' certified CVXPY optima;
* the measures that are not certified are counted, the first few named (all in JSON);
* a :class:`~cvxrank.sandbox.PairLoss` whose numpy forms are not finite at a test point is
  refused when it is made, naming the point;
* the lists of solvers and losses in error messages name only those of the chosen method
  and loss, and every solver listed runs.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest

from cvxrank import fitting
from cvxrank.certificates.reference import solve_reference
from cvxrank.cli.fit import certificate_text, uncertified_text, usable_solvers
from cvxrank.cli.main import main as cli_main
from cvxrank.data.svmlight import read_svmlight, write_svmlight
from cvxrank.data.synthetic import make_synthetic
from cvxrank.formulations.conerank import ConeRank
from cvxrank.formulations.rankmm import RankMM
from cvxrank.methods import METHODS
from cvxrank.sandbox import PairLoss
from cvxrank.solvers import solvers_for
from cvxrank.solvers.conerank import block_certificates

#: ConeRank's solvers (the stochastic Alg. 1 and the alternation, SG and EG each).
CONERANK_SOLVERS = METHODS["conerank"].solvers

#: A number the text report must never print.
NON_FINITE = re.compile(r"\b(nan|inf|infinity)\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("statuses")
    train, test = root / "train.txt", root / "test.txt"
    write_svmlight(make_synthetic(n_queries=8, docs_per_query=10, n_features=5, seed=0), train)
    write_svmlight(make_synthetic(n_queries=5, docs_per_query=10, n_features=5, seed=4), test)
    return train, test


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli_main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def strict_json(text: str) -> dict:
    """``text`` parsed as JSON that has no NaN or Infinity (which JSON does not have)."""
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the JSON report")

    return json.loads(text, parse_constant=refuse)


# -- 1. a max_iter stop is status max_iter and exit code 3 ------------------------------
STOPS = [(m, "auto") for m in METHODS] + [("conerank", s) for s in CONERANK_SOLVERS]


@pytest.mark.parametrize("method, solver", STOPS)
def test_a_max_iter_stop_exits_3_with_a_one_line_reason(capsys, files, method, solver) -> None:
    train, _ = files
    args = ("fit", "--method", method, "--solver", solver, "--train", train, "--max-iter", "1")
    code, out, err = run(capsys, *args, "--json")
    assert code == 3, err
    report = strict_json(out)
    assert report["status"] == "max_iter" and report["converged"] is False
    assert report["message"] and "\n" not in report["message"]
    code, out, err = run(capsys, *args)
    assert code == 3, err
    assert f"solver     {report['solver']} (max_iter): {report['message']}\n" in out
    code, out, err = run(capsys, *args, "--require-converged")
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(f"cvxrank: error: {report['solver']} stopped with status max_iter: ")


def test_a_converged_conerank_alternation_exits_0(capsys, files) -> None:
    train, _ = files
    code, out, err = run(capsys, "fit", "--method", "conerank", "--solver", "alternation-sg",
                         "--K", "2", "--tol", "1e-4", "--train", train, "--json")
    assert code == 0, err
    assert strict_json(out)["status"] == "converged"


# -- 2. no nan or inf; ConeRank's blocks ----------------------------------------------------
@pytest.mark.parametrize("method", list(METHODS))
def test_no_report_prints_nan_or_inf(capsys, files, method) -> None:
    train, test = files
    args = ("fit", "--method", method, "--train", train, "--test", test, "--max-iter", "1")
    code, out, err = run(capsys, *args)
    assert code == 3, err
    assert not NON_FINITE.findall(out), out
    code, out, err = run(capsys, *args, "--json")
    assert code == 3, err
    strict_json(out)


@pytest.mark.parametrize("solver", CONERANK_SOLVERS)
def test_conerank_reports_its_blocks_certificates_in_words_and_json(capsys, files,
                                                                    solver) -> None:
    train, test = files
    args = ("fit", "--method", "conerank", "--solver", solver, "--K", "3", "--train", train,
            "--test", test, "--max-iter", "2")
    code, out, err = run(capsys, *args, "--json")
    report = strict_json(out)
    assert code == 3, err
    assert report["gap"] is None and report["relative_gap"] is None
    assert report["w_radius"] is None
    assert [b["block"] for b in report["blocks"]] == ["folding-in", "basis"]
    for block in report["blocks"]:
        assert math.isfinite(block["gap"]) and block["gap"] >= 0
        assert block["radius"] is None or block["radius"] >= 0
    code, out, err = run(capsys, *args)
    lines = out.splitlines()
    assert "certified  no certified gap, no certified radius (the joint problem is not " \
           "convex; its blocks below)" in lines
    assert any(line.startswith("blocks     folding-in (W for the returned U): gap ")
               for line in lines)
    assert any(line.startswith(" " * 11 + "basis (U for the returned W): gap ")
               for line in lines)
    assert not NON_FINITE.findall(out), out


@pytest.mark.parametrize("solver", ["alternation-sg", "stochastic-sg"])
def test_the_block_certificates_hold_against_the_blocks_optima(files, solver) -> None:
    """Each block's gap bounds its suboptimality, and its radius the distance to its
    minimizer, both measured against the block's certified CVXPY optimum."""
    f = ConeRank(read_svmlight(files[0]), K=2)
    run_ = fitting.fit_formulation(f, solver, max_iter=3)
    U, W = f.split(run_.w)
    fold, basis = run_.info["blocks"]
    assert (fold, basis) == block_certificates(f, U, W)
    for block, cert, point in ((f.folding_in(U), fold, W), (f.basis_update(W), basis, U)):
        ref = solve_reference(block, cache=False)
        value = block.primal_value(point.ravel())
        assert value - ref.p_star <= cert.gap + 1e-7 * abs(ref.p_star)
        assert cert.relative_gap == pytest.approx(cert.gap / value)
        assert math.isfinite(cert.radius)  # K = 2 < 5 features: both blocks strongly convex
        distance = float(np.linalg.norm(point.ravel() - ref.w))
        assert distance <= cert.radius + 1e-5 * max(1.0, float(np.linalg.norm(ref.w)))


def test_a_missing_certificate_is_said_in_words() -> None:
    assert certificate_text(float("nan"), float("nan"), math.inf, "w") == (
        "no certified gap, no certified radius")
    assert certificate_text(2e-3, 1e-4, 0.5, "U") == "gap 0.002 (relative 1.00e-04), " \
                                                     "||U - U*|| <= 0.5"


# -- 3. the measures not certified: a count and the first few ------------------------------
def test_the_uncertified_measures_are_counted_and_the_first_named() -> None:
    names = [f"ndcg@{i}" for i in range(1, 11)] + [f"p@{i}" for i in range(1, 11)]
    nothing = {m: {"certified": False, "uncertified_queries": None}
               for m in (*names, "map", "mrr")}
    assert uncertified_text(nothing) == ("22 measures not certified (no certified radius): "
                                         "NDCG@1, NDCG@2, NDCG@3, ...")
    some = {"ndcg@1": {"certified": True, "uncertified_queries": 0},
            "ndcg@3": {"certified": False, "uncertified_queries": 1},
            "map": {"certified": False, "uncertified_queries": 4}}
    assert uncertified_text(some) == "2 measures not certified: NDCG@3 (1 query), " \
                                     "MAP (4 queries)"
    assert uncertified_text({"map": {"certified": True, "uncertified_queries": 0}}) == (
        "every measure certified")


def test_the_fit_report_counts_them_and_the_json_keeps_them_all(capsys, files) -> None:
    train, test = files
    args = ("fit", "--method", "conerank", "--train", train, "--test", test, "--max-iter",
            "1")
    _, out, _ = run(capsys, *args)
    assert "optimum's  22 measures not certified (no certified radius): NDCG@1, NDCG@2, " \
           "NDCG@3, ...\n" in out
    _, out, _ = run(capsys, *args, "--json")
    certified = strict_json(out)["certified"]
    assert len(certified) == 22 and not any(c["certified"] for c in certified.values())


# -- 4. a pair loss must be finite on the whole line ---------------------------------------
def test_a_pair_loss_not_finite_at_a_test_point_is_refused_naming_it() -> None:
    with np.errstate(all="ignore"), pytest.raises(ValueError) as refused:
        PairLoss("neglog", lambda t: -cp.log(t), lambda t: -np.log(t), lambda t: -1.0 / t,
                 lambda t: 1.0 / t**2)
    message = str(refused.value)
    point = float(re.search(r"at t = (\S+) is not finite", message).group(1))
    assert message.startswith("loss 'neglog': numpy value(t) = nan at t = ") and point <= 0
    assert "\n" not in message


@pytest.mark.parametrize("form", ["derivative", "second_derivative"])
def test_a_non_finite_derivative_alone_is_refused_naming_the_point(form) -> None:
    """Where the CVXPY expression is finite, a NaN derivative is a mismatch with it (an
    ExpressionMismatchError, a ValueError), elsewhere a form that is not finite; either way
    the message names the quantity and the point."""
    forms = {"derivative": lambda t: -2.0 * np.maximum(1.0 - t, 0.0),
             "second_derivative": lambda t: 2.0 * (t < 1.0)}
    broken = forms[form]
    forms[form] = lambda t: np.where(t < -10.0, np.nan, broken(t))
    with pytest.raises(ValueError, match=rf"numpy {form}\(t\) = nan .*at t = -1\d\.\d+ "):
        PairLoss("broken", lambda t: cp.square(cp.pos(1 - t)),
                 lambda t: np.maximum(1.0 - t, 0.0) ** 2, forms["derivative"],
                 forms["second_derivative"], curvature_range=(2.0, 2.0))


# -- 5. choice lists name only what applies ------------------------------------------------
def test_a_loss_of_another_method_is_refused_naming_the_methods_losses(capsys, files) -> None:
    code, out, err = run(capsys, "fit", "--loss", "logistic", "--train", files[0])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err == ("cvxrank: error: method ranksvm has the losses squared_hinge, hinge, "
                   "huber; got 'logistic'\n")


def test_a_too_large_problem_names_the_methods_solvers(capsys, files, monkeypatch) -> None:
    monkeypatch.setattr(fitting, "REFERENCE_MAX_VARIABLES", 10)
    code, out, err = run(capsys, "fit", "--solver", "clarabel", "--train", files[0])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "too large for the CVXPY reference solver clarabel" in err
    assert err.endswith("; the solvers for ranksvm-squared_hinge: prsvm+, prsvm, 1-slack, "
                        "apg, pg, sgd-pairs, sgd-queries\n")


def test_a_large_ohsumed_fold_names_ranksvms_solvers_only(capsys, shared_data) -> None:
    train = shared_data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1" / "train.txt"
    code, out, err = run(capsys, "fit", "--solver", "clarabel", "--train", train)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "367,663 dual variables is too large" in err
    listed = err.rstrip("\n").rsplit(": ", 1)[1].split(", ")
    assert listed[0] == "prsvm+" and not {"seg", "sgp", "kernel-newton", "block-apg",
                                          "stochastic-sg", "clarabel"} & set(listed)


@pytest.mark.parametrize("method, loss, listed, absent", [
    ("rankmm", "average", "sgp", "seg"),
    ("rankmm", "max", "seg", "sgp"),
    ("conerank", "squared_distance", "alternation-sg", "clarabel"),
    ("dorm", "ndcg@10", "cutting-plane", "clarabel"),  # 29,030,400 dual variables
    ("ranksvm", "hinge", "1-slack", "prsvm+"),
])
def test_an_unknown_solver_lists_those_of_the_method_and_loss(capsys, files, method, loss,
                                                              listed, absent) -> None:
    code, out, err = run(capsys, "fit", "--method", method, "--loss", loss, "--solver",
                         "nope", "--train", files[0])
    assert code == 2 and out == "" and err.count("\n") == 1
    names = err.rstrip("\n").rsplit(": ", 1)[1].split(", ")
    assert err.startswith("cvxrank: error: unknown solver 'nope'; the solvers for ")
    assert listed in names and absent not in names


def test_a_solver_for_another_loss_is_refused_before_the_fit(capsys, files) -> None:
    code, out, err = run(capsys, "fit", "--method", "rankmm", "--solver", "seg", "--train",
                         files[0])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "solver 'seg' cannot run on rankmm-average: it needs simplex_dual_blocks " \
           "(per-query dual blocks that are simplices, the geometry of exponentiated " \
           "gradient (RankMM-2)); the solvers for rankmm-average: cutting-plane, apg, sgp, " \
           "pg, " in err


def test_solvers_for_knows_the_losses_a_solver_handles(files) -> None:
    data = read_svmlight(files[0])
    average, top = (solvers_for(RankMM(data, loss=loss)) for loss in ("average", "max"))
    assert "sgp" in average and not {"seg", "seg-pairs"} & set(average)
    assert {"seg", "seg-pairs"} <= set(top) and "sgp" not in top


@pytest.mark.parametrize("method", list(METHODS))
def test_every_solver_listed_runs(capsys, files, method) -> None:
    """What the lists name is what runs: every solver of :func:`usable_solvers` (the CVXPY
    ones through Clarabel) fits the method's default loss."""
    train, _ = files
    row = METHODS[method]
    names = usable_solvers(row, row.build(read_svmlight(train)))
    assert names
    for name in names:
        if name in fitting.CVXPY_SOLVERS and name != "clarabel":
            continue
        code, _, err = run(capsys, "fit", "--method", method, "--solver", name, "--train",
                           train, "--max-iter", "1")
        assert code in (0, 3), (name, err)
