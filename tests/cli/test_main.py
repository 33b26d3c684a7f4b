"""The command line (`python -m harness`, harness/cli/main.py): `list`, `run --json`, and one clear
line on stderr with exit code 2 for every kind of bad input, never a traceback.

A few cases run the real executable in a subprocess; the rest call harness.cli.main(argv)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from harness.cli.main import main
from harness.core.errors import EXIT_BAD_INPUT
from harness.plugins.specs import make_problem

pytestmark = pytest.mark.usefixtures("one_blas_thread")

METHOD = "rejection-bootstrap"
REQUIRED_KEYS = {"problem", "method", "budget", "seed", "status", "reason",
                 "log_marginal_likelihood", "test_probabilities", "cpu_seconds",
                 "wall_seconds", "peak_memory_mb", "true_log_marginal_likelihood",
                 "abs_log_error", "mape_percent", "setup_cpu_seconds", "setup_wall_seconds",
                 "setup_cached"}
TIMING_KEYS = {"cpu_seconds", "process_cpu_seconds", "wall_seconds", "peak_memory_mb",
               "setup_cpu_seconds", "setup_wall_seconds", "setup_cached"}


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, problem, budget=2000, seed=0, *extra):
    code, out, err = run_cli(capsys, "run", "--problem", problem, "--method", METHOD,
                             "--budget", str(budget), "--seed", str(seed), "--json", *extra)
    assert code == 0, err
    assert len(out.strip().splitlines()) == 1, out  # exactly one JSON object on one line
    return json.loads(out)


def run_subprocess(*argv, timeout=300):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True,
                          text=True, env=env, timeout=timeout)


def without_timing(record):
    return {k: v for k, v in record.items() if k not in TIMING_KEYS}


def assert_one_line_error(code, out, err, *fragments):
    assert code == EXIT_BAD_INPUT, (code, out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert out.strip() == ""


# ---- end to end in a subprocess --------------------------------------------------------------
@pytest.mark.slow
def test_list_subprocess():
    proc = run_subprocess("list")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    names = {line.split()[0] for line in lines if line.startswith("  ")}
    assert {METHOD, "onefactor", "linear1d", "linear1d-p1", "linear1d-p2", "linear1d-p3",
            "linear1d-p4", "onefactor-table1-n50"} <= names
    # one line each, with a description
    method_line = next(line for line in lines if line.split()[:1] == [METHOD])
    assert "exact" in method_line and len(method_line.split()) > 3
    preset_line = next(line for line in lines if line.split()[:1] == ["linear1d-p3"])
    assert "n_train=400" in preset_line and "n_test=200" in preset_line


@pytest.mark.slow
def test_run_json_subprocess_matches_in_process(capsys):
    proc = run_subprocess("run", "--problem", "onefactor:n=50", "--method", METHOD,
                          "--budget", "2000", "--seed", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stdout.strip().splitlines()) == 1
    record = json.loads(proc.stdout)
    assert REQUIRED_KEYS <= set(record)
    # the random stream comes from the job's key, not from the process: same numbers here
    assert without_timing(record) == without_timing(run_json(capsys, "onefactor:n=50", 2000, 3))


def test_bad_input_subprocess(tmp_path):
    path = tmp_path / "labels.npz"
    np.savez(path, X_train=np.ones((4, 1)), y_train=np.array([0, 1, 0, 1]),
             X_test=np.ones((1, 1)))
    proc = run_subprocess("run", "--problem", str(path), "--method", METHOD, "--budget", "100")
    assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "y_train")


# ---- list and run in process -----------------------------------------------------------------
def test_list(capsys):
    code, out, err = run_cli(capsys, "list")
    assert code == 0 and err == ""
    for section in ("methods:", "problem families:", "presets:"):
        assert section in out
    for name in (METHOD, "onefactor", "linear1d", "linear1d-p1", "linear1d-p4"):
        assert f"  {name} " in out


def test_run_json_orthant(capsys):
    r = run_json(capsys, "onefactor:n=50")
    assert REQUIRED_KEYS <= set(r)
    assert "mae" not in r  # no test points
    assert r["problem"] == "onefactor:n=50" and r["method"] == METHOD
    assert r["budget"] == 2000 and r["seed"] == 0
    assert r["status"] == "ok" and r["reason"] == ""
    assert r["test_probabilities"] == []
    lz, truth = r["log_marginal_likelihood"], r["true_log_marginal_likelihood"]
    assert math.isfinite(lz) and lz < 0
    assert truth == make_problem("onefactor:n=50").truth.log_marginal_likelihood
    assert r["abs_log_error"] == pytest.approx(abs(lz - truth), rel=1e-12)
    assert r["mape_percent"] == pytest.approx(100 * abs(lz - truth) / abs(truth), rel=1e-12)
    assert r["abs_log_error"] < 1.0  # wired to the right truth (N = 50, M = 2000)
    for key in ("cpu_seconds", "wall_seconds", "peak_memory_mb"):
        assert isinstance(r[key], float) and r[key] >= 0


def test_run_json_classification_has_mae(capsys):
    spec = "linear1d:n_train=40,n_test=10"
    r = run_json(capsys, spec)
    assert REQUIRED_KEYS | {"mae"} <= set(r)
    probs = np.array(r["test_probabilities"])
    assert probs.shape == (10,) and np.all((probs >= 0) & (probs <= 1))
    truth = make_problem(spec).truth.test_probabilities
    assert r["mae"] == pytest.approx(np.mean(np.abs(probs - truth)), rel=1e-12)
    assert r["mae"] < 0.1
    assert r["true_log_marginal_likelihood"] == make_problem(spec).truth.log_marginal_likelihood


def test_same_seed_same_numbers_different_seed_different_numbers(capsys):
    spec = "linear1d:n_train=40,n_test=10"
    a = run_json(capsys, spec, 2000, 5)
    b = run_json(capsys, spec, 2000, 5)
    c = run_json(capsys, spec, 2000, 6)
    assert without_timing(a) == without_timing(b)
    assert c["log_marginal_likelihood"] != a["log_marginal_likelihood"]
    assert c["test_probabilities"] != a["test_probabilities"]
    assert c["seed"] == 6


def test_budget_in_scientific_notation_and_settings(capsys):
    r = run_json(capsys, "onefactor:n=50", "2e3", 0, "--set", "count=hard")
    assert r["budget"] == 2000
    assert "count=hard" in r["method"]


def test_preset_and_file_problems_run(capsys, tmp_path):
    path = tmp_path / "cov.npz"
    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 5))
    np.savez(path, cov=A @ A.T + 5 * np.eye(5))
    r = run_json(capsys, str(path), 1000)
    assert r["status"] == "ok" and r["problem"] == str(path)
    assert "true_log_marginal_likelihood" not in r  # a file without a truth


def test_text_output(capsys):
    code, out, err = run_cli(capsys, "run", "--problem", "onefactor:n=50", "--method", METHOD,
                             "--budget", "2000")
    assert code == 0 and err == ""
    assert "log Z estimate" in out and "truth" in out and "MAPE" in out


# ---- bad input: exit code 2, one line naming the field, no traceback -----------------------
def run_args(problem="onefactor:n=50", method=METHOD, budget="100", *extra):
    return ["run", "--problem", problem, "--method", method, "--budget", budget, *extra]


@pytest.fixture
def bad_files(tmp_path):
    files = {}
    X = np.arange(8.0).reshape(4, 2)
    np.savez(tmp_path / "no_arrays.npz", something=np.ones(3))
    files["no_arrays"] = tmp_path / "no_arrays.npz"
    np.savez(tmp_path / "labels.npz", X_train=X, y_train=np.array([0, 1, 1, 0]), X_test=X)
    files["labels"] = tmp_path / "labels.npz"
    Xn = X.copy()
    Xn[1, 1] = np.nan
    np.savez(tmp_path / "nan.npz", X_train=Xn, y_train=np.array([1, -1, 1, -1]), X_test=X)
    files["nan"] = tmp_path / "nan.npz"
    Xi = X.copy()
    Xi[0, 0] = np.inf
    np.savez(tmp_path / "inf_test.npz", X_train=X, y_train=np.array([1, -1, 1, -1]), X_test=Xi)
    files["inf_test"] = tmp_path / "inf_test.npz"
    np.savez(tmp_path / "nonpd.npz", cov=np.array([[1.0, 2.0], [2.0, 1.0]]))
    files["nonpd"] = tmp_path / "nonpd.npz"
    np.savez(tmp_path / "asym.npz", cov=np.array([[1.0, 0.5], [0.1, 1.0]]))
    files["asym"] = tmp_path / "asym.npz"
    np.savez(tmp_path / "nan_cov.npz", cov=np.array([[1.0, np.nan], [np.nan, 1.0]]))
    files["nan_cov"] = tmp_path / "nan_cov.npz"
    (tmp_path / "nan.csv").write_text("a,y\n1,1\nnan,-1\n")
    files["nan_csv"] = tmp_path / "nan.csv"
    (tmp_path / "labels.csv").write_text("a,y\n1,1\n2,0\n")
    files["labels_csv"] = tmp_path / "labels.csv"
    files["missing"] = tmp_path / "missing.npz"
    np.savez(tmp_path / "gpc.npz", X_train=X, y_train=np.array([1, -1, 1, -1]), X_test=X)
    files["gpc"] = tmp_path / "gpc.npz"
    np.savez(tmp_path / "nan_ref.npz", cov=np.eye(2), true_log_marginal_likelihood=np.nan)
    files["nan_ref"] = tmp_path / "nan_ref.npz"
    return files


BAD_INPUTS = [
    # (id, argv builder, fragments that the error line must contain)
    ("unknown method", lambda f: run_args(method="nope"), ["method", "nope"]),
    ("unknown family", lambda f: run_args(problem="nofamily:n=3"), ["problem", "nofamily"]),
    ("unknown preset", lambda f: run_args(problem="linear1d-p9"), ["problem", "linear1d-p9"]),
    ("malformed spec", lambda f: run_args(problem="onefactor:n"), ["problem", "malformed"]),
    ("malformed spec 2", lambda f: run_args(problem="onefactor:n=5,,seed=2"), ["problem"]),
    ("empty spec", lambda f: run_args(problem=""), ["problem"]),
    ("unknown parameter", lambda f: run_args(problem="onefactor:size=3"), ["size"]),
    ("wrong type", lambda f: run_args(problem="onefactor:n=abc"), ["'n'", "abc"]),
    ("bad value", lambda f: run_args(problem="linear1d:scale=-1"), ["scale"]),
    ("negative seed param", lambda f: run_args(problem="onefactor:seed=-2"), ["seed"]),
    ("name param", lambda f: run_args(problem="onefactor:name=x"), ["name"]),
    ("file without arrays", lambda f: run_args(problem=str(f["no_arrays"])),
     ["no_arrays.npz", "X_train"]),
    ("labels not pm1", lambda f: run_args(problem=str(f["labels"])), ["labels.npz: y_train"]),
    ("labels not pm1 csv", lambda f: run_args(problem=str(f["labels_csv"])),
     ["labels.csv: row 3, column 'y'"]),
    ("nan features", lambda f: run_args(problem=str(f["nan"])), ["X_train", "NaN"]),
    ("inf test features", lambda f: run_args(problem=str(f["inf_test"])), ["X_test"]),
    ("nan csv", lambda f: run_args(problem=str(f["nan_csv"])), ["X_train"]),
    ("nan covariance", lambda f: run_args(problem=str(f["nan_cov"])), ["cov", "NaN"]),
    ("non-PD covariance", lambda f: run_args(problem=str(f["nonpd"])),
     ["cov", "positive definite"]),
    ("non-symmetric covariance", lambda f: run_args(problem=str(f["asym"])),
     ["cov", "symmetric"]),
    ("nan reference truth", lambda f: run_args(problem=str(f["nan_ref"])),
     ["true_log_marginal_likelihood"]),
    ("missing file", lambda f: run_args(problem=str(f["missing"])), ["problem", "missing.npz"]),
    ("bad file option", lambda f: run_args(problem=f"{f['gpc']}:seed=x"), ["seed"]),
    ("unknown file option", lambda f: run_args(problem=f"{f['gpc']}:colour=red"), ["colour"]),
    ("bad file kernel", lambda f: run_args(problem=f"{f['gpc']}:kernel=poly"), ["kernel"]),
    ("budget 0", lambda f: run_args(budget="0"), ["--budget"]),
    ("budget -5", lambda f: run_args(budget="-5"), ["--budget"]),
    ("budget abc", lambda f: run_args(budget="abc"), ["--budget", "abc"]),
    ("budget 1.5", lambda f: run_args(budget="1.5"), ["--budget"]),
    ("budget inf", lambda f: run_args(budget="inf"), ["--budget"]),
    ("budget nan", lambda f: run_args(budget="nan"), ["--budget"]),
    ("seed -1", lambda f: run_args() + ["--seed", "-1"], ["--seed"]),
    ("seed abc", lambda f: run_args() + ["--seed", "abc"], ["--seed"]),
    ("unknown --set key", lambda f: run_args() + ["--set", "bogus=1"], ["bogus", "setting"]),
    ("bad --set value", lambda f: run_args() + ["--set", "count=maybe"], ["count", "maybe"]),
    ("bad --set number", lambda f: run_args() + ["--set", "block_size=abc"], ["block_size"]),
    ("malformed --set", lambda f: run_args() + ["--set", "count"], ["--set"]),
    ("missing options", lambda f: ["run", "--problem", "onefactor:n=5"], ["--method"]),
    ("unknown command", lambda f: ["frobnicate"], ["frobnicate"]),
    ("no command", lambda f: [], ["command"]),
    ("unknown flag", lambda f: run_args() + ["--fast"], ["--fast"]),
]


@pytest.mark.parametrize("build,fragments", [(b, fr) for _, b, fr in BAD_INPUTS],
                         ids=[i for i, _, _ in BAD_INPUTS])
def test_bad_input(capsys, bad_files, build, fragments):
    code, out, err = run_cli(capsys, *build(bad_files))
    assert_one_line_error(code, out, err, *fragments)


# one case of each kind of bad input, through the real executable
SUBPROCESS_CASES = [case for case in BAD_INPUTS if case[0] in {
    "unknown method", "unknown family", "malformed spec", "file without arrays",
    "labels not pm1", "nan features", "non-PD covariance", "budget 0", "budget -5",
    "budget abc", "unknown --set key", "bad --set value", "bad value"}]


@pytest.mark.slow
@pytest.mark.parametrize("build,fragments", [(b, fr) for _, b, fr in SUBPROCESS_CASES],
                         ids=[i for i, _, _ in SUBPROCESS_CASES])
def test_bad_input_subprocess_each_kind(bad_files, build, fragments):
    """Through the real executable, where stray warnings on stderr would count too."""
    proc = run_subprocess(*build(bad_files))
    assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, *fragments)


# ---- plugins: error reasons, --raise, check ------------------------------------------------
FLAWED = '''
    from dataclasses import replace
    from harness.methods.sov import Sov

    class Broken(Sov):
        name = "broken"
        def _estimate(self, problem, budget, rng):
            return list(range(0, budget, 0))          # line 8

    class Biased(Sov):
        name = "biased"
        def _estimate(self, problem, budget, rng):
            est = super()._estimate(problem, budget, rng)
            return replace(est, log_marginal_likelihood=est.log_marginal_likelihood - 0.05)
'''


@pytest.fixture
def flawed(install_plugin):
    return install_plugin("flawed_plugin", FLAWED, methods={"broken": "flawed_plugin:Broken",
                                                           "biased": "flawed_plugin:Biased"})


def test_run_error_reason_and_raise(capsys, flawed):
    argv = ["run", "--problem", "linear1d-p1", "--method", "broken", "--budget", "100"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0                    # the run finished: its status is printed, not an error
    assert ("status: error: ValueError: range() arg 3 must not be zero "
            "(flawed_plugin.py:8 in _estimate)") in out
    assert run_cli(capsys, *argv, "--strict")[0] == 1
    with pytest.raises(ValueError, match="range"):
        main([*argv, "--raise"])


def test_check_passes_a_sound_method_and_fails_a_biased_one(capsys, flawed):
    code, out, _ = run_cli(capsys, "check", "sov", "--quick")
    assert code == 0, out
    assert "checks of method 'sov'" in out and "skipped  accuracy" in out and "quick" in out
    code, out, _ = run_cli(capsys, "check", "biased")
    assert code == 1, out
    assert re.search(r"FAILED +closed_forms +N = 1: mean log Z", out), out
    code, out, err = run_cli(capsys, "check", "nope")
    assert_one_line_error(code, out, err, "unknown method 'nope'")


# ---- per-point truth and standard errors, kernels of file problems --------------------------
def test_run_json_per_point_truth_and_standard_errors(capsys):
    """`run --json` of a method with per-point standard errors (SOV) carries the true test
    probabilities, each point's absolute error and the method's SEs; the truth is the
    problem's exact one and the errors agree with the SEs (|p - p*| < 6 SE + 1e-3)."""
    spec = "linear1d:n_train=30,n_test=6"
    code, out, err = run_cli(capsys, "run", "--problem", spec, "--method", "sov", "--budget",
                             "2000", "--set", "randomisations=8", "--json")
    assert code == 0, err
    r = json.loads(out)
    p = np.array(r["test_probabilities"])
    truth = make_problem(spec).truth.test_probabilities
    np.testing.assert_array_equal(r["true_test_probabilities"], truth)
    np.testing.assert_allclose(r["test_probabilities_abs_error"], np.abs(p - truth), rtol=1e-12)
    assert np.mean(r["test_probabilities_abs_error"]) == pytest.approx(r["mae"], rel=1e-12)
    se = np.array(r["test_probabilities_se"])
    assert se.shape == (6,) and np.all(np.isfinite(se)) and np.all(se >= 0) and se.max() > 0
    assert np.all(np.abs(p - truth) < 6 * se + 1e-3)


def test_run_json_without_per_point_se_or_truth(capsys):
    """A method without per-point SEs (rejection-bootstrap with one population) says null; a
    problem without test points gives empty per-point truth (orthant) and one without truth
    gives none."""
    r = run_json(capsys, "linear1d:n_train=20,n_test=3", 500, 0, "--set", "populations=1")
    assert r["test_probabilities_se"] is None
    assert len(r["true_test_probabilities"]) == 3 == len(r["test_probabilities_abs_error"])
    r = run_json(capsys, "onefactor:n=20", 500)
    assert r["true_test_probabilities"] is None and r["test_probabilities_abs_error"] is None


def test_csv_problem_kernel_printed(capsys, tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("x,y\n0.1,1\n0.5,-1\n0.9,1\n1.2,-1\n")
    code, out, err = run_cli(capsys, "run", "--problem", f"{path}:alpha=2", "--method", METHOD,
                             "--budget", "200")
    assert code == 0, err
    assert "kernel: rbf (alpha=2, beta=1)" in out
    r = run_json(capsys, f"{path}:kernel=linear,beta=0.5", 200)
    assert r["kernel"] == {"name": "linear", "scale": 0.5}


def test_label_error_prints_plain_number(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("x,y\n0.1,1\n0.5,0\n")
    code, out, err = run_cli(capsys, "run", "--problem", str(path), "--method", METHOD,
                             "--budget", "100")
    assert_one_line_error(code, out, err, "bad.csv: row 3, column 'y'", "found 0 ")
    assert "np.float64" not in err


# ---- command-line conventions -----------------------------------------------------------------
def test_version(capsys):
    from harness.core.version import __version__

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"gpc-harness {__version__}"


@pytest.mark.parametrize("argv,fragments", [
    (run_args(method="sovv"), ["unknown method 'sovv'", "did you mean 'sov'?"]),
    (run_args(problem="linear1d-p9"),
     ["unknown problem family or preset 'linear1d-p9'", "did you mean 'linear1d-p"]),
    (run_args("onefactor:n=5", METHOD, "10", "--set", "randomisations=3", "--set",
              "randomisations=4"), ["--set", "'randomisations' given twice"]),
    (["sweep", "--workers", "100", "--check"],
     ["--workers", "4 worker processes per core", "--scheduler"]),
])
def test_conventions_name_the_fix(capsys, argv, fragments):
    code, out, err = run_cli(capsys, *argv)
    assert_one_line_error(code, out, err, *fragments)


def test_check_takes_a_method_file(capsys, tmp_path, method_file):
    path = method_file(tmp_path)
    code, out, err = run_cli(capsys, "check", f"{path}:MySov", "--quick")
    assert code == 0, out + err
    assert "my-sov" in out
