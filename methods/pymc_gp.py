"""PyMC on the latent GP, as a Bayesian statistician runs it: "pymc-nuts" and "pymc-smc".

Peers, not the harness's own estimators: they run PyMC (pm.sample's NUTS, pm.sample_smc) on the
model a PyMC user writes for probit GPC, so the harness can say how far that tool is from the
exact answer on a problem. Optional: `pip install -e ".[peers]"` (pymc, pytensor,
arviz); without it the registry names that command instead of listing them.

The model, with the problem's kernel in PyMC's own covariance forms (`pymc_covariance`:
pm.gp.cov.ExpQuad, Matern12/32/52, Linear, Constant, scaled to the harness's alpha and beta)
and its hyperparameters fixed:

    z ~ N(0, I_N),  f = L z  with  L L^T = K + jitter mean(diag K) I   (non-centred latent)
    log p(y | f) = sum_i log Phi(y_i f_i)       (the probit Bernoulli likelihood, as a
                                                 pm.Potential of the stable normal log-cdf)

Test probabilities, Rao-Blackwellised over f* | f: J*_j = mean over draws of
Phi(mu*_j / sqrt(1 + v*_j)), mu* = W^T z, W = L^{-1} k(X, x*), v* = k** - |W_j|^2; their Monte
Carlo SE is ArviZ's (the draws' sd over the square root of the ESS, az.mcse).

- pymc-nuts: pm.sample (NUTS) with `chains` chains run one after another (cores=1); the budget
  is the draws per chain, each chain tuned first for `tune` steps (0: as many as the draws). It
  estimates no log Z. `unreliable` when ArviZ's R-hat of a test probability exceeds RHAT_MAX,
  its bulk ESS is below ESS_MIN, or NUTS diverged.
- pymc-smc: pm.sample_smc (tempered SMC, independent Metropolis-Hastings mutations) with
  `chains` independent chains in turn; the budget is the particles per chain (M). log Z is the
  chains' mean. Its low bias at small M is shared by the chains, so their spread (sd /
  sqrt(chains)) cannot show it: as many chains run first at M/2 (their own seeds) and
  d = L(M) - L(M/2) estimates it (-d if it halves as M doubles); the stated SE is
  sqrt(spread_se^2 + d^2 + se(d)^2). The M/2 chains add half the CPU (in the job's time); only
  their log Z is kept, so the peak memory is the M run's. `unreliable` when |d| > DRIFT_MAX,
  or by SMC's own diagnostics: the R-hat across chains of the final particles (every z_i and
  test probability) above RHAT_MAX, their bulk ESS below ESS_MIN (by hand: R-hat 1.7 and ESS
  3 at N = 1,000 where log Z was 37.9 nats off), or the chains' log Z over LOG_Z_SD_MAX apart.

Random numbers: one seed per chain (SMC: per chain and particle count) from the job's rng.
Time: the harness's CPU deadline is checked after every NUTS draw (pm.sample's callback) and
at every likelihood evaluation of SMC (a kernel subclass). PyTensor compiles its C code once
per model in `prepare` (cached on disk in its compiledir), outside the timed call.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import warnings
import weakref
from importlib.metadata import version

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import ndtr

from harness.core.deadline import check_deadline
from harness.core.kernels import PRML, RBF, Kernel, Linear, Matern12, Matern32, Matern52
from harness.model.constraints import Integer, Number
from harness.model.footprint import MemoryEstimate, dense
from harness.model.method import Method
from harness.model.problem import Problem
from harness.model.result import Estimate
from harness.model.tags import CheckSettings, Tags

for _package in ("pymc", "pytensor", "arviz"):   # the peers extra; imported when first used
    if importlib.util.find_spec(_package) is None:
        raise ModuleNotFoundError(f"No module named {_package!r}", name=_package)

RHAT_MAX = 1.01    # R-hat across chains above this: the chains disagree (Vehtari et al. 2021);
                   # at N = 200 SMC read 1.03 with log Z 3.7 nats (20 SE) off (docs/studies.md)
ESS_MIN = 400      # bulk ESS below this (Vehtari et al.: 400 for 4 chains): too few draws
LOG_Z_SD_MAX = 1.0   # nats between SMC chains (harness.model.reliability.LOG_Z_SD_MAX)
DRIFT_MAX = 1.0    # nats between SMC's log Z at half and at all the particles: beyond it the
                   # bias need not be the drift's size (markov1d N = 200: drift 1.6-4.2 nats,
                   # error 0.9-2.6 times it; N = 100: drift 0.56-0.85, error 0.8-1.1 times it;
                   # docs/studies.md, "Python peers")
PACKAGES = ("pymc", "pytensor", "arviz")


def package_versions() -> dict[str, str]:
    """The versions of the packages a result of these methods depends on."""
    return {f"{name}_version": version(name) for name in PACKAGES}


@contextlib.contextmanager
def quiet():
    """PyMC's INFO lines, ArviZ's refactor notice and PyTensor's BLAS warning silenced."""
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def pymc_covariance(kernel: Kernel, input_dim: int):
    """The problem's kernel as a PyMC covariance function (pm.gp.cov), or None for a kernel
    with no PyMC form here. The harness's RBF is beta exp(-r^2 / alpha): ExpQuad's
    exp(-r^2 / (2 ls^2)) with ls = sqrt(alpha / 2)."""
    with quiet():
        import pymc as pm

    cov = pm.gp.cov
    if type(kernel) is RBF:
        return kernel.beta * cov.ExpQuad(input_dim, ls=float(np.sqrt(kernel.alpha / 2)))
    matern = {Matern12: cov.Matern12, Matern32: cov.Matern32, Matern52: cov.Matern52}
    if type(kernel) in matern:
        return kernel.beta * matern[type(kernel)](input_dim, ls=float(kernel.alpha))
    if type(kernel) is Linear:
        return kernel.scale * cov.Linear(input_dim, c=0.0)
    if type(kernel) is PRML:   # theta0 exp(-theta1 r^2 / 2) + theta2 + theta3 x.x'
        total = kernel.theta0 * cov.ExpQuad(input_dim, ls=float(1 / np.sqrt(kernel.theta1)))
        if kernel.theta2 > 0:
            total = total + cov.Constant(float(kernel.theta2))
        if kernel.theta3 > 0:
            total = total + kernel.theta3 * cov.Linear(input_dim, c=0.0)
        return total
    return None


def refusal(problem: Problem) -> str | None:
    """Why a peer cannot run this problem (None: it can)."""
    if problem.is_orthant:
        return ("needs a GPC problem (training inputs and a kernel): a pure orthant problem "
                "has no latent GP to put in a model")
    if problem.kernel is None or (type(problem.kernel) not in
                                  (RBF, Matern12, Matern32, Matern52, Linear, PRML)):
        return (f"has no form for the kernel {type(problem.kernel).__name__} (it knows rbf, "
                "matern12/32/52, linear and prml)")
    return None


class Latent:
    """The matrices of the model and of the predictions, from PyMC's covariance function."""

    def __init__(self, problem: Problem, jitter: float):
        cov = pymc_covariance(problem.kernel, problem.X_train.shape[1])
        K = np.asarray(cov(problem.X_train).eval(), dtype=float)
        n = len(K)
        self.L = np.linalg.cholesky(K + jitter * np.mean(np.diag(K)) * np.eye(n))
        del K
        self.y = problem.y_train.astype(float)
        if problem.n_test:
            kstar = np.asarray(cov(problem.X_train, problem.X_test).eval(), dtype=float)
            kss = np.asarray(cov(problem.X_test, diag=True).eval(), dtype=float)
            self.W = solve_triangular(self.L, kstar, lower=True)
            self.sd = np.sqrt(1.0 + np.maximum(kss - np.sum(self.W**2, axis=0), 0.0))
        else:
            self.W, self.sd = np.zeros((n, 0)), np.ones(0)

    def model(self):
        with quiet():
            import pymc as pm
            import pytensor.tensor as pt

            with pm.Model() as model:
                z = pm.Normal("z", 0.0, 1.0, shape=len(self.y))
                f = pt.dot(pt.as_tensor_variable(self.L), z)
                pm.Potential("probit_likelihood",
                             pm.logcdf(pm.Normal.dist(0.0, 1.0), self.y * f).sum())
        return model

    def predictions(self, z: np.ndarray) -> np.ndarray:
        """Phi(mu* / sqrt(1 + v*)) per draw: z (chains, draws, N) -> (chains, draws, n_test)."""
        return ndtr((z @ self.W) / self.sd)


def arviz_summary(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Mean, MCSE, R-hat and bulk ESS of arrays (chains, draws, k), per entry, by ArviZ."""
    with quiet():
        import arviz as az

        data = az.convert_to_dataset({k: v for k, v in values.items() if v.shape[-1]})
        out = {}
        for stat, fn in (("mcse", lambda d: az.mcse(d, method="mean")),
                         ("rhat", az.rhat), ("ess", lambda d: az.ess(d, method="bulk"))):
            out[stat] = {k: np.asarray(fn(data)[k]) for k in data.data_vars}
    return out


def _worst(stats: dict, stat: str, fn) -> float:
    """max or min of one ArviZ statistic over every variable (NaN entries: constant draws)."""
    found = [np.nanmin(v) if fn is min else np.nanmax(v) for v in stats[stat].values()
             if v.size and not np.all(np.isnan(v))]
    return float(fn(found)) if found else float("nan")


CONSTRAINTS = {"chains": Integer(minimum=2), "jitter": Number(low=0)}
HELP = {"chains": "independent chains, run one after another (cores=1)",
        "jitter": "added to K's diagonal, times mean(diag K), before its Cholesky"}
_LATENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # problem -> {jitter: Latent}


def latent(problem: Problem, jitter: float) -> Latent:
    """The problem's model matrices at this jitter, made once per problem."""
    cached = _LATENTS.setdefault(problem, {})
    if jitter not in cached:
        cached[jitter] = Latent(problem, jitter)
    return cached[jitter]


def compile_once(problem: Problem, jitter: float) -> None:
    """The matrices, and PyTensor's C code compiled once (its on-disk cache), untimed."""
    if refusal(problem) is None:
        with quiet():
            model = latent(problem, jitter).model()
            model.compile_logp()
            model.compile_dlogp()


def footprint(chains: int, n_train: int, n_test: int, budget: int,
              extra: dict[str, int]) -> MemoryEstimate:
    """K, L and the test rows held; the draws of z and their test probabilities as work."""
    draws = chains * budget
    return MemoryEstimate(
        held={"K and its factor L (PyMC's covariance)": 2 * dense(n_train),
              "test rows W": dense(n_train, n_test)},
        work={"L as a PyTensor constant": dense(n_train),
              "draws of z, every chain": dense(draws, n_train),
              "test probabilities per draw": 2 * dense(draws, n_test), **extra})


def run_peer(method, problem: Problem, budget: int, rng: np.random.Generator,
             runs: int = 1) -> Estimate:
    """Refuse what it cannot run; else one seed per chain (and run: `runs` sets of chains) from
    the job's rng, then sample."""
    why = refusal(problem)
    if why is not None:
        return Estimate.failed(f"{method.name} {why}")
    seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=runs * method.chains)]
    with quiet():
        return method.sample(problem, latent(problem, method.jitter), budget, seeds)


class PymcNuts(Method):
    """PyMC's NUTS on the non-centred latent GP: test probabilities only (module doc)."""

    name = "pymc-nuts"
    summary = ("PyMC NUTS on the latent GP, probit likelihood (a peer: pip install -e "
               "'.[peers]'): test probabilities with ArviZ's MCSE, no log Z")
    budget_unit = "NUTS draws per chain"
    tags = Tags(handles_orthant=False, estimates_log_z=False)
    checks = CheckSettings(smoke_budget=400, skip={
        "accuracy": "8 NUTS runs at N = 200 take minutes; tests/methods/test_peers_pymc.py "
                    "holds it to exact truth at N = 40"})
    constraints = {**CONSTRAINTS, "tune": Integer(minimum=0),
                   "target_accept": Number(low=0, high=1, low_open=True, high_open=True)}
    setting_help = {**HELP,
                    "tune": "tuning steps per chain before the draws (0: as many as the draws)",
                    "target_accept": "NUTS's target acceptance rate (step-size adaptation)"}

    def __init__(self, chains: int = 2, tune: int = 0, target_accept: float = 0.8,
                 jitter: float = 1e-8):
        self.chains = chains
        self.tune = tune
        self.target_accept = target_accept
        self.jitter = jitter

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        return footprint(self.chains, n_train, n_test, budget, {})

    def prepare(self, problem: Problem) -> None:
        compile_once(problem, self.jitter)

    def needs_dense(self, n_train: int) -> bool:
        return False   # K comes from PyMC's covariance function, not problem.K

    def _estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        return run_peer(self, problem, budget, rng)

    def sample(self, problem, latent, budget, seeds):
        import pymc as pm

        def tick(trace, draw):   # after every draw, tuning included
            check_deadline()

        with latent.model():
            idata = pm.sample(draws=budget, tune=self.tune or budget, chains=self.chains,
                              cores=1, random_seed=seeds, target_accept=self.target_accept,
                              progressbar=False, compute_convergence_checks=False,
                              callback=tick, blas_cores=None)
        z = np.asarray(idata.posterior["z"])
        g = latent.predictions(z)
        divergent = int(np.asarray(idata.sample_stats["diverging"]).sum())
        diagnostics = {"chains": self.chains, "draws": budget, "divergences": divergent,
                       **package_versions()}
        reasons = []
        se = None
        if problem.n_test:
            stats = arviz_summary({"test": g})
            se = stats["mcse"]["test"]
            rhat, ess = _worst(stats, "rhat", max), _worst(stats, "ess", min)
            diagnostics.update(rhat_max=rhat, ess_min=ess)
            if rhat > RHAT_MAX:
                reasons.append(f"R-hat of a test probability {rhat:.3g} > {RHAT_MAX}")
            if ess < ESS_MIN:
                reasons.append(f"bulk ESS {ess:.3g} < {ESS_MIN}")
        if divergent:
            reasons.append(f"{divergent} divergent transitions")
        probs = np.clip(g.mean(axis=(0, 1)), 0.0, 1.0)
        return Estimate(None, probs, test_probabilities_se=se, diagnostics=diagnostics,
                        status="unreliable" if reasons else "ok", reason="; ".join(reasons))


def _flat(values) -> list[float]:
    """Stage-wise SMC statistics, however ArviZ nested them (object arrays of lists)."""
    out: list[float] = []
    for v in np.ravel(np.asarray(values, dtype=object)):
        if isinstance(v, list | tuple | np.ndarray):
            out.extend(_flat(v))
        else:
            out.append(np.nan if v is None else float(v))
    return out


def _final_stage(values) -> float:
    """A chain's log marginal likelihood: its last stage's (earlier stages are NaN)."""
    stages = np.array(_flat(values))
    stages = stages[~np.isnan(stages)]
    return float(stages[-1]) if len(stages) else float("nan")


def _per_chain(stat, chains: int) -> list[list[float]]:
    """A stage-wise SMC statistic as one list of stages per chain. When the chains took
    different numbers of stages ArviZ stores them as one row of per-chain lists (chain
    dimension 1), where selecting by chain gave the last chain's values alone (its SE NaN)."""
    values = np.asarray(stat.values, dtype=object)
    rows = list(values) if stat.sizes["chain"] == chains else list(np.ravel(values))
    return [_flat(r) for r in rows]


def _deadline_kernel():
    """PyMC's IMH kernel with the harness's deadline checked at every likelihood evaluation."""
    from pymc.smc.kernels import IMH

    class DeadlineIMH(IMH):
        def set_rng(self, rng):
            raw = getattr(self, "_raw_likelihood", None)
            if raw is not None:
                self.likelihood_logp_func = raw
            super().set_rng(rng)
            self._raw_likelihood = raw = self.likelihood_logp_func

            def likelihood(point):
                check_deadline()
                return raw(point)

            self.likelihood_logp_func = likelihood

    return DeadlineIMH


class PymcSmc(Method):
    """PyMC's sequential Monte Carlo for log Z (and the test probabilities; module doc)."""

    name = "pymc-smc"
    summary = ("PyMC sample_smc on the latent GP, probit likelihood (a peer: pip install -e "
               "'.[peers]'): log Z from the chains' mean, SE from their spread and the "
               "change from half the particles; R-hat, ESS and that change decide unreliable")
    budget_unit = "SMC particles per chain (and as many chains at half of them)"
    tags = Tags(handles_orthant=False)
    checks = CheckSettings(smoke_budget=1000, skip={
        "accuracy": "8 SMC runs at N = 200 take minutes; tests/methods/test_peers_pymc.py "
                    "holds it to exact truth at N = 40"})
    constraints = {**CONSTRAINTS, "threshold": Number(low=0, high=1, low_open=True,
                                                                high_open=True)}
    setting_help = {**HELP, "chains": "independent SMC runs, one after another; their spread gives "
                              "log Z's SE",
                    "threshold": "the ESS share of particles each tempering stage keeps "
                                 "(pm.sample_smc's threshold)"}

    def __init__(self, chains: int = 4, threshold: float = 0.5, jitter: float = 1e-8):
        self.chains = chains
        self.threshold = threshold
        self.jitter = jitter

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        return footprint(self.chains, n_train, n_test, budget, {
            "IMH proposal covariance and its factors": 4 * dense(n_train),
            "particles, proposals and their copies": 4 * dense(budget, n_train)})

    def prepare(self, problem: Problem) -> None:
        compile_once(problem, self.jitter)

    def needs_dense(self, n_train: int) -> bool:
        return False   # K comes from PyMC's covariance function, not problem.K

    def _estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        return run_peer(self, problem, budget, rng, runs=2)

    def _smc(self, latent, particles: int, seeds: list[int]):
        """The chains at this particle count: their final log Z each, and the InferenceData."""
        import pymc as pm

        with latent.model():
            idata = pm.sample_smc(draws=particles, kernel=_deadline_kernel(),
                                  chains=self.chains, cores=1, random_seed=seeds,
                                  threshold=self.threshold, progressbar=False,
                                  compute_convergence_checks=False)
        stages = _per_chain(idata.sample_stats["log_marginal_likelihood"], self.chains)
        return np.array([_final_stage(r) for r in stages]), idata

    def sample(self, problem, latent, budget, seeds):
        full_seeds, half_seeds = seeds[:self.chains], seeds[self.chains:]
        # the half-count chains first, only their log Z kept: the peak memory is the full run's
        half, _ = self._smc(latent, max(budget // 2, 1), half_seeds)
        per_chain, idata = self._smc(latent, budget, full_seeds)
        stages = max(len(r) for r in _per_chain(idata.sample_stats["beta"], self.chains))
        if len(per_chain) != self.chains or len(half) != self.chains:
            return Estimate.failed(f"SMC returned {len(per_chain)} and {len(half)} chains' log "
                                   f"Z, not {self.chains}")
        z = np.asarray(idata.posterior["z"])
        g = latent.predictions(z)
        stats = arviz_summary({"z": z, "test": g})
        rhat, ess = _worst(stats, "rhat", max), _worst(stats, "ess", min)
        log_z = float(np.mean(per_chain))
        sd = float(np.std(per_chain, ddof=1))
        spread_se = sd / np.sqrt(self.chains)
        half_log_z = float(np.mean(half))
        drift = log_z - half_log_z   # -(the bias at the full count) if it is O(1/particles)
        drift_se = float(np.sqrt(sd**2 + np.var(half, ddof=1)) / np.sqrt(self.chains))
        bias_scale = float(np.hypot(drift, drift_se))   # |d| with its own noise
        total_se = float(np.hypot(spread_se, bias_scale))
        diagnostics = {"chains": self.chains, "particles": budget, "stages": stages,
                       "rhat_max": rhat, "ess_min": ess, "chain_log_z_sd": sd,
                       "spread_se": spread_se, "half_particles_log_z": half_log_z,
                       "particle_drift": drift, "particle_drift_se": drift_se,
                       "particle_bias_scale": bias_scale,
                       "chain_log_z": ",".join(f"{v:.6f}" for v in per_chain),
                       "half_chain_log_z": ",".join(f"{v:.6f}" for v in half),
                       **package_versions()}
        if not np.isfinite(log_z):
            return Estimate.failed("SMC's log marginal likelihood is not finite", **diagnostics)
        reasons = []
        if rhat > RHAT_MAX:
            reasons.append(f"R-hat across chains {rhat:.3g} > {RHAT_MAX}")
        if ess < ESS_MIN:
            reasons.append(f"bulk ESS of the final particles {ess:.3g} < {ESS_MIN}")
        if sd > LOG_Z_SD_MAX:
            reasons.append(f"the chains' log Z spread by {sd:.3g} > {LOG_Z_SD_MAX} nats")
        if abs(drift) > DRIFT_MAX:
            reasons.append(f"SMC log Z still moving with the particle count: {drift:+.3g} nats "
                           f"from {budget // 2:,} to {budget:,} particles a chain (> {DRIFT_MAX} "
                           f"nats, where the bias no longer halves as they double); more "
                           f"particles (budget)")
        probs = np.clip(g.mean(axis=(0, 1)), 0.0, 1.0) if problem.n_test else np.empty(0)
        se = stats["mcse"]["test"] if problem.n_test else None
        return Estimate(min(log_z, 0.0), probs, log_marginal_likelihood_se=total_se,
            test_probabilities_se=se, diagnostics=diagnostics,
            status="unreliable" if reasons else "ok", reason="; ".join(reasons))
