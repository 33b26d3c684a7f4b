"""Pareto k̂ of importance weights (harness.core.tails, PSIS's Zhang–Stephens fit)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import genpareto

from harness.core.tails import pareto_k, tail_size, top_count


def test_tail_size_is_psis():
    assert tail_size(100) == 20 and tail_size(10_000) == 300 and top_count(10_000) == 301
    assert top_count(5) == 2


@pytest.mark.parametrize("k", [0.2, 0.5, 0.8, 1.2])
def test_draws_from_a_gpd_recover_its_shape(k):
    """Mean of 10 fits at S = 1e4 (M = 300) within 0.1; sd of one fit ~0.08-0.14."""
    rng = np.random.default_rng(1)
    fits = [pareto_k(np.log(genpareto(c=k).rvs(size=10_000, random_state=rng)))
            for _ in range(10)]
    assert abs(np.mean(fits) - k) < 0.1


def test_light_tails_are_below_one_half():
    rng = np.random.default_rng(2)
    assert pareto_k(np.log(np.abs(rng.standard_normal(10_000)))) < 0.2   # normal tail
    assert pareto_k(rng.normal(0.0, 0.5, 10_000)) < 0.5                  # lognormal, sd 0.5


def test_log_space_scale_free_and_top_only():
    rng = np.random.default_rng(3)
    lw = np.log(genpareto(c=0.6).rvs(size=5000, random_state=rng))
    k = pareto_k(lw)
    assert pareto_k(lw - 1e4) == pytest.approx(k, abs=1e-9)   # weights ~ exp(-1e4)
    top = np.sort(lw)[-top_count(5000):]
    assert pareto_k(rng.permutation(top), S=5000) == k          # only the top M + 1 matter
    with pytest.raises(ValueError):
        pareto_k(top[1:], S=5000)


def test_collapsed_and_tiny_samples():
    assert pareto_k(np.r_[0.0, np.full(999, -900.0)]) == np.inf   # one weight holds all
    assert np.isnan(pareto_k(np.zeros(4)))


def test_weights_equal_up_to_rounding_are_ties():
    """An identity covariance gives every particle the same weight; summed in another order
    their logs differ in the last bits (7e-15 at log w = -41), which is no tail to fit."""
    log_w = -41.58883083359672 + 7.105427357601002e-15 * np.random.default_rng(0).integers(
        0, 4, 3000)
    assert pareto_k(log_w) == pareto_k(np.full(3000, -41.58883083359672)) == np.inf
