"""Tuning spaces and problem specs with other parameters (harness/tuning/space.py)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.tuning.evaluate import build_problem
from harness.tuning.space import Axis, TuneSpace, check_space, with_params


def test_axis_grid_is_log_spaced_with_endpoints():
    axis = Axis("beta", 0.1, 100, 13)
    grid = axis.grid()
    assert grid[0] == pytest.approx(0.1) and grid[-1] == pytest.approx(100)
    np.testing.assert_allclose(np.diff(np.log(grid)), axis.log_step, rtol=1e-12)
    assert axis.log_step == pytest.approx(np.log(1000) / 12)


@pytest.mark.parametrize("args, message", [
    ((0.0, 1.0, 5), "0 < low < high"), ((2.0, 1.0, 5), "0 < low < high"),
    ((1.0, float("inf"), 5), "finite"), ((1.0, 2.0, 1), "num must be an integer >= 2"),
    ((1.0, 2.0, 2.5), "num must be an integer"), (("a", 2.0, 3), "low must be a number"),
])
def test_axis_refuses_bad_ranges(args, message):
    with pytest.raises(InputError, match=message) as info:
        Axis("beta", *args)
    assert info.value.field == "tune.parameters.beta"


def test_space_points_first_axis_slowest_and_round_trip():
    space = TuneSpace.from_dict({"alpha": [1, 4, 3], "beta": [0.5, 2, 2]})
    assert space.names == ("alpha", "beta") and space.size == 6
    points = space.points()
    assert [p["alpha"] for p in points] == pytest.approx([1, 1, 2, 2, 4, 4])
    assert [p["beta"] for p in points] == pytest.approx([0.5, 2] * 3)
    np.testing.assert_allclose(space.log_bounds(), np.log([[1, 4], [0.5, 2]]))
    assert TuneSpace.from_dict(space.to_dict()) == space
    assert space.to_dict() == {"alpha": [1.0, 4.0, 3], "beta": [0.5, 2.0, 2]}
    np.testing.assert_allclose(space.to_log(space.to_params([0.3, -0.2])), [0.3, -0.2])


@pytest.mark.parametrize("raw, message", [
    ({}, "non-empty"), ([1, 2, 3], "non-empty mapping"), ({"beta": [1, 2]}, r"\[low, high, num\]"),
    ({"beta": "1,2,3"}, r"\[low, high, num\]"),
])
def test_space_refuses_malformed_dicts(raw, message):
    with pytest.raises(InputError, match=message):
        TuneSpace.from_dict(raw)


def test_with_params_sets_and_replaces_parameters_canonically():
    assert with_params("linear1d:n_train=40,scale=3", {"scale": 0.5}) == \
        "linear1d:n_train=40,scale=0.5"
    assert with_params("linear1d-p3", {"scale": 2}) == "linear1d-p3:scale=2.0"
    assert with_params("linear1d", {}) == "linear1d"
    value = np.geomspace(0.1, 100, 13)[3]   # not a short decimal: must survive the round trip
    problem = build_problem(with_params("linear1d:n_train=20,n_test=0", {"scale": value}))
    assert problem.params["scale"] == value and problem.kernel.params()["scale"] == value


def test_with_params_changes_the_problem_like_the_family_does():
    a = build_problem(with_params("linear1d:n_train=30,n_test=5", {"scale": 4.0}))
    b = build_problem("linear1d:n_train=30,n_test=5,scale=4")
    np.testing.assert_array_equal(a.R, b.R)
    assert a.truth.log_marginal_likelihood == b.truth.log_marginal_likelihood


def test_check_space_names_the_family_and_its_parameters():
    check_space("linear1d-p3", TuneSpace.from_dict({"scale": [0.1, 10, 5]}))
    with pytest.raises(InputError) as info:
        check_space("linear1d-p3", TuneSpace.from_dict({"alpha": [0.1, 10, 5]}))
    text = str(info.value)
    assert info.value.field == "tune.parameters.alpha"
    assert "'linear1d-p3' (family linear1d) has no parameter 'alpha'" in text
    assert "scale" in text and "n_train" in text


def test_check_space_refuses_discrete_parameters_and_files():
    with pytest.raises(InputError, match="not continuous"):
        check_space("linear1d", TuneSpace.from_dict({"n_train": [10, 100, 3]}))
    with pytest.raises(InputError, match="is a file") as info:
        check_space("data/problem.npz", TuneSpace.from_dict({"beta": [0.1, 10, 5]}))
    assert info.value.field == "tune"
    with pytest.raises(InputError, match="unknown problem family"):
        with_params("nofamily:a=1", {"beta": 1.0})
