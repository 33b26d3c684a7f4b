"""`python -m harness sweep` (harness/cli/sweep.py): its exit status (docs/design.md, "Exit
codes"). 0 once every job of the sweep is stored, whatever its status, the summary naming those
not ok with their reasons; --strict: 1 when a job of the sweep is not ok (also when an earlier
run stored it), an approximation judged by its status alone; 2 bad input, in one line; 3 a
cluster that cannot finish, --strict or not, with the jobs stored so far kept.

The sweeps run on a scheduler with one in-process worker thread (`--scheduler`): no worker
processes to start, so each sweep takes a second or two."""

from __future__ import annotations

import numpy as np
import pytest
from edge_problems import ill_conditioned_cov

from harness.cli.main import main
from harness.core.errors import EXIT_BAD_INPUT, EXIT_CLUSTER, EXIT_FLAGGED, EXIT_OK
from harness.execution.store import ResultStore

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def in_process_cluster(workers: int):
    from distributed import LocalCluster

    return LocalCluster(processes=False, n_workers=workers, threads_per_worker=1,
                        dashboard_address="127.0.0.1:0")   # None still tries 8787


@pytest.fixture(scope="module")
def scheduler():
    """The address of a scheduler with one worker thread in this process."""
    with in_process_cluster(1) as cluster:
        yield cluster.scheduler_address


@pytest.fixture
def here(tmp_path, monkeypatch):
    """Run in tmp_path (a sweep remembers its store in results/.last-store of its folder)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def sweep(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["sweep", *argv, "--no-report", "--no-reference"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.filterwarnings("ignore::harness.core.conditioning.IllConditionedWarning")
def test_unreliable_jobs_are_stored_exit_0_and_exit_1_with_strict(here, scheduler, capsys):
    ill = here / "ill.npz"   # condition ~1e15: sov's weights collapse onto one point
    np.savez(ill, cov=ill_conditioned_cov())
    argv = ["--problem", str(ill), "--problem", "onefactor:n=20", "--method", "sov",
            "--budget", "1000", "--store", "s.sqlite", "--scheduler", scheduler]
    code, out, err = sweep(capsys, *argv)
    assert code == EXIT_OK, out + err
    assert "store s.sqlite: 2 of the sweep's 2 jobs (1 ok, 1 unreliable)" in out
    summary = next(line for line in out.splitlines() if line.startswith("not ok: "))
    assert summary.startswith("not ok: 1 unreliable (weights degenerate")   # the reason's kind
    assert "--strict" in summary and "Traceback" not in err
    # --strict judges the sweep whole: the job stored by the run before counts
    code, out, _ = sweep(capsys, *argv, "--strict")
    assert code == EXIT_FLAGGED and "2 done, 0 to run" in out
    # a filter to the ok job: nothing of the sweep run is flagged
    assert sweep(capsys, *argv[2:], "--strict")[0] == EXIT_OK
    with ResultStore(here / "s.sqlite", read_only=True) as db:
        assert db.status_counts() == {"ok": 1, "unreliable": 1}


def test_an_approximation_is_judged_by_its_status_alone(here, scheduler, capsys):
    """laplace converges to an approximation (Tags.exact False): ok, so --strict exits 0."""
    code, out, err = sweep(capsys, "--problem", "linear1d:n_train=8,n_test=3", "--method",
                           "laplace", "--budget", "100", "--store", "a.sqlite", "--scheduler",
                           scheduler, "--strict")
    assert code == EXIT_OK, out + err
    assert "(1 ok)" in out and "not ok" not in out
    with ResultStore(here / "a.sqlite", read_only=True) as db:
        assert [r["exact_method"] for r in db.records()] == [False]


@pytest.mark.parametrize("argv,fragment", [
    (["bad.toml"], "bad.toml: methods.sov.pointz"),
    (["broken.toml"], "is not valid TOML"),
    (["missing.toml"], "sweep file not found"),
    (["--problem", "onefactr:n=5", "--method", "sov", "--set", "points=zz", "--budget", "1"],
     "did you mean 'onefactor'"),   # more filters: tests/sweep/test_filters.py
])
def test_bad_input_is_one_line_and_exit_2_with_strict_too(here, capsys, argv, fragment):
    """A real run (not --check) with --strict: still 2, and nothing written."""
    (here / "bad.toml").write_text('name = "bad"\nbudgets = [100]\nproblems = ["onefactor:n=5"]'
                                   '\n[methods.sov]\npointz = "sobol"\n')
    (here / "broken.toml").write_text("name = \n")
    code, out, err = sweep(capsys, *argv, "--strict", "--store", "s.sqlite")
    assert code == EXIT_BAD_INPUT, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], err
    assert not (here / "s.sqlite").exists()


def test_a_cluster_that_cannot_finish_exits_3_with_strict_too(here, scheduler, capsys):
    first = ["--problem", "onefactor:n=20", "--method", "sov", "--budget", "1000",
             "--store", "s.sqlite", "--strict"]
    assert sweep(capsys, *first, "--scheduler", scheduler)[0] == EXIT_OK
    with in_process_cluster(0) as empty:   # no worker: the sweep gives up after 1 s
        code, out, err = sweep(capsys, *first, "--budget", "2000", "--no-workers-timeout", "1",
                               "--scheduler", empty.scheduler_address)
    assert code == EXIT_CLUSTER, out + err
    assert "error: no workers" in err and "the 1 done are stored" in err
    with ResultStore(here / "s.sqlite", read_only=True) as db:
        assert db.status_counts() == {"ok": 1}
