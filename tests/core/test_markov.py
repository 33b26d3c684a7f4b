"""The Ornstein–Uhlenbeck grid filter (harness/core/markov.py, docs/math.md §3e): exact log Z
and test probabilities of probit GPC with the Matérn-1/2 kernel on sorted 1-D inputs, against
the orthant closed forms of docs/math.md §2 and an independent integration (SciPy's Genz)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from harness.core.markov import grid_step, ou_probit_filter, ou_probit_oracle
from harness.core.oracles import orthant_closed_form

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def orthant_cov(x, y, beta, alpha=1.0, test_at=()):
    """R = C(K + I)C of the training variables, with the test variables v*_j = f_j + ε*
    (label +1) appended (docs/math.md §2, A.28)."""
    K = beta * np.exp(-np.abs(x[:, None] - x[None]) / alpha)
    n, t = len(x), len(test_at)
    S = np.empty((n + t, n + t))
    S[:n, :n] = (K + np.eye(n)) * np.outer(y, y)
    for m, j in enumerate(test_at):
        S[:n, n + m] = S[n + m, :n] = y * K[:, j]
        S[n + m, n:] = K[j, list(test_at)]
        S[n + m, n + m] = 1.0 + beta
    return S


def genz(S):
    """P(v >= 0), v ~ N(0, S), by SciPy's Genz integration with a tight tolerance."""
    n = len(S)
    return multivariate_normal(np.zeros(n), S, abseps=1e-10, releps=1e-7,
                               maxpts=200_000 * n).cdf(np.zeros(n))


def rho_of(x, alpha=1.0):
    return np.exp(-np.diff(x) / alpha)


def test_n1_is_one_half_and_its_test_probability():
    for y in (1, -1):
        r = ou_probit_oracle(np.empty(0), 1.7, np.array([y]), [0])
        assert r.log_integral == pytest.approx(np.log(0.5), abs=1e-13)
        S = orthant_cov(np.array([0.0]), np.array([y]), 1.7, test_at=[0])
        assert r.test_probabilities[0] == pytest.approx(orthant_closed_form(S) / 0.5, abs=1e-12)


@pytest.mark.parametrize("x, y, beta", [
    ([0.0, 0.4], [1, -1], 1.3), ([0.0, 0.05], [1, 1], 4.0), ([0.0, 3.0], [-1, 1], 0.5),
])
def test_n2_closed_form(x, y, beta):
    x, y = np.array(x), np.array(y)
    r = ou_probit_oracle(rho_of(x), beta, y, [0, 1])
    assert r.log_integral == pytest.approx(np.log(orthant_closed_form(orthant_cov(x, y, beta))),
                                           abs=1e-12)
    for m, j in enumerate((0, 1)):   # J*_j = P(v >= 0, v*_j >= 0) / P(v >= 0): N = 3 forms
        S = orthant_cov(x, y, beta, test_at=[j])
        want = orthant_closed_form(S) / orthant_closed_form(S[:2, :2])
        assert r.test_probabilities[m] == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("x, y, beta", [
    ([0.0, 0.3, 1.1], [1, 1, -1], 2.0), ([0.0, 0.01, 0.02], [-1, 1, -1], 1.0),
    ([0.0, 1.0, 2.0], [1, 1, 1], 0.7),
])
def test_n3_closed_form(x, y, beta):
    x, y = np.array(x), np.array(y)
    r = ou_probit_oracle(rho_of(x), beta, y)
    assert r.log_integral == pytest.approx(np.log(orthant_closed_form(orthant_cov(x, y, beta))),
                                           abs=1e-12)


@pytest.mark.parametrize("n, seed", [(5, 0), (6, 1), (8, 2)])
def test_against_genz_at_small_n(n, seed):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 2, n))
    y = rng.choice([-1, 1], n)
    beta = 1.5
    test_at = [1, n - 2]
    r = ou_probit_oracle(rho_of(x), beta, y, test_at)
    S = orthant_cov(x, y, beta, test_at=test_at)
    z = genz(S[:n, :n])
    # Genz's own error at these settings is up to a few 1e-6 (measured at N = 8: its answer
    # moved by 2e-6 between settings, while the filter matches the closed forms to 1e-12)
    assert r.log_integral == pytest.approx(np.log(z), abs=1e-5)
    for m in range(2):
        keep = list(range(n)) + [n + m]
        assert r.test_probabilities[m] == pytest.approx(genz(S[np.ix_(keep, keep)]) / z,
                                                        abs=1e-5)


def test_grids_agree_at_n_10_000_and_log_z_is_large():
    rng = np.random.default_rng(4)
    n = 10_000
    rho = np.full(n - 1, 0.95)
    y = rng.choice([-1, 1], n)
    test_at = np.arange(0, n, 97)
    r = ou_probit_oracle(rho, 2.0, y, test_at)
    assert r.error_estimate < 1e-10 * abs(r.log_integral)
    assert -n * np.log(2) * 2 < r.log_integral < -1000   # log space: about -7,000 here
    # a third, finer grid agrees too
    log_z, probs = ou_probit_filter(rho, 2.0, y, test_at, step=0.25 * grid_step(rho, 2.0),
                                    half_width=14.0)
    assert log_z == pytest.approx(r.log_integral, abs=1e-9 * abs(log_z))
    np.testing.assert_allclose(probs, r.test_probabilities, atol=1e-10)
    assert np.all((r.test_probabilities >= 0) & (r.test_probabilities <= 1))


def plain_filter(rho, beta, lik_factors, step=0.02, half_width=11.0):
    """An independent reference: a dense numpy forward filter (no band, no numba), in log
    space, with lik_factors[i] the likelihood vector of step i as a function of u."""
    u = np.arange(-half_width, half_width + step / 2, step)
    F = np.exp(-0.5 * u**2) / np.sqrt(2 * np.pi) * lik_factors[0](u)
    log_z = 0.0
    for i in range(1, len(lik_factors)):
        s = np.sqrt(1 - rho[i - 1] ** 2)
        T = step * np.exp(-0.5 * ((u[:, None] - rho[i - 1] * u[None]) / s) ** 2) / (
            s * np.sqrt(2 * np.pi))
        mass = step * F.sum()
        log_z += np.log(mass)
        F = (T @ (F / mass)) * lik_factors[i](u)
    return log_z + np.log(step * F.sum())


def test_each_test_probability_is_a_ratio_of_two_filters():
    """Forward–backward J*_j against Z(y, y*_j = +1) / Z(y) (docs/math.md §2): the test label is
    a second observation of the same latent f_j, i.e. the likelihood at j gets a factor Φ(√β u).
    Both normalisers by an independent dense numpy filter."""
    from scipy.special import log_ndtr
    rng = np.random.default_rng(7)
    n, beta, alpha = 40, 1.5, 0.4
    x = np.sort(rng.uniform(0, 3, n))
    y = rng.choice([-1, 1], n)
    test_at = [0, 17, n - 1]
    rho = rho_of(x, alpha)
    r = ou_probit_oracle(rho, beta, y, test_at)
    root = np.sqrt(beta)

    def lik(a, extra=False):
        return lambda u: np.exp(log_ndtr(a * u) + (log_ndtr(root * u) if extra else 0.0))

    factors = [lik(root * yi) for yi in y]
    log_z = plain_filter(rho, beta, factors)
    assert log_z == pytest.approx(r.log_integral, abs=1e-10)
    for m, j in enumerate(test_at):
        with_test = list(factors)
        with_test[j] = lik(root * y[j], extra=True)
        ratio = np.exp(plain_filter(rho, beta, with_test) - log_z)
        assert r.test_probabilities[m] == pytest.approx(ratio, abs=1e-10)


def test_bad_inputs():
    with pytest.raises(ValueError):
        ou_probit_filter([1.0], 1.0, np.array([1, 1]), step=0.1, half_width=8)
    with pytest.raises(ValueError):
        ou_probit_filter([0.5, 0.5], 1.0, np.array([1, 1]), step=0.1, half_width=8)
    with pytest.raises(ValueError):
        ou_probit_filter([0.5], 1.0, np.array([1, 1]), [1, 0], step=0.1, half_width=8)
