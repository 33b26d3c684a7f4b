"""The unreliable-status rules (harness.model.reliability) and the contract of an unreliable
Estimate."""

from __future__ import annotations

import numpy as np
import pytest

from harness.model import reliability as rel
from harness.model.result import STATUSES, Estimate

HEALTHY = {"ess": 44.0, "max_weight_share": 0.07, "randomisations": 10,
           "top_randomisation_share": 0.85, "randomisations_effective": 1.4}


def test_healthy_diagnostics_give_no_reason():
    assert rel.degenerate_weights(HEALTHY, 1000) == []
    assert rel.unreliable_reason(rel.degenerate_weights(HEALTHY, 1000)) == ""


def test_one_effective_sample_is_degenerate_from_min_points_on():
    d = {**HEALTHY, "ess": 1.0, "max_weight_share": 1.0}
    assert rel.degenerate_weights(d, rel.MIN_POINTS)[0].startswith(
        "weights degenerate: effective sample size 1 of 100 points")
    assert rel.degenerate_weights(d, rel.MIN_POINTS - 1) == []     # a handful of points
    assert rel.degenerate_weights({**d, "ess": rel.ESS_MIN}, 1000) == []


def test_one_randomisation_holding_the_estimate_is_degenerate_with_two_or_more():
    d = {**HEALTHY, "top_randomisation_share": 0.999}
    assert rel.degenerate_weights(d, 1000)[0].startswith(
        "randomisations degenerate: one of 10 independent randomisations holds 99.9%")
    assert rel.degenerate_weights({**d, "randomisations": 1}, 1000) == []
    assert rel.degenerate_weights({**d, "top_randomisation_share": 0.99}, 1000) == []


def test_heavy_tailed_weights_from_a_pareto_k_above_the_threshold():
    d = {**HEALTHY, "pareto_k": 3.33}
    assert rel.degenerate_weights(d, 10_000) == [
        "weights heavy-tailed: Pareto k̂ = 3.33 > 0.75 over 10000 points, so Ẑ rests on a few "
        "draws and the standard error does not cover the error (more points: the limit rises "
        "to 1 with the sample size)"]
    assert rel.degenerate_weights({**d, "pareto_k": 0.75}, 10_000) == []
    assert rel.degenerate_weights({**d, "pareto_k": 0.76}, 10_000) != []


def test_the_pareto_k_limit_rises_with_the_sample_size_to_one():
    """PSIS's sample-size-aware rule: 1 - 1/log10 S, rising towards PARETO_K_MAX."""
    limits = [rel.pareto_k_limit(s) for s in (100, 1000, 10_000, 10**5, 10**12)]
    assert limits == pytest.approx([0.5, 2 / 3, 0.75, 0.8, 11 / 12])
    assert limits == sorted(limits) and rel.pareto_k_limit(10**30) < rel.PARETO_K_MAX == 1.0
    d = {**HEALTHY, "pareto_k": 0.7}
    assert rel.degenerate_weights(d, 1000) != [] and rel.degenerate_weights(d, 10_000) == []
    assert rel.degenerate_weights({**d, "pareto_k": None}, 10_000) == []   # not computed
    assert rel.degenerate_weights(d, 10_000, tail=False) == []             # sir
    assert rel.degenerate_weights(d, rel.MIN_POINTS - 1) == []


def test_randomisations_spread_wider_than_log_z_sd_max():
    d = {**HEALTHY, "log_z_randomisation_sd": 5.12}
    assert rel.spread_randomisations(d, 10_000) == [
        "randomisations spread: the log Ẑ of 10 independent randomisations have sd 5.12 nats "
        "> 1, so Ẑ rests on the few largest and the standard errors do not cover the error "
        "(more points per randomisation: a larger budget or fewer randomisations)"]
    assert rel.spread_randomisations({**d, "log_z_randomisation_sd": rel.LOG_Z_SD_MAX},
                                     10_000) == []
    assert rel.spread_randomisations({**d, "log_z_randomisation_sd": None}, 10_000) == []
    assert rel.spread_randomisations({**d, "randomisations": 1}, 10_000) == []
    assert rel.spread_randomisations(d, rel.MIN_POINTS - 1) == []
    assert rel.spread_randomisations(HEALTHY, 10_000) == []


def test_annealing_with_spread_runs_or_large_increment_variance():
    """AIS (ess, hmc): the runs' log weights spread by more than 1.5 nats, or the variance their
    increments imply above 1 nat², each gives its reason; one run gives none."""
    d = {"ais_log_weights": [-10.0, -12.5, -11.0], "ais_log_weight_sd": 1.53,
         "ais_increment_variance": 0.4}
    assert [r.split(":")[0] for r in rel.degenerate_annealing(d)] == ["AIS runs spread"]
    d2 = {**d, "ais_log_weight_sd": 0.3, "ais_increment_variance": 2.25}
    (reason,) = rel.degenerate_annealing(d2)
    assert reason.startswith("annealing too coarse or too slow: the AIS increments imply a "
                             "log-weight sd of 1.5 nats > 1")
    assert len(rel.degenerate_annealing({**d, "ais_increment_variance": 4.0})) == 2
    assert rel.degenerate_annealing({**d, "ais_log_weight_sd": rel.AIS_SPREAD_MAX}) == []
    assert rel.degenerate_annealing({"ais_log_weights": [-10.0], "ais_log_weight_sd": None,
                                     "ais_increment_variance": None}) == []


def test_degenerate_paths_from_few_first_variable_ancestors_with_test_points():
    d = {**HEALTHY, "ancestor_lineages": 17, "test_se_max": 0.01}
    assert rel.degenerate_paths(d, 10_000) == [
        "paths degenerate: the 10000 final particles descend from 17 first-variable "
        "ancestors, so the test probabilities rest on a few paths and their standard errors "
        "do not cover the error"]
    assert rel.degenerate_paths({**d, "ancestor_lineages": 500}, 10_000) == []   # 5 %
    assert rel.degenerate_paths({**d, "test_se_max": None}, 10_000) == []   # no test points
    assert rel.degenerate_paths(HEALTHY, 10_000) == []                     # not resampled
    assert rel.degenerate_paths({**d, "ancestor_lineages": 1}, rel.MIN_POINTS - 1) == []


def test_unconverged_saddle_point_only_when_far():
    d = {"saddle_converged": 0, "saddle_decrement": 3.57, "saddle_residual": 1.55e5,
         "saddle_iterations": 2}
    assert rel.unconverged_saddle_point(d) == [
        "saddle point not converged: Newton decrement 3.57 > 1 after 2 Newton steps "
        "(max |∇ψ| = 1.55e+05)"]
    assert rel.unconverged_saddle_point({**d, "saddle_decrement": 0.97}) == []   # harmless
    assert rel.unconverged_saddle_point({**d, "saddle_converged": 1}) == []
    assert rel.unconverged_saddle_point({"saddle_converged": 0, "saddle_residual": 1e9}) == []
    assert rel.unconverged_saddle_point({}) == []


def test_reasons_are_kind_colon_details_joined():
    reasons = ["weights degenerate: a", "randomisations degenerate: b"]
    assert rel.unreliable_reason(reasons) == "weights degenerate: a; randomisations degenerate: b"


def test_an_unreliable_estimate_keeps_numbers_and_is_checked_like_ok():
    assert "unreliable" in STATUSES
    est = Estimate(-3.0, np.array([0.2, 0.9]), status="unreliable", reason="weights degenerate")
    est.check(2)
    with pytest.raises(AssertionError, match="must say why"):
        Estimate(-3.0, np.array([0.2, 0.9]), status="unreliable").check(2)
    with pytest.raises(AssertionError, match="not a log-probability"):
        Estimate(np.nan, None, status="unreliable", reason="x").check(0)
    with pytest.raises(AssertionError, match="outside"):
        Estimate(-1.0, np.array([1.5]), status="unreliable", reason="x").check(1)
