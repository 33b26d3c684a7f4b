"""The Python API for notebooks: one estimate, a store's results, one figure.

    import harness
    r = harness.estimate("linear1d-p1", "sov", budget=1000, seed=0)   # like `run --json`
    r.log_marginal_likelihood, r.log_marginal_likelihood_se, r.mae, r.cpu_seconds
    table = harness.load_results("results/quick.sqlite")           # one row per job
    fig = harness.plot_time_error(table, "linear1d-p1", metric="mae")

`harness.estimate` is the function `estimate` here; the class a method returns, `Estimate`, is
harness.model.result.Estimate (also `from harness import Estimate`).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from harness.core.errors import InputError
from harness.model.method import Method
from harness.model.problem import Problem

# fields a result answers None for when its run has none (no truth, no prediction, ...)
OPTIONAL = ("log_marginal_likelihood", "log_marginal_likelihood_se", "test_probabilities",
            "reason", "truth_kind", "true_log_marginal_likelihood", "abs_log_error",
            "mape_percent", "mae", "accuracy", "log_loss", "brier", "warnings",
            "test_probabilities_se",
            "true_test_probabilities", "test_probabilities_abs_error")


ARRAYS = ("test_probabilities", "test_probabilities_se", "true_test_probabilities",
          "test_probabilities_abs_error")


class Result:
    """One run: every field of `python -m harness run --json` as an attribute.

    `test_probabilities` (and its per-point SEs, truth and errors) are numpy arrays (None when
    absent: the method does not predict, or gives no SEs, or there is no truth); errors
    against the truth (`abs_log_error`, `mape_percent`, `mae`) are None without one, and so
    are the scores against held-out labels (`accuracy`, `log_loss`, `brier`) without them.
    `to_dict()` is the plain record, exactly what `run --json` prints.
    """

    def __init__(self, record: dict[str, Any]):
        self._record = dict(record)

    def __getattr__(self, name: str) -> Any:
        record = self.__dict__.get("_record", {})
        if name in record:
            value = record[name]
            if name in ARRAYS and value is not None:
                return np.asarray(value, float)
            return value
        if name in OPTIONAL:
            return None
        raise AttributeError(f"a result has no field {name!r} (fields: "
                             f"{', '.join(sorted(set(record) | set(OPTIONAL)))})")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._record) | set(OPTIONAL))

    def to_dict(self) -> dict[str, Any]:
        return dict(self._record)

    def __repr__(self) -> str:
        from harness.execution.formatting import format_record

        return format_record(self._record)


def as_problem(problem: Any) -> Problem:
    """A Problem from a Problem, a spec string (family:k=v, a preset) or a .npz/.csv path."""
    if isinstance(problem, Problem):
        return problem
    if isinstance(problem, str | os.PathLike):
        from harness.plugins.specs import make_problem

        return make_problem(os.fspath(problem))
    raise InputError("problem", f"must be a spec, a file path or a harness.Problem, got "
                     f"{type(problem).__name__}", 'e.g. "linear1d-p1" or "data.csv:kernel=rbf"')


def as_method(method: Any, settings: dict[str, Any]) -> Method:
    """A Method instance from a name, `path.py:Class`, a Method subclass or an instance."""
    from harness.plugins.contract import contract_violations
    from harness.plugins.method_files import resolve_method

    if isinstance(method, Method):
        if settings:
            raise InputError("settings", f"given with a method instance ({method.label()})",
                             "pass the class (or its name) with the settings, or set them "
                             "when you build the instance")
        return method
    if isinstance(method, str | os.PathLike):
        cls = resolve_method(os.fspath(method))
    elif isinstance(method, type):
        cls = method
        problems = contract_violations(cls)
        if problems:
            raise InputError("method", f"{cls.__name__} is not a method plugin: "
                             + "; ".join(problems))
    else:
        raise InputError("method", f"must be a name, path.py:Class, a Method subclass or "
                         f"instance, got {type(method).__name__}", 'e.g. "sov"')
    return cls.from_settings(settings)


def estimate(problem: Any, method: Any, budget: int | float | str, seed: int = 0,
             memory_limit: int | str | None = None, threads: int | None = None,
             **settings: Any) -> Result:
    """Run `method` on `problem` at `budget` and compare with the truth, like `run --json`.

    The same seed gives the same numbers as `python -m harness run ... --seed` (both run
    harness.execution.single.run_single).

    Parameters
    ----------
    problem : str, path or Problem
        A spec ("linear1d-p1", "onefactor:n=50"), a .npz/.csv path or a harness.Problem.
    method : str, path, Method subclass or Method
        A registered name, "path/to/file.py:ClassName", a harness.Method subclass or an
        instance (then without settings).
    budget : int, float or str
        The Monte Carlo budget (points, particles or samples, as the method counts them).
    seed : int
        The seed of the run.
    memory_limit : int, str or None
        The largest estimated peak memory (harness.model.footprint) allowed: "8GB", or bytes;
        None: the memory available.
    threads : int or None
        Threads of the estimate (the compiled kernels and the walks' products;
        harness.core.threads), as `run --threads`; None: the cores this process may use. The
        numbers do not depend on it.
    **settings
        The method's settings, as `--set key=value` gives them.

    Returns
    -------
    Result
        Every field of `run --json` as an attribute.

    Raises
    ------
    harness.InputError
        On bad input, and, before it runs, for a job whose estimated peak memory exceeds
        `memory_limit` (as `run` does).
    """
    from harness.core.threads import compute_threads
    from harness.execution.single import run_numbers, run_single
    from harness.model.footprint import memory_limit as footprint_limit

    budget, seed = run_numbers(budget, seed)
    the_method = as_method(method, settings)
    the_problem = as_problem(problem)
    if threads is not None and int(threads) < 1:
        raise InputError("threads", f"must be at least 1, not {threads}", "threads=1 or more")
    with compute_threads(threads):
        return Result(run_single(the_problem, the_method, budget, seed,
                                 *footprint_limit(memory_limit, "memory_limit")))


def load_results(store: str | os.PathLike):
    """A results store as a pandas DataFrame, one row per job.

    Parameters
    ----------
    store : str or path
        The SQLite results store of a sweep.

    Returns
    -------
    pandas.DataFrame
        The columns of harness.analysis.results: the record's fields and the report's errors
        against truth, posterior or consensus.
    """
    from harness.analysis.results import load_table

    return load_table(store)


def run_sweep(sweep: Any, *, report: bool = True, **options: Any):
    """Run (or resume) a sweep like `python -m harness sweep`, the report written at the end.

    Parameters
    ----------
    sweep : str, path or harness.sweep.spec.Sweep
        A sweep file, or a sweep parsed by harness.sweep.spec.parse_sweep.
    report : bool
        Write the report at the end (harness.report.write_sweep_report) into the sweep's
        report folder; False: none (`sweep --no-report`).
    **options
        The keyword arguments of harness.sweep.driver.run_sweep (store, workers, scheduler,
        client, out, err, references=False to skip the references of problems without
        truth (`sweep --no-reference`), ...).

    Returns
    -------
    harness.sweep.driver.Outcome
        What the run did.
    """
    from harness.report import write_sweep_report
    from harness.sweep.driver import run_sweep as run

    return run(sweep, report=report, write_report=write_sweep_report, **options)


def plot_time_error(results_or_store: Any, problem: str, metric: str = "mae", ax=None):
    """The report's CPU time–error figure of one problem and one metric.

    Parameters
    ----------
    results_or_store : str, path or pandas.DataFrame
        A store path or a `load_results` DataFrame (filter it to draw fewer methods).
    problem : str
        The problem's name in the results (or its spec as written).
    metric : str
        mae, mape_percent, abs_log_error, mae_post, mae_med, med_abs_log_error or
        med_mape_percent.
    ax : matplotlib Axes, optional
        The axes to draw into (default: a new figure).

    Returns
    -------
    matplotlib.figure.Figure
        The figure.
    """
    from harness.report.single import report_data, time_error

    return time_error(report_data(results_or_store), problem, metric, ax)
