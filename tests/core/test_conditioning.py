"""Build-time warning for covariances beyond double precision (harness.core.conditioning)."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from edge_problems import ill_conditioned_cov

from harness.core.conditioning import COND_WARN, IllConditionedWarning, condition_estimate
from harness.core.kernels import RBF, Linear
from harness.model.problem import Problem
from harness.plugins.specs import make_problem


def _ill_warnings(build) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        problem = build()
    return problem, [w for w in caught if issubclass(w.category, IllConditionedWarning)]


def _scaled_linear(factor: float) -> Problem:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    return Problem.classification("scaled", factor * X, y, None, Linear())


def test_the_issue_cases_warn_with_the_number(tmp_path):
    path = tmp_path / "ill.npz"
    np.savez(path, cov=ill_conditioned_cov())
    problem, caught = _ill_warnings(lambda: make_problem(str(path)))
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "condition number is 2.0e+15 (LAPACK's 1-norm estimate)" in message
    assert "unreliable" in message and "\n" not in message
    problem, caught = _ill_warnings(lambda: _scaled_linear(1e6))
    assert len(caught) == 1 and "linear kernel matrix" in str(caught[0].message)
    # the low-rank value is the condition number itself: R has eigenvalues 1 + eig(K), so
    # λmin = 1 exactly (np.linalg.cond would lose ~eps·cond = 1 % of it to rounding here)
    cond, _ = condition_estimate(problem.cov)
    assert cond == pytest.approx(np.linalg.eigvalsh(problem.R)[-1], rel=1e-9)


@pytest.mark.parametrize("spec", ["linear1d-p1", "onefactor:n=100", "gauss-p1",
                                  "onefactor-hard-n500", "lowrank-d2-beta9",
                                  "linear-lowrank:n_train=60,n_test=20,d=2,beta=9"])
def test_well_posed_problems_do_not_warn(spec):
    _, caught = _ill_warnings(lambda: make_problem(spec))
    assert caught == []


def test_the_threshold(tmp_path):
    """Dense matrices just below and above COND_WARN (eigenvalues 1 ... 1/cond)."""
    Q = np.linalg.qr(np.random.default_rng(1).standard_normal((30, 30)))[0]
    for cond, warned in ((COND_WARN / 30, False), (COND_WARN * 30, True)):
        R = (Q * np.logspace(0, -np.log10(cond), 30)) @ Q.T
        _, caught = _ill_warnings(lambda R=(R + R.T) / 2: Problem.orthant("m", R))
        assert bool(caught) == warned, cond
    _, caught = _ill_warnings(lambda: _scaled_linear(1e5))   # cond 6e11: below
    assert caught == []


def test_structured_estimates_bound_the_condition_number():
    """Kernel (trace) and one-factor estimates are upper bounds of the 2-norm condition
    number; the dense estimate is within a factor N of it (1-norm)."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((80, 2))
    y = np.where(X[:, 1] > 0, 1, -1)
    rbf = Problem.classification("rbf", X, y, None, RBF(alpha=0.5, beta=30.0))
    one = make_problem("onefactor:n=80,dmin=0.99,dmax=0.9999,random_signs=true")
    for p in (rbf, one):
        est, how = condition_estimate(p.cov)
        exact = np.linalg.cond(p.R)
        assert exact <= est * (1 + 1e-9) and "at most" in how
    dense = Problem.orthant("dense", rbf.R)
    est, _ = condition_estimate(dense.R, dense.chol)
    exact = np.linalg.cond(rbf.R)
    assert exact / 80 <= est <= 80 * exact


def test_cli_prints_one_line(tmp_path):
    """In a fresh interpreter (pytest would capture the warning): one line on stderr."""
    path = tmp_path / "ill.npz"
    np.savez(path, cov=ill_conditioned_cov())
    done = subprocess.run([sys.executable, "-m", "harness", "run", "--problem", str(path),
                           "--method", "sov", "--budget", "200"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "status: unreliable" in done.stdout   # done: exit 0
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"warning: problem {path}: the covariance")
