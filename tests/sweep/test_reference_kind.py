"""kind = "reference" sweeps (harness.sweep.reference_kind): store, export, skip on rerun."""

import json

import pytest

import harness.references.compute as reference
from harness.core.errors import InputError
from harness.execution.store import ResultStore
from harness.model.reference_values import file_name
from harness.references.compute import compute_reference
from harness.sweep.reference_kind import run_reference_sweep
from harness.sweep.spec import parse_sweep

PROBLEM = "linear1d:n_test=5,n_train=10"
SWEEP = f"""
kind = "reference"
problems = ["{PROBLEM}"]
seed = 4
[reference]
budget = 2000
round_budget = 400
parts_per_round = 2
target_se = 0.05
target_test_se = 0.01
check_method = "none"
[output]
store = "refs.sqlite"
references = "refs"
"""
VALUES = ("log_marginal_likelihood", "log_marginal_likelihood_se", "test_probabilities",
          "test_probabilities_se", "key", "targets", "budget", "parts", "stopped")


def _sweep(tmp_path, text=SWEEP):
    path = tmp_path / "ref.toml"
    path.write_text(text)
    return parse_sweep(text, str(path))


def test_reference_sweep_stores_exports_and_skips_on_rerun(tmp_path, monkeypatch):
    sweep = _sweep(tmp_path)
    lines: list[str] = []
    run_reference_sweep(sweep, sweep.store, out=lines.append)
    direct = compute_reference(PROBLEM, "minimax-tilting", {}, max_budget=2000,
                               budget_per_round=400, parts_per_round=2, target_se=0.05,
                               target_test_se=0.01, max_cpu_seconds=None, client=None,
                               check_method=None, seed=4)
    with ResultStore(sweep.store) as store:
        stored = store.references()[direct["problem"]]
    exported = json.loads((tmp_path / "refs" / file_name(direct["problem"])).read_text())
    for record in (stored, exported):
        for k in VALUES:
            assert record[k] == direct[k], k
    assert "computed" in lines[0]

    def no_compute(*args, **kwargs):
        raise AssertionError("a stored reference was recomputed")

    monkeypatch.setattr(reference, "compute_reference", no_compute)
    lines.clear()
    run_reference_sweep(sweep, sweep.store, out=lines.append)
    assert "already stored" in lines[0]
    # other targets: not the stored reference, so it is computed again
    changed = _sweep(tmp_path, SWEEP.replace("target_se = 0.05", "target_se = 0.04"))
    with pytest.raises(AssertionError, match="recomputed"):
        run_reference_sweep(changed, changed.store, out=lines.append)


@pytest.mark.parametrize("line, key", [("budgett = 5", "reference.budgett"),
                                       ("max_cpu = -1", "reference.max_cpu"),
                                       ('method = "laplace"', "reference.method"),
                                       ('check_settings = { proposal = "tilted" }',
                                        "reference.check_settings")])
def test_bad_reference_key_is_named(tmp_path, line, key):
    with pytest.raises(InputError, match=key.replace(".", r"\.")):
        _sweep(tmp_path, SWEEP.replace("[reference]\n", f"[reference]\n{line}\n"))


def test_check_settings_are_checked_and_part_of_what_a_stored_reference_must_match(tmp_path):
    """check_settings = { ... } reaches the check method (named when wrong), and a stored
    reference whose check ran with other settings is not this sweep's."""
    from harness.sweep.reference_kind import expected_record, is_stored

    with_sir = SWEEP.replace('check_method = "none"', 'check_method = "sir"')
    with pytest.raises(InputError, match=r"reference\.check_settings"):
        _sweep(tmp_path, with_sir.replace("[output]", 'check_settings = { proposal = "x" }\n'
                                                      "[output]"))
    sweep = _sweep(tmp_path, with_sir.replace(
        "[output]", 'check_settings = { proposal = "tilted" }\n[output]'))
    s = sweep.reference.for_problem(PROBLEM)
    assert s.arguments()["check_settings"] == {"proposal": "tilted"}
    expected = expected_record(PROBLEM, s, sweep.seed)
    record = {"key": expected["key"], "targets": expected["targets"],
              "parts_per_round": expected["parts_per_round"],
              "check_run": {"method_name": "sir", "settings": expected["check_settings"]}}
    assert is_stored(record, expected)
    record["check_run"]["settings"] = {**expected["check_settings"], "proposal": "sov"}
    assert not is_stored(record, expected)


def test_references_sweep_file_matches_the_shipped_references():
    """sweeps/references.toml reproduces harness/data/references: every shipped record has the
    key and targets the sweep would compute (so a sweep into a store holding them skips all)."""
    from pathlib import Path

    from harness.sweep.reference_kind import expected_record, is_stored
    from harness.sweep.spec import load_sweep

    root = Path(__file__).resolve().parents[2]
    try:
        sweep = load_sweep(root / "sweeps" / "references.toml")
    except InputError as exc:   # the real data sets need gpc-harness[data]
        pytest.skip(str(exc))
    for p in sweep.problems:
        record = json.loads((root / "harness/data/references" / file_name(p.name)).read_text())
        assert is_stored(record, expected_record(p.spec, sweep.reference.for_problem(p.spec),
                                          sweep.seed)), p.name
