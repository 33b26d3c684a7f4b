"""`python -m harness reference` (harness/cli/reference.py): its exit status (docs/design.md,
"Exit codes"). 0 once every problem was tried, whatever the references' statuses (a target not
reached is `timeout`, a check failed `unreliable`, none computed `failed`), each computed one
stored at once, a line on stderr naming those not ok; --strict: 1 for them; 2 bad input."""

from __future__ import annotations

import json

import pytest

from harness.cli.main import main
from harness.core.errors import EXIT_BAD_INPUT, EXIT_FLAGGED, EXIT_OK
from harness.execution.store import ResultStore

pytestmark = pytest.mark.usefixtures("one_blas_thread")

SMALL = "linear1d:n_test=4,n_train=30"
OTHER = "linear1d:n_test=4,n_train=20"
QUICK = ["--method", "sov", "--budget", "8000", "--check-method", "none", "-q"]


def reference(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["reference", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_reference_that_reaches_its_targets_exits_0_with_strict(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    code, out, err = reference(capsys, SMALL, *QUICK, "--target-se", "0.5", "--target-test-se",
                               "0.5", "--store", str(store), "--json", "--strict")
    assert code == EXIT_OK and err == "", err
    assert json.loads(out)["stopped"] == "targets reached"
    with ResultStore(store, read_only=True) as db:
        assert len(db.references()) == 1


def test_a_target_not_reached_is_stored_exit_0_and_1_with_strict(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    argv = [SMALL, *QUICK, "--target-se", "1e-9", "--store", str(store)]
    code, out, err = reference(capsys, *argv)
    assert code == EXIT_OK and "stopped: budget spent" in out
    assert err.strip() == "not ok: 1 timeout (targets not reached); stored all the same", err
    with ResultStore(store, read_only=True) as db:
        assert len(db.references()) == 1
    assert reference(capsys, *argv, "--strict")[0] == EXIT_FLAGGED


def test_a_failed_problem_does_not_stop_the_next(tmp_path, monkeypatch, capsys):
    from harness.methods.sov import Sov
    from harness.model.result import Estimate

    combine = Sov.combine_parts

    def fails_on_30_points(self, problem, parts):
        if problem.n_train == 30:
            return Estimate.failed("all weights zero")
        return combine(self, problem, parts)

    monkeypatch.setattr(Sov, "combine_parts", fails_on_30_points)
    store = tmp_path / "s.sqlite"
    argv = [SMALL, OTHER, *QUICK, "--target-se", "0.5", "--target-test-se", "0.5", "--store",
            str(store), "--json"]
    code, out, err = reference(capsys, *argv)
    assert code == EXIT_OK
    assert [r["problem"] for r in json.loads(out)] == [OTHER]   # several problems: a list
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("reference failed: ") and SMALL in lines[0]
    assert lines[1] == "not ok: 1 failed (all weights zero)"
    with ResultStore(store, read_only=True) as db:
        assert list(db.references()) == [OTHER]
    assert reference(capsys, *argv, "--strict")[0] == EXIT_FLAGGED


@pytest.mark.parametrize("argv,fragment", [
    ([SMALL, "--method", "laplace"], "does not give an unbiased"),
    ([SMALL, "--set", "zz=1"], "setting 'zz'"),
    (["onefactr:n=5"], "did you mean 'onefactor'"),
])
def test_bad_input_exits_2_with_strict_too(capsys, argv, fragment):
    code, out, err = reference(capsys, *argv, "--strict")
    lines = err.strip().splitlines()
    assert code == EXIT_BAD_INPUT and out == "", (code, out, err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], err
