"""Le & Smola's diversity constraints (Sect. 5.1) against brute force.

The LP relaxation of (33) is solved in CVXPY on 100 seeded random partitions per check and
compared with the integer optimum found by enumerating every assignment of the top
positions; total unimodularity (Theorem 3, Corollary 4) is also checked directly, by every
square submatrix of small constraint matrices. The weighted, overlapping extension is shown
not to be TU (an odd cycle of sets), with a strictly fractional LP optimum. The test-time
rule is compared with enumeration under decreasing position weights.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cvxrank.oracles.diversity import (
    INTEGRALITY_TOLERANCE,
    constraint_matrix,
    diverse_ranking,
    diversity_integer_optimum,
    diversity_lp,
    group_matrix,
)

INSTANCES = 100


def _random_partition(rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Labels of 2..7 documents in 1..l groups (every label used) and a feasible n <= 4."""
    documents = int(rng.integers(2, 8))
    groups = int(rng.integers(1, documents + 1))
    labels = np.concatenate([np.arange(groups), rng.integers(0, groups, size=documents - groups)])
    rng.shuffle(labels)
    return labels.astype(np.int64), int(rng.integers(1, min(groups, 4) + 1))


def _determinants_in_unit_set(A: np.ndarray) -> bool:
    """Whether every square submatrix of A has determinant in {-1, 0, 1}."""
    rows, cols = A.shape
    for k in range(1, min(rows, cols) + 1):
        for r in itertools.combinations(range(rows), k):
            for c in itertools.combinations(range(cols), k):
                if abs(round(np.linalg.det(A[np.ix_(r, c)]))) > 1:
                    return False
    return True


def _odd_cycle(size: int) -> np.ndarray:
    """Weights of `size` overlapping sets {i, i + 1 mod size} (size odd): a column has 2 entries in
    (32) alone, 3 with (31), and the sets' incidence matrix has determinant 2."""
    W = np.zeros((size, size))
    for s in range(size):
        W[s, [s, (s + 1) % size]] = 1.0
    return W


@pytest.mark.parametrize(
    ("labels", "n"), [([0, 1, 2, 3], 2), ([0, 0, 1, 2], 2), ([0, 1, 1, 0], 2), ([0, 0, 1], 1)]
)
def test_constraint_matrix_of_a_partition_is_totally_unimodular(labels, n):
    A_positions, A_groups = constraint_matrix(np.array(labels), len(labels), n)
    A = np.vstack([A_positions, A_groups])
    assert np.all(np.count_nonzero(A, axis=0) == 2)  # the proof of Corollary 4
    assert _determinants_in_unit_set(A)


def test_overlapping_sets_are_not_totally_unimodular():
    A_positions, A_groups = constraint_matrix(_odd_cycle(5), 5, 1)
    assert round(abs(np.linalg.det(A_groups))) == 2
    assert not _determinants_in_unit_set(np.vstack([A_positions, A_groups]))


@pytest.mark.parametrize("solver", ["HIGHS", "CLARABEL"])
def test_lp_relaxation_is_integral_and_exact_on_random_partitions(solver):
    rng = np.random.default_rng(20070704)
    integral = 0
    for _ in range(INSTANCES):
        labels, n = _random_partition(rng)
        C = rng.normal(size=(labels.size, n))
        result = diversity_lp(C, labels, solver=solver)
        value, order = diversity_integer_optimum(C, labels)
        assert result.partition
        assert result.value == pytest.approx(value, abs=1e-7)
        integral += result.integral
        # the optimum is unique almost surely: both solvers land on the integer vertex
        assert result.integral
        np.testing.assert_array_equal(result.order, order)
    assert integral == INSTANCES


def test_vertex_solutions_are_integral_under_ties():
    """Integer gains in {0, 1, 2} make optimal faces large: the simplex vertex is still
    integral (TU), and the interior point's value still matches the integer optimum."""
    rng = np.random.default_rng(5)
    for _ in range(INSTANCES):
        labels, n = _random_partition(rng)
        C = rng.integers(0, 3, size=(labels.size, n)).astype(float)
        value, _ = diversity_integer_optimum(C, labels)
        vertex = diversity_lp(C, labels, solver="HIGHS")
        assert vertex.integral
        assert vertex.value == pytest.approx(value, abs=1e-7)
        assert C[vertex.order, np.arange(n)].sum() == pytest.approx(value)
        assert group_matrix(labels, labels.size)[0][:, vertex.order].sum(axis=1).max() <= 1
        assert diversity_lp(C, labels, solver="CLARABEL").value == pytest.approx(value, abs=1e-6)


def test_overlapping_sets_give_fractional_lp_optima():
    """The paper's weighted extension: the LP only bounds the integer program from above,
    and on an odd cycle of sets it is strictly larger at a fractional vertex."""
    rng = np.random.default_rng(11)
    W = _odd_cycle(5)
    gaps = 0
    for _ in range(INSTANCES):
        C = rng.normal(size=(5, 2))
        result = diversity_lp(C, W)
        value, _ = diversity_integer_optimum(C, W)
        assert not result.partition
        assert result.value >= value - 1e-7
        if result.value > value + 1e-6:
            gaps += 1
            assert not result.integral and result.order is None
            assert np.max(np.abs(result.pi - np.round(result.pi))) > INTEGRALITY_TOLERANCE
    assert gaps > 0


def test_test_time_rule_matches_enumeration():
    rng = np.random.default_rng(3)
    for _ in range(INSTANCES):
        labels, n = _random_partition(rng)
        scores = rng.normal(size=labels.size)
        c = 1.0 / np.log2(np.arange(n) + 2.0)  # decreasing positive position weights
        C = np.outer(scores, c)
        _, best = diversity_integer_optimum(C, labels)
        order = diverse_ranking(scores, labels, n)
        np.testing.assert_array_equal(order, best)
        np.testing.assert_array_equal(order, diversity_lp(C, labels).order)


def test_test_time_rule_keeps_one_document_per_group():
    labels = np.array([2, 0, 2, 1, 0, 1])
    scores = np.array([0.5, 0.1, 0.9, 0.3, 0.3, 0.3])
    # best of group 2: doc 2 (0.9); group 0: doc 4 (0.3); group 1: docs 3 and 5 tie -> doc 3
    np.testing.assert_array_equal(diverse_ranking(scores, labels), [2, 3, 4])
    np.testing.assert_array_equal(diverse_ranking(scores, labels, 2), [2, 3])


def test_bad_input():
    with pytest.raises(ValueError, match="cannot fill"):
        diversity_lp(np.zeros((3, 2)), np.array([0, 0, 0]))
    with pytest.raises(ValueError, match="n must be"):
        diverse_ranking([1.0, 2.0], np.array([0, 0]), 2)
    with pytest.raises(ValueError, match="partition"):
        diverse_ranking([1.0, 2.0], _odd_cycle(3)[:, :2])
    with pytest.raises(ValueError, match="C must be"):
        diversity_lp(np.zeros((2, 3)), np.array([0, 1]))
