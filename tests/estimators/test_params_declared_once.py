"""A method's parameters are declared once (:class:`cvxrank.methods.Param`, the table of
methods): the command line's option, the estimator, the formulation and a model file
accept and refuse the same values, by the same constraint."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest

from cvxrank.cli.fit import option_type
from cvxrank.data.instances import QUICK
from cvxrank.estimators import ConeRankRanker, MethodRanker, RankSVMRanker
from cvxrank.formulations.base import check_C
from cvxrank.methods import C_PARAM, METHODS, Interval

SAMPLES = (0, 1, 2, -1, 0.5, 1e-13, 1e-12, 1e12, 1e13, math.nan, math.inf, True, 2.5, 10**400,
           "vote", "linear", "nope")


def _cli_accepts(param, value) -> bool:
    try:
        parsed = option_type(param)(str(value))
    except argparse.ArgumentTypeError:
        return False
    return not param.choices or parsed in param.choices


@pytest.mark.parametrize("param", sorted({p.name: p for m in METHODS.values()
                                          for p in m.params}.values(), key=lambda p: p.name),
                         ids=lambda p: p.name)
def test_the_command_line_and_the_constraint_agree(param) -> None:
    for value in SAMPLES:
        if isinstance(value, bool) or (isinstance(value, str) and not param.choices):
            continue
        if isinstance(value, int) and abs(value) > 10**300:
            continue  # not written on a command line
        expected = param.constraint.accepts(value)
        if isinstance(param.constraint, Interval) and param.constraint.integer \
                and isinstance(value, float) and value.is_integer():
            expected = False  # "2.0" is not an integer on the command line either
        assert _cli_accepts(param, value) == expected, (param.name, value)


def test_the_formulations_check_of_c_is_the_table_s() -> None:
    for value in (1e-12, 1.0, 1e12):
        assert check_C(value) == value and C_PARAM.constraint.accepts(value)
    for value in (0.0, -1.0, 1e-13, 1e13, math.nan, math.inf):
        assert not C_PARAM.constraint.accepts(value)
        with pytest.raises(ValueError, match=r"C must be in \[1e-12, 1e\+12\]"):
            check_C(value)
    assert not C_PARAM.constraint.accepts(True) and not C_PARAM.constraint.accepts(10**400)


@pytest.mark.parametrize(("estimator", "message"), [
    (RankSVMRanker(C=1e13), r"C must be in \[1e-12, 1e\+12\]"),
    (MethodRanker(method="rankmm", C=0.0), r"C must be in \[1e-12, 1e\+12\]"),
    (ConeRankRanker(K=0), "K must be an integer >= 1, got 0"),
    (ConeRankRanker(mu=0.0), "mu must be a finite number > 0, got 0"),
    (ConeRankRanker(scoring="x"), "scoring must be one of vote, linear, got 'x'"),
])
def test_an_estimator_refuses_what_the_table_refuses_before_reading_the_data(
        estimator, message) -> None:
    data = QUICK[0].data()
    with pytest.raises(ValueError, match=message):
        estimator.fit(np.asarray(data.X), data.y, qid=data.query_index)
    with pytest.raises(ValueError, match=message):  # before the data are read
        estimator.fit(None, None)
