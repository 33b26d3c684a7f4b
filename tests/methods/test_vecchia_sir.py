"""vecchia-sir: the Vecchia factor, the SOV step and the resampled walk composed (harness.engine):
exact with every earlier neighbour (then `sir` on the dense factor, number for number), the
closed form at N = 3, exact truth on markov1d, settings and memory."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.oracles import orthant_closed_form
from harness.methods.sir import Sir
from harness.methods.vecchia_sir import VecchiaSir
from harness.plugins.specs import make_problem

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.mark.parametrize("spec", ["onefactor:n=50", "linear1d:n_train=50,n_test=5",
                                  "markov1d:n_train=300,n_test=10,rho=0.9"])
def test_all_earlier_neighbours_are_sir_on_the_dense_factor(spec):
    """m = N in the given order: L̃ is the Cholesky factor, and the Vecchia walk in blocks
    (held rows only, random points streamed a block at a time) resamples exactly where sir's
    dense walk does, with the same random numbers: the same estimate to rounding."""
    problem = make_problem(spec)
    a = Sir(factorisation="dense", reorder="none").estimate(problem, 2000,
                                                            np.random.default_rng(3))
    b = VecchiaSir(m=problem.n_train, ordering="given").estimate(problem, 2000,
                                                                 np.random.default_rng(3))
    assert b.diagnostics["block_size"] == a.diagnostics["block_size"]
    assert b.log_marginal_likelihood == pytest.approx(a.log_marginal_likelihood, abs=1e-9)
    np.testing.assert_allclose(b.test_probabilities, a.test_probabilities, atol=1e-9)
    assert b.diagnostics["ancestor_lineages"] == a.diagnostics["ancestor_lineages"]
    assert b.status == a.status


def test_exact_with_every_neighbour_within_its_standard_error():
    problem = make_problem("linear1d:n_train=50,n_test=5")
    est = VecchiaSir(m=50, ordering="given").estimate(problem, 4000, np.random.default_rng(0))
    err = est.log_marginal_likelihood - problem.truth.log_marginal_likelihood
    assert est.status == "ok" and abs(err) <= 4 * est.log_marginal_likelihood_se
    z = (est.test_probabilities - problem.truth.test_probabilities) / est.test_probabilities_se
    assert np.all(np.abs(z) <= 4), z


def test_closed_form_n3():
    problem = make_problem("onefactor:n=3,seed=4")
    exact = np.log(orthant_closed_form(problem.R))
    est = VecchiaSir(m=2).estimate(problem, 4000, np.random.default_rng(1))
    assert abs(est.log_marginal_likelihood - exact) <= 4 * est.log_marginal_likelihood_se


def test_markov1d_against_the_exact_truth():
    """The sorted 1-D order is local: with m = 60 the approximation's error is far below the
    Monte Carlo error, and log Z and every test probability are within 3.5 of their SEs (t₉)
    over three seeds, where sir on the dense factor in the given (interleaved) order is
    path-degenerate and flagged at the same budget."""
    problem = make_problem("markov1d:n_train=500,n_test=20,rho=0.9")
    truth = problem.truth
    for seed in range(3):
        est = VecchiaSir().estimate(problem, 4000, np.random.default_rng(seed))
        assert est.status == "ok" and est.diagnostics["ordering"] == "sorted", est.reason
        err = est.log_marginal_likelihood - truth.log_marginal_likelihood
        assert abs(err) <= 3.5 * est.log_marginal_likelihood_se, (seed, err)
        z = (est.test_probabilities - truth.test_probabilities) / est.test_probabilities_se
        assert np.all(np.abs(z) <= 3.5), (seed, z)
    dense = Sir().estimate(problem, 4000, np.random.default_rng(0))
    assert dense.status == "unreliable" and "paths degenerate" in dense.reason


def test_path_degeneracy_at_large_n_is_flagged():
    """At N = 4,096 the SOV proposal's resampling leaves about 1 % of the first-variable
    lineages: the run is unreliable with that reason, its numbers kept."""
    problem = make_problem("markov1d:n_train=4096,n_test=10,rho=0.9,seed=1")
    est = VecchiaSir().estimate(problem, 2000, np.random.default_rng(0))
    assert est.status == "unreliable" and "paths degenerate" in est.reason
    assert np.isfinite(est.log_marginal_likelihood)
    assert est.diagnostics["chunks"] == 1 and est.diagnostics["history_rows"] < problem.n_train


@pytest.mark.parametrize("settings,field", [({"m": 0}, "m"), ({"ordering": "random"}, "ordering"),
                                            ({"ess_threshold": 2}, "ess_threshold"),
                                            ({"resampling": "stratified"}, "resampling")])
def test_bad_settings_give_one_line(settings, field):
    with pytest.raises(InputError) as info:
        VecchiaSir.from_settings(settings)
    assert f"setting '{field}'" in str(info.value) and "\n" not in str(info.value)


def test_memory_is_linear_in_n_and_reads_no_dense_matrix():
    method = VecchiaSir(m=30)
    small, large = (method.memory_estimate(n, 0, 1000) for n in (10**5, 10**6))
    assert sum(large.held.values()) == 10 * sum(small.held.values())   # O(N m) structure
    assert large.total_bytes < 4 * 2**30
    assert not method.needs_dense(10**5)
    assert "block look-ahead" not in large.work   # the SOV step holds no block state
