"""harness.model.splitting: the split mixin, what a method that splits must implement, and the
even budget split."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.qmc import split_budget as qmc_split
from harness.datasets.linear1d import linear1d
from harness.model.method import Method
from harness.model.result import Estimate
from harness.model.splitting import SplitsEstimates, split_evenly, splits
from harness.plugins.contract import contract_violations


@pytest.fixture(scope="module")
def small_problem():
    return linear1d(n_train=10, n_test=3, seed=0)


class Plain(Method):
    name = "plain"
    summary = "a method that does not split"

    def _estimate(self, problem, budget, rng):
        return Estimate(-1.0, np.full(problem.n_test, 0.5))


class Halves(SplitsEstimates, Plain):
    """Splits, but forgets to implement the part methods."""

    name = "halves"

    def split_budget(self, budget, parts):
        return split_evenly(budget, parts)


class Constant(Halves):
    """Splits into parts that each say -1 (a complete splitting method)."""

    name = "constant"

    def _estimate_part(self, problem, budget, rng):
        return {"log_z": -1.0}

    def _combine_parts(self, problem, parts):
        return Estimate(-1.0, np.full(problem.n_test, 0.5))


def test_a_method_does_not_split_by_default():
    m = Plain()
    assert not splits(m) and not splits(Plain)
    assert not any(hasattr(m, hook) for hook in ("split_budget", "estimate_part",
                                                   "combine_parts"))


def test_a_splitting_method_names_what_is_missing_and_checks_the_budget(small_problem):
    assert splits(Halves) and splits(Constant())
    with pytest.raises(TypeError, match="_combine_parts, _estimate_part"):
        Halves()
    assert contract_violations(Halves) == [
        "abstract methods not implemented: _combine_parts, _estimate_part"]
    m = Constant()
    with pytest.raises(InputError, match="budget"):
        m.estimate_part(small_problem, 0, np.random.default_rng(0))
    part = m.estimate_part(small_problem, 10, np.random.default_rng(0))
    assert part == {"log_z": -1.0, "budget": 10}
    assert m.combine_parts(small_problem, [part]).log_marginal_likelihood == -1.0
    assert m.estimate(small_problem, 10, np.random.default_rng(0)).log_marginal_likelihood == -1.0


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


def test_init_only_assigns_and_a_bad_setting_fails_early_with_one_message(small_problem):
    """Constraints are checked by from_settings and again before estimating, with the same
    message naming the method and the setting (harness.model.constraints)."""
    from harness.methods.sov import Sov

    method = Sov(randomisations=-1)            # builds: __init__ only assigns
    with pytest.raises(InputError) as built:
        Sov.from_settings({"randomisations": "-1"})
    for run in (lambda: method.estimate(small_problem, 100, np.random.default_rng(0)),
                lambda: method.estimate_part(small_problem, 100, np.random.default_rng(0))):
        with pytest.raises(InputError) as direct:
            run()
        assert str(direct.value) == str(built.value)
    assert str(built.value).startswith("method sov: setting 'randomisations': must be an "
                                       "integer >= 0 (0: 10 to 40 by the budget), got -1")


def test_an_unknown_setting_or_parameter_names_the_closest_valid_one():
    from harness.datasets.linear1d import FAMILY
    from harness.methods.sov import Sov

    with pytest.raises(InputError, match="setting 'randomisatons': is not a setting of this "
                                         "method .did you mean 'randomisations'"):
        Sov.from_settings({"randomisatons": 4})
    with pytest.raises(InputError, match="parameter 'n_trian': is not a parameter of this "
                                         "family .did you mean 'n_train'"):
        FAMILY.make({"n_trian": 4})
