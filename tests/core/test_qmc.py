"""Randomised QMC point sets: uniformity, chunk invariance, reproducibility, error estimate."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from harness.core import special
from harness.core.errors import InputError
from harness.core.qmc import (
    KINDS,
    PointSet,
    batch_error,
    batch_standard_error,
    first_primes,
    split_budget,
)
from harness.core.threads import compute_threads


def test_first_primes():
    assert first_primes(10).tolist() == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
    p = first_primes(3000)
    assert len(np.unique(p)) == 3000 and p[-1] == 27449


def test_split_budget():
    assert split_budget(10, 3).tolist() == [4, 3, 3]
    assert split_budget(2, 10).tolist() == [1, 1]
    assert split_budget(1000, 10).sum() == 1000


@pytest.mark.parametrize("kind", KINDS)
def test_points_are_uniform_and_log_complement_is_negative(kind):
    ps = PointSet(kind, 7, split_budget(4000, 4), np.random.default_rng(0))
    U, rows = ps.uniforms(0, 1000)
    assert U.shape == (7, 4000) and [r[2] for r in rows] == [1000] * 4
    assert np.all((U >= 0) & (U <= 1))
    np.testing.assert_allclose(U.mean(axis=1), 0.5, atol=0.03)
    np.testing.assert_allclose(U.var(axis=1), 1 / 12, atol=0.01)
    E, _ = PointSet(kind, 7, [1000], np.random.default_rng(1)).log_complement(0, 1000)
    assert np.all(np.isfinite(E)) and np.all(E < 0)
    np.testing.assert_allclose(E.mean(axis=1), -1.0, atol=0.1)   # log(1 - U) ~ -Exp(1)


def test_sobol_log_complement_is_log1m_of_the_points_on_any_thread_count():
    """The one-pass Sobol' kernel gives exactly log(1 - min(w, 1 - 2^-53)), capped below 0,
    of the points `uniforms` hands out, with one thread or two."""
    sizes = [700, 701, 699]
    U = PointSet("sobol", 300, sizes, np.random.default_rng(5)).uniforms(0, 701)[0]
    expected = np.minimum(special.log1m(np.minimum(U, 1.0 - 2.0**-53)),
                          -np.finfo(float).tiny)
    for n in (1, 2):
        with compute_threads(n):
            ps = PointSet("sobol", 300, sizes, np.random.default_rng(5))
            E, _ = ps.log_complement(0, 701)
            again = PointSet("sobol", 300, sizes, np.random.default_rng(5)).uniforms(0, 701)[0]
        assert np.array_equal(E, expected) and np.array_equal(again, U)


@pytest.mark.parametrize("kind", ["sobol", "lattice"])
def test_qmc_points_do_not_depend_on_the_chunking(kind):
    sizes = [50, 50, 49]
    whole, _ = PointSet(kind, 5, sizes, np.random.default_rng(3)).uniforms(0, 50)
    ps = PointSet(kind, 5, sizes, np.random.default_rng(3))
    a, rows_a = ps.uniforms(0, 20)
    b, rows_b = ps.uniforms(20, 50)
    for (k, r0, m), (_, s0, n) in zip(rows_a, rows_b, strict=True):
        start = k * 50
        np.testing.assert_array_equal(whole[:, start : start + m], a[:, r0 : r0 + m])
        np.testing.assert_array_equal(whole[:, start + m : start + m + n], b[:, s0 : s0 + n])


@pytest.mark.parametrize("kind", KINDS)
def test_reproducible_from_the_generator(kind):
    a = PointSet(kind, 4, [30, 30], np.random.default_rng(5)).uniforms(0, 30)[0]
    b = PointSet(kind, 4, [30, 30], np.random.default_rng(5)).uniforms(0, 30)[0]
    c = PointSet(kind, 4, [30, 30], np.random.default_rng(6)).uniforms(0, 30)[0]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("kind", ["sobol", "lattice"])
def test_every_randomised_point_is_uniform(kind):
    """A fixed point of a randomisation, over independent randomisations: U(0, 1) (KS test)."""
    vals = np.array([PointSet(kind, 3, [8, 8], np.random.default_rng(s)).uniforms(0, 8)[0]
                     [:, [2, 13]].ravel() for s in range(300)]).ravel()
    assert stats.kstest(vals, "uniform").pvalue > 1e-3


def test_qmc_beats_monte_carlo_on_a_smooth_integrand():
    """∫ Π (1 + (w_i - 1/2)) dw = 1 in 6 dimensions: RQMC error far below MC, SE honest."""
    def estimate(kind, seed):
        ps = PointSet(kind, 6, split_budget(4096, 8), np.random.default_rng(seed))
        U, rows = ps.uniforms(0, 512)
        f = np.prod(0.5 + U, axis=0)
        means = np.array([f[r0 : r0 + m].mean() for _, r0, m in rows])
        return batch_standard_error(np.log(means), [m for _, _, m in rows])

    def rms(kind):
        return np.sqrt(np.mean([estimate(kind, s)[0] ** 2 for s in range(8)]))

    mc = rms("random")   # measured over 200 seeds: sobol 0.0005, lattice 0.0021, random 0.012
    assert rms("sobol") < 0.15 * mc
    assert rms("lattice") < 0.5 * mc
    log_mean, se = estimate("sobol", 0)
    assert abs(log_mean) <= 5 * se + 1e-12


def test_batch_standard_error_matches_the_textbook_formula():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, size=10)
    log_mean, se = batch_standard_error(np.log(x), [7] * 10)
    assert log_mean == pytest.approx(np.log(x.mean()))
    assert se == pytest.approx(x.std(ddof=1) / np.sqrt(10) / x.mean())
    assert np.isnan(batch_standard_error(np.log(x[:1]), [7])[1])


def test_bad_kind_and_too_many_sobol_dimensions():
    with pytest.raises(InputError, match="points"):
        PointSet("halton", 3, [10], np.random.default_rng(0))
    with pytest.raises(InputError, match="lattice"):
        PointSet("sobol", 30000, [10], np.random.default_rng(0))


def test_batch_error_equals_the_delta_method_for_well_behaved_batches():
    x = np.random.default_rng(1).uniform(0.9, 1.1, size=10)
    err = batch_error(np.log(x), [7] * 10)
    log_mean, se = batch_standard_error(np.log(x), [7] * 10)
    assert err.log_mean == log_mean and err.delta_se == se
    assert err.se == pytest.approx(se, rel=0.02)
    assert 9.5 < err.k_eff <= 10


def test_batches_that_agree_to_rounding_give_the_resolution_not_zero():
    """Identical batch means (every weight equal: a rare event none of the points saw) say
    nothing about the error: se = 1 / points, flagged; a real spread, however small, stays."""
    same = np.full(10, np.log(0.5)) + np.r_[0.0, 1e-16, 0.0, -1e-16, 0, 0, 0, 0, 0, 0]
    err = batch_error(same, [100] * 10)
    assert err.resolution_floor and err.se == pytest.approx(1e-3) and err.log_sd < 1e-15
    spread = np.log(0.5) + np.linspace(-1e-9, 1e-9, 10)
    err = batch_error(spread, [100] * 10)
    assert not err.resolution_floor and err.se < 1e-8
    assert not batch_error(same[:1], [1000]).resolution_floor   # one batch: no spread to read


def test_batch_error_is_not_capped_at_one_nat_when_one_batch_dominates():
    """The delta method's se is <= 1 by construction; the reported se follows the log spread."""
    logs = np.array([0.0, -8.0, -3.0, -12.0, -6.0, -9.0, -4.0, -7.0, -10.0, -5.0])
    err = batch_error(logs, [100] * 10)
    assert err.delta_se <= 1.0 and err.top_share > 0.9 and err.k_eff < 1.2
    assert err.se == pytest.approx(np.std(logs, ddof=1) / np.sqrt(err.k_eff))
    assert err.se > 3.0
    # all the mass in one batch: the delta method reads exactly 1 nat
    assert batch_error(np.array([0.0] + [-800.0] * 9), [5] * 10).delta_se == pytest.approx(1.0)


def test_streamed_random_points_are_the_whole_arrays_rows():
    """A walk reading log(1 - w) a block at a time gets exactly PointSet.log_complement's
    numbers (numpy fills an array in order), holding one block; reading out of order fails."""
    sizes = [5, 7, 6]
    whole, rows = PointSet("random", 23, sizes, np.random.default_rng(4)).log_complement(2, 6)
    streamed, srows = PointSet("random", 23, sizes,
                               np.random.default_rng(4)).log_complement_streamed(2, 6, 5)
    assert srows == rows and streamed.shape == whole.shape
    got = np.array([streamed[j].copy() for j in range(23)])
    np.testing.assert_array_equal(got, whole)
    assert streamed._rows.shape[0] <= 5
    with pytest.raises(IndexError):
        streamed[3]
    with pytest.raises(ValueError):
        PointSet("sobol", 23, sizes, np.random.default_rng(4)).log_complement_streamed(0, 3, 5)
