"""harness.core.special against scipy.special and 50-digit mpmath: log Φ, Φ, Φ⁻¹ of a
log-probability, log(Φ(b) − Φ(a)) and the fused truncated-normal draw, on random and edge grids
over the whole double range, with their identities, monotonicity and numpy conventions."""

from __future__ import annotations

import warnings

import mpmath as mp
import numpy as np
import pytest
import scipy.special as sc
import scipy.stats

from harness.core import special

TINY = 5e-324
RNG = np.random.default_rng(20261204)


def x_grid() -> np.ndarray:
    """Random and edge abscissae: both tails to the overflow of x², subnormals, the points
    where the branches of log Φ meet."""
    return np.concatenate([
        RNG.normal(0, 1, 20_000), RNG.normal(0, 10, 20_000), RNG.uniform(-40, 40, 20_000),
        np.linspace(-60, 40, 100_001),
        -np.logspace(-320, 308, 4_000), np.logspace(-320, 308, 4_000),
        [0.0, -0.0, TINY, -TINY, 1e-300, -1e-300, 37.5, 38.5, -37.5, -38.5, 8.3, -8.3,
         1.7e308, -1.7e308, np.finfo(float).max, -np.finfo(float).max],
    ])


def y_grid() -> np.ndarray:
    """Log-probabilities from -1e300 to -1e-300, both sides of log 1/2, of log 0.075 and
    0.925, and of -745 (where p stops being a double)."""
    return np.concatenate([
        np.log(RNG.random(20_000)), -RNG.standard_exponential(20_000) * 30,
        -np.logspace(-300, 300, 20_001), np.linspace(-50, 0, 50_001)[:-1],
        np.linspace(-760, -730, 3_001), np.log(np.linspace(0.4, 0.6, 2_001)),
        [-TINY, -1e-310, -1e-300, -1e-17, -np.log(2), np.log(0.075), np.log(0.925), -745.0,
         -745.0 - 1e-13, -744.9999999, -1e300, -np.finfo(float).max],
    ])


def close(a, b, rtol, atol=0.0):
    """Elementwise |a − b| <= rtol |b| + atol, with equal infinities and NaNs agreeing."""
    a, b = np.asarray(a), np.asarray(b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore"):
        near = np.abs(a - b) <= rtol * np.abs(b) + atol
    return same | near


def test_log_ndtr_agrees_with_scipy_over_the_double_range():
    x = x_grid()
    ok = close(special.log_ndtr(x), sc.log_ndtr(x), 1e-12, atol=1e-300)
    assert ok.all(), x[~ok][:10]


def test_log_ndtr_is_accurate_against_50_digits():
    """In the upper tail the value is −Φ(−x) (down to subnormals, where scipy gives −0)."""
    mp.mp.dps = 50
    xs = [-1e5, -1e3, -38.5, -20.0, -5.0, -1.0, -1e-8, 0.0, 1e-8, 0.5, 1.0, 3.0, 8.0, 20.0,
          37.0]
    for x in xs:
        X = mp.mpf(x)
        want = mp.log(mp.ncdf(X)) if x <= 0 else mp.log1p(-mp.ncdf(-X))
        got = special.log_ndtr(x)
        assert abs(got - want) <= 1e-14 * abs(want) * max(1.0, x * x / 100), (x, got, want)


def test_ndtr_agrees_with_scipy():
    x = x_grid()
    got, want = special.ndtr(x), sc.ndtr(x)
    assert close(got, want, 1e-12, atol=1e-300).all()
    assert ((got >= 0) & (got <= 1) | np.isnan(x)).all()


def test_ndtri_exp_agrees_with_scipy_relative_to_max_1_and_the_quantile():
    y = y_grid()
    got, want = special.ndtri_exp(y), sc.ndtri_exp(y)
    scale = np.maximum(1.0, np.abs(want))
    with np.errstate(invalid="ignore"):
        ok = (got == want) | (np.abs(got - want) <= 1e-12 * scale)
    assert ok.all(), list(zip(y[~ok][:5], got[~ok][:5], want[~ok][:5], strict=True))


@pytest.mark.parametrize("y", [-1e-300, -1e-17, -0.01, -0.5, -np.log(2), -0.7, -2.0, -5.0,
                               -30.0, -700.0, -745.5, -800.0, -1e4, -254683.0, -1e30])
def test_ndtri_exp_is_accurate_against_50_digits(y):
    """Including the far tail, where scipy is about 1e-12 off (this module: about 1e-16)."""
    mp.mp.dps = 50
    got = special.ndtri_exp(y)
    Y = mp.mpf(y)
    x = mp.mpf(got)
    for _ in range(60):                       # Newton on log Φ(x) = y from the answer
        lc = mp.log(mp.ncdf(x)) if x < 0 else mp.log1p(-mp.ncdf(-x))
        x -= (lc - Y) / mp.exp(mp.log(mp.npdf(x)) - lc)
    assert abs(got - x) <= 1e-14 * max(1.0, abs(x)), (y, got, x)


def test_special_values():
    nan, inf = np.nan, np.inf
    assert np.array_equal(special.log_ndtr([-inf, inf, nan]), [-inf, 0.0, nan], equal_nan=True)
    assert special.log_ndtr(0.0) == np.log(0.5)
    assert np.array_equal(special.ndtr([-inf, inf, nan]), [0.0, 1.0, nan], equal_nan=True)
    assert np.array_equal(special.ndtri_exp([0.0, -0.0, -inf, nan, 1e-300, 2.0]),
                          [inf, inf, -inf, nan, nan, nan], equal_nan=True)
    assert special.ndtri_exp(-np.log(2)) == pytest.approx(0.0, abs=1e-16)


def test_the_functions_are_monotone():
    x = np.linspace(-45, 45, 400_001)
    assert (np.diff(special.log_ndtr(x)) >= 0).all()
    assert (np.diff(special.ndtr(x)) >= 0).all()
    y = np.concatenate([-np.logspace(4, -300, 200_001), np.linspace(-50, 0, 200_001)[1:-1]])
    y.sort()
    assert (np.diff(special.ndtri_exp(y)) >= 0).all()


def test_log_ndtr_is_log1p_of_the_other_side():
    x = np.concatenate([np.linspace(0, 37, 100_001), RNG.exponential(3, 10_000)])
    assert close(special.log_ndtr(x), np.log1p(-special.ndtr(-x)), 1e-12, 1e-300).all()


def test_ndtri_exp_inverts_log_ndtr_where_log_ndtr_is_below_0():
    x = np.concatenate([np.linspace(-1e3, 8, 200_001), RNG.normal(0, 5, 20_000),
                        -np.logspace(0, 150, 2_000)])
    y = special.log_ndtr(x)
    keep = y < 0
    back = special.ndtri_exp(y[keep])
    # the round trip cannot beat the conditioning of log Φ: about x² eps relatively
    tol = 1e-12 * np.maximum(1.0, np.abs(x[keep]))
    assert (np.abs(back - x[keep]) <= tol).all()


def test_numpy_conventions_shape_out_scalars_and_in_place():
    x = RNG.normal(0, 3, (3, 4, 5))
    want = sc.log_ndtr(x)
    assert special.log_ndtr(x).shape == (3, 4, 5)
    assert isinstance(special.log_ndtr(0.3), float)
    assert isinstance(special.ndtri_exp(-0.3), float)
    out = np.empty_like(x)
    assert special.log_ndtr(x, out=out) is out
    np.testing.assert_allclose(out, want, rtol=1e-12)
    view = x[:, ::2, 1:]                       # not contiguous, read and written in place
    expected = sc.log_ndtr(view)
    assert special.log_ndtr(view, out=view) is view
    np.testing.assert_allclose(view, expected, rtol=1e-12)
    y = np.concatenate([[-1e3], np.log(RNG.random(99))])   # the far pass reads y again
    want = sc.ndtri_exp(y)
    assert special.ndtri_exp(y, out=y) is y
    np.testing.assert_allclose(y, want, rtol=1e-12)
    assert special.ndtri_exp([[-1e4, -1.0]]).shape == (1, 2)
    with pytest.raises(ValueError, match="out must be a float64 array of shape"):
        special.log_ndtr(x, out=np.empty(3))


def test_no_floating_point_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        special.log_ndtr(x_grid())
        special.ndtri_exp(y_grid())
        special.log_ndtr_diff(-np.inf, [np.inf, -1.0, 1.0])


def log_mass(a: float, b: float) -> float:
    mp.mp.dps = 50
    A, B = mp.mpf(a), mp.mpf(b)
    mass = mp.ncdf(B) - mp.ncdf(A) if a < 0 else mp.ncdf(-A) - mp.ncdf(-B)
    return float(mp.log(mass))


@pytest.mark.parametrize(("a", "b"), [(-1.0, 1.0), (-40.0, -39.0), (39.0, 40.0), (-3.0, 0.0),
                                      (0.0, 3.0), (-1e-3, 1e-3), (5.0, 5.0 + 1e-9),
                                      (-5.0 - 1e-9, -5.0), (-np.inf, -38.0), (2.0, np.inf),
                                      (-50.0, 60.0), (-8.0, -7.9), (0.5, 0.75)])
def test_log_ndtr_diff_against_50_digits(a, b):
    got = special.log_ndtr_diff(a, b)
    want = log_mass(a, b)
    assert abs(got - want) <= 1e-12 * max(1.0, abs(want)), (a, b, got, want)
    assert special.log_ndtr_diff(-b, -a) == pytest.approx(got, rel=1e-13, abs=1e-300)


def test_log_ndtr_diff_edges_and_broadcasting():
    inf = np.inf
    got = special.log_ndtr_diff([-inf, 1.0, 2.0, -inf, np.nan], [inf, 1.0, 1.0, -inf, 0.0])
    assert np.array_equal(got, [0.0, -inf, np.nan, -inf, np.nan], equal_nan=True)
    a = RNG.normal(0, 3, (50, 1))
    b = a + RNG.exponential(1, (1, 40))
    got = special.log_ndtr_diff(a, b)
    assert got.shape == (50, 40)
    with np.errstate(divide="ignore"):
        want = np.log(sc.ndtr(b) - sc.ndtr(a))
    well = (sc.ndtr(b) - sc.ndtr(a)) > 1e-3       # no cancellation in the reference
    assert close(got[well], want[well], 1e-10).all()


def test_draw_above_is_the_inversion_and_its_log_mass():
    t = np.concatenate([RNG.normal(0, 3, 50_000), [-38.0, -40.0, -60.0, -1e3, 40.0]])
    log_u = np.log1p(-RNG.random(t.size))
    want_lp = sc.log_ndtr(t)
    want_z = -sc.ndtri_exp(log_u + want_lp)
    z = t.copy()
    lp = special.draw_above(z, log_u)
    assert close(lp, want_lp, 1e-12).all()
    assert (np.abs(z - want_z) <= 1e-12 * np.maximum(1, np.abs(want_z))).all()
    assert (z >= -t).all()


def test_draw_above_draws_the_truncated_normal():
    """With uniform w the draws follow N(0, 1) truncated to z >= -t (Kolmogorov–Smirnov at
    a fixed seed, for a central and a far lower truncation point)."""
    for t in (0.7, -6.0):
        z = np.full(20_000, t)
        special.draw_above(z, np.log1p(-RNG.random(z.size)))
        dist = scipy.stats.truncnorm(-t, np.inf)
        assert scipy.stats.kstest(z, dist.cdf).pvalue > 1e-3


def test_two_threads_give_the_same_numbers():
    """The parallel loops take fixed chunks; every element gets the same arithmetic."""
    from harness.core.threads import compute_threads, threads

    x = RNG.normal(0, 5, 300_001)
    y = np.concatenate([np.log(RNG.random(200_000)), [-1e4, -800.0]])
    t = RNG.normal(0, 3, 250_000)
    log_u = np.log1p(-RNG.random(t.size))
    one = (special.log_ndtr(x), special.ndtr(x), special.ndtri_exp(y),
           special.log_ndtr_diff(x[:-1], x[:-1] + 1.0), special.draw_above(t.copy(), log_u))
    with compute_threads(2):
        assert threads() == 2
        z = t.copy()
        two = (special.log_ndtr(x), special.ndtr(x), special.ndtri_exp(y),
               special.log_ndtr_diff(x[:-1], x[:-1] + 1.0), special.draw_above(z, log_u))
    assert threads() == 1
    for a, b in zip(one, two, strict=True):
        assert np.array_equal(a, b, equal_nan=True)


def test_log1m_agrees_with_log1p_of_minus_w():
    w = np.concatenate([RNG.random(100_000), [0.0, 0.5, 0.5 - 1e-17, 1.0 - 2.0**-53, 1e-300,
                                              TINY, -0.25, 1.0]])
    with np.errstate(divide="ignore"):
        want = np.log1p(-w)
    assert close(special.log1m(w), want, 1e-14).all()
