"""Tile-low-rank SOV: the compressed walk against the dense one, and agreement with sov."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.qmc import PointSet
from harness.core.sequential import CholeskyWalk
from harness.core.tlr_ops import TileLowRankWalk
from harness.datasets.gauss2class import gauss2class
from harness.datasets.linear1d import linear1d
from harness.datasets.onefactor import onefactor
from harness.engine.sov_step import SovStep
from harness.methods.sov import Sov
from harness.methods.sov_tlr import SovTlr
from harness.model.ordered import ordered_problem


def _dense_from_tiles(f):
    """Rebuild the dense training factor and test rows from a TileLowRankFactor."""
    N, b, nb = f.n_vars, f.tile, f.n_tiles
    L = np.zeros((N, N))
    W = np.zeros((f.n_test, N))
    for i, D in enumerate(f.diag):
        L[i * b : i * b + len(D), i * b : i * b + len(D)] = D
    # V columns of source j go to H columns h_idx[j]; U columns of target r are h_range[r]
    V_of = {}
    for j in range(nb):
        for c, col in enumerate(f.h_idx[j]):
            V_of[int(col)] = (j, f.v_cat[j][:, c])
    for r, (h0, h1) in enumerate(f.h_range):
        for c in range(h0, h1):
            j, v = V_of[c]
            u = f.u_cat[r][:, c - h0]
            if r < nb:
                L[r * b : r * b + len(u), j * b : j * b + len(v)] += np.outer(u, v)
            else:
                t = r - nb
                W[t * b : t * b + len(u), j * b : j * b + len(v)] += np.outer(u, v)
    return L, W.T


@pytest.mark.parametrize("reorder", ["none", "kdtree", "block"])
@pytest.mark.parametrize("tolerance", [0.0, 1e-4])
def test_tiles_rebuild_the_factor(tolerance, reorder):
    """Every tile within tolerance * sqrt(max R_ii) (Frobenius) of the dense factor's."""
    problem = gauss2class(n_train=203, n_test=37, d=2, alpha=2.0)   # tiles do not divide N
    f = SovTlr(tolerance=tolerance, tile_size=16, reorder=reorder).sampler(
        problem.n_train).factor.tiles(problem)
    op = ordered_problem(problem, reorder, 16)
    L, W = _dense_from_tiles(f)
    bound = tolerance * np.sqrt(problem.R.diagonal().max()) + 1e-12
    assert np.abs(L - op.chol).max() <= bound
    assert np.abs(W - op.test_rows).max() <= bound
    if tolerance and reorder == "kdtree":   # spatially compact tiles: low rank
        assert f.ranks.mean() < 10   # of 16 (none: ~15)


def test_onefactor_tiles_have_rank_one():
    problem = onefactor(n=400, seed=1)
    f = SovTlr().sampler(problem.n_train).factor.tiles(problem)
    assert f.tile == 20 and set(np.unique(f.ranks).tolist()) == {1}


@pytest.mark.parametrize("problem", [onefactor(n=300, seed=3),
                                     linear1d(n_train=170, n_test=45, seed=4),
                                     gauss2class(n_train=150, n_test=30, d=2)],
                         ids=["onefactor", "linear1d", "rbf"])
def test_same_points_give_the_dense_answer(problem):
    """With the same QMC points, sov-tlr reproduces sov up to the compression error."""
    a = Sov().estimate(problem, 2000, np.random.default_rng(5))
    b = SovTlr(tolerance=1e-10).estimate(problem, 2000, np.random.default_rng(5))
    assert b.log_marginal_likelihood == pytest.approx(a.log_marginal_likelihood, abs=1e-6)
    assert b.log_marginal_likelihood_se == pytest.approx(a.log_marginal_likelihood_se, rel=1e-4)
    if problem.n_test:
        np.testing.assert_allclose(b.test_probabilities, a.test_probabilities, atol=1e-7)


def test_walk_matches_the_dense_walk_draw_by_draw():
    problem = gauss2class(n_train=90, n_test=0, d=2)
    f = SovTlr(tolerance=0.0, tile_size=13).sampler(problem.n_train).factor.tiles(problem)
    E, _ = PointSet("sobol", 90, [64], np.random.default_rng(0)).log_complement(0, 64)
    s1, s2 = SovStep(E.copy()), SovStep(E.copy())
    z1 = CholeskyWalk(problem.chol, 13).run(64, s1).Z
    z2 = TileLowRankWalk(f).run(64, s2).Z
    np.testing.assert_allclose(z2, z1, atol=1e-9)
    np.testing.assert_allclose(s2.logw, s1.logw, atol=1e-9)


def test_block_reordering_gives_the_same_answer():
    problem = linear1d(n_train=120, n_test=12, seed=6)
    est = SovTlr(reorder="block").estimate(problem, 6000, np.random.default_rng(1))
    truth = problem.truth
    assert est.diagnostics["reorder"].startswith("block")
    assert abs(est.log_marginal_likelihood - truth.log_marginal_likelihood) <= (
        5 * est.log_marginal_likelihood_se + 1e-3)
    assert np.mean(np.abs(est.test_probabilities - truth.test_probabilities)) < 0.01


def test_diagnostics_describe_the_compression():
    est = SovTlr().estimate(onefactor(n=100, seed=0), 500, np.random.default_rng(0))
    d = est.diagnostics
    assert d["tile_size"] == 16 and d["tiles"] == 7 and d["rank_max"] == 1
    assert 0 < d["stored_fraction"] < 1 and d["compress_seconds"] >= 0


def test_kdtree_ordering_needs_inputs():
    with pytest.raises(InputError, match="reorder"):
        SovTlr(reorder="kdtree").estimate(onefactor(n=30, seed=0), 100, np.random.default_rng(0))


def test_kdtree_ordering_gives_the_same_answer():
    problem = linear1d(n_train=130, n_test=15, seed=9)
    est = SovTlr(reorder="kdtree").estimate(problem, 6000, np.random.default_rng(2))
    truth = problem.truth
    assert est.diagnostics["reorder"].startswith("kdtree")
    assert abs(est.log_marginal_likelihood - truth.log_marginal_likelihood) <= (
        5 * est.log_marginal_likelihood_se + 1e-3)
    assert np.mean(np.abs(est.test_probabilities - truth.test_probabilities)) < 0.01


@pytest.mark.parametrize("setting, value", [("reorder", "univariate"), ("tile_size", -1),
                                            ("tolerance", 1.5), ("points", "x"),
                                            ("randomisations", -1), ("factorisation", "lu")])
def test_bad_settings(setting, value):
    with pytest.raises(InputError, match=setting):
        SovTlr(**{setting: value}).check_settings()


# ---- the tile-low-rank Cholesky (harness.core.tlr) inside sov-tlr --------------------------------
@pytest.mark.parametrize("problem, reorder", [
    (onefactor(n=300, seed=3), "none"), (onefactor(n=250, seed=5), "block"),
    (linear1d(n_train=170, n_test=45, seed=4), "none"),
    (gauss2class(n_train=200, n_test=30, d=2, alpha=0.5), "kdtree")],
    ids=["onefactor", "onefactor-block", "linear1d", "rbf-kdtree"])
def test_tlr_factorisation_gives_the_dense_answer(problem, reorder):
    """Same QMC points, tight tolerance: the tlr and dense factorisations give one estimate."""
    est = {}
    for fac in ("dense", "tlr"):
        method = SovTlr(tolerance=1e-10, tile_size=24, reorder=reorder, factorisation=fac)
        est[fac] = method.estimate(problem, 2000, np.random.default_rng(5))
        assert est[fac].diagnostics["factorisation"] == fac
    a, b = est["dense"], est["tlr"]
    assert b.log_marginal_likelihood == pytest.approx(a.log_marginal_likelihood, abs=1e-6)
    assert b.log_marginal_likelihood_se == pytest.approx(a.log_marginal_likelihood_se, rel=1e-4)
    if problem.n_test:
        np.testing.assert_allclose(b.test_probabilities, a.test_probabilities, atol=1e-7)


def test_tlr_factorisation_against_the_oracle():
    problem = onefactor(n=500, seed=11)
    est = SovTlr(factorisation="tlr").estimate(problem, 10_000, np.random.default_rng(3))
    d = est.diagnostics
    assert d["factorisation"] == "tlr" and d["rank_max"] == 1 and d["workspace_bytes"] > 0
    truth = problem.truth.log_marginal_likelihood
    assert abs(est.log_marginal_likelihood - truth) <= 3 * est.log_marginal_likelihood_se


def test_auto_is_dense_at_small_n():
    from harness.engine.tlr_factor import TLR_CROSSOVER

    method = SovTlr()
    assert not method.sampler(TLR_CROSSOVER - 1).factor.tlr
    assert method.sampler(TLR_CROSSOVER).factor.tlr
    est = method.estimate(onefactor(n=100, seed=0), 200, np.random.default_rng(0))
    assert est.diagnostics["factorisation"] == "dense"


# ---- agreement with sov -----------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("n, budget", [(1000, 10_000), (4000, 2000)])
def test_agrees_with_sov_on_large_onefactor(n, budget):
    """Independent runs of sov and sov-tlr within 3 combined standard errors, and both near
    the exact answer."""
    problem = onefactor(n=n, seed=n)
    a = Sov().estimate(problem, budget, np.random.default_rng(1))
    b = SovTlr().estimate(problem, budget, np.random.default_rng(2))
    se = np.hypot(a.log_marginal_likelihood_se, b.log_marginal_likelihood_se)
    assert abs(a.log_marginal_likelihood - b.log_marginal_likelihood) <= 3 * se
    truth = problem.truth.log_marginal_likelihood
    for est in (a, b):
        assert abs(est.log_marginal_likelihood - truth) <= 5 * est.log_marginal_likelihood_se
