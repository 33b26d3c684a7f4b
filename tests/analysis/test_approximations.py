"""Approximations never compete in the verdict (harness.analysis.verdict) and are measured
against the exact answer instead (harness.analysis.approximations): a hand-made store where
Laplace is cheaper than every exact method and 0.02 nats off."""

from __future__ import annotations

import pytest
from store_helpers import TRUE_LZ, TRUE_P, make_store, record, summary

from harness.analysis import approximations, verdict


def _runs(method, problem, budget, lz_error, p_error, cpu, *, n=3, exact=True, status="ok",
          truth=TRUE_LZ):
    """n runs whose log Ẑ is `lz_error` below the truth and whose test probabilities are
    `p_error` off (the first point up, the second down, or both as given)."""
    dp = p_error if isinstance(p_error, tuple) else (p_error, -p_error)
    return [record(f"{problem}-{method}-{budget}-{i}", problem, method, budget, i,
                   log_z=truth - lz_error, probs=[TRUE_P[0] + dp[0], TRUE_P[1] + dp[1]],
                   cpu=cpu, exact=exact, status=status) for i in range(n)]


@pytest.fixture
def store(tmp_path):
    """P (exact truth): laplace 0.02 nats and MAE 0.015 off (max 0.02) at 0.001 s; exact A
    0.05 / 0.02 at 0.1 s and 0.005 / 0.001 at 1 s; exact B 0.015 / 0.01 at 0.5 s.
    S (no truth): sov's runs are the consensus, laplace 0.02 nats from it.
    T (no truth): laplace alone, nothing to measure it against."""
    recs = (_runs("laplace", "P", 100, 0.02, (0.01, -0.02), 0.001, n=1, exact=False)
            + _runs("A", "P", 100, 0.05, 0.02, 0.1) + _runs("A", "P", 1000, 0.005, 0.001, 1.0)
            + _runs("B", "P", 100, 0.015, 0.01, 0.5)
            + _runs("sov", "S", 1000, 0.0, 0.0, 1.0)
            + _runs("laplace", "S", 100, 0.02, 0.01, 0.001, n=1, exact=False)
            + _runs("laplace", "T", 100, 0.02, 0.01, 0.001, n=1, exact=False))
    problems = [summary("P"), summary("S", kind=None), summary("T", kind=None)]
    return make_store(tmp_path / "a.sqlite", recs, problems)


def test_an_approximation_cheaper_than_every_exact_method_never_wins(store):
    found = verdict.entries(store)
    for e in found:
        assert "laplace" not in e.entered and all(r.method != "laplace" for r in e.reached)
    coarse = next(e for e in found if e.group == "P" and e.target.limit == 0.1)
    assert [r.method for r in coarse.reached] == ["A", "B"]
    assert "laplace" not in set(verdict.leaderboard(found)["method"])
    (why,) = [u for u in verdict.unranked(store, found) if u.method == "laplace"]
    assert why.kind == "approximation"


def test_its_error_against_the_truth_beside_the_cheapest_exact_method_as_close(store):
    (row,) = [r for r in approximations.rows(store) if r.group == "P"]
    assert (row.method, row.budget, row.cost) == ("laplace", 100, pytest.approx(0.001))
    assert row.log_z.against == "truth" and row.log_z.error == pytest.approx(0.02)
    assert (row.log_z.exact.method, row.log_z.exact.budget) == ("B", 100)   # 0.015 ≤ 0.02
    assert row.mae.error == pytest.approx(0.015) and row.max_error == pytest.approx(0.02)
    assert row.mae.exact.method == "B" and row.mae.exact.cost == pytest.approx(0.5)


def test_without_truth_against_the_consensus_or_not_measurable(store):
    rows = {r.group: r for r in approximations.rows(store)}
    s = rows["S"]
    assert s.log_z.against == "consensus" and s.log_z.error == pytest.approx(0.02)
    assert s.log_z.exact.method == "sov"
    t = rows["T"]
    assert t.budget is None and t.why == ("no truth, no reference and no consensus of exact "
                                          "methods")
    assert set(store.consensus["T"].methods) == set()


def test_no_exact_method_as_close_says_which_came_closest(tmp_path):
    recs = (_runs("ep", "P", 100, 0.001, 0.0001, 0.01, n=1, exact=False)
            + _runs("A", "P", 100, 0.05, 0.02, 0.1))
    data = make_store(tmp_path / "c.sqlite", recs, [summary("P")])
    (row,) = approximations.rows(data)
    assert row.log_z.exact is None and row.log_z.best_exact.method == "A"
    assert row.log_z.best_exact.error == pytest.approx(0.05)
