"""Conventions shared by the subcommands (harness.cli.args) and messages that say what happened:
--json for data, the problem and the method named positionally or as options, one meaning of --out,
the last sweep's store, all-failed plugins, NaNs blamed on the plugin, estimates far from the truth
said in words, rounded numbers, a TLR factor that is not low-rank."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from harness.cli.main import main
from harness.execution.formatting import format_record

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, out, err, *fragments):
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and out == "" and len(lines) == 1, (code, out, err)
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# ---- data as JSON -----------------------------------------------------------------------------
def test_list_and_check_print_json(capsys):
    code, out, _ = run_cli(capsys, "list", "--json")
    listing = json.loads(out)
    assert code == 0 and {"sov", "sov-tlr"} <= {m["name"] for m in listing["methods"]}
    assert "linear1d-p1" in {p["name"] for p in listing["presets"]}
    code, out, _ = run_cli(capsys, "check", "--method", "sov", "--quick", "--json")
    report = json.loads(out)
    assert code == 0 and report["failed"] == 0 and report["passed"] >= 5
    assert {"check": "accuracy", "status": "skipped"}.items() <= next(
        c for c in report["checks"] if c["check"] == "accuracy").items()


# ---- naming the problem and the method ----------------------------------------------------------
def test_problem_and_method_positionally_or_as_options(capsys):
    timing = ("cpu_seconds", "process_cpu_seconds", "wall_seconds", "peak_memory_mb",
              "setup_cpu_seconds", "setup_wall_seconds", "setup_cached")
    records = []
    for argv in (["run", "onefactor:n=20", "rejection-bootstrap"],
                 ["run", "--problem", "onefactor:n=20", "--method", "rejection-bootstrap"],
                 ["run", "onefactor:n=20", "--method", "rejection-bootstrap"]):
        code, out, err = run_cli(capsys, *argv, "--budget", "300", "--json")
        assert code == 0, err
        records.append({k: v for k, v in json.loads(out).items() if k not in timing})
    assert records[0] == records[1] == records[2]


@pytest.mark.parametrize("argv,fragments", [
    (["run", "onefactor:n=20", "sov", "--problem", "onefactor:n=30", "--budget", "10"],
     ["--problem", "given twice", "'onefactor:n=20' positionally"]),
    (["run", "--method", "sov", "--budget", "10"], ["required: --problem", "PROBLEM and METHOD"]),
    (["check"], ["--method: is required", "METHOD or --method"]),
])
def test_a_name_given_twice_or_not_at_all_is_one_line(capsys, argv, fragments):
    one_line_error(*run_cli(capsys, *argv), *fragments)


# ---- --out and the store read --------------------------------------------------------------
def test_out_is_a_folder_unless_it_names_the_one_file_written(capsys, tiny_store, tmp_path):
    one_line_error(*run_cli(capsys, "report", "--store", str(tiny_store), "--out",
                            str(tmp_path / "mine.html")),
                   "--out: is a folder for report", "report.html")
    code, out, _ = run_cli(capsys, "export", "--store", str(tiny_store), "--out",
                           str(tmp_path / "tables"))
    assert code == 0 and (tmp_path / "tables" / "tiny.csv").stat().st_size > 0, out
    one_line_error(*run_cli(capsys, "export", "--store", str(tiny_store), "--out",
                            str(tmp_path / "x.json")), "--out", "unknown format '.json'")


def test_report_and_export_read_the_last_sweeps_store_and_say_so(capsys, tiny_store, tmp_path,
                                                                  monkeypatch):
    from harness.sweep import driver

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.toml").write_text('name = "tiny"\nbudgets = [200]\n'
                                        'problems = ["onefactor:n=5"]\n[methods.sov]\n')
    def run_sweep(*a, store, opened, **k):   # opens the store (which the sweep remembers)
        opened(store)
        return SimpleNamespace(exit_code=0, in_store={"ok": 20}, references=[])

    monkeypatch.setattr(driver, "run_sweep", run_sweep)
    code, out, err = run_cli(capsys, "export", "--out", "before.csv")   # nothing remembered
    assert code == 2 and "results/quick.sqlite (the default" in err
    assert main(["sweep", "tiny.toml", "--store", str(tiny_store)]) == 0
    capsys.readouterr()
    code, out, err = run_cli(capsys, "export", "--out", "jobs.csv")
    assert code == 0 and f"store: {tiny_store.resolve()} (the last sweep's" in err
    assert "wrote 20 jobs" in out
    code, out, err = run_cli(capsys, "export", "--out", "jobs.csv", "-q")
    assert code == 0 and err == ""


# ---- messages ----------------------------------------------------------------------------------
FAILING = '''
from harness import Estimate, Method


class AlwaysFails(Method):
    name = "always-fails"
    summary = "fails every run"

    def _estimate(self, problem, budget, rng):
        return Estimate.failed("the sampler diverged")


class GivesNan(Method):
    name = "gives-nan"
    summary = "returns NaN"

    def _estimate(self, problem, budget, rng):
        return Estimate(float("nan"), None)
'''


def test_checks_say_when_every_run_failed(capsys, tmp_path, method_file):
    path = method_file(tmp_path, FAILING, "failing.py")
    code, out, _ = run_cli(capsys, "check", f"{path}:AlwaysFails")
    assert code == 1
    assert "every run of the method failed" in out
    determinism = next(line for line in out.splitlines() if "determinism" in line)
    assert "the run failed" in determinism and "the sampler diverged" in determinism
    assert "gave the same answer" not in out


def test_a_nan_from_a_plugin_is_blamed_on_the_plugin(capsys, tmp_path, method_file):
    path = method_file(tmp_path, FAILING, "failing.py")
    line = FAILING.splitlines().index("class GivesNan(Method):") + 5   # its `def _estimate`
    code, out, _ = run_cli(capsys, "run", "onefactor:n=5", f"{path}:GivesNan", "--budget", "10",
                           "--json", "--strict")
    reason = json.loads(out)["reason"]
    assert code == 1 and "nan is not a log-probability" in reason
    assert f"(returned by failing.py:{line} in GivesNan._estimate)" in reason
    assert "result.py" not in reason and "method.py" not in reason


def test_run_rounds_to_the_se_and_says_when_it_is_off():
    diagnostics = {f"d{i}": 0.123456789 * 10**i for i in range(20)}
    text = format_record({
        "method": "sov", "problem": "p", "n_train": 50, "n_test": 0, "budget": 1000,
        "budget_unit": "points", "seed": 0, "status": "ok",
        "log_marginal_likelihood": -20.264765123, "log_marginal_likelihood_se": 0.029,
        "truth_kind": "reference", "true_log_marginal_likelihood": -20.133557729813788,
        "true_log_marginal_likelihood_se": 0.00011, "abs_log_error": 0.131207393,
        "mape_percent": 0.65, "cpu_seconds": 1.0, "wall_seconds": 1.0, "peak_memory_mb": 3.0,
        "diagnostics": diagnostics})
    assert "log Z estimate: -20.265 ± 0.029" in text
    assert "log Z truth (reference): -20.13356 ± 0.00011" in text
    assert "(4.5 SE)" in text and "4.5 standard errors from the reference" in text
    assert "d3=123," in text and "d0=0.123," in text and "0.123456" not in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_a_tile_low_rank_factor_that_is_not_low_rank_says_so(capsys):
    from harness.core.tlr import NotLowRankWarning

    with pytest.warns(NotLowRankWarning) as caught:   # a one-line warning on the CLI's stderr
        code, out, _ = run_cli(capsys, "run", "onefactor:n=120", "sov-tlr", "--set",
                               "tolerance=0", "--set", "tile_size=12", "--budget", "200",
                               "--json")
    assert code == 0 and NotLowRankWarning.one_line
    said = str(caught[0].message)
    assert said.startswith("sov-tlr[") and re.search(r"stores 1\d\d% of a dense factor", said)
    assert "reorder=kdtree" in said and "dense method sov" in said
    record = json.loads(out)
    assert any(w.startswith("NotLowRankWarning: ") for w in record["warnings"])
    assert record["diagnostics"]["stored_fraction"] >= 1
