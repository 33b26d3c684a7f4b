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
- both rules only from MIN_POINTS (= 100) points: with a handful of points one dominant weight
  is normal on easy problems (quick-sweep problems, 10 seeds: ESS < 1.1 in 25 of 70 `sov` runs
  at budget 3 and 9 of 70 at budget 10, none at 30; smallest ESS at 100: 4.6).
- saddle point (`minimax-tilting`): not converged with max |∇ψ| > SADDLE_RESIDUAL_MAX (= 1e3).
  Any shift gives an unbiased estimator (μ = 0 is SOV), so a slightly unconverged saddle point
  is harmless; the residual at μ = 0 is 8–98 on the quick sweep's problems and 0.98 after one
  Newton step in the unconverged-saddle test, while on the issue's cases Newton stops after
  100 steps at 5.9e3 and 9.7e3 (1.4e3 and 1.2e4 in the cached reordering).

`rejection-bootstrap` has no rule: on both cases of the issue every particle is rejected
(status `failed`, with the variable); its standard error (A.44) grows with 1 / (M P_i), and
path degeneracy is normal for it (quick-sweep problems at M = 1000: 3-8 distinct first-variable
ancestors, at worst 12 particles accepted at one step), so neither is a sign of a wrong answer.
"""

from __future__ import annotations

from collections.abc import Mapping

ESS_MIN = 1.1
RANDOMISATION_SHARE_MAX = 0.99
MIN_POINTS = 100
SADDLE_RESIDUAL_MAX = 1e3


def degenerate_weights(diagnostics: Mapping, budget: int) -> list[str]:
    """Reasons (empty: none) that an importance-weighted estimate rests on one draw.

    Reads the SOV family's diagnostics: `ess`, `max_weight_share`, `randomisations`,
    `top_randomisation_share`, `randomisations_effective` (methods.sov).
    """
    if budget < MIN_POINTS:
        return []
    reasons = []
    ess = diagnostics.get("ess")
    if ess is not None and ess < ESS_MIN:
        reasons.append(f"weights degenerate: effective sample size {ess:.3g} of {budget} points, "
                       f"the largest weight holds {diagnostics.get('max_weight_share', 1.0):.1%}"
                       " of Ẑ")
    top = diagnostics.get("top_randomisation_share")
    k = diagnostics.get("randomisations", 1)
    if top is not None and k >= 2 and top > RANDOMISATION_SHARE_MAX:
        reasons.append(f"randomisations degenerate: one of {k} independent randomisations "
                       f"holds {top:.1%} of Ẑ, so the standard error does not cover the error")
    return reasons


def unconverged_saddle_point(diagnostics: Mapping) -> list[str]:
    """A reason (or none) that minimax tilting's shifts are far from the saddle point."""
    residual = diagnostics.get("saddle_residual")
    if diagnostics.get("saddle_converged", 1) or residual is None \
            or not residual > SADDLE_RESIDUAL_MAX:
        return []
    return [f"saddle point not converged: max |∇ψ| = {residual:.3g} after "
            f"{diagnostics.get('saddle_iterations', '?')} Newton steps"]


def unreliable_reason(reasons: list[str]) -> str:
    """The reason stored with an unreliable estimate ('' when there is none): the reasons
    joined by '; ', each 'kind: details' (the report groups them by kind)."""
    return "; ".join(reasons)
