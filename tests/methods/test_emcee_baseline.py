"""The emcee baseline (methods/emcee_baseline.py): converges on a small problem, reports no
log Z, refuses too few walkers, and shows honestly how it degrades with N (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.metrics import mae
from harness.datasets.linear1d import linear1d
from harness.methods.emcee_baseline import EmceeEnsemble

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def test_small_problem_against_the_oracle():
    problem = linear1d(n_train=8, n_test=10, seed=5)
    est = EmceeEnsemble().estimate(problem, 3000, np.random.default_rng(0))
    assert est.status == "ok" and est.log_marginal_likelihood is None
    assert mae(est.test_probabilities, problem.truth.test_probabilities) < 0.01
    d = est.diagnostics
    assert d["walkers"] == 18 and d["kept_steps"] == 1500
    assert 0 < d["acceptance_fraction"] < 1
    assert d["autocorr_time_max"] >= 1 and d["kept_steps_per_autocorr_time"] > 20


def test_too_few_walkers_are_refused_before_running():
    method = EmceeEnsemble(walkers=30)
    with pytest.raises(InputError, match="too few"):
        method.check_job(100, 20)
    with pytest.raises(InputError, match="walkers"):
        method.estimate(linear1d(n_train=20, n_test=2), 10, np.random.default_rng(0))
    method.check_job(100, 15)


@pytest.mark.parametrize("setting, value", [("walkers", -2), ("burn_in_fraction", 1.0),
                                            ("thin", 0), ("jitter", -1e-3)])
def test_bad_settings(setting, value):
    with pytest.raises(InputError, match=setting):
        EmceeEnsemble(**{setting: value}).check_settings()


@pytest.mark.slow
def test_degrades_as_n_grows(capsys):
    """Same number of steps, growing N: acceptance falls and the autocorrelation time grows
    (measured: acceptance 0.42 / 0.21 / 0.13, max τ 38 / 53 / 55 steps, MAE 0.019 / 0.011 /
    0.027 at N = 10 / 40 / 100; emcee's own τ estimate is a lower bound on chains this short)."""
    rows = []
    for n in (10, 40, 100):
        problem = linear1d(n_train=n, n_test=20, seed=6)
        est = EmceeEnsemble().estimate(problem, 1000, np.random.default_rng(0))
        rows.append((n, mae(est.test_probabilities, problem.truth.test_probabilities),
                     est.diagnostics["autocorr_time_max"],
                     est.diagnostics["acceptance_fraction"]))
    with capsys.disabled():
        print("\nemcee, 1000 steps, walkers 2N+2:  N, MAE, max autocorr time, acceptance")
        for row in rows:
            print(f"  {row[0]:4d}  {row[1]:.4f}  {row[2]:7.1f}  {row[3]:.3f}")
    assert rows[0][3] > rows[1][3] > rows[2][3]
    assert rows[-1][2] > rows[0][2]
