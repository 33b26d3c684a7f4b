"""The `onefactor` family (datasets/onefactor.py, docs/math.md §3a): R_ij = d_i d_j, exact truth."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.oracles import one_factor_integral
from harness.datasets.onefactor import FAMILY, onefactor

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def factor_loadings(R):
    """Recover d (up to one global sign) from R_ij = d_i d_j, i != j, for n >= 3."""
    n = len(R)
    d = np.empty(n)
    for i in range(n):
        j, k = (i + 1) % n, (i + 2) % n
        d[i] = np.sqrt(R[i, j] * R[i, k] / R[j, k])
    signs = np.sign(R[0])  # sign(d_j) = sign(d_0 d_j) taking d_0 > 0
    signs[0] = 1.0
    return d * signs


def orthant_3(R):
    return 0.125 + (np.arcsin(R[0, 1]) + np.arcsin(R[0, 2]) + np.arcsin(R[1, 2])) / (4 * np.pi)


def test_structure_and_defaults():
    p = onefactor(n=40, seed=1)
    R = p.R
    assert p.is_orthant and p.n_train == 40 and p.n_test == 0
    np.testing.assert_array_equal(np.diag(R), 1.0)
    np.testing.assert_array_equal(R, R.T)
    d = factor_loadings(R)
    off = ~np.eye(40, dtype=bool)
    np.testing.assert_allclose(np.outer(d, d)[off], R[off], rtol=1e-10, atol=1e-15)
    assert np.all(np.abs(d) <= 0.99)  # default d ~ U(-0.99, 0.99)
    assert np.any(d > 0.5) and np.any(d < -0.5)
    assert p.params == {"n": 40, "seed": 1, "dmin": -0.99, "dmax": 0.99, "random_signs": False}
    assert p.family == "onefactor" and p.name == "onefactor"


def test_truth_is_the_oracle_of_its_own_covariance():
    p = onefactor(n=25, seed=4)
    d = factor_loadings(p.R)
    exact = one_factor_integral(d / np.sqrt(1 - d**2)).log_integral
    assert abs(p.truth.log_marginal_likelihood - exact) < 1e-10
    assert p.truth.kind == "exact" and p.truth.test_probabilities is None
    assert "quadrature" in p.truth.source


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("dmin,dmax,random_signs", [(-0.99, 0.99, False),
                                                    (0.9999, 0.999999, True),
                                                    (-0.3, 0.0, False)])
def test_three_dimensional_truth_matches_closed_form(seed, dmin, dmax, random_signs):
    p = onefactor(n=3, seed=seed, dmin=dmin, dmax=dmax, random_signs=random_signs)
    assert abs(np.exp(p.truth.log_marginal_likelihood) - orthant_3(p.R)) < 1e-9
    assert abs(p.truth.log_marginal_likelihood - np.log(orthant_3(p.R))) < 1e-9


def test_two_dimensional_truth_matches_closed_form():
    for seed in range(10):
        p = onefactor(n=2, seed=seed)
        exact = 0.25 + np.arcsin(p.R[0, 1]) / (2 * np.pi)
        assert abs(np.exp(p.truth.log_marginal_likelihood) - exact) < 1e-9


def test_range_of_d_is_respected():
    p = onefactor(n=30, seed=2, dmin=0.5, dmax=0.6)
    off = p.R[~np.eye(30, dtype=bool)]
    assert np.all((off >= 0.25 - 1e-15) & (off <= 0.36 + 1e-15))


def test_random_signs():
    p = onefactor(n=60, seed=3, dmin=0.95, dmax=0.999, random_signs=True)
    d = factor_loadings(p.R)
    assert np.all((np.abs(d) >= 0.95 - 1e-9) & (np.abs(d) <= 0.999 + 1e-9))
    assert 10 < np.sum(d > 0) < 50  # both signs, global sign aside
    assert np.isfinite(p.truth.log_marginal_likelihood)


def test_near_independent_limit():
    p = onefactor(n=20, seed=0, dmin=-1e-8, dmax=1e-8)
    assert abs(p.truth.log_marginal_likelihood + 20 * np.log(2.0)) < 1e-9


def test_hard_regime_truth_is_finite_and_quick():
    # |d| close to 1 (slopes up to ~700): the oracle must still converge (and quickly)
    p = onefactor(n=200, seed=1, dmin=0.99, dmax=0.999999)
    assert np.isfinite(p.truth.log_marginal_likelihood)
    assert -200 * np.log(2.0) < p.truth.log_marginal_likelihood < 0


def test_determinism_and_seeds():
    a, b, c = onefactor(n=10, seed=7), onefactor(n=10, seed=7), onefactor(n=10, seed=8)
    np.testing.assert_array_equal(a.R, b.R)
    assert a.truth.log_marginal_likelihood == b.truth.log_marginal_likelihood
    assert not np.allclose(a.R, c.R)


@pytest.mark.parametrize("kwargs,param", [
    ({"n": 0}, "n"), ({"n": -3}, "n"), ({"seed": -1}, "seed"),
    ({"dmin": -1.0}, "dmin"), ({"dmax": 1.0}, "dmax"), ({"dmin": 0.5, "dmax": 0.4}, "dmin"),
    ({"dmin": float("nan")}, "dmin"),
])
def test_bad_parameters(kwargs, param):
    with pytest.raises(InputError) as exc:
        onefactor(**kwargs)
    assert param in exc.value.field


def test_family_registration():
    assert FAMILY.name == "onefactor" and FAMILY.truth == "exact"
    assert {"onefactor-table1-n50", "onefactor-table1-n200",
            "onefactor-table1-n500"} <= set(FAMILY.presets)
    assert FAMILY.presets["onefactor-table1-n200"]["n"] == 200
    p = FAMILY.make({"n": "12", "seed": "2"})
    assert p.n_train == 12 and p.name == "onefactor:n=12,seed=2"
    np.testing.assert_array_equal(p.R, onefactor(n=12, seed=2).R)


def test_summary_is_json():
    s = json.loads(json.dumps(onefactor(n=8).summary(), allow_nan=False))
    assert s["family"] == "onefactor" and s["n_train"] == 8 and s["truth_kind"] == "exact"
