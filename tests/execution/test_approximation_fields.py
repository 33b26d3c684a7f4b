"""Results that say what they are: an approximation's record carries `approximation: true` (and
its stated approximation error, when it has one) on every surface, and `run`'s "off" line
names the approximation and the settings that reduce it, not the budget."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.cli.main import main
from harness.execution.formatting import error_in_se, format_record, off_line
from harness.execution.timed import estimate_fields
from harness.model.result import Estimate
from harness.plugins.contract import contract_violations
from harness.plugins.registry import get_method


def _run_json(capsys, *args):
    assert main(["run", *args, "--json", "-q"]) == 0
    return json.loads(capsys.readouterr().out)


def test_run_json_says_approximation_and_the_settings_that_reduce_it(capsys, tmp_path,
                                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    exact = _run_json(capsys, "linear1d-p1", "sov", "--budget", "200")
    assert exact["approximation"] is False and "closer_with" not in exact
    vecchia = _run_json(capsys, "linear1d-p1", "vecchia-tilting", "--budget", "200",
                        "--set", "m=2", "--set", "ordering=given")
    assert vecchia["approximation"] is True and vecchia["closer_with"] == ["m", "ordering"]
    ep = _run_json(capsys, "linear1d-p1", "ep", "--budget", "1")
    assert ep["approximation"] is True and "closer_with" not in ep
    # on linear1d-p1, m = 2 in the given order is far off and not local: unreliable, and
    # its text says approx. beside the status and names the ordering
    text = " ".join(format_record(vecchia).split())
    assert vecchia["status"] == "unreliable" and "status: unreliable (approx.)" in text
    assert "use ordering=auto" in text
    # an approximation's off line blames the approximation and names what reduces it, never
    # a larger budget
    off = " ".join(off_line({**vecchia, "approximation_error": 0.0}, 80.0).split())
    assert "no budget removes" in off and "change m or ordering" in off
    assert "larger budget" not in off
    ep_off = " ".join(off_line(ep, 10.0).split())
    assert "no setting removes it" in ep_off and "larger budget" not in ep_off


def test_an_exact_methods_off_line_is_unchanged():
    r = {"method": "sov", "method_name": "sov", "problem": "p", "n_train": 3, "n_test": 0,
         "budget": 10, "budget_unit": "points", "seed": 0, "status": "ok", "reason": "",
         "approximation": False, "log_marginal_likelihood": -1.0,
         "log_marginal_likelihood_se": 0.01, "true_log_marginal_likelihood": -1.1,
         "truth_kind": "exact", "abs_log_error": 0.1, "mape_percent": 9.0, "cpu_seconds": 0.1,
         "wall_seconds": 0.1, "peak_memory_mb": 1.0}
    text = " ".join(format_record(r).split())
    assert "status:" not in text and "try another seed or a larger budget" in text
    # an approximation's stated error widens the error bar the error is compared with
    assert error_in_se(r) == pytest.approx(10.0)
    approx = {**r, "approximation": True, "approximation_error": 0.05}
    assert error_in_se(approx) == pytest.approx(0.1 / np.hypot(0.01, 0.05))


def test_estimate_fields_carry_a_stated_approximation_error():
    e = Estimate(-2.0, np.array([0.5, 0.25]), 0.1, approximation_error=0.03,
                 test_probabilities_se=np.array([0.01, 0.01]),
                 test_approximation_error=np.array([0.002, 0.001]))
    e.check(2)
    fields = estimate_fields(e)
    assert fields["approximation_error"] == 0.03
    assert fields["test_approximation_error"] == [0.002, 0.001]
    assert "approximation_error" not in estimate_fields(Estimate(-2.0))


@pytest.mark.parametrize("bad", [dict(approximation_error=-1.0),
                                 dict(approximation_error=float("nan")),
                                 dict(test_approximation_error=np.array([0.1])),
                                 dict(test_approximation_error=np.array([0.1, np.inf]))])
def test_a_broken_approximation_error_breaks_the_contract(bad):
    with pytest.raises(AssertionError, match="approximation error"):
        Estimate(-2.0, np.array([0.5, 0.5]), **bad).check(2)


def test_closer_with_names_settings_of_an_approximation():
    from dataclasses import replace

    sov, vecchia = get_method("sov"), get_method("vecchia-sir")
    assert contract_violations(vecchia) == []
    wrong = type("Wrong", (vecchia,), {"tags": replace(vecchia.tags, closer_with=("mm",))})
    assert any("names mm, not settings" in v for v in contract_violations(wrong))
    exact = type("Exact", (sov,), {"tags": replace(sov.tags, closer_with=("points",))})
    assert any("for approximations" in v for v in contract_violations(exact))


def test_the_store_and_export_say_approximation_beside_the_status(tiny_store, tmp_path):
    from harness.analysis.export import export
    from harness.analysis.results import load_table

    table = load_table(tiny_store)
    columns = list(table.columns)
    assert columns.index("approximation") == columns.index("status") + 1
    by_method = table.groupby("method_name")["approximation"].agg(set).to_dict()
    assert by_method["ep"] == {True} and by_method["sov"] == {False}
    out = tmp_path / "jobs.csv"
    export(tiny_store, out)
    header = out.read_text().splitlines()[0].split(",")
    assert header[header.index("status") + 1] == "approximation"
