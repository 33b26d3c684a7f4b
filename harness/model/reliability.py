"""When a method's own diagnostics say its estimate is degenerate (status `unreliable`).

An estimate whose importance weights have collapsed onto one sample, or onto one of several
independent randomisations, is in effect a single draw: its standard error, taken from the
spread of the others, does not cover its error, and log Ẑ can be off by any amount
(docs/math.md §6, §13). Such a run keeps its numbers but is stored as `unreliable` with the
reason, apart from the `ok` runs.

The rules (the mathematics: docs/math.md §13):

- weights: ESS = (Σ W)² / Σ W² below ESS_MIN (the largest weight holds >= 91 % of Ẑ);
- randomisations: with K >= 2 independent randomisations, one holds more than
  RANDOMISATION_SHARE_MAX of Ẑ (the rule that sees `sir`, whose weights resampling resets);
- tail: the Pareto k̂ of the weights (harness.core.tails) above `pareto_k_limit`, PSIS's
  sample-size-aware limit capped at PARETO_K_MAX (not for `sir`);
- saddle point (`minimax-tilting`): not converged, with a Newton decrement above
  SADDLE_DECREMENT_MAX (harness.core.saddle_point);
- paths (`sir` with test points): the final particles descend from fewer than
  LINEAGE_FRACTION_MIN of the particles at the first variable;
- spread (K >= 2 populations): the sd of their log Ẑ_k above LOG_Z_SD_MAX nats;
- annealing (`ess`, `hmc`: R >= 2 AIS runs): the log-weight variance their increments imply
  above LOG_Z_SD_MAX², or the sd of their log weights above AIS_SPREAD_MAX.

The weight, randomisation and tail rules and the paths and spread rules apply from MIN_POINTS
points on: with a handful of points one dominant weight is normal on easy problems.

What no rule catches: the t-tail of standard errors from few randomisations, a single
`rejection-bootstrap` population, dead populations (Ẑ stays unbiased), a tail no draw has
reached, and a bias all randomisations share.

The thresholds are justified in docs/studies.md, "Reliability rules"; the tests are in
tests/model/test_reliability.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

ESS_MIN = 1.1
PARETO_K_MAX = 1.0
RANDOMISATION_SHARE_MAX = 0.99
MIN_POINTS = 100
SADDLE_DECREMENT_MAX = 1.0
LINEAGE_FRACTION_MIN = 0.05
LOG_Z_SD_MAX = 1.0
AIS_SPREAD_MAX = 1.5


def pareto_k_limit(points: int) -> float:
    """The largest Pareto k̂ an estimate from `points` weights may have.

    PSIS's sample-size-aware limit 1 - 1 / log10 S, never above PARETO_K_MAX (0.5 at 100
    points, 0.67 at 1,000, 0.75 at 10^4).

    Parameters
    ----------
    points : int
        The number S of weights (all points of all randomisations).

    Returns
    -------
    float
        The limit; a k̂ above it flags the estimate.
    """
    return float(min(PARETO_K_MAX, 1.0 - 1.0 / math.log10(max(points, 11))))


def degenerate_weights(diagnostics: Mapping, budget: int, tail: bool = True) -> list[str]:
    """Reasons that an importance-weighted estimate rests on one draw or on a few draws of a
    heavy tail: the weight, tail and randomisation rules.

    Parameters
    ----------
    diagnostics : Mapping
        The SOV family's diagnostics: `ess`, `max_weight_share`, `pareto_k`,
        `randomisations`, `top_randomisation_share` (methods.sov).
    budget : int
        The estimate's number of points; below MIN_POINTS no rule applies.
    tail : bool
        Apply the Pareto k̂ rule. False for `sir`, whose final weights after resampling are
        not the importance weights the tail index is about.

    Returns
    -------
    list of str
        The reasons, each "kind: details"; empty when the weights are healthy.
    """
    if budget < MIN_POINTS:
        return []
    reasons = []
    ess = diagnostics.get("ess")
    if ess is not None and ess < ESS_MIN:
        reasons.append(f"weights degenerate: effective sample size {ess:.3g} of {budget} points, "
                       f"the largest weight holds {diagnostics.get('max_weight_share', 1.0):.1%}"
                       " of Ẑ")
    k_hat = diagnostics.get("pareto_k")
    limit = pareto_k_limit(budget)
    if tail and k_hat is not None and k_hat > limit:
        reasons.append(f"weights heavy-tailed: Pareto k̂ = {k_hat:.2f} > {limit:.2g} over "
                       f"{budget} points, so Ẑ rests on a few draws and the standard error "
                       "does not cover the error (more points: the limit rises to 1 with "
                       "the sample size)")
    top = diagnostics.get("top_randomisation_share")
    k = diagnostics.get("randomisations", 1)
    if top is not None and k >= 2 and top > RANDOMISATION_SHARE_MAX:
        reasons.append(f"randomisations degenerate: one of {k} independent randomisations "
                       f"holds {top:.1%} of Ẑ, so the standard error does not cover the error")
    return reasons


def spread_randomisations(diagnostics: Mapping, budget: int) -> list[str]:
    """A reason that K >= 2 independent randomisations (or populations) disagree too much for
    the standard errors taken from their spread.

    Parameters
    ----------
    diagnostics : Mapping
        `log_z_randomisation_sd` (the sd of the log Ẑ_k over those with Ẑ_k > 0) and
        `randomisations` (K).
    budget : int
        The estimate's number of points; below MIN_POINTS no rule applies.

    Returns
    -------
    list of str
        One reason when the sd is above LOG_Z_SD_MAX nats, else empty.
    """
    sd = diagnostics.get("log_z_randomisation_sd")
    k = diagnostics.get("randomisations", 1)
    if budget < MIN_POINTS or sd is None or k < 2 or not sd > LOG_Z_SD_MAX:
        return []
    return [f"randomisations spread: the log Ẑ of {k} independent randomisations have sd "
            f"{sd:.3g} nats > {LOG_Z_SD_MAX:g}, so Ẑ rests on the few largest and the standard "
            "errors do not cover the error (more points per randomisation: a larger budget or "
            "fewer randomisations)"]


def degenerate_annealing(diagnostics: Mapping) -> list[str]:
    """Reasons that annealed importance sampling's log Ẑ and its standard error rest on
    heavy-tailed weights (docs/math.md §9, §13).

    With R >= 2 runs: the variance of a log weight that their increments imply above
    LOG_Z_SD_MAX² (past that, log w is far from normal and E log w lies about Var(log w) / 2
    below log Z), or the sd of the runs' log weights above AIS_SPREAD_MAX (higher, since that
    sd has only R - 1 degrees of freedom).

    Parameters
    ----------
    diagnostics : Mapping
        `ais_log_weights` (one per run), `ais_log_weight_sd` and `ais_increment_variance`
        (the increments' covariances summed over temperatures and lags, methods.ais).

    Returns
    -------
    list of str
        The reasons, each "kind: details"; empty when the annealing looks sound.
    """
    reasons = []
    sd = diagnostics.get("ais_log_weight_sd")
    runs = len(diagnostics.get("ais_log_weights") or ())
    if sd is not None and runs >= 2 and sd > AIS_SPREAD_MAX:
        reasons.append(f"AIS runs spread: the log weights of {runs} independent AIS runs have sd "
                       f"{sd:.3g} nats > {AIS_SPREAD_MAX:g}, so Ẑ rests on the largest and its "
                       "standard error does not cover the error (more temperatures or longer "
                       "transitions)")
    var = diagnostics.get("ais_increment_variance")
    if var is not None and runs >= 2 and var > LOG_Z_SD_MAX ** 2:
        reasons.append(f"annealing too coarse or too slow: the AIS increments imply a log-weight "
                       f"sd of {math.sqrt(var):.3g} nats > {LOG_Z_SD_MAX:g} (their covariances "
                       "over temperatures and lags), so log Ẑ is biased low by about half its "
                       "square and the standard error does not cover the error (more "
                       "temperatures, or more transitions a temperature: skip)")
    return reasons


def degenerate_paths(diagnostics: Mapping, budget: int) -> list[str]:
    """A reason that a resampling method's test probabilities rest on a few paths.

    Parameters
    ----------
    diagnostics : Mapping
        `ancestor_lineages` (the final particles' distinct ancestors at the first variable,
        summed over the populations; methods.sir) and `test_se_max` (present when the run has
        test points and a standard error).
    budget : int
        The number of particles; below MIN_POINTS no rule applies.

    Returns
    -------
    list of str
        One reason when the lineages are fewer than LINEAGE_FRACTION_MIN of the budget.
    """
    lineages = diagnostics.get("ancestor_lineages")
    if budget < MIN_POINTS or lineages is None or diagnostics.get("test_se_max") is None \
            or not lineages < LINEAGE_FRACTION_MIN * budget:
        return []
    return [f"paths degenerate: the {budget} final particles descend from {lineages} "
            "first-variable ancestors, so the test probabilities rest on a few paths and their "
            "standard errors do not cover the error"]


def unconverged_saddle_point(diagnostics: Mapping) -> list[str]:
    """A reason that minimax tilting's shifts are far from the saddle point (docs/math.md §7).

    Parameters
    ----------
    diagnostics : Mapping
        `saddle_converged`, `saddle_decrement` (the Newton decrement λ²),
        `saddle_iterations` and `saddle_residual`.

    Returns
    -------
    list of str
        One reason when the solver stopped unconverged with λ² above SADDLE_DECREMENT_MAX.
    """
    decrement = diagnostics.get("saddle_decrement")
    if diagnostics.get("saddle_converged", 1) or decrement is None \
            or not decrement > SADDLE_DECREMENT_MAX:
        return []
    return [f"saddle point not converged: Newton decrement {decrement:.3g} > "
            f"{SADDLE_DECREMENT_MAX:g} after {diagnostics.get('saddle_iterations', '?')} Newton "
            f"steps (max |∇ψ| = {diagnostics.get('saddle_residual', float('nan')):.3g})"]


def unreliable_reason(reasons: list[str]) -> str:
    """The reason stored with an unreliable estimate: the reasons joined by '; '.

    Parameters
    ----------
    reasons : list of str
        Reasons of the form 'kind: details' (the report groups them by kind).

    Returns
    -------
    str
        The joined reasons; '' when there are none.
    """
    return "; ".join(reasons)
