"""RankMM's query losses as objects (:mod:`cvxrank.formulations.query_losses`).

A loss object fits exactly as its name (formulation, estimator, MethodRanker, model file);
the solvers a loss allows follow from its dual blocks (a Euclidean projection for the box
and l1,inf duals, exponentiated gradient for the simplices); each loss evaluated without the
pairs equals a brute-force loop over them; an object survives pickling as itself.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from toolbox import rankmm_query_losses

from cvxrank.data.ranking_data import RankingData
from cvxrank.errors import CapabilityError
from cvxrank.estimators import MethodRanker, RankMMRanker
from cvxrank.formulations.query_losses import QUERY_LOSSES, average, max_average, maximum
from cvxrank.formulations.rankmm import RANKMM_LOSSES, RankMM
from cvxrank.methods import get
from cvxrank.solvers.rankmm import solve_seg, solve_sgp

LOSSES = (average, maximum, max_average)


def data(seed: int = 3) -> RankingData:
    rng = np.random.default_rng(seed)
    sizes = [8, 6, 10, 5]
    y = np.concatenate([rng.integers(0, 4, size=k) for k in sizes]).astype(float)
    y[:2] = [3.0, 0.0]
    X = rng.normal(size=(y.size, 5)) + 0.4 * np.outer(y, [1.0, -0.5, 0.2, 0.0, 0.1])
    return RankingData.from_arrays(X, y, qid=np.repeat(np.arange(len(sizes)), sizes))


def test_the_names_are_the_methods_table_s() -> None:
    assert tuple(QUERY_LOSSES) == RANKMM_LOSSES == get("rankmm").losses
    assert [x.label for x in LOSSES] == ["RankMM-1", "RankMM-2", "RankMM-3"]


@pytest.mark.parametrize("loss", LOSSES, ids=lambda x: x.name)
def test_a_name_stands_for_its_object(loss) -> None:
    f = RankMM(data(), C=2.0, loss=loss.name)
    assert f.loss is loss and f.name == f"rankmm-{loss.name}"
    assert f.describe()["loss"] == loss.name
    assert pickle.loads(pickle.dumps(loss)) is loss
    assert repr(loss).startswith("cvxrank.formulations.query_losses.")


@pytest.mark.parametrize("loss", LOSSES, ids=lambda x: x.name)
def test_each_loss_without_pairs_equals_the_loops_over_them(loss) -> None:
    d = data()
    f = RankMM(d, C=2.0, loss=loss)
    for seed in range(3):
        w = np.random.default_rng(seed).normal(size=d.n_features)
        assert np.allclose(f.query_losses(w), rankmm_query_losses(d, w, loss.name),
                           rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda x: x.name)
def test_the_object_fits_exactly_as_its_name(loss) -> None:
    d = data()
    by_name = RankMMRanker(C=2.0, loss=loss.name).fit(d.X, d.y, qid=d.query_index)
    by_object = RankMMRanker(C=2.0, loss=loss).fit(d.X, d.y, qid=d.query_index)
    general = MethodRanker(method="rankmm", C=2.0, loss=loss).fit(d.X, d.y, qid=d.query_index)
    assert np.array_equal(by_name.coef_, by_object.coef_)
    assert np.array_equal(by_name.coef_, general.coef_)
    assert by_name.objective_ == by_object.objective_ == general.objective_


def test_the_dual_blocks_decide_the_stochastic_solver() -> None:
    d = data()
    fits = {x.name: RankMM(d, C=2.0, loss=x) for x in LOSSES}
    assert {n: sorted(f.capabilities & {"euclidean_dual_blocks", "simplex_dual_blocks"})
            for n, f in fits.items()} == {"average": ["euclidean_dual_blocks"],
                                          "max": ["simplex_dual_blocks"],
                                          "max_average": ["euclidean_dual_blocks"]}
    with pytest.raises(CapabilityError, match="simplex_dual_blocks"):
        solve_seg(fits["average"], max_iter=5)
    with pytest.raises(CapabilityError, match="euclidean_dual_blocks"):
        solve_sgp(fits["max"], max_iter=5)
    assert solve_seg(fits["max"], max_iter=5, seed=0).n_iter == 5


def test_another_object_or_name_is_refused() -> None:
    with pytest.raises(ValueError, match="loss must be one of average, max, max_average"):
        RankMM(data(), loss="hinge")
    with pytest.raises(ValueError, match="takes one of its losses"):
        get("rankmm").check_loss(object())
