"""Annealed importance sampling and the posterior chain of the MCMC methods (docs/math.md §9).

As GPML's `infMCMC` (v4.2), a method runs one posterior chain and `ais_runs` independent AIS
runs with the same transition kernel (its "move": elliptical slice, HMC) on the tempered
targets p_τ(f) ∝ N(f; 0, K_j) exp(τ ℓ(f)), ℓ(f) = Σ_i log Φ(y_i f_i), K_j = K + jitter.
The budget is the number of kept posterior samples S:

* the posterior chain starts at f = 0, runs `burn_in` blocks of `skip` transitions at τ = 1,
  then S blocks, keeping the state at the end of each;
* AIS uses T temperatures τ_t = (t / (T − 1))⁴ (T = `temperatures`, or S for 0); each run
  starts from an exact prior draw and for t = 1..T−1 adds (τ_t − τ_{t−1}) ℓ(f_{t−1}) to its
  log weight, then applies `skip` transitions at τ_t. Each weight is unbiased for Z (Neal
  1998); log Ẑ = logsumexp(log w) − log R.

Standard error: the larger of the delta-method SE over the runs (R − 1 degrees of freedom)
and the SE implied by σ², the variance of a log weight estimated from the increments'
covariances over temperatures and lags (IncrementVariance). A run is `unreliable` when σ² > 1
or the runs' log weights spread by more than 1.5 nats (harness.model.reliability;
docs/studies.md, "Annealed importance sampling"). A job costs about
(S + burn_in + R (T − 2)) · skip transitions; the runs and the posterior chain advance as one
batch. The defaults are GPML's: skip = 40, burn_in = 10, ais_runs = 3, S = T = the budget.

`gpml_compat = true` reproduces infMCMC exactly as the paper ran it, including two errors the
default corrects: (1) the AIS increment for temperature t uses the state at the END of level
t, every run starting at f = 0 with `burn_in` blocks at τ = 0 (log Z overestimated by about
0.1–0.8 nats at N = 100–400); (2) the predictive variance adds the spread of the sample means
twice, J* = mean_s Φ(μ_s / sqrt(1 + σ*² + Var_s μ_s)).

A method is `class Mine(AnnealedMethod, Method)` with its kernel in `make_kernel` (a Kernel).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from harness.core.deadline import check_deadline
from harness.core.errors import InputError
from harness.core.special import log_ndtr
from harness.model.constraints import Boolean, Integer, Number
from harness.model.footprint import MemoryEstimate, dense
from harness.model.latent import (
    LatentPrior,
    SingularPrior,
    latent_prior,
    latent_prior_memory,
    predict_from_means,
    prepare_latent_prior,
)
from harness.model.problem import Problem
from harness.model.reliability import degenerate_annealing, unreliable_reason
from harness.model.result import Estimate
from harness.model.settings import check_work
from harness.model.tags import CheckSettings, Tags

CONSTRAINTS = {   # the settings every annealed method has
    "skip": Integer(minimum=1),
    "burn_in": Integer(minimum=0, says="must be a non-negative integer (blocks of 'skip' "
                                       "transitions)"),
    "ais_runs": Integer(minimum=1),
    "temperatures": Integer(minimum=2, also=(0,), says="the number of AIS temperatures "
                            "must be at least 2 (0 = the budget, as GPML)"),
    "jitter": Number(low=0, says="must be a non-negative number (relative to "
                                 "mean(diag K))"),
    "gpml_compat": Boolean(),
}


def temperature_schedule(n_temperatures: int) -> np.ndarray:
    """τ_t = (t / (T − 1))⁴, t = 0..T−1 (GPML: linspace(0, 1, T).^4)."""
    return np.linspace(0.0, 1.0, n_temperatures) ** 4


def combine_ais(log_w: np.ndarray) -> tuple[float, float | None]:
    """log of the mean of the AIS weights and its delta-method standard error."""
    R = len(log_w)
    log_z = float(logsumexp(log_w) - math.log(R))
    if R < 2:
        return log_z, None
    w = np.exp(log_w - np.max(log_w))
    return log_z, float(np.std(w, ddof=1) / (math.sqrt(R) * np.mean(w)))


def increment_se(variance: float | None, runs: int) -> float | None:
    """The standard error of log Ẑ (the mean of `runs` weights) that a log-weight variance σ²
    implies for lognormal weights, sqrt((e^{σ²} − 1) / R) (the delta method), at most σ: the log
    of a mean of R weights spreads no more than one log weight, and past σ² ~ 1 the
    linearisation behind the delta method no longer holds (such runs are unreliable)."""
    if variance is None:
        return None
    return min(math.sqrt(math.expm1(min(variance, 700.0)) / runs), math.sqrt(variance))


class IncrementVariance:
    """The variance σ² of an AIS log weight Σ_t a_t, a_t = (τ_t − τ_{t−1}) ℓ(f_{t−1}), from R runs
    (docs/math.md §9): σ² = Σ_k Γ(k) over lags k = −K..K, with Γ(k) = Σ_t Cov(a_t, a_{t+k})
    estimated from the runs' deviations from their mean at each level (divided by R − 1), and the
    lags cut by Geyer's initial positive (monotone) sequence, as for an MCMC standard error.

    Lag 0 alone, Σ_t Δτ_t² Var_t(ℓ) (`independent`), is the variance if the increments were
    independent (transitions that mix between temperatures; Grosse, Maddison & Salakhutdinov
    2013). Transitions that mix slowly carry a run's deviation from one level to the next, and
    the lags count it (docs/studies.md, "Annealed importance sampling"). None with one run."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []

    def add(self, step: float, ll: np.ndarray) -> None:
        ll = np.asarray(ll, dtype=float)
        self.rows.append(step * (ll - ll.mean()))

    def _autocovariances(self) -> np.ndarray:
        """Γ(k), k = 0..T−1, summed over levels and runs, divided by R − 1."""
        a = np.array(self.rows)                       # T x R
        T, R = a.shape
        n = 1 << (2 * T - 1).bit_length()
        spectrum = np.fft.rfft(a, n=n, axis=0)
        return np.fft.irfft(np.abs(spectrum) ** 2, n=n, axis=0)[:T].sum(axis=1) \
            / (R - 1)

    @property
    def runs(self) -> int:
        return len(self.rows[0]) if self.rows else 0

    @property
    def independent(self) -> float | None:
        """Lag 0 only: Σ_t Δτ_t² Var_t(ℓ)."""
        if self.runs < 2:
            return None
        return float(sum(float(r @ r) for r in self.rows) / (self.runs - 1))

    @property
    def variance(self) -> float | None:
        """Γ(0) + 2 Σ_{k≥1} Γ(k) = 2 Σ_m P_m − Γ(0), with the pairs P_m = Γ(2m) + Γ(2m+1)
        summed while positive and made non-increasing (Geyer 1992); at least Γ(0)."""
        if self.runs < 2:
            return None
        gamma = self._autocovariances()
        if len(gamma) % 2:
            gamma = np.append(gamma, 0.0)
        pairs = gamma[0::2] + gamma[1::2]
        stop = np.flatnonzero(pairs <= 0)
        pairs = np.minimum.accumulate(pairs[:stop[0] if len(stop) else len(pairs)])
        return float(max(2 * pairs.sum() - gamma[0], gamma[0]))


class Kernel(ABC):
    """A batch of chains on the tempered targets p_τ, advanced by one transition kernel.

    G (chains × N) holds the signed latents g = y ⊙ f of every chain and LL their ℓ(f).
    `level` applies `steps` transitions to the chains `chains`, chain chains[a] at
    temperature taus[a]; `adapt` is true during the posterior chain's burn-in.
    """

    def __init__(self, prior: LatentPrior, n_chains: int, gpml_compat: bool):
        self.prior = prior
        self.gpml_compat = gpml_compat
        self.G = np.zeros((n_chains, prior.n))
        self.LL = np.full(n_chains, prior.n * math.log(0.5))   # ℓ(0) = N log 1/2

    def set_state(self, chains: np.ndarray, G: np.ndarray) -> None:
        """Put the chains at the signed latents G (rows)."""
        self.G[chains] = G
        self.LL[chains] = log_ndtr(G).sum(axis=1)

    @abstractmethod
    def level(self, chains: np.ndarray, taus: np.ndarray, steps: int,
              rng: np.random.Generator, adapt: bool = False) -> None: ...

    def end_adaptation(self) -> None:
        """Called once after the posterior chain's burn-in (default mode only)."""

    def kept(self, chain: int) -> np.ndarray:
        """The state of a chain as stored for predictions (signed latents by default)."""
        return self.G[chain].copy()

    def predictive_means(self, samples: np.ndarray) -> np.ndarray:
        """μ*(f_s) = k*ᵀ K_j⁻¹ f_s for the stored samples (S × n_test)."""
        return samples @ self.prior.A

    def diagnostics(self, n_post: int) -> dict[str, Any]:
        return {}




@dataclass(frozen=True)
class Annealing:
    """The posterior chain and the AIS runs of one estimate (module doc).

    Parameters
    ----------
    skip, burn_in, ais_runs, temperatures, gpml_compat
        The annealed method's settings of the same names (module doc).
    """

    skip: int
    burn_in: int
    ais_runs: int
    temperatures: int
    gpml_compat: bool

    def n_temperatures(self, budget: int) -> int:
        return self.temperatures or max(budget, 2)

    def transitions(self, budget: int) -> int:
        """Transitions of one estimate: (budget + burn_in + ais_runs (T − 2)) · skip."""
        return (budget + self.burn_in
                + self.ais_runs * max(self.n_temperatures(budget) - 2, 0)) * self.skip

    def estimate(self, prior: LatentPrior, kernel: Kernel, budget: int,
                 rng: np.random.Generator) -> Estimate:
        """log Ẑ from the AIS runs, the test probabilities from the posterior chain's kept
        samples, the diagnostics, and the status (harness.model.reliability)."""
        T = self.n_temperatures(budget)
        R = self.ais_runs
        run = self._run_gpml if self.gpml_compat else self._run
        samples, log_w, extra = run(kernel, temperature_schedule(T), budget, rng)
        log_z, se_runs = combine_ais(log_w)
        se_increments = increment_se(extra.get("ais_increment_variance"), R)
        se = max(se_runs, se_increments) if se_runs is not None else None
        mu = kernel.predictive_means(samples)
        probs = predict_from_means(mu, prior.sigma2, gpml_compat=self.gpml_compat)
        w = np.exp(log_w - log_w.max())
        diagnostics = {
            "variant": "gpml_compat" if self.gpml_compat else "corrected",
            "temperatures": T,
            "ais_log_weights": [float(v) for v in log_w],
            "ais_log_weight_sd": float(np.std(log_w, ddof=1)) if R > 1 else None,
            "ais_weight_ess": float(w.sum() ** 2 / (w ** 2).sum()),
            "log_z_runs_se": se_runs,
            "log_z_increments_se": se_increments,
            "jitter_variance": prior.jitter_variance,
            **extra,
            **kernel.diagnostics(budget),
        }
        reason = unreliable_reason(degenerate_annealing(diagnostics))
        return Estimate(log_z, probs, log_marginal_likelihood_se=se, diagnostics=diagnostics,
                        status="unreliable" if reason else "ok", reason=reason)

    def _run(self, kernel: Kernel, tau: np.ndarray, budget: int, rng):
        """Corrected AIS (weights from the state before each temperature's transitions)."""
        R, T, n, skip = self.ais_runs, len(tau), kernel.prior.n, self.skip
        post = np.array([0])
        ais = np.arange(1, R + 1)
        kernel.set_state(ais, kernel.prior.signed_draws(rng.standard_normal((R, n))))
        one = np.ones(1)
        for _ in range(self.burn_in):
            check_deadline()
            kernel.level(post, one, skip, rng, adapt=True)
        kernel.end_adaptation()
        samples = np.empty((budget, kernel.kept(0).shape[0]))
        log_w = np.zeros(R)
        increments = IncrementVariance()
        tau_prev = 0.0
        for k in range(max(budget, T - 1)):
            check_deadline()
            chains, taus = ([0], [1.0]) if k < budget else ([], [])
            t = k + 1                                  # the AIS temperature of this level
            if t < T:
                log_w += (tau[t] - tau_prev) * kernel.LL[ais]
                increments.add(tau[t] - tau_prev, kernel.LL[ais])
                tau_prev = tau[t]
                if t < T - 1:                          # the last temperature needs no moves
                    chains += list(ais)
                    taus += [tau[t]] * R
            if chains:
                kernel.level(np.array(chains), np.array(taus), skip, rng)
            if k < budget:
                samples[k] = kernel.kept(0)
        transitions = {"posterior_transitions": (self.burn_in + budget) * skip,
                       "ais_transitions_per_run": max(T - 2, 0) * skip,
                       "ais_increment_variance": increments.variance,
                       "ais_increment_variance_independent": increments.independent}
        return samples, log_w, transitions

    def _run_gpml(self, kernel: Kernel, tau: np.ndarray, budget: int, rng):
        """GPML infMCMC: every chain from f = 0, burn_in blocks at τ = 0 (AIS) or 1, and the
        AIS increment for temperature t taken at the state after level t (its error 1)."""
        R, T, skip, nb = self.ais_runs, len(tau), self.skip, self.burn_in
        ais = np.arange(1, R + 1)
        ais_tau = np.concatenate([np.zeros(nb), tau])
        samples = np.empty((budget, kernel.kept(0).shape[0]))
        log_w = np.zeros(R)
        increments = IncrementVariance()
        for k in range(nb + max(budget, T)):
            check_deadline()
            chains, taus = ([0], [1.0]) if k < nb + budget else ([], [])
            if k < nb + T:
                chains += list(ais)
                taus += [ais_tau[k]] * R
            kernel.level(np.array(chains), np.array(taus), skip, rng)
            if nb <= k < nb + budget:
                samples[k - nb] = kernel.kept(0)
            if nb + 1 <= k < nb + T:
                t = k - nb
                log_w += (tau[t] - tau[t - 1]) * kernel.LL[ais]
                increments.add(tau[t] - tau[t - 1], kernel.LL[ais])
        transitions = {"posterior_transitions": (nb + budget) * skip,
                       "ais_transitions_per_run": (nb + T) * skip,
                       "ais_increment_variance": increments.variance,
                       "ais_increment_variance_independent": increments.independent}
        return samples, log_w, transitions


class AnnealedMethod(ABC):
    """Mixin of a Method estimated by annealed importance sampling and a posterior chain
    (module doc): the method holds the settings of CONSTRAINTS (and `jitter`) and hands its
    transition kernel over in `make_kernel`."""

    budget_unit = "samples"
    tags = Tags(handles_orthant=False)
    # smoke_budget: 500 samples would be 80 000 transitions per chain
    checks = CheckSettings(test_budget=60, smoke_budget=20)
    constraints = CONSTRAINTS

    @abstractmethod
    def make_kernel(self, problem: Problem, prior: LatentPrior, n_chains: int) -> Kernel:
        """The transition kernel of `n_chains` chains on the problem's latent prior."""

    def annealing(self) -> Annealing:
        return Annealing(self.skip, self.burn_in, self.ais_runs, self.temperatures,
                         self.gpml_compat)

    def steps_per_transition(self) -> int:
        """The cost of one transition in sampler steps (HMC: its leapfrog steps)."""
        return 1

    def check_job(self, budget: int, n_train: int) -> None:
        """Refuse a burn-in longer than the budget, and more work than a job may do."""
        if self.burn_in > budget:
            raise InputError(
                f"method {self.label()}: setting 'burn_in'",
                f"{self.burn_in} burn-in blocks is larger than the budget of {budget} samples",
                "lower burn_in or raise the budget")
        check_work(f"method {self.label()} at budget {budget}",
                   self.annealing().transitions(budget) * self.steps_per_transition(),
                   "sampler steps ((budget + burn_in + ais_runs (T - 2)) x skip"
                   + (" x leapfrog_steps)" if self.steps_per_transition() > 1 else ")"),
                   "lower skip, ais_runs, temperatures or the budget")

    def prepare(self, problem: Problem) -> None:
        prepare_latent_prior(problem, self.jitter)

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """The latent prior (K_j, its factor, test weights); the kept samples (budget x N),
        their predictive means and probabilities (2 x budget x n_test), the chains' states."""
        held, setup = latent_prior_memory(n_train, n_test)
        work = {"kept samples": dense(budget, n_train),
                "predictive means": 2 * dense(budget, n_test),
                "chains": 8 * dense(1 + self.ais_runs, n_train)}
        return MemoryEstimate(held, work, setup)

    def _estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        try:
            prior = latent_prior(problem, self.jitter)
        except SingularPrior as exc:
            return Estimate.failed(str(exc))
        kernel = self.make_kernel(problem, prior, 1 + self.ais_runs)
        return self.annealing().estimate(prior, kernel, budget, rng)
