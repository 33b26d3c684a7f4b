"""GPyTorch's variational GP, as a machine-learning researcher runs it: "gpytorch-vgp".

A peer, not one of the harness's estimators: the model a GPyTorch user writes for
probit GPC, so the harness can say how far it is from the exact answer. Optional:
`pip install -e ".[peers]"` (torch 2.13.0, CPU build; gpytorch); without it the registry names
that command instead of listing it.

An ApproximateGP with its inducing points at the training inputs (fixed), a
CholeskyVariationalDistribution over all of them (whitened by default: VariationalStrategy;
`whiten=false`: UnwhitenedVariationalStrategy), a zero mean, the problem's kernel in
GPyTorch's own forms (`gpytorch_kernel`: RBFKernel, MaternKernel, LinearKernel, ConstantKernel,
ScaleKernel, set to the harness's alpha and beta) with its hyperparameters FIXED (no gradient:
only the variational parameters are fitted) and gpytorch's BernoulliLikelihood, whose link is
the probit Phi. The budget is the number of Adam steps on the ELBO (VariationalELBO, which
returns ELBO / N: multiplied back by N here), in float64 on the CPU.

An APPROXIMATION (Tags.exact False): the reported log Z is the ELBO at the last step, a lower
bound on log Z (up to GPyTorch's Gauss-Hermite quadrature of the expected log-likelihood and its
Cholesky jitter); test probabilities are the likelihood's marginal Phi(mu / sqrt(1 + s^2)) under
q(f*). Deterministic: the variational mean starts at 0 (mean_init_std=0) and the covariance at
the prior's, so the answer does not depend on the seed. torch uses the harness's thread count
(harness.core.threads); the CPU deadline is checked after every Adam step.
"""

from __future__ import annotations

import importlib.util
import warnings
from importlib.metadata import version

import numpy as np

from harness.core.deadline import check_deadline
from harness.core.kernels import PRML, RBF, Kernel, Linear, Matern12, Matern32, Matern52
from harness.core.threads import threads
from harness.model.constraints import Boolean, Number
from harness.model.footprint import MemoryEstimate, dense
from harness.model.method import Method
from harness.model.problem import Problem
from harness.model.result import Estimate
from harness.model.tags import CheckSettings, Tags

for _package in ("torch", "gpytorch"):   # the peers extra; imported when first used
    if importlib.util.find_spec(_package) is None:
        raise ModuleNotFoundError(f"No module named {_package!r}", name=_package)

PACKAGES = ("torch", "gpytorch", "linear_operator")
KERNELS = (RBF, Matern12, Matern32, Matern52, Linear, PRML)


def package_versions() -> dict[str, str]:
    """The versions of the packages a result of this method depends on."""
    return {f"{name}_version": version(name) for name in PACKAGES}


def _fixed(module, **values):
    """Set a GPyTorch module's hyperparameters (through their constraints) and freeze them."""
    import torch

    for name, value in values.items():
        setattr(module, name, torch.tensor(float(value), dtype=torch.float64))
    for parameter in module.parameters():
        parameter.requires_grad_(False)
    return module


def gpytorch_kernel(kernel: Kernel):
    """The problem's kernel as a GPyTorch kernel with fixed hyperparameters, or None for a
    kernel with no form here. The harness's RBF is beta exp(-r^2 / alpha): RBFKernel's
    exp(-r^2 / (2 l^2)) with l = sqrt(alpha / 2), scaled by beta."""
    import gpytorch.kernels as gk

    if type(kernel) is RBF:
        base = _fixed(gk.RBFKernel(), lengthscale=np.sqrt(kernel.alpha / 2))
        return _fixed(gk.ScaleKernel(base), outputscale=kernel.beta).double()
    nu = {Matern12: 0.5, Matern32: 1.5, Matern52: 2.5}.get(type(kernel))
    if nu is not None:
        base = _fixed(gk.MaternKernel(nu=nu), lengthscale=kernel.alpha)
        return _fixed(gk.ScaleKernel(base), outputscale=kernel.beta).double()
    if type(kernel) is Linear:
        return _fixed(gk.LinearKernel(), variance=kernel.scale).double()
    if type(kernel) is PRML:   # theta0 exp(-theta1 r^2 / 2) + theta2 + theta3 x.x'
        base = _fixed(gk.RBFKernel(), lengthscale=1 / np.sqrt(kernel.theta1))
        total = _fixed(gk.ScaleKernel(base), outputscale=kernel.theta0)
        if kernel.theta2 > 0:
            total = total + _fixed(gk.ConstantKernel(), constant=kernel.theta2)
        if kernel.theta3 > 0:
            total = total + _fixed(gk.LinearKernel(), variance=kernel.theta3)
        return total.double()
    return None


def refusal(problem: Problem) -> str | None:
    """Why this peer cannot run the problem (None: it can)."""
    if problem.is_orthant:
        return ("needs a GPC problem (training inputs and a kernel): a pure orthant problem "
                "has no latent GP to put in a model")
    if type(problem.kernel) not in KERNELS:
        return (f"has no form for the kernel {type(problem.kernel).__name__} (it knows rbf, "
                "matern12/32/52, linear and prml)")
    return None


def variational_gp(X, kernel, whiten: bool):
    """GPyTorch's ApproximateGP with inducing points at the inputs X (a float64 tensor)."""
    import gpytorch

    class VariationalGP(gpytorch.models.ApproximateGP):
        def __init__(self):
            q = gpytorch.variational.CholeskyVariationalDistribution(len(X),
                                                                     mean_init_std=0.0)
            kind = (gpytorch.variational.VariationalStrategy if whiten
                    else gpytorch.variational.UnwhitenedVariationalStrategy)
            super().__init__(kind(self, X, q, learn_inducing_locations=False))
            self.mean_module = gpytorch.means.ZeroMean()
            self.covar_module = kernel

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x),
                                                             self.covar_module(x))

    return VariationalGP().double()


class GpytorchVgp(Method):
    """GPyTorch's variational GP with the probit likelihood (an approximation; module doc)."""

    name = "gpytorch-vgp"
    summary = ("GPyTorch variational GP, inducing points at the training inputs, probit "
               "BernoulliLikelihood, fixed hyperparameters (a peer: pip install -e "
               "'.[peers]'): the ELBO, a lower bound on log Z; an APPROXIMATION")
    budget_unit = "Adam steps"
    tags = Tags(exact=False, stochastic=False, handles_orthant=False)
    checks = CheckSettings(smoke_budget=50, test_budget=200)
    constraints = {"lr": Number(low=0, low_open=True), "whiten": Boolean()}
    setting_help = {"lr": "Adam's learning rate on the variational parameters",
                    "whiten": "true: VariationalStrategy (whitened); false: "
                              "UnwhitenedVariationalStrategy"}

    def __init__(self, lr: float = 0.05, whiten: bool = True):
        self.lr = lr
        self.whiten = whiten

    def needs_dense(self, n_train: int) -> bool:
        return False   # K comes from GPyTorch's kernel, not problem.K

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """Per Adam step GPyTorch builds K_uu, its Cholesky factor, the variational factor
        and S = L L^T, their products and the gradients of each (about 12 N x N)."""
        return MemoryEstimate(work={"GPyTorch's N x N matrices and gradients (12)":
                                    12 * dense(n_train),
                                    "test cross-covariances": 3 * dense(n_train, n_test)})

    def _estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        why = refusal(problem)
        if why is not None:
            return Estimate.failed(f"{self.name} {why}")
        import torch

        previous = torch.get_num_threads()
        torch.set_num_threads(threads())
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # GPyTorch's jitter notices
                return self._fit(problem, budget)
        finally:
            torch.set_num_threads(previous)

    def _fit(self, problem: Problem, budget: int) -> Estimate:
        import gpytorch
        import torch

        X = torch.as_tensor(problem.X_train, dtype=torch.float64)
        y = torch.as_tensor((problem.y_train > 0).astype(float), dtype=torch.float64)
        n = len(y)
        model = variational_gp(X, gpytorch_kernel(problem.kernel), self.whiten)
        likelihood = gpytorch.likelihoods.BernoulliLikelihood().double()
        elbo = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=n)
        optimiser = torch.optim.Adam(model.variational_parameters(), lr=self.lr)
        model.train()
        likelihood.train()
        for _ in range(budget):
            optimiser.zero_grad()
            loss = -elbo(model(X), y)
            loss.backward()
            optimiser.step()
            check_deadline()
        with torch.no_grad():
            bound = float(elbo(model(X), y)) * n
            model.eval()
            likelihood.eval()
            if problem.n_test:
                Xs = torch.as_tensor(problem.X_test, dtype=torch.float64)
                probs = likelihood(model(Xs)).probs.numpy().astype(float)
            else:
                probs = np.empty(0)
        diagnostics = {"approximation": "variational GP (ELBO: a lower bound on log Z)",
                       "elbo": bound, "adam_steps": budget, "last_loss": float(loss) * n,
                       **package_versions()}
        if not np.isfinite(bound):
            return Estimate.failed("the ELBO is not finite", **diagnostics)
        return Estimate(min(bound, 0.0), np.clip(probs, 0.0, 1.0), diagnostics=diagnostics)
