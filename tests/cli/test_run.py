"""`python -m harness run` (harness/cli/run.py): its exit status (docs/design.md, "Exit codes").
0 once the run finished, whatever its status (printed with its reason); --strict: 1 when the
status is not ok, an approximation judged by its status alone; 2 bad input, --strict or not."""

from __future__ import annotations

import json

import numpy as np
import pytest
from edge_problems import ill_conditioned_cov

from harness.cli.main import main
from harness.core.errors import EXIT_BAD_INPUT, EXIT_FLAGGED, EXIT_OK

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["run", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.filterwarnings("ignore::harness.core.conditioning.IllConditionedWarning")
def test_an_unreliable_run_exits_0_and_1_with_strict(tmp_path, capsys):
    ill = tmp_path / "ill.npz"   # condition ~1e15: sov's weights collapse onto one point
    np.savez(ill, cov=ill_conditioned_cov())
    argv = [str(ill), "sov", "--budget", "1000"]
    code, out, _ = run(capsys, *argv)
    assert code == EXIT_OK and "status: unreliable: weights degenerate" in out
    code, out, _ = run(capsys, *argv, "--strict", "--json")
    assert code == EXIT_FLAGGED and json.loads(out)["status"] == "unreliable"


def test_an_ok_run_and_an_approximation_exit_0_with_strict(capsys):
    code, out, _ = run(capsys, "onefactor:n=20", "sov", "--budget", "500", "--strict", "--json")
    assert code == EXIT_OK and json.loads(out)["status"] == "ok"
    code, out, _ = run(capsys, "linear1d:n_train=8,n_test=3", "laplace", "--budget", "100",
                       "--strict", "--json")
    record = json.loads(out)
    assert code == EXIT_OK and record["status"] == "ok" and record["exact_method"] is False


@pytest.mark.parametrize("argv,fragment", [
    (["onefactor:n=5", "nope", "--budget", "10"], "unknown method 'nope'"),
    (["onefactor:n=5", "sov", "--budget", "10", "--set", "foo=1"], "setting 'foo'"),
    (["onefactor:n=5:x", "sov", "--budget", "10"], "problem"),
    (["onefactor:n=5", "sov", "--budget", "-5"], "--budget"),
    (["onefactor:n=5", "sov"], "--budget"),
])
def test_bad_input_exits_2_with_strict_too(capsys, argv, fragment):
    code, out, err = run(capsys, *argv, "--strict")
    lines = err.strip().splitlines()
    assert code == EXIT_BAD_INPUT and out == "", (code, out, err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], err
