"""The exact references of tuning (harness/tuning/exact.py) against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr, logsumexp

from harness.core.errors import InputError
from harness.tuning.evaluate import build_problem
from harness.tuning.exact import (
    exact_log_posterior,
    exact_surface,
    posterior_summary,
    trapezoid_weights,
)
from harness.tuning.space import TuneSpace

SPEC = "linear1d:n_train=40,n_test=0"
SPACE = TuneSpace.from_dict({"scale": [0.1, 100, 13]})


def brute_log_z(scales: np.ndarray) -> np.ndarray:
    """log ∫ φ(u) Π Φ(√s y_i x_i u) du on a dense u grid (trapezoid), independent of the
    oracle's adaptive rule (docs/math.md §3b). The posterior of u has sd >= 0.03 here and every
    factor turns over on the scale 1/|√s a_i| >= 0.05, both resolved by du = 0.0025."""
    problem = build_problem(SPEC)   # the data do not depend on the scale
    a = problem.y_train * problem.X_train[:, 0]
    u = np.linspace(-10, 10, 8001)
    base = -0.5 * u**2 - 0.5 * np.log(2 * np.pi) + np.log(trapezoid_weights(u))
    return np.array([logsumexp(base + log_ndtr(np.sqrt(s) * np.outer(u, a)).sum(1))
                     for s in scales])


@pytest.fixture(scope="module")
def surface():
    return exact_surface(SPEC, SPACE)


def test_surface_values_match_brute_force(surface):
    assert surface["kind"] == "exact" and surface["space"] == SPACE.to_dict()
    assert [p["scale"] for p in surface["points"]] == pytest.approx(SPACE.axes[0].grid())
    np.testing.assert_allclose(surface["log_z"], brute_log_z(SPACE.axes[0].grid()),
                               rtol=0, atol=1e-9)


def test_optimum_matches_a_dense_brute_force_scan(surface):
    # a scan of the box at log step 0.115, then at 0.005 around its best point
    coarse = np.linspace(np.log(0.1), np.log(100), 61)
    i = int(np.argmax(brute_log_z(np.exp(coarse))))
    assert 0 < i < len(coarse) - 1                  # an interior optimum
    fine = np.linspace(coarse[i - 1], coarse[i + 1], 47)
    values = brute_log_z(np.exp(fine))
    j = int(np.argmax(values))
    assert abs(np.log(surface["optimum"]["scale"]) - fine[j]) <= fine[1] - fine[0]
    assert surface["optimum_log_z"] >= values[j] - 1e-9
    assert surface["optimum_log_z"] == pytest.approx(
        brute_log_z([surface["optimum"]["scale"]])[0], abs=1e-9)


def test_no_exact_truth_gives_none():
    space = TuneSpace.from_dict({"alpha": [1, 5, 2]})
    assert exact_surface("gauss2class:n_train=20,n_test=0", space) is None
    with pytest.raises(InputError, match="no exact truth"):
        exact_log_posterior("gauss2class:n_train=20,n_test=0", space, 5)


def test_exact_posterior_is_normalised_and_matches_brute_force():
    grid, log_density = exact_log_posterior(SPEC, SPACE, 61)
    x = np.log(grid)
    assert np.sum(trapezoid_weights(x) * np.exp(log_density)) == pytest.approx(1, abs=1e-12)
    brute = brute_log_z(grid)
    np.testing.assert_allclose(log_density - log_density[0], brute - brute[0], atol=1e-9)
    with pytest.raises(InputError, match="needs one parameter"):
        exact_log_posterior(SPEC, TuneSpace.from_dict({"scale": [1, 2, 2], "mu_pos": [1, 2, 2]}),
                            5)


def test_posterior_summary_of_a_normal():
    x = np.linspace(-8, 12, 4001)
    log_density = -0.5 * ((x - 2) / 1.5) ** 2
    summary = posterior_summary(x, log_density, probs=(0.1, 0.5, 0.9))
    assert summary["mean"] == pytest.approx(2, abs=1e-6)
    assert summary["sd"] == pytest.approx(1.5, abs=1e-6)
    z90 = 1.2815515655446004
    assert summary["quantiles"][0.1] == pytest.approx(2 - 1.5 * z90, abs=1e-4)
    assert summary["quantiles"][0.5] == pytest.approx(2, abs=1e-4)
    assert summary["quantiles"][0.9] == pytest.approx(2 + 1.5 * z90, abs=1e-4)
