"""The Vecchia methods' approximation error (harness.engine.vecchia_error): the fields, the
point estimates unchanged, the stated total error covering the actual one (or the status
saying it may not), the ordering check, and split parts."""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine.vecchia_error import companion_budget, companion_ms
from harness.engine.vecchia_factor import NonLocalOrderingWarning
from harness.methods.vecchia_sir import VecchiaSir
from harness.methods.vecchia_sov import VecchiaSov
from harness.methods.vecchia_tilting import VecchiaTilting
from harness.plugins.specs import make_problem

pytestmark = pytest.mark.usefixtures("one_blas_thread")
MARKOV = "markov1d:n_train=500,n_test=20,rho=0.9"


@pytest.fixture(scope="module")
def markov():
    return make_problem(MARKOV)


def test_companions():
    assert companion_ms(60, 1000) == [30, 60, 120]
    assert companion_ms(1, 1000) == [1, 2]
    assert companion_ms(60, 100) == [30, 60, 99]      # 2m capped at N - 1: exact
    assert companion_ms(99, 100) == []                # exact already
    assert companion_budget(400) == 400 and companion_budget(40000) == 10000


@pytest.mark.parametrize("cls", [VecchiaTilting, VecchiaSov, VecchiaSir])
def test_fields_and_unchanged_point_estimates(cls, markov):
    """The fields' shapes; log Ẑ and the test probabilities are the walk's at m, bit for bit,
    with or without the estimate; 'none' states nothing."""
    est = cls(m=5).estimate(markov, 1000, np.random.default_rng(0))
    bare = cls(m=5, approximation_error="none").estimate(markov, 1000,
                                                         np.random.default_rng(0))
    assert est.log_marginal_likelihood == bare.log_marginal_likelihood
    np.testing.assert_array_equal(est.test_probabilities, bare.test_probabilities)
    assert bare.approximation_error is None and bare.test_approximation_error is None
    assert np.isfinite(est.approximation_error) and est.approximation_error >= 0
    assert est.test_approximation_error.shape == (markov.n_test,)
    assert est.diagnostics["approximation_m"] == [2, 5, 10]


def test_small_m_is_covered_or_flagged(markov):
    """Where the approximation dominates (m = 2, 3, 5: up to 1.6 nats off, 60 MC SEs), every
    estimate either states a total error that covers its error (within 3) or is unreliable
    with a reason naming the approximation and m."""
    truth = markov.truth
    flagged = 0
    for m in (2, 3, 5):
        for seed in range(2):
            est = VecchiaTilting(m=m).estimate(markov, 2000, np.random.default_rng(seed))
            total = np.hypot(est.log_marginal_likelihood_se, est.approximation_error)
            err = abs(est.log_marginal_likelihood - truth.log_marginal_likelihood)
            test_total = np.hypot(est.test_probabilities_se, est.test_approximation_error)
            test_err = np.abs(est.test_probabilities - truth.test_probabilities)
            if est.status == "ok":
                assert err <= 3 * total and np.all(test_err <= 3.5 * test_total), (m, seed)
            else:
                flagged += 1
                assert "approximation" in est.reason and "larger m" in est.reason
    assert flagged >= 4   # m = 3 and 5 do not settle as m doubles


def test_large_m_states_a_small_error(markov):
    """m = 60 on a short-range 1-D problem: the approximation error is far below the MC SE,
    the status ok and the truth within the stated error."""
    est = VecchiaTilting().estimate(markov, 2000, np.random.default_rng(0))
    assert est.status == "ok", est.reason
    assert est.approximation_error < 0.01 * est.log_marginal_likelihood_se
    assert np.all(est.test_approximation_error < 0.1 * est.test_probabilities_se)
    err = abs(est.log_marginal_likelihood - markov.truth.log_marginal_likelihood)
    assert err <= 3 * np.hypot(est.log_marginal_likelihood_se, est.approximation_error)


def test_given_order_on_interleaved_data_is_warned_and_unreliable(markov):
    """markov1d's own order interleaves the classes, so consecutive points are far apart:
    'given' is warned at set-up (one line) and the estimate unreliable, naming the fix."""
    with pytest.warns(NonLocalOrderingWarning) as caught:
        est = VecchiaTilting(m=5, ordering="given").estimate(markov, 1000,
                                                              np.random.default_rng(0))
    message = str(caught[0].message)
    assert "\n" not in message and "ordering=given" in message and "ordering=auto" in message
    assert est.status == "unreliable" and "use ordering=auto" in est.reason
    assert est.diagnostics["ordering_excess_nats"] > 0.5


def test_split_parts_pool_the_companions(markov):
    """Two parts: every part runs its companions; the combined estimate states the error of
    their pooled randomisations, and equals the walk at m of both parts."""
    method = VecchiaTilting(m=5)
    rngs = np.random.default_rng(1).spawn(2)
    parts = [method.estimate_part(markov, b, r) for b, r in
             zip(method.split_budget(2000, 2), rngs, strict=True)]
    assert all(len(p["approximation"]["sums"]) == 3 for p in parts)
    est = method.combine_parts(markov, parts)
    bare = VecchiaTilting(m=5, approximation_error="none").combine_parts(
        markov, [{k: v for k, v in p.items() if k != "approximation"} for p in parts])
    assert est.log_marginal_likelihood == bare.log_marginal_likelihood
    assert est.approximation_error > 0.1 and est.test_approximation_error.shape == (20,)
    lost = method.combine_parts(markov, [parts[0], {k: v for k, v in parts[1].items()
                                                    if k != "approximation"}])
    assert lost.status == "unreliable" and "not estimated" in lost.reason
