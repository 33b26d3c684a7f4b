"""emcee's affine-invariant ensemble sampler on the whitened latent, "emcee" (docs/math.md §9).

A generic baseline (what a user of emcee would try first): the target is the posterior of the
whitened latent u, f = L u, K_j = K + jitter = L Lᵀ,

  log p(u | y) = −½ uᵀu + Σ_i log Φ(y_i (L u)_i) + const,

sampled with emcee's default stretch move (Goodman & Weare 2010), `walkers` walkers (0: 2N + 2),
all started from independent prior draws u ~ N(0, I). The budget is the number of ensemble
steps (each moves every walker once); the first `burn_in_fraction` of them are discarded and
every `thin`-th later step contributes all its walkers to the predictions

  J* = mean over kept (step, walker) of Φ(μ*(u) / sqrt(1 + σ*²)),  μ*(u) = (L⁻¹ k*)ᵀ u,

which includes the final ensemble. emcee gives no marginal likelihood: log Z is reported as
not estimated (None). Diagnostics: the mean acceptance fraction and emcee's integrated
autocorrelation time (emcee.autocorr.integrated_time) of the log posterior and of the latent
test means, with the kept length in units of the largest; emcee's guidance wants more than 50.

The stretch move's efficiency falls quickly with the dimension (here N): expect long
autocorrelation times and biased predictions at N in the hundreds. That is the point of the
baseline; the numbers are shown as they come.
"""

from __future__ import annotations

import emcee
import numpy as np
from scipy.special import log_ndtr, ndtr

from harness.core.deadline import check_deadline
from harness.core.errors import InputError
from harness.model.constraints import Integer, Number
from harness.model.footprint import MemoryEstimate, dense
from harness.model.latent import (
    SingularPrior,
    latent_prior,
    latent_prior_memory,
    prepare_latent_prior,
)
from harness.model.method import Method
from harness.model.problem import Problem
from harness.model.result import Estimate
from harness.model.settings import check_work
from harness.model.tags import CheckSettings, Tags

TRACKED_TEST_POINTS = 3


class EmceeEnsemble(Method):
    """emcee's EnsembleSampler (stretch move) on the whitened latent; predictions only."""

    name = "emcee"
    summary = ("emcee affine-invariant ensemble sampler on the whitened latent (generic "
               "baseline; no log Z)")
    budget_unit = "ensemble steps"
    tags = Tags(estimates_log_z=False, handles_orthant=False)
    checks = CheckSettings(skip={"accuracy": "cannot mix at N = 200 in a test's time (its "
                                 "accuracy is tested on smaller problems in "
                                 "tests/methods/test_emcee_baseline.py)"})
    constraints = {
        "walkers": Integer(minimum=0, says="must be a non-negative integer (0 = 2N + 2)"),
        "burn_in_fraction": Number(low=0, high=1, high_open=True, says="must be in [0, 1)"),
        "thin": Integer(minimum=1),
        "jitter": Number(low=0, says="must be a non-negative number"),
    }
    setting_help = {"walkers": "walkers of the ensemble",
                    "burn_in_fraction": "fraction of the steps discarded as burn-in",
                    "thin": "every thin-th step after the burn-in feeds the predictions"}

    def __init__(self, walkers: int = 0, burn_in_fraction: float = 0.5, thin: int = 5,
                 jitter: float = 1e-6):
        self.walkers = walkers
        self.burn_in_fraction = burn_in_fraction
        self.thin = thin
        self.jitter = jitter

    def n_walkers(self, n_train: int) -> int:
        return self.walkers or 2 * n_train + 2

    def check_job(self, budget: int, n_train: int) -> None:
        if self.walkers and self.walkers < 2 * n_train:
            raise InputError(
                f"method {self.label()}: setting 'walkers'",
                f"{self.walkers} walkers are too few for {n_train} dimensions: the stretch "
                "move never leaves the span of the walkers, and emcee asks for at least twice "
                "the dimension", f"use walkers >= {2 * n_train}, or 0 for 2N + 2")
        check_work(f"method {self.label()} at budget {budget}", self.n_walkers(n_train) * budget,
                   "walker moves (walkers x budget)", "use fewer walkers or a smaller budget")

    def prepare(self, problem: Problem) -> None:
        prepare_latent_prior(problem, self.jitter)

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """The latent prior; the ensemble (walkers x N): its coordinates, the previous ones,
        emcee's proposals and the log-probability's product and log Φ (6 arrays), Lᵀ; the
        trace of the kept steps ((1 + 3 tracked test points) per walker and step) and the
        walkers' test means."""
        held, setup = latent_prior_memory(n_train, n_test)
        W = self.n_walkers(n_train)
        kept = budget - int(self.burn_in_fraction * budget)
        work = {"walkers (6 x walkers x N)": 6 * dense(W, n_train), "L transpose": dense(n_train),
                "trace": dense(kept * W, 1 + min(TRACKED_TEST_POINTS, n_test)),
                "walker test means": 2 * dense(W, n_test)}
        return MemoryEstimate(held, work, setup)

    def _estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        try:
            prior = latent_prior(problem, self.jitter)
        except SingularPrior as exc:
            return Estimate.failed(str(exc))
        n = prior.n
        n_walkers = self.n_walkers(n)
        Lt, y = prior.L.T.copy(), prior.y

        def log_prob(U):
            return -0.5 * np.einsum("ij,ij->i", U, U) + log_ndtr((U @ Lt) * y).sum(axis=1)

        sampler = emcee.EnsembleSampler(n_walkers, n, log_prob, vectorize=True)
        sampler.random_state = np.random.RandomState(
            rng.integers(2**32, dtype=np.uint64)).get_state()
        start = emcee.State(rng.standard_normal((n_walkers, n)))
        burn = int(self.burn_in_fraction * budget)
        tracked = min(TRACKED_TEST_POINTS, problem.n_test)
        trace = []                  # (kept step, walker, 1 + tracked) for the autocorrelation
        sums = np.zeros(problem.n_test)
        count = 0
        scale = 1.0 / np.sqrt(1.0 + prior.sigma2)
        previous = start.coords.copy()
        moves = 0
        for step, state in enumerate(sampler.sample(start, iterations=budget, store=False)):
            if step % 50 == 0:
                check_deadline()
            U = state.coords
            moves += int(np.count_nonzero(np.any(U != previous, axis=1)))
            previous = U.copy()
            if step < burn:
                continue
            mu = U @ prior.W if problem.n_test else np.empty((n_walkers, 0))
            trace.append(np.column_stack([state.log_prob, mu[:, :tracked]]))
            if (step - burn) % self.thin == 0 or step == budget - 1:
                sums += ndtr(mu * scale).sum(axis=0)
                count += n_walkers
        probs = np.clip(sums / max(count, 1), 0.0, 1.0) if problem.n_test else np.empty(0)
        diagnostics = {"walkers": n_walkers, "kept_steps": len(trace),
                       "acceptance_fraction": moves / (budget * n_walkers)}
        if len(trace) >= 2:
            x = np.array(trace)
            tau = emcee.autocorr.integrated_time(x, c=5, tol=0, quiet=True)
            diagnostics.update({
                "autocorr_time_log_prob": float(tau[0]),
                "autocorr_time_max": float(np.max(tau)),
                "kept_steps_per_autocorr_time": float(len(trace) / np.max(tau)),
            })
        return Estimate(None, probs, diagnostics=diagnostics)

