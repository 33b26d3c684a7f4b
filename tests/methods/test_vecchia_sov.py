"""vecchia-sov (methods/vecchia_sov.py): with every earlier neighbour it is the exact `sov`;
the closed form at N = 3. Its input errors, memory and edge cases, shared with vecchia-tilting
(the same Vecchia factor, harness.engine.vecchia_factor), are tested in test_vecchia_tilting.py."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.oracles import orthant_closed_form
from harness.methods.sov import Sov
from harness.methods.vecchia_sov import VecchiaSov
from harness.plugins.specs import make_problem

pytestmark = pytest.mark.usefixtures("one_blas_thread")
PAIRS = [(Sov(), VecchiaSov)]


@pytest.mark.parametrize("exact,cls", PAIRS)
@pytest.mark.parametrize("spec", ["onefactor:n=50", "linear1d:n_train=50,n_test=5"])
def test_all_earlier_neighbours_reproduce_the_exact_estimator(exact, cls, spec):
    """m >= N - 1 in the given order: L is the Cholesky factor, so the same points give the
    dense method's answer to rounding, within its SE of the exact truth."""
    problem = make_problem(spec)
    a = exact.estimate(problem, 2000, np.random.default_rng(3))
    b = cls(m=problem.n_train, ordering="given").estimate(problem, 2000,
                                                          np.random.default_rng(3))
    assert b.log_marginal_likelihood == pytest.approx(a.log_marginal_likelihood, abs=1e-9)
    np.testing.assert_allclose(b.test_probabilities, a.test_probabilities, atol=1e-9)
    err = b.log_marginal_likelihood - problem.truth.log_marginal_likelihood
    assert abs(err) <= 4 * b.log_marginal_likelihood_se + 1e-3
    assert b.diagnostics["m"] == problem.n_train and b.status == "ok"


@pytest.mark.parametrize("cls", [VecchiaSov])
def test_closed_form_n3(cls):
    problem = make_problem("onefactor:n=3,seed=4")
    exact = np.log(orthant_closed_form(problem.R))
    est = cls(m=2).estimate(problem, 4000, np.random.default_rng(1))
    assert abs(est.log_marginal_likelihood - exact) <= 5 * est.log_marginal_likelihood_se + 1e-3
