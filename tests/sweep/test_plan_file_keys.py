"""A file problem's jobs are keyed by its content and options, not its path (harness.sweep.plan):
a moved data folder gives the same job ids and the same numbers; a store made before (jobs
keyed by the file's path) resumes, or says why not; named problems keep their keys."""

from __future__ import annotations

import io
import shutil
import sqlite3

import numpy as np
import pytest
from distributed import Client

from harness.core.errors import InputError
from harness.core.seeding import key_digest
from harness.sweep import grid
from harness.sweep.driver import run_sweep
from harness.sweep.plan import job_key, keep_stored_keys, plan
from harness.sweep.spec import parse_sweep

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def sweep_text(*problems: str) -> str:
    listed = ", ".join(f'"{p}"' for p in problems)
    return (f'name = "own"\nseed = 3\nbudgets = [200]\nproblems = [{listed}]\n'
            "[methods.sov]\n")


def data_folder(root, name="P1.npz"):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(12, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    y[:2] = [1, -1]
    root.mkdir(parents=True)
    np.savez(root / name, X_train=X, y_train=y, X_test=X[:2], alpha=2.0, beta=1.0)
    return root / name


@pytest.fixture
def client():
    with Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0",
                set_as_default=False) as c:
        yield c


def sweep(text, store, client) -> str:
    out = io.StringIO()
    run_sweep(parse_sweep(text), store=store, client=client, report=False, out=out,
              err=io.StringIO(), references=False)   # about job keys, not references
    return out.getvalue()


def stored(store) -> dict[str, tuple[str, float]]:
    with sqlite3.connect(store) as db:
        return {job: (problem, log_z)
                for job, problem, log_z in db.execute("SELECT job_id, problem, log_z FROM jobs")}


def test_a_file_problems_jobs_are_keyed_by_its_content(tmp_path):
    a = data_folder(tmp_path / "a")
    b = tmp_path / "b" / "renamed.npz"
    b.parent.mkdir()
    shutil.copy(a, b)
    ja, jb = plan(parse_sweep(sweep_text(a))), plan(parse_sweep(sweep_text(b)))
    assert [j.job_id for j in ja] == [j.job_id for j in jb]
    assert ja[0].key["problem"].startswith("file:sha256=")
    assert str(tmp_path) not in str(ja[0].key)
    assert ja[0].problem == f"{a}:standardize=true"      # what a worker builds: the path
    assert ja[0].former_key == {**ja[0].key, "problem": f"{a}:standardize=true"}
    other = plan(parse_sweep(sweep_text(f"{a}:seed=1")))
    assert other[0].job_id != ja[0].job_id                # the options are in the key


def test_named_problems_keep_their_keys():
    [job] = plan(parse_sweep(sweep_text("onefactor:n=5")))
    assert job.key == job_key("onefactor:n=5", "sov", job.settings, 200, 0, 3)
    assert job.job_id == key_digest(job.key) and job.former_key is None


def test_the_same_content_twice_is_refused(tmp_path):
    a = data_folder(tmp_path / "a")
    b = tmp_path / "b.npz"
    shutil.copy(a, b)
    with pytest.raises(InputError, match="same file content with the same options"):
        parse_sweep(sweep_text(a, b))


def test_a_moved_folder_gives_the_same_jobs_and_numbers(tmp_path, client):
    a = data_folder(tmp_path / "a")
    sweep(sweep_text(a), tmp_path / "a.sqlite", client)
    shutil.move(tmp_path / "a", tmp_path / "moved")
    sweep(sweep_text(tmp_path / "moved" / "P1.npz"), tmp_path / "moved.sqlite", client)
    [(job_a, (_, log_z_a))] = stored(tmp_path / "a.sqlite").items()
    [(job_m, (_, log_z_m))] = stored(tmp_path / "moved.sqlite").items()
    assert job_a == job_m and log_z_a == log_z_m
    # the first store resumes for the moved folder: nothing to run
    out = sweep(sweep_text(tmp_path / "moved" / "P1.npz"), tmp_path / "a.sqlite", client)
    assert "1 done, 0 to run" in out


def test_a_store_keyed_by_the_path_resumes_and_says_why_not_once_moved(tmp_path, client,
                                                                      monkeypatch):
    a = data_folder(tmp_path / "a")
    old = tmp_path / "old.sqlite"
    with monkeypatch.context() as m:   # as before: the key's problem is the spec (the path)
        m.setattr(grid.ProblemEntry, "key", property(lambda self: self.spec))
        sweep(sweep_text(a), old, client)
    [(old_id, (_, old_log_z))] = stored(old).items()
    [job] = plan(parse_sweep(sweep_text(a)))
    assert old_id == key_digest(job.former_key) != job.job_id
    assert keep_stored_keys([job], {old_id})[0][0].job_id == old_id
    assert keep_stored_keys([job], {job.job_id, old_id})[0][0] is job   # its own key first
    moved_copy = tmp_path / "moved.sqlite"
    shutil.copy(old, moved_copy)
    out = sweep(sweep_text(a), old, client)          # the same folder: resumed as it is
    assert "1 done, 0 to run" in out and "keep the key of the file's path" in out
    assert stored(old) == {old_id: (f"{a} (standardised)", old_log_z)}
    shutil.move(tmp_path / "a", tmp_path / "b")      # moved: not resumed, and it says why
    out = sweep(sweep_text(tmp_path / "b" / "P1.npz"), moved_copy, client)
    assert "0 done, 1 to run" in out
    assert (f"not resumed: the store's results of {a} (standardised) are not those of "
            f"{tmp_path / 'b' / 'P1.npz'} (standardised)") in out
