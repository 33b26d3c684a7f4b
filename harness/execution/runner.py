"""Run one method on one problem at one budget and return a plain record.

The record holds only plain data (numbers, strings, lists), so it can be printed as JSON,
sent back from a Dask worker, and stored without pickles: the fields that name the run, the
timed call's results (harness.execution.timed: thread CPU, wall, peak memory, the set-up
measured apart and cached per process) and the errors against the problem's truth.
run_one(..., limits=Limits(time, memory)) makes the limits hard: the job runs in a forked
child (harness.execution.isolated; harness.model.limits states the rules and the design), and
a child killed at its limit is stored as "timeout" (or "failed" with a reason starting
"memory:") with the CPU it really used.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.core import metrics
from harness.execution.isolated import run_limited
from harness.execution.timed import listed, run_method
from harness.model.limits import Limits
from harness.model.method import Method
from harness.model.problem import Problem
from harness.model.result import ANSWERED


def identity_fields(problem: Problem, method: Method, budget: int) -> dict[str, Any]:
    """The fields that name a run: problem, method instance, budget, sizes, kernel."""
    return {
        "problem": problem.name,
        "method": method.label(),
        "method_name": method.name,
        "settings": method.get_settings(),
        "exact_method": method.tags.exact,
        "approximation": not method.tags.exact,   # its estimand is not the model's exact one
        **({"closer_with": list(method.tags.closer_with)} if method.tags.closer_with else {}),
        "budget": int(budget),
        "budget_unit": method.budget_unit,
        "n_train": problem.n_train,
        "n_test": problem.n_test,
        "kernel": problem.kernel_summary(),
    }


def truth_metrics(problem: Problem, record: dict[str, Any]) -> dict[str, Any]:
    """Errors against the problem's truth (exact oracle or reference), when it has one, and
    the predictive scores against its held-out labels y_test, when it has them
    (metrics.predictive_scores); for unreliable runs too (their numbers are kept so that a
    user can see how wrong they are)."""
    truth = problem.truth
    probs = record.get("test_probabilities")
    answered = record["status"] in ANSWERED and probs is not None
    out: dict[str, Any] = (metrics.predictive_scores(probs, problem.y_test)
                           if answered and problem.y_test is not None and problem.n_test else {})
    if truth is None:
        return out
    out["truth_kind"] = truth.kind
    out["true_log_marginal_likelihood"] = truth.log_marginal_likelihood
    reference = truth.kind == "reference" and truth.log_marginal_likelihood_se > 0
    if reference:
        out["true_log_marginal_likelihood_se"] = truth.log_marginal_likelihood_se
    lz = record.get("log_marginal_likelihood")
    if record["status"] in ANSWERED and lz is not None:
        out["abs_log_error"] = metrics.abs_log_error(lz, truth.log_marginal_likelihood)
        out["mape_percent"] = metrics.mape_percent(lz, truth.log_marginal_likelihood)
        if reference:   # an error below twice the reference's SE is not resolved by it
            out["at_reference_precision"] = metrics.at_reference_precision(
                out["abs_log_error"], truth.log_marginal_likelihood_se)
    if answered and truth.test_probabilities is not None and problem.n_test:
        out["mae"] = metrics.mae(probs, truth.test_probabilities)
    return out


def point_truth(problem: Problem, record: dict[str, Any]) -> dict[str, Any]:
    """Per test point: the true probabilities (when the problem has them) and each point's
    absolute error |p_i - p*_i| (when the run predicted); the MAE is their mean. Not part of
    the stored record (the store holds the truth once, in the problem's summary)."""
    truth = problem.truth
    known = truth is not None and truth.test_probabilities is not None and problem.n_test > 0
    probs = record.get("test_probabilities")
    return {"true_test_probabilities": listed(truth.test_probabilities) if known else None,
            "test_probabilities_abs_error": listed(np.abs(np.asarray(probs, float)
                                                           - truth.test_probabilities))
            if known and record["status"] in ANSWERED and probs is not None else None}


def run_one(problem: Problem, method: Method, budget: int, rng: np.random.Generator,
            *, raise_errors: bool = False, limits: Limits | None = None,
            **identity: Any) -> dict[str, Any]:
    """The full record of one run: identity fields, results, timings and truth metrics.

    Parameters
    ----------
    problem : Problem
        The problem, with its truth where it has one.
    method : Method
        The method instance, its settings set.
    budget : int
        The Monte Carlo budget.
    rng : numpy.random.Generator
        The run's random stream.
    raise_errors : bool
        Re-raise a method's exception instead of recording it (without `limits` only).
    limits : Limits, optional
        CPU seconds and bytes at which the job is stopped (harness.execution.isolated: in a
        child process when there is a time limit); None: the job runs in this process.
    **identity
        Fields that name the run (sweep, job id, replicate, ...), copied into the record.

    Returns
    -------
    dict
        The plain record: identity, the method's results, timings, diagnostics, status and
        the errors against the problem's truth.
    """
    record = {**identity, **identity_fields(problem, method, budget)}
    if limits is not None and limits.active:
        record.update(run_limited(problem, method, budget, rng, limits))
    else:
        record.update(run_method(problem, method, budget, rng, raise_errors=raise_errors))
    record.update(truth_metrics(problem, record))
    return record
