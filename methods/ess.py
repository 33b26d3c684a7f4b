"""Elliptical slice sampling with annealed importance sampling, "ess" (docs/math.md §9).

One transition (Murray, Adams & MacKay 2010) on p_τ(f) ∝ N(f; 0, K_j) exp(τ ℓ(f)):

  ν ~ N(0, K_j);  log y = τ ℓ(f) + log U;  θ ~ U(0, 2π), bracket [θ − 2π, θ];
  repeat: f' = f cos θ + ν sin θ; accept if τ ℓ(f') > log y; else shrink the bracket
  towards 0 on the side of θ and draw θ uniformly in it.

It leaves p_τ invariant for every τ ∈ [0, 1] (at τ = 0 the first proposal is always taken),
so it serves both the posterior chain (τ = 1) and the AIS runs (harness.engine.ais describes
the schedule, the budget and the log Z estimate). Predictions average Φ(μ*(f_s)/sqrt(1 + σ*²))
over the kept samples (harness/model/latent.py).

Implementation: the chains live in signed coordinates g = y ⊙ f (ℓ = Σ log Φ(g_i)); the prior
draws of a whole block of `skip` transitions for every chain come from one GEMM with the
cached Cholesky factor of K_j, and the slice loop is compiled (numba), chain after chain, with
log Φ from harness.core.special.log_ndtr_. A rejected proposal stops evaluating ℓ as soon as its
partial sum is below the level (every log Φ term is negative), which saves about a third of
the likelihood evaluations.

gpml_compat also reproduces GPML's emergency break: after 21 shrinkages the 22nd proposal is
taken whatever its likelihood (it almost never triggers). Otherwise the bracket shrinks until
a proposal is accepted; if it has collapsed (200 shrinkages) the chain stays where it is,
the θ → 0 limit of the same rule.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from harness.core.special import log_ndtr_
from harness.engine.ais import AnnealedMethod, Kernel
from harness.model.latent import GPML_JITTER, LatentPrior
from harness.model.method import Method
from harness.model.problem import Problem

TWO_PI = 2.0 * math.pi


@njit(cache=True, nogil=True)
def _ess_block(G, LL, chains, taus, NU, rng, max_shrinks, proposals, buf):
    """`len(NU)` elliptical slice transitions for each chain chains[a] at temperature taus[a].

    G, LL: signed latents and log-likelihoods of all chains (updated in place);
    NU[s, a]: the signed prior draw for transition s of chain a; proposals[c] counts the
    likelihood evaluations of chain c; max_shrinks < 0: no emergency break.
    """
    n = G.shape[1]
    for s in range(NU.shape[0]):
        for a in range(chains.shape[0]):
            c = chains[a]
            tau = taus[a]
            log_y = tau * LL[c] + math.log(rng.random())
            theta = TWO_PI * rng.random()
            lo = theta - TWO_PI
            hi = theta
            shrinks = 0
            while True:
                ct = math.cos(theta)
                st = math.sin(theta)
                forced = max_shrinks >= 0 and shrinks >= max_shrinks
                lp = 0.0
                complete = True
                for i in range(n):
                    v = G[c, i] * ct + NU[s, a, i] * st
                    buf[i] = v
                    lp += log_ndtr_(v)
                    # every term is <= 0: stop once the proposal is surely off the slice
                    if (i & 63) == 63 and tau > 0.0 and tau * lp <= log_y and not forced:
                        complete = False
                        break
                proposals[c] += 1
                if complete and (tau * lp > log_y or forced):
                    for i in range(n):
                        G[c, i] = buf[i]
                    LL[c] = lp
                    break
                if shrinks >= 200:    # the bracket has collapsed onto θ = 0: stay
                    break
                if theta < 0.0:
                    lo = theta
                else:
                    hi = theta
                theta = lo + (hi - lo) * rng.random()
                shrinks += 1


class ESSKernel(Kernel):
    def __init__(self, prior: LatentPrior, n_chains: int, gpml_compat: bool):
        super().__init__(prior, n_chains, gpml_compat)
        self.proposals = np.zeros(n_chains, dtype=np.int64)
        self.transitions = np.zeros(n_chains, dtype=np.int64)
        self.buf = np.empty(prior.n)

    def level(self, chains, taus, steps, rng, adapt=False):
        k = len(chains)
        Z = rng.standard_normal((steps * k, self.prior.n))
        NU = self.prior.signed_draws(Z).reshape(steps, k, self.prior.n)
        _ess_block(self.G, self.LL, chains.astype(np.int64), taus.astype(float), NU, rng,
                   21 if self.gpml_compat else -1, self.proposals, self.buf)
        self.transitions[chains] += steps

    def diagnostics(self, n_post):
        per = self.proposals / np.maximum(self.transitions, 1)
        return {"likelihood_evaluations_per_transition_posterior": float(per[0]),
                "likelihood_evaluations_per_transition_ais": float(per[1:].mean())}


class EllipticalSlice(AnnealedMethod, Method):
    """Elliptical slice sampling (posterior chain) and AIS with ESS transitions (log Z)."""

    name = "ess"
    summary = ("elliptical slice sampling on the latent f; log Z by annealed importance "
               "sampling (GPML infMCMC defaults; gpml_compat reproduces its errors)")

    def __init__(self, skip: int = 40, burn_in: int = 10, ais_runs: int = 3,
                 temperatures: int = 0, jitter: float = GPML_JITTER,
                 gpml_compat: bool = False):
        self.skip = skip
        self.burn_in = burn_in
        self.ais_runs = ais_runs
        self.temperatures = temperatures
        self.jitter = jitter
        self.gpml_compat = gpml_compat

    def prepare(self, problem: Problem) -> None:
        super().prepare(problem)
        warm_up()

    def make_kernel(self, problem, prior, n_chains):
        return ESSKernel(prior, n_chains, self.gpml_compat)


def warm_up() -> None:
    """Compile (or load from the cache) the slice loop outside the timed region."""
    G = np.zeros((1, 2))
    _ess_block(G, np.zeros(1), np.zeros(1, np.int64), np.ones(1), np.zeros((1, 1, 2)),
               np.random.default_rng(0), -1, np.zeros(1, np.int64), np.empty(2))
