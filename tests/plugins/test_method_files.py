"""Methods from a file (harness.plugins.method_files): `run --method path.py:Class`, sweep files,
job keys that follow the file's content, and the source travelling with the job spec."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.core.errors import EXIT_BAD_INPUT, InputError
from harness.plugins import method_files as plugin_file
from harness.plugins import registry
from harness.sweep.execute import run_job
from harness.sweep.plan import plan
from harness.sweep.spec import load_sweep, parse_sweep

pytestmark = pytest.mark.usefixtures("one_blas_thread")

SWEEP = """\
name = "filemethod"
seed = 2
budgets = [200]
problems = ["linear1d:n_train=8,n_test=3"]
[methods."plugins/mine.py:MySov"]
randomisations = [4, 8]
[methods.rejection-bootstrap]
"""


def test_run_json_with_a_method_file(tmp_path, method_file):
    """The command as a user types it (a relative path, its own process)."""
    method_file(tmp_path)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--problem", "linear1d-p1",
                           "--method", "mine.py:MySov", "--budget", "1000", "--json"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["method"] == "my-sov" and record["status"] == "ok"
    # SOV's estimate, against the exact truth within its own standard error
    err = abs(record["log_marginal_likelihood"] - record["true_log_marginal_likelihood"])
    assert err < 6 * record["log_marginal_likelihood_se"] and record["mae"] < 0.05


@pytest.mark.parametrize("ref, text, words", [
    ("missing.py:MySov", None, "method file 'missing.py' does not exist"),
    ("mine.py:Nope", "", "has no class 'Nope' (classes there: MySov)"),
    ("mine.py:NotAMethod", "", "not a subclass of harness.model.method.Method"),
    ("mine.py:Bare", "from harness.methods.sov import Sov\nclass Bare(Sov):\n    name = ''\n"
     "    summary = ''\n", "no `name` class attribute"),
    ("mine.py:MySov", "import numpy\n\nx = 1 +\n", "mine.py:3 failed to load: SyntaxError"),
    ("mine.py:MySov", "import numpy\n\nraise RuntimeError('boom')\n",
     "mine.py:3 failed to load: RuntimeError: boom"),
])
def test_bad_method_files_exit_2_naming_the_field(tmp_path, capsys, monkeypatch, method_file,
                                                   ref, text, words):
    if text is not None:
        method_file(tmp_path, text or method_file.source)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--problem", "onefactor:n=5", "--method", ref, "--budget", "100"])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and out == ""
    assert err.startswith("error: --method: ") and len(err.strip().splitlines()) == 1, err
    assert words.format(tmp=tmp_path.resolve()) in err, err


def test_a_file_method_in_a_sweep_resolves_from_the_sweep_folder(tmp_path, monkeypatch,
                                                                  method_file):
    method_file(tmp_path / "plugins")
    (tmp_path / "s.toml").write_text(SWEEP)
    monkeypatch.chdir(tmp_path / "plugins")    # anywhere but the sweep's folder
    sweep = load_sweep(tmp_path / "s.toml")
    labels = sorted(m.label for m in sweep.methods)
    assert labels == ["my-sov[randomisations=4]", "my-sov[randomisations=8]",
                      "rejection-bootstrap"]
    mine = [m for m in sweep.methods if m.file]
    assert {m.name for m in mine} == {f"MySov@{mine[0].file['sha256'][:16]}"}
    described = sweep.describe()["methods"]
    assert sum("file" in m for m in described) == 2
    assert described[0]["file"]["source"] == method_file.source


def test_editing_the_file_changes_its_job_ids_only(tmp_path, method_file):
    path = method_file(tmp_path / "plugins")

    def ids():
        jobs = plan(load_sweep(_sweep(tmp_path)))
        return ({j.job_id for j in jobs if j.method_file},
                {j.job_id for j in jobs if not j.method_file})

    mine, others = ids()
    assert len(mine) == 2 and len(others) == 1
    assert ids() == (mine, others)                    # unchanged file: the same jobs
    moved = method_file(tmp_path / "elsewhere")      # same content at another path
    (tmp_path / "s.toml").write_text(SWEEP.replace("plugins/", "elsewhere/"))
    assert ids() == (mine, others)
    moved.write_text(method_file.source.replace("another name", "another name, edited"))
    edited, others_after = ids()
    assert others_after == others and not (edited & mine) and len(edited) == 2
    assert path.read_text() == method_file.source


def _sweep(tmp_path: Path) -> Path:
    sweep = tmp_path / "s.toml"
    if not sweep.exists():
        sweep.write_text(SWEEP)
    return sweep


@pytest.mark.parametrize("edit, words", [
    (("plugins/mine.py:MySov", "plugins/none.py:MySov"), "none.py' does not exist"),
    (("plugins/mine.py:MySov", "plugins/mine.py:Nope"), "has no class 'Nope'"),
    (("randomisations = [4, 8]", "randomisatons = 4"), "is not a setting of method"),
])
def test_bad_file_methods_in_a_sweep_name_the_key(tmp_path, edit, words, method_file):
    method_file(tmp_path / "plugins")
    text = SWEEP.replace(*edit)
    with pytest.raises(InputError) as info:
        parse_sweep(text, str(tmp_path / "bad.toml"))
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'bad.toml'}: methods.") and words in message, message


def test_a_file_method_may_not_take_a_registered_name(tmp_path, method_file):
    method_file(tmp_path / "plugins", method_file.source.replace('"my-sov"', '"sov"'))
    with pytest.raises(InputError, match="its name 'sov' is the name of a registered method"):
        parse_sweep(SWEEP, str(tmp_path / "s.toml"))


def test_a_worker_loads_the_method_from_the_job_spec(tmp_path, method_file):
    """A fresh process knows nothing of the file (it may not even exist there): the job spec
    carries the source, and the record comes back as from the client."""
    path = method_file(tmp_path / "plugins")
    job = next(j for j in plan(load_sweep(_sweep(tmp_path))) if j.method_file)
    expected = run_job(job.spec())
    assert expected["status"] == "ok", expected["reason"]
    path.unlink()
    registry._FROM_FILES.clear()                      # forget it, as a new worker would
    registry.clear_cache()
    for name in [m for m in sys.modules if m.startswith(plugin_file.MODULE_PREFIX)]:
        del sys.modules[name]
    with pytest.raises(InputError, match="unknown method"):
        registry.get_method(job.method)
    record = run_job(job.spec())
    assert record["status"] == "ok" and record["method"] == job.label
    assert record["log_marginal_likelihood"] == expected["log_marginal_likelihood"]
    tampered = {**job.spec(), "method_file": {**job.method_file, "source": "x = 1\n"}}
    with pytest.raises(ValueError, match="does not match its hash"):
        run_job(tampered)
