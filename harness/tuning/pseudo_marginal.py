"""Pseudo-marginal MCMC over the log-hyperparameters (docs/math.md §12; beyond the papers).

When Ẑ(θ) is an unbiased estimate of Z(θ), a Metropolis–Hastings chain that uses Ẑ in place
of Z and keeps each state's estimate (never re-estimating the current point) has exactly the
posterior p(θ | y) ∝ p(θ) Z(θ) as its stationary law (Andrieu & Roberts 2009). emcee's
ensemble sampler stores each walker's log-probability and evaluates only proposals, which is
that requirement; every call of log_prob gets a fresh random stream. Prior: uniform on the log
box of the space. A failed estimate is Ẑ = 0 (log_prob = -inf), which keeps the unbiasedness
(a hard-count rejection–bootstrap run that rejects every particle estimates exactly 0).
"""

from __future__ import annotations

from typing import Any

import emcee
import numpy as np

from harness.core.errors import InputError
from harness.model.method import Method
from harness.model.result import ANSWERED
from harness.tuning.evaluate import Evaluator
from harness.tuning.space import TuneSpace


def unbiased_methods() -> list[str]:
    """Registered methods whose Ẑ is unbiased (with default settings, or with some)."""
    from harness.plugins.registry import methods

    out = []
    for name, cls in methods().items():
        if cls().unbiased_z():
            out.append(name)
        elif cls.unbiased_z is not Method.unbiased_z:   # decided by the settings
            note = (cls.unbiased_z.__doc__ or "").split(":")[0].strip()
            out.append(f"{name} ({note[:1].lower()}{note[1:]})")
    return out


def check_unbiased(method: Method) -> None:
    """InputError unless this method instance's Ẑ is unbiased (pseudo-marginal needs it)."""
    if not method.unbiased_z():
        raise InputError(
            "tune.strategy", f"pseudo-marginal needs an unbiased Ẑ, and method "
            f"{method.label()!r} does not give one", f"use one of: {'; '.join(unbiased_methods())}")


def uniform_start(space: TuneSpace, walkers: int, rng: np.random.Generator) -> np.ndarray:
    """(walkers, d) starting points drawn uniformly in the log box."""
    box = space.log_bounds()
    return rng.uniform(box[:, 0], box[:, 1], size=(walkers, len(box)))


def jittered_start(space: TuneSpace, centre: dict[str, float], walkers: int,
                   rng: np.random.Generator) -> np.ndarray:
    """(walkers, d) points around `centre`: ± a grid step (normal jitter), kept in the box."""
    box = space.log_bounds()
    step = np.array([a.log_step for a in space.axes])
    start = space.to_log(centre) + 0.5 * step * rng.standard_normal((walkers, len(box)))
    margin = 1e-9 * (box[:, 1] - box[:, 0])
    return np.clip(start, box[:, 0] + margin, box[:, 1] - margin)


def run_chain(evaluate: Evaluator, space: TuneSpace, budget: int, start: np.ndarray,
              steps: int, burn: int, seed: int) -> dict[str, Any]:
    """emcee over the log-parameters from `start`; the chain part of a tune record."""
    box = space.log_bounds()
    log_prior = -float(np.sum(np.log(box[:, 1] - box[:, 0])))   # uniform on the log box
    outside = 0

    def log_prob(theta: np.ndarray) -> float:
        nonlocal outside
        if np.any(theta < box[:, 0]) or np.any(theta > box[:, 1]):
            outside += 1
            return -np.inf
        entry = evaluate(space.to_params(theta), budget, "chain")
        # every Ẑ counts, also one whose SE is not trusted (status unreliable): it is still
        # unbiased, and dropping it would bias the chain towards where the method is reliable
        return log_prior + entry["log_z"] if entry["status"] in ANSWERED else -np.inf

    walkers, d = start.shape
    sampler = emcee.EnsembleSampler(walkers, d, log_prob)
    state = emcee.State(start, random_state=np.random.RandomState(seed).get_state())
    sampler.run_mcmc(state, steps)
    chain = sampler.get_chain()[burn:]                # (steps - burn, walkers, d)
    tau = autocorr_time(chain)
    return {"walkers": walkers, "steps": steps, "burn": burn,
            "acceptance_fraction": float(np.mean(sampler.acceptance_fraction)),
            "samples": chain.reshape(-1, d).tolist(), "autocorr_time": tau,
            # emcee's rule: the estimate of tau needs a chain of at least 50 tau
            "autocorr_reliable": None not in tau and len(chain) >= 50 * max(tau),
            "proposals_outside_box": outside, "names": list(space.names)}


def integrated_time(x: np.ndarray) -> float | None:
    """Integrated autocorrelation time of an ensemble's (steps, walkers) series.

    The autocovariance is taken about the ensemble's common mean and averaged over walkers,
    so that the spread between walkers' own means (slow mixing) counts, and it is summed up to
    Sokal's automatic window (c = 5). emcee's integrated_time centres each walker on its own
    mean, which on short chains gave half this value here. None for a constant series.
    """
    n = len(x)
    y = x - x.mean()
    f = np.fft.rfft(y, n=2 * n, axis=0)
    acov = np.fft.irfft(f * np.conj(f), n=2 * n, axis=0)[:n].mean(axis=1)
    if not acov[0] > 0:
        return None
    taus = 2 * np.cumsum(acov / acov[0]) - 1
    # Sokal's window: the first lag m >= 5 tau(m); none (a chain far too short): the last,
    # where emcee.autocorr.auto_window would fall back to lag 0 (tau = 1)
    past = np.flatnonzero(np.arange(n) >= 5 * taus)
    return float(taus[past[0] if len(past) else -1])


def autocorr_time(chain: np.ndarray) -> list[float | None]:
    """integrated_time of each parameter of a (steps, walkers, d) chain."""
    return [integrated_time(chain[:, :, k]) for k in range(chain.shape[2])]


def posterior_point(space: TuneSpace, chain: dict[str, Any]) -> dict[str, float] | None:
    """exp(posterior mean of the log-parameters): the chain's point estimate."""
    samples = np.asarray(chain["samples"], float)
    if samples.size == 0:
        return None
    return space.to_params(samples.mean(axis=0))
