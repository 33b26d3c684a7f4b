"""The GPyTorch peer (gpytorch-vgp): its ELBO a lower bound on the exact log Z, labelled an
approximation, the kernel it builds against the problem's, its refusals and the generic
checks. Skipped without the `peers` extra (pip install -e ".[peers]")."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import KERNELS, X, kernel_name

torch = pytest.importorskip("torch")
pytest.importorskip("gpytorch")

from harness.core.threads import compute_threads  # noqa: E402
from harness.datasets.markov1d import markov1d  # noqa: E402
from harness.execution.runner import run_one  # noqa: E402
from harness.methods.gpytorch_vgp import GpytorchVgp, gpytorch_kernel  # noqa: E402
from harness.model.problem import Problem  # noqa: E402
from harness.plugins.check_suite import check_method  # noqa: E402
from harness.plugins.registry import methods  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def small():
    return markov1d(n_train=40, n_test=10, rho=0.9, beta=1.0)


@pytest.mark.parametrize("kernel", KERNELS, ids=kernel_name)
def test_the_kernel_gpytorch_builds_is_the_problems(kernel):
    k = gpytorch_kernel(kernel)
    K = k(torch.as_tensor(X)).to_dense().detach().numpy()
    # GPyTorch computes distances its own way (1e-7 relative)
    assert K[0, 1] == pytest.approx(kernel(X, X)[0, 1], rel=1e-6)
    assert K == pytest.approx(kernel(X, X), rel=1e-6)
    assert not any(p.requires_grad for p in k.parameters())           # fixed hyperparameters


def test_elbo_is_below_the_exact_log_z_and_labelled_approximate(small):
    record = run_one(small, GpytorchVgp(), 300, np.random.default_rng(0))
    truth = small.truth
    assert record["status"] == "ok" and record["exact_method"] is False
    gap = truth.log_marginal_likelihood - record["log_marginal_likelihood"]
    assert -1e-6 <= gap < 0.1          # a lower bound, and a close one after 300 Adam steps
    assert record["mae"] < 2e-3
    assert GpytorchVgp.tags.exact is False
    assert record["diagnostics"]["torch_version"].startswith("2.13.0")


def test_the_answer_does_not_depend_on_the_seed_or_threads(small):
    one = GpytorchVgp().estimate(small, 20, np.random.default_rng(0))
    with compute_threads(2):
        two = GpytorchVgp().estimate(small, 20, np.random.default_rng(9))
    assert one.log_marginal_likelihood == pytest.approx(two.log_marginal_likelihood, abs=1e-9)
    assert torch.get_num_threads() >= 1


def test_unwhitened_agrees(small):
    a = GpytorchVgp().estimate(small, 300, np.random.default_rng(0))
    b = GpytorchVgp(whiten=False).estimate(small, 300, np.random.default_rng(0))
    assert b.log_marginal_likelihood <= small.truth.log_marginal_likelihood + 1e-6
    assert abs(a.log_marginal_likelihood - b.log_marginal_likelihood) < 0.1


def test_an_orthant_problem_is_refused():
    est = GpytorchVgp().estimate(Problem.orthant("o", np.eye(3)), 10, np.random.default_rng(0))
    assert est.status == "failed" and "orthant" in est.reason


def test_listed_with_the_extra():
    assert "gpytorch-vgp" in methods()


def test_generic_checks():
    check_method(GpytorchVgp, quick=True)
