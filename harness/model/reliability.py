"""When a method's own diagnostics say its estimate is degenerate (status `unreliable`).

An estimate whose importance weights have collapsed onto one sample, or onto one of several
independent randomisations, is an estimate from a single draw: its standard error, taken
from the spread of the others, does not cover its error, and log Ẑ can be off by any amount
(docs/math.md §6 on heavy-tailed SOV weights; issue 17: on a correlation matrix of condition 1e15
`sov` returned log Ẑ = -1.2e11 against a lower bound of -541, with weight ESS = 1.000, the
largest weight's share 1.000 and all of Ẑ in one of ten randomisations). Such a run keeps its
numbers but is stored as `unreliable` with the reason, apart from the `ok` runs.

The rules and their thresholds (measured; see the tests in tests/harness/test_reliability.py):

- weights: ESS = (Σ W)² / Σ W² < ESS_MIN (= 1.1: the largest weight holds >= 91 % of Ẑ,
  since ESS >= 1 / max share). On the default sweep's five problems (sweeps/quick.toml; 10
  seeds each) the smallest ESS was 4.6 for `sov` at budget 100 and 44 at its sweep budgets
  1000 / 10000 (`sov-tlr` 46, `minimax-tilting` 47 at budget 100); on the two cases of issue
  17 it is 1.000 at every budget. On a hard but well-posed problem (2-D RBF orthant, N = 256,
  alpha = 0.02, docs/math.md §6) `sov` is degenerate in earnest (one point holds most of Ẑ and log
  Ẑ is biased low by nats): ESS < 1.1 in 4 of 20 seeds at budget 100, 2 at 1000, 1 at 10^4.
- randomisations: with K >= 2 independent randomisations, one holding more than
  RANDOMISATION_SHARE_MAX (= 0.99) of Ẑ. This is the rule that sees `sir`, whose final weights
  are reset by resampling (its ESS stays ~ budget / 10 on the issue's cases while one
  population holds 1.000 of Ẑ). Quick sweep: at most 0.85 (`sir`, budget 100, 10 particles a
  population); RBF case above: `sir` at most 0.987 at budget 100.
- tail: Pareto k̂ of the weights (harness.core.tails, PSIS's fit to the largest min(S/5, 3√S) of
  all S weights of all randomisations) above PARETO_K_MAX (= 1: the fitted tail has no finite
  mean). This is the rule for heavy-tailed SOV weights on short-range covariances, where ESS
  stays between 1.1 and a few dozen. Measured with exact truth (benchmarks/bench_reliability.py;
  6 seeds; markov1d N = 500 and 2,000, rho = 0.9 and 0.99, hard one-factor N = 500, linear1d-p2;
  budgets 1e3, 1e4; N = 2,000 at 1e4 for sov-tlr and minimax-tilting only): every `sov` /
  `sov-tlr` run on markov1d was >= 3 SE off (84 of 84) with k̂ 2.25-18.2, and the ESS /
  randomisation rules had flagged 36 of them; with k̂ > 1 all 84 are flagged. Within 3 SE, k̂
  was at most 0.38 on the quick sweep (sov, sov-tlr, 5 seeds x 5 problems x 2 budgets) and up to
  1.23 on the hard one-factor at 1e3 (2 of 24 correct runs flagged for each of sov and sov-tlr,
  3 with 0.7). `minimax-tilting` bounds the weights: k̂ -0.67 to 0.34 at N <= 500, 0.40-0.97 on
  markov1d N = 2,000, where its log Z was within 2.7 SE in all 24 runs (errors up to 0.63 nats
  at 1e3, the SE to match) and the worst of 20 test points 3.0-4.2 SE off in 7 (the t-tail
  below): PSIS's 0.7 would flag 7 of its 57 runs within 3 SE over the study, 1 flags none. On
  gauss2class N = 1,000 (alpha = 0.5, issue 21) at 1e4: sov 8 nats low with k̂ 3.2, tilting
  right with k̂ 0.44-0.64. Not applied to `sir` (tail=False): after resampling its final weights
  are not the importance weights (their k̂ was -1.0 to 0.5 on markov1d runs that were all off,
  up to 1.4 on correct quick-sweep runs).
  The threshold falls with the sample size S below that: k̂ > min(1, 1 - 1/log10 S)
  (`pareto_k_limit`: 0.5 at 100 points, 0.67 at 1,000, 0.75 at 10^4, 0.8 at 10^5), the
  sample-size-aware form of PSIS's rule (below it, S draws are enough for the tail they come
  from; above, the estimate has not converged at this S). Measured on `minimax-tilting` (K = 40
  randomisations, issue 21; benchmarks/bench_randomisations.py) on markov1d N = 2,000, rho = 0.9
  and 0.99, 30 seeds: at 1e3 points 25 of 60 runs ok by the k̂ > 1 rule had a test
  probability >= 3 SE off, and k̂ 0.35-1.0; with the limit 0.67, 20 of those 25 are flagged
  (and 24 of the 35 within 3 SE: at 1e3 points on this problem the honest verdict is "more
  points"); at 1e4 (limit 0.75) 1 of 15 off and 2 of 45 within, at 1e5 none of 8. On the quick
  sweep's five problems no SOV-family run of an exact method crosses it (k̂ at most 0.63).
- all rules only from MIN_POINTS (= 100) points: with a handful of points one dominant weight
  is normal on easy problems (quick-sweep problems, 10 seeds: ESS < 1.1 in 25 of 70 `sov` runs
  at budget 3 and 9 of 70 at budget 10, none at 30; smallest ESS at 100: 4.6).
- saddle point (`minimax-tilting`): not converged with a Newton decrement λ² (twice the nats
  its profile φ could still gain, harness.core.saddle_point; affine invariant, unlike max |∇ψ|)
  above SADDLE_DECREMENT_MAX (= 1). Any shift gives an unbiased estimator (μ = 0 is SOV), so
  a slightly unconverged saddle point is harmless; a far one is not when the covariance is
  nearly singular. Measured (issue 24, benchmarks/bench_saddle_caps.py: the solver capped at
  0, 1, 2, 4 and 8 Newton steps, 4 seeds at 1e3 points, exact truth): on one-factor problems
  with d = 1 - 1e-9 and 1 - 1e-13 (N = 10 and 50, mixed signs) every cap that left λ² >= 3.5
  (3.6-87) had a run 4.8 SE or more off (up to 446) or failed (log Ẑ > 0), some with k̂ < 1
  (4.8 and 6.1 SE off at λ² 3.7 and 3.6), while λ² = 2.2 (N = 50, 4 steps) was within 2.7 SE;
  every capped run with λ² <= 1, there and on onefactor n = 100, the hard one-factor n = 100,
  linear1d-p1, a rank-2 linear kernel and markov1d, was within 3 SE (λ² up to 0.97). Capped
  at 0-1 steps those easier problems have λ² of 3.1-15 and are still right, so the rule flags
  them; but the solver converges on every one of them in at most 10 steps, so it never sees
  them. The previous rule (max |∇ψ| > 1e3) passed the issue's case, a residual of 129-307
  after 100 steps of the previous solver and log Ẑ 29 SE low; the solver now converges there.

- paths (`sir`, runs with test points and a standard error): the final particles descend from
  fewer than LINEAGE_FRACTION_MIN (= 5 %) of the particles at the first variable
  (`ancestor_lineages`, summed over the populations). Resampling leaves Ẑ unbiased, but the
  test probabilities are averages over whole paths, and after hundreds of resamplings the
  paths of a population share their beginning. Same study: on markov1d 35 of 36 `sir` runs
  had a test probability >= 3 SE off (the worst of 20 a median 91 SE) while the randomisation
  rule flagged 13; their lineage fraction was 0.10-1.7 %, against 13.8 % or more on every
  quick-sweep, one-factor and linear1d run (100 to 10^4 particles); one markov1d run within 3
  SE (1.5 %) is flagged too. Quick sweep: 0 of 50 flagged. The issue's gauss2class case
  (N = 1,000, alpha = 0.5, 10^4 particles; test probabilities up to 24 SE off): 0.46-0.71 %
  over 3 seeds, flagged.

- spread (`rejection-bootstrap` with K >= 2 populations, issue 21): the sd of the K
  populations' log Ẑ_k (over those with Ẑ_k > 0) above LOG_Z_SD_MAX (= 1 nat). A mean of K
  draws whose log has sd σ has relative variance (e^{σ²} - 1) / K, and the linearised ratio
  behind the test SEs needs that small; beyond σ ~ 1 a few populations hold Ẑ and K = 10 of
  them do not show its tail. Measured (benchmarks/bench_reliability.py, 10 seeds, hard and
  soft count, budgets 1e3 and 1e4): on markov1d N = 500 (rho 0.9, 0.99) 79 of 80 runs were >=
  3 SE off (12 in log Z, the others in the test probabilities only, up to 5e17 SEs) with sd
  1.23-43.5, and all 80 are flagged (29 also by the top-randomisation rule above; 3 had a
  single surviving population). At 1e4 particles every other
  run had sd <= 0.98 (hard one-factor N = 500, linear1d-p2, the quick sweep's five problems:
  0 of 140 flagged); the 24 of them >= 3 SE off are hard-count test probabilities on linear
  kernels, 3.3-5.5 SEs for the worst of 20-100 points, and two soft-count runs of linear1d-p1
  whose test errors all sit ~3-6 SEs to one side (one slope drives them). At 1e3 (100
  particles a population) the spread is 0.3-3.4 nats on those problems too: 41 of 50 runs
  >= 3 SE off (mostly hard-count test probabilities) are flagged, and 65 of 90 within. At
  N = 2,000 (rho 0.9, 1e4, 3 seeds) ten populations were 71-113 nats low, all flagged. Not
  applied to the SOV family: on the study of the tail rule above (6 seeds) it flags no `sov`,
  `sov-tlr` or `minimax-tilting` run that the other rules do not (their off runs have sd <=
  0.65 or are flagged already). `sir` applies it from 100 particles a population (methods.sir
  .Sir.unreliable_reason); with 10 it would add 3 off runs and 5 false alarms on the quick
  sweep at budget 100 (sd 1.1-4.2).

- annealing (`ess`, `hmc`: methods.ais, R >= 2 AIS runs): the variance of a log weight that
  the increments imply (their covariances over temperatures and over lags between levels,
  methods.ais.IncrementVariance) above LOG_Z_SD_MAX², or the runs' log weights with sd above
  AIS_SPREAD_MAX = 1.5 (`degenerate_annealing`). Measured against exact truth (6 seeds a cell,
  docs/math.md §13): `hmc` at GPML's settings with 10-20 samples on the default sweep's linear
  problems and markov1d N = 150: 8 of 48 runs >= 3 SE off by the runs' SE alone, none by the
  reported SE, 41 of 48 flagged. markov1d N = 1,000 (rho 0.8), `ess` at 1,000 samples, 10
  seeds: 0.5-5.8 nats low; with lag 0 alone (σ² 0.58-0.81) 5 were >= 3 SE off and 2 of them
  stored ok; with the lags (σ² 3.5-14, the runs' observed sd 0.7-5.0) all 10 are flagged.
  The lags' price on the default sweep's linear problems and markov1d N = 150 (6 seeds of `ess`
  at 100 and 300 samples, 3 of `hmc` at 50 and 100): 7 more runs flagged, all within 3 SE, with
  σ² 1.07-1.6 (4 of them `ess` at 100 samples on markov1d); the one run off before (`ess`,
  markov1d at 300, 1.5 nats low, 4.2 SE) is 2.8 of the SE the lags give.

What no rule catches (same studies): `minimax-tilting`'s standard errors come from 10
randomisations (9 degrees of freedom), so the worst of 20 test points lies beyond 3 SE in about
a quarter of its runs (12 of 48 on markov1d); `rejection-bootstrap`'s hard-count test SEs on
linear kernels (above). Dead populations (every particle rejected: Ẑ_k = 0, `dead_populations`)
are no rule: Ẑ stays unbiased and the delta-method SE counts them; at 1e3 they occur on easy
problems (40 of 100 quick-sweep runs) as on markov1d (30 of 40). With one population (K = 1)
`rejection-bootstrap` has no rule: its binomial SE (A.44) ignores path degeneracy and was >= 3
SE off in log Z in 19 of 23 markov1d N = 500 runs (median 13 SE); every particle rejected is
status `failed`.
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
    """The largest Pareto k̂ an estimate from `points` weights may have (module doc): PSIS's
    sample-size-aware 1 - 1 / log10 S, never above PARETO_K_MAX."""
    return float(min(PARETO_K_MAX, 1.0 - 1.0 / math.log10(max(points, 11))))


def degenerate_weights(diagnostics: Mapping, budget: int, tail: bool = True) -> list[str]:
    """Reasons (empty: none) that an importance-weighted estimate rests on one draw or on a
    few draws of a heavy tail (tail=False: not the Pareto k̂ rule — `sir`, whose final
    weights after resampling are not the importance weights the tail index is about).

    Reads the SOV family's diagnostics: `ess`, `max_weight_share`, `pareto_k`,
    `randomisations`, `top_randomisation_share`, `randomisations_effective` (methods.sov).
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
    """A reason (or none) that K >= 2 independent randomisations (or populations) disagree too
    much for the standard errors taken from their spread: the sd of their log Ẑ_k
    (`log_z_randomisation_sd`, over those with Ẑ_k > 0) above LOG_Z_SD_MAX nats. From
    MIN_POINTS points on."""
    sd = diagnostics.get("log_z_randomisation_sd")
    k = diagnostics.get("randomisations", 1)
    if budget < MIN_POINTS or sd is None or k < 2 or not sd > LOG_Z_SD_MAX:
        return []
    return [f"randomisations spread: the log Ẑ of {k} independent randomisations have sd "
            f"{sd:.3g} nats > {LOG_Z_SD_MAX:g}, so Ẑ rests on the few largest and the standard "
            "errors do not cover the error (more points per randomisation: a larger budget or "
            "fewer randomisations)"]


def degenerate_annealing(diagnostics: Mapping) -> list[str]:
    """Reasons (or none) that annealed importance sampling's log Ẑ and its standard error rest on
    heavy-tailed weights: with R >= 2 runs, the variance of a log weight that their increments
    imply (`ais_increment_variance`: methods.ais.IncrementVariance, their covariances summed over
    temperatures and lags) above LOG_Z_SD_MAX² (past that, log w is far from normal, E log w
    lies about Var(log w) / 2 below log Z, and a few runs cannot show the tail that Ẑ needs), or
    the sd of their log weights (`ais_log_weight_sd`) above AIS_SPREAD_MAX. That sd has R − 1
    degrees of freedom (2 with three runs), so its limit sits higher: at a true sd of 0.7 it
    exceeds 1.5 in 1 % of runs (1 would be exceeded in 13 %)."""
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
    """A reason (or none) that a resampling method's test probabilities rest on a few paths:
    its final particles descend from fewer than LINEAGE_FRACTION_MIN of its particles at the
    first variable (`ancestor_lineages`, methods.sir). Only for runs with test points and a
    standard error (`test_se_max`), from MIN_POINTS points on."""
    lineages = diagnostics.get("ancestor_lineages")
    if budget < MIN_POINTS or lineages is None or diagnostics.get("test_se_max") is None \
            or not lineages < LINEAGE_FRACTION_MIN * budget:
        return []
    return [f"paths degenerate: the {budget} final particles descend from {lineages} "
            "first-variable ancestors, so the test probabilities rest on a few paths and their "
            "standard errors do not cover the error"]


def unconverged_saddle_point(diagnostics: Mapping) -> list[str]:
    """A reason (or none) that minimax tilting's shifts are far from the saddle point: not
    converged, with a Newton decrement above SADDLE_DECREMENT_MAX."""
    decrement = diagnostics.get("saddle_decrement")
    if diagnostics.get("saddle_converged", 1) or decrement is None \
            or not decrement > SADDLE_DECREMENT_MAX:
        return []
    return [f"saddle point not converged: Newton decrement {decrement:.3g} > "
            f"{SADDLE_DECREMENT_MAX:g} after {diagnostics.get('saddle_iterations', '?')} Newton "
            f"steps (max |∇ψ| = {diagnostics.get('saddle_residual', float('nan')):.3g})"]


def unreliable_reason(reasons: list[str]) -> str:
    """The reason stored with an unreliable estimate ('' when there is none): the reasons
    joined by '; ', each 'kind: details' (the report groups them by kind)."""
    return "; ".join(reasons)
