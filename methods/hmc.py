"""Hamiltonian Monte Carlo with annealed importance sampling, "hmc" (docs/math.md §9).

Target p_τ(f) ∝ N(f; 0, K_j) exp(τ ℓ(f)) in whitened coordinates f = L u (K_j = L Lᵀ):

  U(u) = ½ uᵀu − τ ℓ(L u),  ∇U(u) = u − τ Lᵀ d(f),  d_i = y_i φ(y_i f_i) / Φ(y_i f_i),
  H(u, p) = U(u) + ½ pᵀp,  p ~ N(0, I),  `leapfrog_steps` leapfrog steps of size ε,
  accept with probability min(1, exp(H_old − H_new)) (Neal 1993/2011).

The leapfrog is run in latent coordinates: with r = L p it reads
  r ← r − ε/2 (f − τ K_j d(f)),  f ← f + ε r,  r ← r − ε/2 (f − τ K_j d(f)),
so each step costs one product with K_j (batched over the chains as one GEMM) instead of two
with L and Lᵀ; u = L⁻¹ f and p = L⁻¹ r come from two triangular solves per trajectory, for
H. (Chains live in signed coordinates g = y ⊙ f with C K_j C, as everywhere in
harness.model.latent.)

Step size (default): adapted on the posterior chain during its burn-in by dual averaging
(Hoffman & Gelman 2014) towards `target_accept`, then frozen: ε₁. The AIS runs need a step
size for every τ; to keep every AIS transition exactly p_τ-invariant it is fixed in advance,
not adapted on the runs themselves: ε(τ)⁻² = (1 − τ) ε₀⁻² + τ ε₁⁻², interpolating the
curvature between the whitened prior (τ = 0, the standard normal in N dimensions, where ε₀
gives `target_accept` by the exact leapfrog energy error of a Gaussian) and the posterior.
Acceptance rates and step sizes are recorded as diagnostics.

gpml_compat = true runs GPML's `sample_hmc` instead: the α-parameterisation f = K α with the
un-jittered K, potential ½ αᵀKα − τ ℓ(Kα), gradient K(α − τ d), 20 leapfrog steps; ε starts
at 0.01 in every run and after every transition is multiplied by 1.02 if an exponential
moving average of the acceptance (rate 0.01, starting at 0) exceeds 0.9, else by 0.98
(clipped to [1e-6, 0.9]), never frozen; the energy and gradient of the current state are
carried over unchanged when τ changes (as GPML does); predictions use μ* = k*ᵀ α.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numba import njit
from scipy.special import log_ndtr as sp_log_ndtr

from harness.core.special import log_ndtr_
from harness.engine.ais import CONSTRAINTS as ANNEALING
from harness.engine.ais import AnnealedMethod, Kernel
from harness.model.constraints import Integer, Number
from harness.model.footprint import MemoryEstimate, dense
from harness.model.latent import GPML_JITTER, LatentPrior, inv_mills
from harness.model.method import Method
from harness.model.problem import Problem


@njit(cache=True, nogil=True)
def _loglik_grad(g, m):
    """Row-wise ℓ = Σ log Φ(g) and m = φ(g)/Φ(g) (the gradient of ℓ in signed coordinates)."""
    k, n = g.shape
    ll = np.zeros(k)
    for a in range(k):
        s = 0.0
        for i in range(n):
            lc = log_ndtr_(g[a, i])
            s += lc
            m[a, i] = inv_mills(g[a, i], lc)
        ll[a] = s
    return ll


@njit(cache=True, nogil=True)
def _half_norm2_solve(L, y, v):
    """½ |L⁻¹ (y ⊙ v)|² by forward substitution (L lower triangular, row-major)."""
    n = v.shape[0]
    x = np.empty(n)
    total = 0.0
    for i in range(n):
        s = y[i] * v[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]
        total += x[i] * x[i]
    return 0.5 * total


@njit(cache=True, nogil=True)
def _hmc_block(G, LL, M, KM, Q, chains, taus, eps, n_leap, R0, KIN0, LOGU, Kc, L, y,
               accept_prob, accepted):
    """Whitened HMC transitions, all chains in lock step (see the module docstring).

    G, LL, M, KM, Q: signed latents, ℓ, φ/Φ, (C K_j C) m and ½|u|² of every chain (in place).
    R0[s, a]: signed momentum C L p of transition s of chain chains[a]; KIN0[s, a] = ½|p|²;
    LOGU[s, a]: log of the acceptance uniform. accept_prob[s, a] receives min(1, e^{−ΔH}).
    """
    k = chains.shape[0]
    n = G.shape[1]
    g = np.empty((k, n))
    r = np.empty((k, n))
    km = np.empty((k, n))
    m = np.empty((k, n))
    for s in range(R0.shape[0]):
        for a in range(k):
            c = chains[a]
            for i in range(n):
                g[a, i] = G[c, i]
                km[a, i] = KM[c, i]
                r[a, i] = R0[s, a, i] - 0.5 * eps[a] * (g[a, i] - taus[a] * km[a, i])
        ll = np.zeros(k)
        for step in range(n_leap):
            for a in range(k):
                for i in range(n):
                    g[a, i] += eps[a] * r[a, i]
            ll = _loglik_grad(g, m)
            km = np.dot(m, Kc)
            for a in range(k):
                h = eps[a] if step < n_leap - 1 else 0.5 * eps[a]
                for i in range(n):
                    r[a, i] -= h * (g[a, i] - taus[a] * km[a, i])
        for a in range(k):
            c = chains[a]
            q1 = _half_norm2_solve(L, y, g[a])
            k1 = _half_norm2_solve(L, y, r[a])
            log_ratio = (KIN0[s, a] + Q[c] - taus[a] * LL[c]) - (k1 + q1 - taus[a] * ll[a])
            if log_ratio == log_ratio:   # not NaN
                accept_prob[s, a] = math.exp(min(0.0, log_ratio))
            else:
                accept_prob[s, a] = 0.0
            if log_ratio == log_ratio and LOGU[s, a] < log_ratio:
                accepted[c] += 1
                for i in range(n):
                    G[c, i] = g[a, i]
                    M[c, i] = m[a, i]
                    KM[c, i] = km[a, i]
                LL[c] = ll[a]
                Q[c] = q1


@njit(cache=True, nogil=True)
def _hmc_gpml_block(BETA, G, LL, GR, E, chains, taus, eps, acc, n_leap, P0, LOGU, K0,
                    accepted):
    """GPML sample_hmc transitions in the α-parameterisation (signed: β = C α, g = C K C β).

    BETA, G, LL: positions, latents K β and ℓ; GR, E: the carried-over gradient and energy;
    eps, acc: per-chain step size and acceptance average (GPML's adaptation, updated here).
    """
    k = chains.shape[0]
    n = G.shape[1]
    q = np.empty((k, n))
    p = np.empty((k, n))
    gr = np.empty((k, n))
    m = np.empty((k, n))
    f = np.empty((k, n))
    for s in range(P0.shape[0]):
        for a in range(k):
            c = chains[a]
            for i in range(n):
                q[a, i] = BETA[c, i]
                gr[a, i] = GR[c, i]
                p[a, i] = P0[s, a, i]
        ll = np.zeros(k)
        for _ in range(n_leap):
            for a in range(k):
                for i in range(n):
                    p[a, i] -= 0.5 * eps[a] * gr[a, i]
                    q[a, i] += eps[a] * p[a, i]
            f = np.dot(q, K0)
            ll = _loglik_grad(f, m)
            km = np.dot(m, K0)
            for a in range(k):
                for i in range(n):
                    gr[a, i] = f[a, i] - taus[a] * km[a, i]
                    p[a, i] -= 0.5 * eps[a] * gr[a, i]
        for a in range(k):
            c = chains[a]
            kin0 = 0.0
            kin1 = 0.0
            quad = 0.0
            for i in range(n):
                kin0 += P0[s, a, i] * P0[s, a, i]
                kin1 += p[a, i] * p[a, i]
                quad += q[a, i] * f[a, i]
            e_new = 0.5 * quad - taus[a] * ll[a]
            h_old = 0.5 * kin0 + E[c]
            h_new = 0.5 * kin1 + e_new
            acc[a] *= 0.99
            if LOGU[s, a] < h_old - h_new:
                accepted[c] += 1
                acc[a] += 0.01
                for i in range(n):
                    BETA[c, i] = q[a, i]
                    G[c, i] = f[a, i]
                    GR[c, i] = gr[a, i]
                LL[c] = ll[a]
                E[c] = e_new
            eps[a] *= 1.02 if acc[a] > 0.9 else 0.98
            eps[a] = min(max(eps[a], 1e-6), 0.9)


def gaussian_leapfrog_acceptance(eps: float, n_leap: int, dim: int) -> float:
    """Mean acceptance of HMC with identity mass on N(0, I_dim): ΔH = Σ_d x_dᵀ A x_d with
    A = ½(MᵀM − I), M the leapfrog map; ΔH ≈ N(dim tr A, 2 dim tr A²) (exact moments)."""
    h = eps * eps
    one = np.array([[1 - h / 2, eps], [-eps * (1 - h / 4), 1 - h / 2]])
    Mp = np.linalg.matrix_power(one, n_leap)
    A = 0.5 * (Mp.T @ Mp - np.eye(2))
    mean = dim * np.trace(A)
    var = 2 * dim * np.trace(A @ A)
    if var <= 1e-300:
        return 1.0
    sd = math.sqrt(var)
    # E[min(1, e^{-X})], X ~ N(mean, sd²)
    return float(np.exp(sp_log_ndtr(-mean / sd))
                 + np.exp(-mean + var / 2 + sp_log_ndtr(mean / sd - sd)))


def prior_step_size(n_leap: int, dim: int, target: float) -> float:
    """The largest ε (up to the first crossing) with Gaussian acceptance >= target."""
    grid = np.exp(np.linspace(np.log(1e-4), np.log(1.99), 200))
    ok = grid[0]
    for e in grid:
        if gaussian_leapfrog_acceptance(e, n_leap, dim) < target:
            lo, hi = ok, e
            for _ in range(40):
                mid = math.sqrt(lo * hi)
                if gaussian_leapfrog_acceptance(mid, n_leap, dim) >= target:
                    lo = mid
                else:
                    hi = mid
            return lo
        ok = e
    return ok


class _DualAveraging:
    """Hoffman & Gelman (2014), Algorithm 5's step-size adaptation."""

    def __init__(self, eps0: float, target: float):
        self.mu = math.log(10 * eps0)
        self.target = target
        self.h_bar = 0.0
        self.log_eps = math.log(eps0)
        self.log_eps_bar = 0.0
        self.m = 0

    def update(self, accept_prob: float) -> float:
        self.m += 1
        m, t0 = self.m, 10.0
        self.h_bar += ((self.target - accept_prob) - self.h_bar) / (m + t0)
        self.log_eps = self.mu - math.sqrt(m) / 0.05 * self.h_bar
        w = m ** -0.75
        self.log_eps_bar = w * self.log_eps + (1 - w) * self.log_eps_bar
        return math.exp(self.log_eps)

    @property
    def final(self) -> float:
        return math.exp(self.log_eps_bar) if self.m else math.exp(self.log_eps)


class HMCKernel(Kernel):
    """Whitened HMC (default) with the AIS step-size schedule of the module docstring."""

    def __init__(self, prior: LatentPrior, n_chains: int, n_leap: int, target: float):
        super().__init__(prior, n_chains, False)
        self.n_leap = n_leap
        self.Kc = prior.Kc
        self.M = np.zeros_like(self.G)
        self.KM = np.zeros_like(self.G)
        self.Q = np.zeros(n_chains)
        self._refresh(np.arange(n_chains))
        self.eps0 = prior_step_size(n_leap, prior.n, target)
        self.da = _DualAveraging(self.eps0, target)
        self.eps1 = None
        self.accepted = np.zeros(n_chains, dtype=np.int64)
        self.transitions = np.zeros(n_chains, dtype=np.int64)
        self.accept_sum = np.zeros(n_chains)
        self.burn_in_accept = []
        self.level_accept = []   # mean acceptance of the AIS runs at each level

    def _refresh(self, chains):
        g = np.ascontiguousarray(self.G[chains])
        m = np.empty_like(g)
        self.LL[chains] = _loglik_grad(g, m)
        self.M[chains] = m
        self.KM[chains] = m @ self.Kc
        self.Q[chains] = [_half_norm2_solve(self.prior.L, self.prior.y, row) for row in g]

    def set_state(self, chains, G):
        self.G[chains] = G
        self._refresh(chains)

    def step_size(self, tau: float) -> float:
        """ε(τ)⁻² = (1 − τ) ε₀⁻² + τ ε₁⁻² (fixed before the AIS runs start)."""
        return 1.0 / math.sqrt((1 - tau) / self.eps0 ** 2 + tau / self.eps1 ** 2)

    def _block(self, chains, taus, eps, steps, rng):
        k, n = len(chains), self.prior.n
        Z = rng.standard_normal((steps * k, n))
        R0 = self.prior.signed_draws(Z).reshape(steps, k, n)
        KIN0 = 0.5 * np.einsum("ij,ij->i", Z, Z).reshape(steps, k)
        LOGU = np.log(rng.random((steps, k)))
        prob = np.empty((steps, k))
        _hmc_block(self.G, self.LL, self.M, self.KM, self.Q, chains, taus, eps, self.n_leap,
                   R0, KIN0, LOGU, self.Kc, self.prior.L, self.prior.y, prob, self.accepted)
        self.transitions[chains] += steps
        self.accept_sum[chains] += prob.sum(axis=0)
        return prob

    def level(self, chains, taus, steps, rng, adapt=False):
        chains = chains.astype(np.int64)
        taus = taus.astype(float)
        if adapt:      # the posterior chain's burn-in: one transition at a time
            for _ in range(steps):
                eps = np.array([math.exp(self.da.log_eps)])
                prob = self._block(chains, taus, eps, 1, rng)
                self.da.update(float(prob[0, 0]))
                self.burn_in_accept.append(float(prob[0, 0]))
            return
        eps = np.array([self.step_size(t) for t in taus])
        prob = self._block(chains, taus, eps, steps, rng)
        if len(chains) > 1:
            self.level_accept.append(float(prob[:, 1:].mean()))

    def end_adaptation(self):
        self.eps1 = self.da.final if self.da.m else self.eps0
        # count acceptance from here on only
        self.accepted[:] = 0
        self.transitions[:] = 0
        self.accept_sum[:] = 0

    def diagnostics(self, n_post):
        rate = self.accept_sum / np.maximum(self.transitions, 1)
        return {
            "step_size": self.eps1,
            "step_size_prior": self.eps0,
            "acceptance_rate_posterior": float(rate[0]),
            "acceptance_rate_ais": float(rate[1:].mean()),
            "acceptance_rate_ais_min_level": (min(self.level_accept) if self.level_accept
                                              else None),
            "acceptance_rate_burn_in": (float(np.mean(self.burn_in_accept))
                                        if self.burn_in_accept else None),
        }


class GPMLHMCKernel(Kernel):
    """GPML's sample_hmc (α-parameterisation, continual step-size adaptation)."""

    def __init__(self, problem: Problem, prior: LatentPrior, n_chains: int, n_leap: int):
        super().__init__(prior, n_chains, True)
        self.n_leap = n_leap
        K0 = problem.R.copy()                      # C K C + I
        K0[np.diag_indices_from(K0)] -= 1.0
        self.K0 = np.ascontiguousarray(K0)         # C K C, without jitter
        self.BETA = np.zeros_like(self.G)
        self.GR = np.zeros_like(self.G)            # gradient at β = 0: −τ K0 m(0), set below
        self.E = np.zeros(n_chains)
        self.eps = np.full(n_chains, 0.01)
        self.acc = np.zeros(n_chains)
        self.accepted = np.zeros(n_chains, dtype=np.int64)
        self.transitions = np.zeros(n_chains, dtype=np.int64)
        self._started = np.zeros(n_chains, dtype=bool)

    def level(self, chains, taus, steps, rng, adapt=False):
        chains = chains.astype(np.int64)
        taus = taus.astype(float)
        new = chains[~self._started[chains]]
        if len(new):   # GPML: [gold, eold] = E(0, τ_first) at the start of each run
            t0 = taus[~self._started[chains]]
            m0 = math.exp(-0.5 * math.log(2 * math.pi) - math.log(0.5))   # φ(0)/Φ(0)
            self.GR[new] = -t0[:, None] * (np.full((len(new), self.prior.n), m0) @ self.K0)
            self.E[new] = -t0 * self.prior.n * math.log(0.5)
            self._started[new] = True
        k, n = len(chains), self.prior.n
        P0 = rng.standard_normal((steps, k, n))
        LOGU = np.log(rng.random((steps, k)))
        eps, acc = self.eps[chains].copy(), self.acc[chains].copy()
        _hmc_gpml_block(self.BETA, self.G, self.LL, self.GR, self.E, chains, taus, eps, acc,
                        self.n_leap, P0, LOGU, self.K0, self.accepted)
        self.eps[chains], self.acc[chains] = eps, acc
        self.transitions[chains] += steps

    def kept(self, chain):
        return self.BETA[chain].copy()

    def predictive_means(self, samples):
        return samples @ self.prior.B               # k*ᵀ α = (C k*)ᵀ β

    def diagnostics(self, n_post):
        rate = self.accepted / np.maximum(self.transitions, 1)
        return {"step_size": float(self.eps[0]),
                "acceptance_rate_posterior": float(rate[0]),
                "acceptance_rate_ais": float(rate[1:].mean())}


class HamiltonianMC(AnnealedMethod, Method):
    """HMC on the whitened latent (posterior chain) and AIS with HMC transitions (log Z)."""

    name = "hmc"
    # budgets at which the annealing is fine enough (docs/studies.md, "Annealed importance
    # sampling")
    checks = replace(AnnealedMethod.checks, test_budget=60, smoke_budget=40)
    constraints = {**ANNEALING,
                   "leapfrog_steps": Integer(minimum=1),
                   "target_accept": Number(low=0, high=1, low_open=True, high_open=True,
                                           says="must be between 0 and 1")}
    setting_help = {"leapfrog_steps": "leapfrog steps per transition",
                    "target_accept": "acceptance rate the step size is adapted to in the "
                                     "posterior chain's burn-in"}
    summary = ("Hamiltonian Monte Carlo on the whitened latent f = L u; log Z by annealed "
               "importance sampling (GPML infMCMC defaults; gpml_compat reproduces its errors)")

    def __init__(self, skip: int = 40, burn_in: int = 10, ais_runs: int = 3,
                 temperatures: int = 0, leapfrog_steps: int = 20, target_accept: float = 0.8,
                 jitter: float = GPML_JITTER, gpml_compat: bool = False):
        self.skip = skip
        self.burn_in = burn_in
        self.ais_runs = ais_runs
        self.temperatures = temperatures
        self.leapfrog_steps = leapfrog_steps
        self.target_accept = target_accept
        self.jitter = jitter
        self.gpml_compat = gpml_compat

    def prepare(self, problem: Problem) -> None:
        super().prepare(problem)
        warm_up()

    def steps_per_transition(self) -> int:
        return self.leapfrog_steps

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """The annealed sampler's, plus C K_j C (default) or GPML's copy of C K C (2 N x N
        while it is made) and the leapfrog arrays of every chain."""
        est = super().memory_estimate(n_train, n_test, budget)
        work = {**est.work, "leapfrog arrays": 8 * dense(1 + self.ais_runs, n_train)}
        held = dict(est.held)
        if self.gpml_compat:
            work["C K C copy"] = 2 * dense(n_train)
        else:
            held["C K_j C"] = dense(n_train)
        return MemoryEstimate(held, work, est.setup)

    def make_kernel(self, problem, prior, n_chains):
        if self.gpml_compat:
            return GPMLHMCKernel(problem, prior, n_chains, self.leapfrog_steps)
        return HMCKernel(prior, n_chains, self.leapfrog_steps, self.target_accept)


def warm_up() -> None:
    """Compile (or load from the cache) the leapfrog loops outside the timed region."""
    n = 2
    one = np.ones(1)
    z1 = np.zeros((1, n))
    _hmc_block(z1.copy(), np.zeros(1), z1.copy(), z1.copy(), np.zeros(1), np.zeros(1, np.int64),
               one, one, 1, np.zeros((1, 1, n)), np.zeros((1, 1)), np.zeros((1, 1)),
               np.eye(n), np.eye(n), np.ones(n), np.zeros((1, 1)), np.zeros(1, np.int64))
    _hmc_gpml_block(z1.copy(), z1.copy(), np.zeros(1), z1.copy(), np.zeros(1),
                    np.zeros(1, np.int64), one, one.copy(), np.zeros(1), 1,
                    np.zeros((1, 1, n)), np.zeros((1, 1)), np.eye(n), np.zeros(1, np.int64))
