"""Capabilities as typed protocols (:mod:`cvxrank.core.protocols`): every formulation the
registry builds implements the protocol of each capability it declares, signatures included;
a formulation that declares one without its members, or with a method that does not take the
protocol's arguments, is refused by name before the solver runs."""

from __future__ import annotations

import numpy as np
import pytest

from cvxrank.core import protocols
from cvxrank.core.capabilities import CAPABILITIES, missing_capabilities, refusal
from cvxrank.data.instances import QUICK
from cvxrank.errors import CapabilityError
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.registry import entries
from cvxrank.solvers.dual_gradient import solve_projected_gradient


def test_every_registered_formulation_implements_what_it_declares() -> None:
    data = QUICK[0].data()
    checked = 0
    for entry in entries():
        f = entry.build(data)
        for name in f.capabilities:
            assert CAPABILITIES[name].problems(f) == [], (f.name, name)
            checked += 1
    assert checked > 100


def test_each_protocol_names_methods_with_signatures_and_attributes() -> None:
    got = protocols.members(protocols.DualGradient)
    assert set(got) == {"dual_set", "neg_dual_grad", "dual_lipschitz",
                        "dual_strong_convexity", "project_dual", "dual_start"}
    assert got["dual_set"] is None and callable(got["neg_dual_grad"])


class _Wrong(RankSVM):
    """A squared-hinge RankSVM whose projection takes another argument."""

    def project_dual(self, alpha: np.ndarray, radius: float) -> np.ndarray:  # type: ignore[override]
        return super().project_dual(alpha)


class _Renamed(RankSVM):
    def neg_dual_grad(self, beta: np.ndarray) -> np.ndarray:  # type: ignore[override]
        return super().neg_dual_grad(beta)


class _Extra(RankSVM):
    """Extra parameters with defaults are fine."""

    def neg_dual_grad(self, alpha: np.ndarray, scale: float = 1.0) -> np.ndarray:  # type: ignore[override]
        return scale * super().neg_dual_grad(alpha)


@pytest.mark.parametrize(("cls", "what"), [
    (_Wrong, "project_dual(self, alpha: 'np.ndarray', radius: 'float')"),
    (_Renamed, "neg_dual_grad(self, beta: 'np.ndarray')"),
])
def test_a_method_that_does_not_take_the_protocol_s_arguments_is_refused(cls, what) -> None:
    f = cls(QUICK[0].data(), C=0.1, loss="squared_hinge")
    assert missing_capabilities(f, ["dual_gradient"]) == ["dual_gradient"]
    assert f"declared, but {what.split('(')[0]}" in refusal(f, "pg", ["dual_gradient"])
    assert what in refusal(f, "pg", ["dual_gradient"])
    with pytest.raises(CapabilityError, match="declared, but"):
        solve_projected_gradient(f, max_iter=2)


def test_extra_parameters_with_defaults_and_replaced_callables_conform(monkeypatch) -> None:
    f = _Extra(QUICK[0].data(), C=0.1, loss="squared_hinge")
    assert missing_capabilities(f, ["dual_gradient"]) == []
    g = RankSVM(QUICK[0].data(), C=0.1, loss="squared_hinge")
    monkeypatch.setattr(g, "project_dual", lambda alpha: alpha)
    assert missing_capabilities(g, ["dual_gradient"]) == []
    monkeypatch.setattr(g, "project_dual", lambda alpha, radius: alpha)
    assert missing_capabilities(g, ["dual_gradient"]) == ["dual_gradient"]


def test_a_declared_capability_without_its_members_is_refused() -> None:
    f = RankSVM(QUICK[0].data(), C=0.1, loss="squared_hinge")
    f.capabilities = f.capabilities | {"separation_oracle"}
    reason = refusal(f, "cutting-plane", ["separation_oracle"])
    assert "declared, but queries_with_pairs missing; separation_oracle missing" in reason
