"""harness.model.method: the optional split interface's defaults and the even budget split."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.qmc import split_budget as qmc_split
from harness.datasets.linear1d import linear1d
from harness.model.method import Method, split_evenly
from harness.model.result import Estimate


@pytest.fixture(scope="module")
def small_problem():
    return linear1d(n_train=10, n_test=3, seed=0)


class Plain(Method):
    name = "plain"
    summary = "a method that does not split"

    def _estimate(self, problem, budget, rng):
        return Estimate(-1.0, np.full(problem.n_test, 0.5))


class Halves(Plain):
    """Splits, but forgets to implement the part methods."""

    name = "halves"

    def split_budget(self, budget, parts):
        return split_evenly(budget, parts)


def test_a_method_does_not_split_by_default(small_problem):
    m = Plain()
    assert m.split_budget(100, 4) is None and not m.splits()
    with pytest.raises(NotImplementedError, match="plain cannot split .* _estimate_part"):
        m.estimate_part(small_problem, 100, np.random.default_rng(0))
    with pytest.raises(NotImplementedError, match="cannot combine"):
        m.combine_parts(small_problem, [{"budget": 100}])


def test_a_splitting_method_checks_the_budget_and_names_what_is_missing(small_problem):
    m = Halves()
    assert m.splits()
    with pytest.raises(InputError, match="budget"):
        m.estimate_part(small_problem, 0, np.random.default_rng(0))
    with pytest.raises(NotImplementedError, match="_estimate_part"):
        m.estimate_part(small_problem, 10, np.random.default_rng(0))
    with pytest.raises(NotImplementedError, match="_combine_parts"):
        m.combine_parts(small_problem, [{"budget": 10}])


@pytest.mark.parametrize(("budget", "parts", "group"),
                         [(1000, 4, 10), (1003, 4, 5), (25, 4, 10), (5, 4, 10), (7, 3, 1),
                          (2, 5, 1), (1, 1, 1), (10**7 + 3, 17, 10)])
def test_split_evenly_cuts_whole_groups_of_near_equal_pieces(budget, parts, group):
    b = split_evenly(budget, parts, group)
    assert sum(b) == budget and 1 <= len(b) <= parts
    assert len(b) == max(1, min(parts, budget // group))
    # each part, cut again into `group` pieces, gives the pieces of one cut into P x group
    pieces = np.concatenate([qmc_split(x, group) for x in b])
    if budget >= group:
        np.testing.assert_array_equal(pieces, qmc_split(budget, len(b) * group))


@pytest.mark.parametrize(("budget", "parts"), [(0, 2), (10, 0), (10, -1), (10, 2.5), (True, 2)])
def test_split_evenly_refuses_what_is_not_a_positive_count(budget, parts):
    with pytest.raises(InputError, match="budget" if parts in (2,) else "parts"):
        split_evenly(budget, parts)
