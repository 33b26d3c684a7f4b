"""harness.split: one estimate split into parts, in this process and on real local Dask
clusters (worker processes): exact recombination, bit-identical numbers for any number of
workers, a killed worker, stored parts not rerun, failing parts as records."""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import InputError
from harness.plugin_file import read_method_file
from harness.seeding import rng_for
from harness.spec import make_problem
from harness.split import (
    AUTO_MAX_PARTS,
    combine_record,
    part_budgets,
    part_key,
    resolve_parts,
    run_part,
    run_split,
)
from harness.store import ResultStore

TOY = read_method_file(f"{Path(__file__).with_name('toy_split_method.py')}:ToyOrthantMC")
PROBLEM = "linear1d:n_train=4,n_test=3"
KEY = {"problem": PROBLEM, "method": "toy", "budget": 40000, "seed": 5}
NUMBERS = ("status", "log_marginal_likelihood", "log_marginal_likelihood_se",
           "test_probabilities", "abs_log_error", "mae", "budget", "parts")


def toy(**settings):
    return TOY.load()(**settings)


def split(parts=4, budget=40000, settings=None, **kwargs) -> dict:
    return run_split(PROBLEM, TOY.method_id, settings or {}, budget, KEY, parts,
                     method_file=TOY.spec(), **kwargs)


def numbers(record: dict) -> dict:
    return {k: record.get(k) for k in NUMBERS}


# ---- in this process ------------------------------------------------------------------------
def test_parts_are_independent_streams_and_combine_exactly():
    record = split(parts=4)
    problem, method = make_problem(PROBLEM), toy()
    budgets = part_budgets(method, 40000, 4)
    assert budgets == [10000] * 4
    # each part is the method's own part on stream rng_for(part_key(key, i))
    stats = [method.estimate_part(problem, b, rng_for(part_key(KEY, i)))
             for i, b in enumerate(budgets)]
    assert len({s["hits"] for s in stats}) > 1            # not one stream reused
    direct = method.combine_parts(problem, stats)
    assert record["log_marginal_likelihood"] == direct.log_marginal_likelihood
    assert record["test_probabilities"] == direct.test_probabilities.tolist()
    assert record["diagnostics"]["hits"] == sum(s["hits"] for s in stats)
    assert record["status"] == "ok" and record["parts"] == 4
    assert record["diagnostics"]["parts"] == 4 and record["workers"] == 1
    # against the exact truth, within the estimator's own standard error
    truth = problem.truth.log_marginal_likelihood
    assert abs(record["log_marginal_likelihood"] - truth) < 4 * record[
        "log_marginal_likelihood_se"]
    assert record["true_log_marginal_likelihood"] == truth and record["mae"] < 0.02
    # the fields of an unsplit record, and plain cost sums
    from harness.runner import run_one
    plain = run_one(problem, method, 1000, rng_for(KEY))
    assert set(plain) <= set(record)
    assert record["budget"] == 40000 and record["method"] == "toy-orthant-mc"


def test_done_parts_are_not_rerun_and_give_the_same_estimate():
    seen: list[dict] = []
    full = split(parts=4, on_part=seen.append)
    assert sorted(r["part"] for r in seen) == [0, 1, 2, 3]
    again: list[dict] = []
    resumed = split(parts=4, on_part=again.append, done_parts=seen[:3])
    assert [r["part"] for r in again] == [3]
    assert numbers(resumed) == numbers(full)
    with pytest.raises(ValueError, match="not a part of this estimate's plan"):
        split(parts=5, done_parts=seen[:1])            # other budgets: not these parts


def test_a_failing_part_is_a_record_not_an_exception():
    seen: list[dict] = []
    record = split(parts=3, budget=30001, settings={"fail_part_budget": 10001},
                   on_part=seen.append)
    assert [r["status"] for r in sorted(seen, key=lambda r: r["part"])] == \
        ["error", "ok", "ok"]
    bad = next(r for r in seen if r["status"] != "ok")
    assert "planted failure" in bad["reason"] and bad["stats"] is None
    assert record["status"] == "error" and record["reason"].startswith("part 0 of 3: ")
    assert record["log_marginal_likelihood"] is None
    # a spec that cannot start (an unknown method here) is a record too
    out = run_part({"problem": PROBLEM, "method": "no-such", "settings": {}, "key": KEY,
                    "part": 0, "budget": 10})
    assert out["status"] == "error" and "no-such" in out["reason"]


def test_auto_parts_depend_on_method_budget_and_n_only():
    method = toy()
    assert resolve_parts(method, 1000, 4, "auto") == 1
    assert resolve_parts(method, 10**6, 1000, "auto") == AUTO_MAX_PARTS
    mid = resolve_parts(method, 20000, 500, "auto")
    assert 1 < mid < AUTO_MAX_PARTS
    assert resolve_parts(method, 40000, 500, "auto") > mid
    for bad in (0, -1, "3", 2.5, True):
        with pytest.raises(InputError, match="parts"):
            resolve_parts(method, 1000, 4, bad)


def test_combine_record_checks_the_parts():
    problem, method = make_problem(PROBLEM), toy()
    parts = [run_part({"problem": PROBLEM, "method": TOY.method_id, "settings": {},
                       "key": KEY, "part": i, "budget": 100, "method_file": TOY.spec()})
             for i in range(2)]
    assert combine_record(problem, method, 200, parts[::-1])["parts"] == 2   # any order
    with pytest.raises(ValueError, match="not 0 .. 1"):
        combine_record(problem, method, 200, [parts[0], parts[0]])          # a part twice
    with pytest.raises(ValueError, match="sum to 200"):
        combine_record(problem, method, 300, parts)


def test_cli_parts_and_a_method_that_cannot_split(capsys):
    import json

    args = ["run", "--problem", PROBLEM, "--method", f"{TOY.path}:ToyOrthantMC",
            "--budget", "8000", "--json"]
    assert main([*args, "--parts", "3"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["parts"] == 3 and record["diagnostics"]["parts"] == 3
    assert record["status"] == "ok" and record["true_test_probabilities"] is not None
    assert main(["run", "--problem", PROBLEM, "--method", "ep", "--budget", "10",
                 "--parts", "2"]) == 2
    err = capsys.readouterr().err
    assert "method ep cannot split an estimate into parts" in err and "sov" in err
    assert main([*args, "--parts", "0"]) == 2
    assert "--parts: must be >= 1" in capsys.readouterr().err
    assert main([*args, "--workers", "1", "--scheduler", "tcp://127.0.0.1:1"]) == 2


# ---- on local clusters of worker processes --------------------------------------------------
def test_one_and_three_workers_give_bit_identical_numbers():
    from harness.sweep.cluster import connect

    here = split(parts=6)
    results = {}
    for n in (1, 3):
        with connect(workers=n) as conn:
            results[n] = split(parts=6, client=conn.client)
    assert results[1]["workers"] == 1 and results[3]["workers"] >= 2
    assert numbers(results[1]) == numbers(results[3]) == numbers(here)
    assert results[1]["diagnostics"]["hits"] == results[3]["diagnostics"]["hits"]


def test_a_worker_killed_mid_estimate(tmp_path):
    """A worker process dies while it runs a part: the scheduler reruns that part elsewhere;
    every part is delivered and stored once, and the estimate equals the uninterrupted one."""
    from harness.sweep.cluster import connect

    reference = split(parts=8)
    store = ResultStore(tmp_path / "parts.sqlite")
    calls: Counter = Counter()
    killed: list[str] = []
    with connect(workers=2) as conn:
        client = conn.client
        pids = client.run(os.getpid)

        def on_part(record):
            calls[record["part"]] += 1
            store.add_part("job", record["part"], record)
            # the worker that just finished has started its next part: kill it in flight
            victim = record["worker"]
            if not killed and client.processing().get(victim):
                os.kill(pids[victim], signal.SIGKILL)
                killed.append(victim)
                killed.append(sum(calls.values()))

        record = split(parts=8, settings={"delay": 0.4}, client=client, on_part=on_part)
    assert killed, "no worker was busy when the first part finished"
    victim, done_then = killed
    assert record["part_workers"].count(victim) <= done_then   # it delivered nothing after
    assert sorted(calls) == list(range(8)) and set(calls.values()) == {1}
    stored = store.parts_of("job")
    assert [r["part"] for r in stored] == list(range(8))
    assert record["diagnostics"]["parts"] == 8 and record["budget"] == 40000
    assert numbers(record) == numbers(reference)
    assert record["status"] == "ok"
    store.close()


def test_cli_on_a_local_cluster_gives_the_in_process_numbers(capsys):
    import json

    args = ["run", "--problem", PROBLEM, "--method", f"{TOY.path}:ToyOrthantMC",
            "--budget", "9000", "--parts", "3", "--json"]
    assert main(args) == 0
    here = json.loads(capsys.readouterr().out)
    assert main([*args, "--workers", "2"]) == 0
    there = json.loads(capsys.readouterr().out)
    assert numbers(there) == numbers(here) and there["parts"] == 3
    assert here["part_workers"] == ["this process"] * 3
    assert all(w.startswith("tcp://127.0.0.1:") for w in there["part_workers"])
