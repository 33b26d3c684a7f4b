"""A sweep with a method from a file on real Dask worker processes that do not have the file:
its source travels in the job specs, and editing it reruns only its jobs."""

from __future__ import annotations

from harness.cli.main import main
from harness.execution.store import ResultStore

SWEEP = """\
name = "plugin"
seed = 5
replicates = 2
budgets = [300]
problems = ["linear1d:n_train=8,n_test=3"]
[methods."plugins/mine.py:MySov"]
[methods.rejection-bootstrap]
"""


def test_sweep_with_a_method_file_on_a_cluster(dask_cluster, tmp_path, capsys, method_file):
    plugin = method_file(tmp_path / "plugins")
    sweep_file = tmp_path / "plugin.toml"
    sweep_file.write_text(SWEEP)
    store = tmp_path / "plugin.sqlite"
    args = ["sweep", str(sweep_file), "--scheduler", str(dask_cluster.scheduler_file),
            "--store", str(store), "--no-report"]
    assert main(args) == 0
    assert "0 done, 4 to run" in capsys.readouterr().out
    with ResultStore(store) as db:
        records = db.records()
    mine = [r for r in records if r["method"] == "my-sov"]
    assert len(mine) == 2 and all(r["status"] == "ok" for r in records), records
    # the workers (in their own folder, without the file) ran it from the job specs' source
    assert all(str(r["worker"]).startswith("tcp://127.0.0.1:") for r in mine)
    for r in mine:
        err = abs(r["log_marginal_likelihood"] - r["true_log_marginal_likelihood"])
        assert err < 6 * r["log_marginal_likelihood_se"] + 1e-9

    assert main(args) == 0                          # unchanged: nothing to run
    assert "4 done, 0 to run" in capsys.readouterr().out
    plugin.write_text(method_file.source + "\n# edited\n")   # edited: only its jobs run again
    assert main(args) == 0
    assert "2 done, 2 to run" in capsys.readouterr().out
    with ResultStore(store) as db:
        assert len(db.records()) == 6
