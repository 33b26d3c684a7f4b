"""Plain regression tests of the inputs the fuzzing of the command line found: each was a traceback
or a hang and is now exit 2 with one line naming the field and the limit."""

from __future__ import annotations

import re

import numpy as np
import pytest
from cli_driver import cli, refused

from harness.core.errors import InputError
from harness.datasets.parameters import MAX_POINTS
from harness.model.settings import (
    MAX_BUDGET,
    MAX_MAGNITUDE,
    check_budget,
    coerce_setting,
    parse_int,
)
from harness.plugins.registry import get_method
from harness.plugins.specs import make_problem

SOV_TINY = ("--problem", "onefactor:n=5", "--method", "sov")


def sweep_file(tmp_path, text: str) -> str:
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def check_sweep(tmp_path, text: str) -> str:
    return refused("sweep", sweep_file(tmp_path, text), "--check", "--no-report",
                   "--store", str(tmp_path / "s.sqlite"))


BASE = 'budgets = [10]\nproblems = ["onefactor:n=5"]\n[methods.sov]\n'


# ---- the five failures the fuzzing found first ---------------------------------------------
def test_deeply_nested_toml_is_refused_in_one_line(tmp_path):
    line = check_sweep(tmp_path, "budgets = " + "[" * 2000 + "1" + "]" * 2000 + "\n")
    assert "nests arrays or tables too deeply" in line


def test_text_arrays_in_an_npz_are_refused(tmp_path):
    path = tmp_path / "p.npz"
    np.savez(path, cov=np.array([["1", "0"], ["0", "1"]]))
    assert "cov: must hold real numbers, got an array of <U1" in refused(
        "run", "--problem", str(path), "--method", "sov", "--budget", "10")
    np.savez(path, X_train=np.array(["a", "b"]), y_train=np.array([1, -1]),
             X_test=np.zeros((1, 1)))
    assert "X_train: must hold real numbers" in refused(
        "run", "--problem", str(path), "--method", "sov", "--budget", "10")


def test_array_kernel_parameters_in_an_npz_are_one_line(tmp_path):
    path = tmp_path / "p.npz"
    np.savez(path, X_train=np.zeros((2, 1)), y_train=np.array([1, -1]), X_test=np.zeros((1, 1)),
             alpha=np.eye(3), beta=np.array(1.0))
    assert "alpha and beta must be numbers, got an array of shape (3, 3)" in refused(
        "run", "--problem", str(path), "--method", "sov", "--budget", "10")


def test_a_huge_problem_parameter_is_refused_not_an_arithmetic_error():
    line = refused("run", "--problem", "linear1d:sd_neg=9223372036854775807", "--method",
                   "sov", "--budget", "10")
    assert "parameter 'sd_neg'" in line and "2^53" in line


def test_an_oracle_that_cannot_converge_is_an_input_error(monkeypatch):
    import harness.datasets.linear1d as linear1d

    def diverges(*args):
        raise ArithmeticError("one-factor quadrature did not converge (err 0.00377)")

    monkeypatch.setattr(linear1d, "one_factor_integral", diverges)
    with pytest.raises(InputError, match="problem linear1d: parameters: the exact truth cannot "
                       "be computed for them .one-factor quadrature did not converge"):
        linear1d.linear1d(n_train=4, n_test=1)
    with pytest.raises(ArithmeticError, match="did not converge"):   # still the oracle's error
        linear1d.linear1d(n_train=4, n_test=1)
    assert "one-factor quadrature did not converge" in refused(
        "run", "--problem", "linear1d:n_train=4,n_test=1,seed=7", "--method", "sov",
        "--budget", "10")


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e308"])
def test_non_finite_or_huge_settings_are_refused(value):
    line = refused("run", *SOV_TINY, "--budget", "10", "--set", f"chunk_mb={value}")
    assert "setting 'chunk_mb'" in line


@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_non_finite_settings_in_a_sweep_file_are_refused_by_check(tmp_path, value):
    line = check_sweep(tmp_path, BASE + f"chunk_mb = {value}\n")
    assert "methods.sov.chunk_mb" in line and "finite" in line


def test_an_unrunnable_budget_is_refused_with_the_limit(tmp_path):
    line = refused("run", *SOV_TINY, "--budget", "9223372036854775807")
    assert "largest budget a job can run, 1e9" in line
    line = check_sweep(tmp_path, BASE.replace("[10]", "[10, 9223372036854775807]"))
    assert "budgets[1]" in line and "1e9" in line
    line = check_sweep(tmp_path, BASE.replace("[10]", "{ start = 10, stop = 1e12, num = 3 }"))
    assert "budgets.stop" in line and "1e9" in line


@pytest.mark.parametrize("method, setting, words", [
    ("ess", "skip=4294967296", "sampler steps ((budget + burn_in + ais_runs (T - 2)) x skip)"),
    ("hmc", "leapfrog_steps=100000000", "x skip x leapfrog_steps)"),
    ("ess", "temperatures=100000000", "sampler steps"),
    ("emcee", "walkers=100000000", "walker moves (walkers x budget)")])
def test_settings_that_multiply_the_work_beyond_any_job_are_refused(method, setting, words):
    line = refused("run", "--problem", "linear1d:n_train=6,n_test=2", "--method", method,
                   "--budget", "30", "--set", setting, "--memory-limit=1TB")
    assert words in line and "more than a job can run, 1e9" in line


def test_the_work_bound_leaves_the_papers_jobs_alone():
    for name in ("ess", "hmc", "emcee"):   # GPML's defaults at the paper's budget, N = 400
        get_method(name)().check_job(200, 400)


def test_grids_too_large_to_check_are_refused_before_they_are_built(tmp_path):
    seeds = list(range(400))
    line = check_sweep(tmp_path, f'budgets = [10]\nproblems = [{{family = "onefactor", n = 3, '
                                 f'seed = {seeds}, dmin = [-0.5, -0.4, -0.3]}}]\n[methods.sov]\n')
    assert "problems[0]: makes 1,200 problems" in line and "(1,000)" in line
    line = check_sweep(tmp_path, BASE + f"randomisations = {seeds[1:]}\nblock_size = [0, 1, 2]\n")
    assert "methods.sov: makes 1,197 method instances" in line


def test_a_sweep_name_too_long_for_a_file_name_is_refused(tmp_path):
    assert "name: has 300 characters, more than 100" in check_sweep(
        tmp_path, f'name = "{"a" * 300}"\n' + BASE)


def test_more_local_workers_than_four_per_core_are_refused(tmp_path):
    line = refused("sweep", sweep_file(tmp_path, BASE), "--check", "--no-report",
                   "--workers", "1e9")
    assert "--workers: must be <= " in line


# ---- the limits themselves ---------------------------------------------------------------------
def test_the_largest_budget_runs_and_one_more_is_refused():
    assert check_budget("b", MAX_BUDGET) == MAX_BUDGET
    with pytest.raises(InputError, match="1e9"):
        check_budget("b", MAX_BUDGET + 1)
    with pytest.raises(InputError, match="1e9"):
        get_method("sov")().estimate(make_problem("onefactor:n=5"), MAX_BUDGET + 1,
                                     np.random.default_rng(0))


def test_sizes_beyond_the_limit_are_refused_before_anything_is_built():
    assert "onefactor:n=5" in make_problem("onefactor:n=5").name
    for spec, key in ((f"onefactor:n={MAX_POINTS + 1}", "'n'"),
                      (f"linear1d:n_train={MAX_POINTS + 1}", "'n_train'"),
                      ("gauss2class:d=1001", "'d'"),
                      ("gauss2class:n_train=500000,d=1000", "(n_train + n_test) * d")):
        with pytest.raises(InputError, match=re.escape(key) + ".*no method finishes beyond"):
            make_problem(spec)


def test_negative_seeds_of_families_are_input_errors():
    for spec in ("gauss2class:seed=-1", "linear-lowrank:seed=-1"):
        with pytest.raises(InputError, match="'seed'"):
            make_problem(spec)


def test_integers_are_read_exactly_and_bounded():
    assert parse_int("--budget", "9007199254740993") == 9007199254740993
    assert parse_int("--seed", "1e3") == 1000
    assert coerce_setting("s", "9007199254740992", 0) == MAX_MAGNITUDE
    with pytest.raises(InputError, match="2\\^53"):
        coerce_setting("s", "9007199254740993", 0)
    with pytest.raises(InputError, match="must be an integer"):
        coerce_setting("s", "1.5", 0)
    with pytest.raises(InputError, match="2\\^53"):
        coerce_setting("s", 10**400, 0)
    assert refused("run", *SOV_TINY, "--budget", "10", "--seed", "1e300").endswith(
        "must be <= 9223372036854775807, got 1e300")


@pytest.mark.parametrize("limit", ["1e400GB", "0.0000001"])
def test_a_memory_limit_that_is_infinite_or_below_a_byte_is_refused(limit):
    assert "--memory-limit: is not an amount of memory" in refused(
        "run", *SOV_TINY, "--budget", "10", f"--memory-limit={limit}")


def test_a_multi_line_message_is_printed_as_one_line(monkeypatch):
    import harness.cli.main

    def bad(args):
        raise InputError("field", "first\nsecond", "fix")

    monkeypatch.setitem(harness.cli.main.COMMANDS, "list", (lambda p: None, bad))
    code, _, err = cli("list")
    assert code == 2 and err == "error: field: first second (fix)\n"
