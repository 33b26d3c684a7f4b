"""harness.execution.parts: one estimate split into parts, in this process and on real local Dask
clusters (worker processes): exact recombination, bit-identical numbers for any number of
workers, a killed worker, stored parts not rerun, failing parts as records."""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.core.errors import InputError
from harness.core.seeding import rng_for
from harness.execution.parts import (
    AUTO_MAX_PARTS,
    combine_record,
    part_budgets,
    part_key,
    resolve_parts,
    run_part,
    run_split,
)
from harness.execution.store import ResultStore
from harness.plugins.method_files import read_method_file
from harness.plugins.specs import make_problem

TOY_FILE = Path(__file__).parents[1] / "helpers" / "toy_split_method.py"
TOY = read_method_file(f"{TOY_FILE}:ToyOrthantMC")
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


# the real splitting methods, on an exact-truth problem (N = 100)
REAL_PROBLEM = "linear1d:n_train=100,n_test=20"
# 4 parts x 2 populations of 1000 particles (10 a part would be 200: too few for N = 100,
# their log Ẑ_k spread beyond reliability.LOG_Z_SD_MAX)
REAL = {"sov": {}, "rejection-bootstrap": {"count": "hard", "populations": 2}}


def real(name: str, parts=4, budget=8000, **kwargs) -> dict:
    return run_split(REAL_PROBLEM, name, REAL[name], budget, {**KEY, "method": name}, parts,
                     **kwargs)


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
    from harness.execution.runner import run_one
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
    assert resolve_parts(method, 10**7, 1000, "auto") == AUTO_MAX_PARTS
    assert resolve_parts(method, 2**32 // 400**2, 400, "auto") == 1
    assert resolve_parts(method, 2**32 // 400**2 + 1, 400, "auto") == 2
    assert resolve_parts(method, 5 * 2**32 // 400**2, 400, "auto") == 8   # a power of two
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
@pytest.mark.parametrize("name", REAL)
def test_real_methods_split_exactly(name):
    """sov and rejection-bootstrap (hard count) through run_split: the record is the method's
    combination of its own parts on the part streams; sov's log Ẑ is within 4 of its SEs of
    the exact truth (rejection-bootstrap's SE is checked by its own tests)."""
    from harness.plugins.registry import get_method

    record = real(name)
    problem, method = make_problem(REAL_PROBLEM), get_method(name)(**REAL[name])
    budgets = part_budgets(method, 8000, 4)
    key = {**KEY, "method": name}
    direct = method.combine_parts(problem, [
        method.estimate_part(problem, b, rng_for(part_key(key, i)))
        for i, b in enumerate(budgets)])
    assert record["status"] == "ok" and record["parts"] == 4
    assert record["log_marginal_likelihood"] == direct.log_marginal_likelihood
    assert record["test_probabilities"] == direct.test_probabilities.tolist()
    assert record["log_marginal_likelihood_se"] == direct.log_marginal_likelihood_se
    if name == "sov":
        assert record["abs_log_error"] < 4 * record["log_marginal_likelihood_se"]
        assert record["mae"] < 0.01


def test_one_and_three_workers_give_bit_identical_numbers():
    from harness.execution.cluster import connect

    here = {"toy": split(parts=6), "sov": real("sov", parts=6)}
    results = {}
    for n in (1, 3):
        with connect(workers=n) as conn:
            results[n] = {"toy": split(parts=6, client=conn.client),
                          "sov": real("sov", parts=6, client=conn.client)}
    for name in here:
        one, three = results[1][name], results[3][name]
        assert one["workers"] == 1 and three["workers"] >= 2
        assert one["status"] == "ok"
        assert numbers(one) == numbers(three) == numbers(here[name]), name
        assert one["diagnostics"] == {**three["diagnostics"], "workers": 1,
                                      "elapsed_seconds": one["diagnostics"]["elapsed_seconds"]}


KILL_CASES = {   # each part long enough to be in flight when a worker is killed
    "toy": lambda **kw: split(parts=8, settings={"delay": 0.4}, **kw),
    "sov": lambda **kw: run_split("linear1d:n_train=200,n_test=20", "sov", {}, 80000,
                                  {**KEY, "method": "sov"}, 8, **kw),
}


@pytest.mark.parametrize("case", ["toy", pytest.param("sov", marks=pytest.mark.slow)])
def test_a_worker_killed_mid_estimate(tmp_path, case):
    """A worker process dies while it runs a part: the scheduler reruns that part elsewhere;
    every part is delivered and stored once, and the estimate equals the uninterrupted one."""
    from harness.execution.cluster import connect

    reference = KILL_CASES[case]()
    store = ResultStore(tmp_path / "parts.sqlite")
    calls: Counter = Counter()
    killed: list = []
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
                killed.extend([victim, sum(calls.values())])

        record = KILL_CASES[case](client=client, on_part=on_part)
    assert killed, "no worker was busy when the first part finished"
    victim, done_then = killed
    assert record["part_workers"].count(victim) <= done_then   # it delivered nothing after
    assert sorted(calls) == list(range(8)) and set(calls.values()) == {1}
    stored = store.parts_of("job")
    assert [r["part"] for r in stored] == list(range(8))
    assert sum(r["budget"] for r in stored) == record["budget"]
    assert record["diagnostics"]["parts"] == 8 and record["status"] == "ok"
    assert numbers(record) == numbers(reference)
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
