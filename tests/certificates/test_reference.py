"""Certified reference solves: primal-dual agreement, independent cross-checks, caching, errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.svm import LinearSVC
from toolbox import install_clock, rel, sampled, signed_rel

import cvxrank.certificates.reference as reference
from cvxrank.certificates.reference import (
    CACHE_DIR_VARIABLE,
    clear_reference_cache,
    code_version,
    solve_reference,
)
from cvxrank.data import RankingData, build_pairs, make_synthetic, read_svmlight
from cvxrank.errors import CacheWarning, SolverError
from cvxrank.formulations import RankSVM
from cvxrank.tolerances import (
    FAST_SOLVER_GAP,
    FEASIBILITY,
    NEWTON_GAP,
    reference_agreement,
)

LOSSES = ["hinge", "squared_hinge"]

#: (n_queries, docs_per_query, seed, C, weighted), named by their number of pairs. ECOS
#: stops at optimal_inaccurate on the squared-hinge dual from C ~ 10 on (see
#: test_clarabel_certifies_a_wide_range_of_C), so C stays <= 3 here.
INSTANCES = {
    "47-pairs": (3, 8, 0, 1.0, False),
    "232-pairs": (6, 12, 5, 3.0, True),
    "1k-pairs": (10, 20, 1, 0.1, True),
    "5k-pairs": (20, (20, 40), 6, 1.0, True),
    "10k-pairs": (15, 50, 2, 0.01, False),
}


def instance(name: str, loss: str) -> RankSVM:
    n_queries, docs, seed, C, weighted = INSTANCES[name]
    data = make_synthetic(n_queries=n_queries, docs_per_query=docs, n_features=10, seed=seed)
    if not weighted:
        return RankSVM(data, C=C, loss=loss)
    p = build_pairs(data).n_pairs
    rng = np.random.default_rng(seed)
    return RankSVM(data, C=C, loss=loss, pair_weight=rng.uniform(0.2, 3.0, p),
                   margin=rng.uniform(0.5, 2.0, p))


def explicit_pairs(data: RankingData) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Every preference pair (i, j) and x_i - x_j, by explicit loops (independent of PairSet)."""
    X, y, ptr = data.X, data.y, data.query_ptr
    pairs = []
    for q in range(data.n_queries):
        docs = range(ptr[q], ptr[q + 1])
        pairs += [(i, j) for i in docs for j in docs if y[i] > y[j]]
    return pairs, np.array([X[i] - X[j] for i, j in pairs])


# -- primal-dual agreement of the certified reference -----------------------------------------
@pytest.mark.parametrize("solver", ["CLARABEL", "ECOS"])
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("name", sampled(INSTANCES, fast=4))
def test_reference_primal_and_dual_agree(name: str, loss: str, solver: str) -> None:
    f = instance(name, loss)
    ref = solve_reference(f, solver)
    tol = reference_agreement(solver)
    assert ref.primal_status == ref.dual_status == cp.OPTIMAL
    assert ref.solver == solver
    assert ref.rel_gap == pytest.approx(rel(ref.d_star, ref.p_star))
    assert ref.rel_gap <= tol
    assert rel(f.primal_value(ref.w), ref.p_star) <= tol
    assert rel(f.dual_value(ref.alpha), ref.p_star) <= tol
    # The dual solution gives a primal optimum through w = X^T A^T alpha. An error e in the
    # dual objective moves w by O(sqrt(e)), which costs O(sqrt(e)) in the nonsmooth hinge
    # primal but O(e) in the smooth squared-hinge primal: the hinge check is held to the
    # level a dual solver's primal iterate must reach, FAST_SOLVER_GAP.
    w_dual_tol = tol if loss == "squared_hinge" else FAST_SOLVER_GAP
    assert rel(f.primal_value(f.primal_from_dual(ref.alpha)), ref.p_star) <= w_dual_tol
    assert f.dual_infeasibility(ref.alpha) <= FEASIBILITY


def test_each_solve_is_timed(monkeypatch) -> None:
    """On a clock that ticks once per reading, each of the two solves is one tick long."""
    clock = install_clock(monkeypatch, reference)
    ref = solve_reference(instance("47-pairs", "hinge"), cache=False)
    assert ref.primal_time == ref.dual_time == clock.tick


@pytest.mark.parametrize("C", [1e-4, 1e-2, 1.0, 100.0, 1e3])
@pytest.mark.parametrize("loss", LOSSES)
def test_clarabel_certifies_a_wide_range_of_C(loss: str, C: float) -> None:
    f = instance("232-pairs", loss)
    f.set_params(C=C)
    ref = solve_reference(f)
    tol = reference_agreement("CLARABEL")
    assert ref.rel_gap <= tol
    assert rel(f.primal_value(f.primal_from_dual(ref.alpha)), ref.p_star) <= tol
    assert f.dual_infeasibility(ref.alpha) <= FEASIBILITY


@pytest.mark.parametrize("loss", LOSSES)
def test_solvers_agree_with_each_other(loss: str) -> None:
    for name in INSTANCES:
        f = instance(name, loss)
        p_clarabel = solve_reference(f, "CLARABEL").p_star
        assert rel(solve_reference(f, "ECOS").p_star, p_clarabel) <= reference_agreement("ECOS")


@pytest.mark.parametrize("solver", ["OSQP", "SCS"])
@pytest.mark.parametrize("loss", LOSSES)
def test_first_order_solvers_match_clarabel_on_a_small_instance(loss: str, solver: str) -> None:
    f = instance("47-pairs", loss)
    ref = solve_reference(f, solver)
    assert ref.rel_gap <= reference_agreement(solver)
    assert rel(ref.p_star, solve_reference(f, "CLARABEL").p_star) <= reference_agreement(solver)


@pytest.mark.slow
@pytest.mark.parametrize("loss", LOSSES)
def test_clarabel_certifies_ohsumed_fold1_test(shared_data, loss: str) -> None:
    # LETOR 3.0 OHSUMED, QueryLevelNorm Fold1 test.txt: 3,383 documents, 45 features,
    # 78,983 pairs; about 2-3 s per solve.
    path = shared_data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1" / "test.txt"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    f = RankSVM(read_svmlight(path), C=1e-3, loss=loss)
    assert f.pairs.n_pairs == 78_983
    ref = solve_reference(f)
    tol = reference_agreement("CLARABEL")
    assert ref.rel_gap <= tol
    assert rel(f.primal_value(f.primal_from_dual(ref.alpha)), ref.p_star) <= tol
    assert f.dual_infeasibility(ref.alpha) <= FEASIBILITY


# -- independent references -------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_squared_hinge_matches_lbfgs_on_explicit_pair_differences(weighted: bool) -> None:
    # scipy's L-BFGS on the smooth (C^1, piecewise quadratic, strongly convex) primal written
    # with explicit difference vectors. Quasi-Newton convergence is superlinear near the
    # optimum, so it is held to the Newton-solver level NEWTON_GAP (it reaches ~1e-14).
    data = make_synthetic(n_queries=6, docs_per_query=12, n_features=10, seed=3)
    pairs, D = explicit_pairs(data)
    rng = np.random.default_rng(3)
    c = rng.uniform(0.2, 3.0, len(D)) if weighted else np.ones(len(D))
    m = rng.uniform(0.5, 2.0, len(D)) if weighted else np.ones(len(D))
    C = 0.3
    # hand the same weights and margins to RankSVM, in the order of its own pair set
    index = {pair: k for k, pair in enumerate(pairs)}
    ours = build_pairs(data)
    perm = [index[(i, j)] for i, j in zip(ours.upper.tolist(), ours.lower.tolist(), strict=True)]
    assert sorted(perm) == list(range(len(D)))
    f = RankSVM(data, C=C, loss="squared_hinge", pair_weight=c[perm], margin=m[perm],
                pairs=ours)

    def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
        r = np.maximum(0.0, m - D @ w)
        return 0.5 * w @ w + C * (c * r) @ r, w - 2 * C * D.T @ (c * r)

    res = minimize(objective, np.zeros(data.n_features), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 10_000, "maxcor": 30})
    p_star = solve_reference(f).p_star
    assert rel(f.primal_value(res.x), objective(res.x)[0]) <= reference_agreement("CLARABEL")
    assert rel(objective(res.x)[0], p_star) <= NEWTON_GAP


@pytest.mark.parametrize("weighted", [False, True])
def test_hinge_matches_liblinear_on_explicit_pair_differences(weighted: bool) -> None:
    # LinearSVC(loss="hinge", fit_intercept=False) minimizes
    #     1/2 ||v||^2 + C_svc * sum_i s_i max(0, 1 - y_i v.z_i)
    # (s_i = sample_weight). LinearSVC needs two classes, so each pair k enters twice:
    # z = d_k / m_k with y = +1 and z = -d_k / m_k with y = -1, both with s = c_k m_k. Both
    # copies have the loss s max(0, 1 - v.d_k / m_k) = c_k max(0, m_k - v.d_k) (m_k > 0), so
    # the LinearSVC objective is 1/2 ||v||^2 + 2 C_svc sum_k c_k max(0, m_k - v.d_k): ours
    # with C = 2 C_svc, i.e. C_svc = C / 2.
    # liblinear is a dual coordinate-descent solver: it is held to the fast-solver level
    # FAST_SOLVER_GAP; with tol=1e-10 it reaches ~1e-11 on these instances.
    data = make_synthetic(n_queries=6, docs_per_query=12, n_features=10, seed=4)
    pairs = build_pairs(data)
    D = data.X[pairs.upper] - data.X[pairs.lower]
    rng = np.random.default_rng(4)
    c = rng.uniform(0.2, 3.0, len(D)) if weighted else np.ones(len(D))
    m = rng.uniform(0.5, 2.0, len(D)) if weighted else np.ones(len(D))
    C = 0.5
    f = RankSVM(data, C=C, loss="hinge", pair_weight=c, margin=m)
    Z = D / m[:, None]
    svc = LinearSVC(loss="hinge", fit_intercept=False, C=C / 2, tol=1e-10, max_iter=1_000_000,
                    dual=True)
    svc.fit(np.vstack([Z, -Z]), np.r_[np.ones(len(D)), -np.ones(len(D))],
            sample_weight=np.r_[c * m, c * m])
    w = svc.coef_.ravel()
    p_star = solve_reference(f).p_star
    assert signed_rel(f.primal_value(w), p_star) >= -reference_agreement("CLARABEL")
    assert rel(f.primal_value(w), p_star) <= FAST_SOLVER_GAP


# -- caching ----------------------------------------------------------------------------------
def test_cache_returns_the_same_reference_until_C_changes() -> None:
    clear_reference_cache()
    f = instance("47-pairs", "hinge")
    first = solve_reference(f)
    assert solve_reference(f) is first
    assert solve_reference(instance("47-pairs", "hinge")) is first  # same data, same key
    assert first.key == f"{f.cache_key()}|code={code_version(type(f))}"

    f.set_params(C=0.05)
    other = solve_reference(f)
    assert other is not first
    assert rel(other.p_star, first.p_star) > 1e3 * reference_agreement("CLARABEL")
    f.set_params(C=1.0)
    assert solve_reference(f) is first

    assert solve_reference(f, cache=False) is not first
    clear_reference_cache()
    again = solve_reference(f)
    assert again is not first
    assert rel(again.p_star, first.p_star) <= reference_agreement("CLARABEL")


def test_disk_cache_round_trip(tmp_path) -> None:
    clear_reference_cache()
    ref = solve_reference(instance("47-pairs", "squared_hinge"), cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 1
    clear_reference_cache()
    fresh = instance("47-pairs", "squared_hinge")
    loaded = solve_reference(fresh, cache_dir=tmp_path)
    assert fresh.primal().status is None and fresh.dual().status is None  # nothing solved
    assert loaded is not ref
    for field in ("p_star", "d_star", "rel_gap", "primal_status", "dual_status", "solver",
                  "primal_time", "dual_time", "key"):
        assert getattr(loaded, field) == getattr(ref, field)
    np.testing.assert_array_equal(loaded.w, ref.w)
    np.testing.assert_array_equal(loaded.alpha, ref.alpha)
    assert solve_reference(fresh, cache_dir=tmp_path) is loaded  # now in memory
    assert solve_reference(fresh, "ECOS", cache_dir=tmp_path).solver == "ECOS"
    assert len(list(tmp_path.glob("*.npz"))) == 2


def test_cache_directory_from_the_environment_is_shared_by_processes(tmp_path,
                                                                      monkeypatch) -> None:
    monkeypatch.setenv(reference.CACHE_DIR_VARIABLE, str(tmp_path))
    clear_reference_cache()
    ref = solve_reference(instance("47-pairs", "hinge"))
    assert len(list(tmp_path.glob("reference-*.npz"))) == 1
    # another process with the same variable loads the file instead of solving: it reports
    # this process's solve times, which a new solve would not reproduce
    code = textwrap.dedent("""
        from cvxrank.data import make_synthetic
        from cvxrank.formulations import RankSVM
        from cvxrank.certificates.reference import solve_reference

        data = make_synthetic(n_queries=3, docs_per_query=8, n_features=10, seed=0)
        ref = solve_reference(RankSVM(data, C=1.0, loss="hinge"))
        print(repr((ref.primal_time, ref.dual_time, ref.p_star)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == repr((ref.primal_time, ref.dual_time, ref.p_star))
    # an explicit cache_dir wins; without either, nothing is written
    other = tmp_path / "explicit"
    solve_reference(instance("47-pairs", "squared_hinge"), cache_dir=other)
    assert len(list(other.glob("*.npz"))) == 1
    assert len(list(tmp_path.glob("*.npz"))) == 1
    monkeypatch.delenv(reference.CACHE_DIR_VARIABLE)
    clear_reference_cache()
    solve_reference(instance("232-pairs", "hinge"))
    assert len(list(tmp_path.rglob("*.npz"))) == 2


# -- failures ---------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("solver,options", [("CLARABEL", {"max_iter": 1}),
                                            ("ECOS", {"max_iters": 1})])
def test_iteration_limit_raises_solver_error(monkeypatch, solver: str, options: dict) -> None:
    monkeypatch.setitem(reference.SOLVER_OPTIONS, solver, options)
    f = instance("1k-pairs", "hinge")
    match = f"status is not optimal: {solver} on ranksvm-hinge.*status user_limit"
    with pytest.raises(SolverError, match=match):
        solve_reference(f, solver, cache=False)


def test_gap_above_tolerance_raises_solver_error(monkeypatch) -> None:
    monkeypatch.setattr(reference, "reference_agreement", lambda solver: -1.0)
    match = "optima disagree: CLARABEL.*p\\* = .*d\\* = .*relative gap"
    with pytest.raises(SolverError, match=match):
        solve_reference(instance("47-pairs", "hinge"), cache=False)


def test_evaluator_disagreement_raises_solver_error(monkeypatch) -> None:
    f = instance("47-pairs", "squared_hinge")
    monkeypatch.setattr(f, "dual_value", lambda alpha: RankSVM.dual_value(f, alpha) + 1.0)
    with pytest.raises(SolverError, match="dual_value\\(alpha\\*\\)"):
        solve_reference(f, cache=False)


def test_solver_crash_raises_solver_error(monkeypatch) -> None:
    f = instance("47-pairs", "hinge")

    def crash(*args, **kwargs):
        raise cp.SolverError("Solver 'CLARABEL' failed.")

    monkeypatch.setattr(f.primal(), "solve", crash)
    with pytest.raises(SolverError, match="CLARABEL failed on the primal of ranksvm-hinge"):
        solve_reference(f, cache=False)


def test_unknown_solver_lists_the_installed_ones() -> None:
    f = instance("47-pairs", "hinge")
    with pytest.raises(ValueError, match="not an installed.*CLARABEL"):
        solve_reference(f, "NOT_A_SOLVER")
    assert solve_reference(f, "clarabel").solver == "CLARABEL"


# -- the disk cache verifies itself -------------------------------------------------------
def _entry(tmp_path):
    clear_reference_cache()
    f = instance("47-pairs", "squared_hinge")
    ref = solve_reference(f, cache_dir=tmp_path)
    (path,) = tmp_path.glob("reference-*.npz")
    clear_reference_cache()
    return f, ref, path


def _rewrite(path, **changes) -> None:
    with np.load(path, allow_pickle=False) as stored:
        fields = {k: stored[k] for k in stored.files}
    fields.update(changes)
    with open(path, "wb") as fh:
        np.savez(fh, **fields)


@pytest.mark.parametrize("raise_by", [1e-4, 1e-6])
def test_a_forged_entry_is_detected_and_solved_again(tmp_path, raise_by) -> None:
    f, ref, path = _entry(tmp_path)
    _rewrite(path, p_star=np.float64(ref.p_star * (1 + raise_by)),
             d_star=np.float64(ref.d_star * (1 + raise_by)))
    with pytest.warns(CacheWarning, match="primal_value.*deleted, solving again"):
        again = solve_reference(f, cache_dir=tmp_path)
    assert rel(again.p_star, ref.p_star) <= reference_agreement("CLARABEL")
    with np.load(path) as stored:  # the re-solved entry replaced the forged one
        assert float(stored["p_star"]) == again.p_star


def test_an_entry_with_a_moved_point_is_detected(tmp_path) -> None:
    f, ref, path = _entry(tmp_path)
    _rewrite(path, w=ref.w * 1.01)
    with pytest.warns(CacheWarning, match="primal_value"):
        solve_reference(f, cache_dir=tmp_path)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "missing-member"])
def test_a_corrupt_entry_is_deleted_and_solved_again(tmp_path, damage) -> None:
    f, ref, path = _entry(tmp_path)
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(b"not an npz file")
    else:
        with np.load(path) as stored:
            fields = {k: stored[k] for k in stored.files if k != "alpha"}
        with open(path, "wb") as fh:
            np.savez(fh, **fields)
    with pytest.warns(CacheWarning, match="unreadable"):
        again = solve_reference(f, cache_dir=tmp_path)
    assert rel(again.p_star, ref.p_star) <= reference_agreement("CLARABEL")
    assert path.is_file()  # written again, whole


def test_a_cache_path_that_is_a_file_degrades_to_no_cache(tmp_path, monkeypatch) -> None:
    clear_reference_cache()
    blocker = tmp_path / "cache"
    blocker.write_text("I am a file")
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(blocker))
    f = instance("47-pairs", "hinge")
    with pytest.warns(CacheWarning, match="running without a disk cache"):
        ref = solve_reference(f)
    assert ref.p_star > 0 and blocker.read_text() == "I am a file"
    clear_reference_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per path and process
        solve_reference(f)


def test_the_key_holds_the_code_version() -> None:
    from cvxrank.formulations.rankmm import RankMM
    from cvxrank.formulations.ranksvm import RankSVM

    assert code_version(RankSVM) != code_version(RankMM)
    assert code_version(RankSVM) == code_version(RankSVM)
