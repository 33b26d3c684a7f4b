"""The report's first page (harness.analysis.verdict, harness.report.verdict_section): the verdict
per problem and accuracy target, the leaderboard, the calibration's headline and readable problem
titles; everything else collapsed in the HTML and in the PDF's appendix.

Hand-made stores with known answers check the verdict's numbers; the page itself, in headless
Chromium and in the PDF, is checked on tests/report/test_build_render.py's small real store.
"""

from __future__ import annotations

import pytest
from store_helpers import TRUE_LZ, make_store, record, summary

from harness.analysis import verdict
from harness.plugins.specs import make_problem
from harness.report import titles, verdict_section
from harness.report.style import Palette


def _jobs(method, problem, budget, error, cpu, setup=0.0, n=3, status="ok", truth=TRUE_LZ):
    out = []
    for i in range(n):
        r = record(f"{problem}-{method}-{budget}-{status}-{i}", problem, method, budget, i,
                   log_z=truth - error if status == "ok" else None, cpu=cpu, status=status)
        r["setup_cpu_seconds"] = setup
        out.append(r)
    return out


@pytest.fixture
def hand(tmp_path):
    """Problem P (exact truth): A reaches 0.1 nats at 0.12 s and 0.01 at 1.02 s; B at 0.15 s
    (its set-up makes it dearer) and 0.6 s; C's cheap budget is mostly failed jobs and its
    other never reaches 0.1. Q: a reference truth with SE 0.01 (0.01 nats not checkable).
    R: nobody reaches 0.1. S: no truth, errors against the consensus of sov's runs."""
    recs = (_jobs("A", "P", 100, 0.05, 0.1, setup=0.02) + _jobs("A", "P", 1000, 0.005, 1.0, 0.02)
            + _jobs("B", "P", 100, 0.08, 0.05, setup=0.1) + _jobs("B", "P", 1000, 0.002, 0.5, 0.1)
            + _jobs("C", "P", 100, 0.0, 0.01, n=1) + _jobs("C", "P", 100, 0, 0.01, n=2,
                                                           status="failed")
            + _jobs("C", "P", 1000, 0.5, 0.1)
            + _jobs("A", "Q", 100, 0.001, 0.1) + _jobs("A", "R", 100, 0.4, 0.1)
            + _jobs("B", "R", 100, 0.3, 0.2)
            + _jobs("sov", "S", 1000, 0.0, 1.0) + _jobs("A", "S", 100, 0.05, 0.1))
    problems = [summary("P", probs=None), summary("Q", probs=None, kind="reference", se=0.01),
                summary("R", probs=None), summary("S", probs=None, kind=None)]
    return make_store(tmp_path / "v.sqlite", recs, problems)


def _entry(found, group, limit):
    (e,) = [e for e in found if e.group == group and e.target.limit == limit]
    return e


def test_cheapest_method_to_each_target_with_runner_up_and_ratio(hand):
    found = verdict.entries(hand)
    assert {(e.group, e.target.quantity) for e in found} == {(p, "log_z") for p in "PQRS"}
    coarse, fine = _entry(found, "P", 0.1), _entry(found, "P", 0.01)
    assert [(r.method, r.budget) for r in coarse.reached] == [("A", 100), ("B", 100)]
    assert coarse.reached[0].cost == pytest.approx(0.12)          # set-up included
    assert coarse.ratio == pytest.approx(0.15 / 0.12)
    assert [(r.method, r.budget) for r in fine.reached] == [("B", 1000), ("A", 1000)]
    assert fine.ratio == pytest.approx(1.02 / 0.6)
    assert "C" in coarse.entered and "C" not in {r.method for r in coarse.reached}
    assert coarse.column == "abs_log_error"


def test_unresolvable_unreached_and_consensus_targets(hand):
    found = verdict.entries(hand)
    q = _entry(found, "Q", 0.01)
    assert q.unresolvable and q.floor == pytest.approx(0.02) and not q.reached
    assert _entry(found, "Q", 0.1).reached[0].method == "A"
    r = _entry(found, "R", 0.1)
    assert not r.reached and (r.closest.method, r.closest.error) == ("B", pytest.approx(0.3))
    s = _entry(found, "S", 0.1)
    assert s.column == "med_abs_log_error" and s.reached[0].method == "A"


def test_leaderboard_ranks_across_problems(hand):
    board = verdict.leaderboard(verdict.entries(hand)).set_index("method")
    # A: P (1, 2), Q (1), S (1, 2: sov reached 0.01 there); B: P (2, 1); C: P (3, 3);
    # sov: S (2, 1); nobody reached R's targets or could check Q's 0.01
    assert board.loc["A", "mean_rank"] == pytest.approx(7 / 5) and board.loc["A", "wins"] == 3
    assert board.loc["B", "mean_rank"] == pytest.approx(1.5) and board.loc["B", "wins"] == 1
    assert board.loc["C", "mean_rank"] == 3 and board.loc["C", "reached"] == 0
    assert board.loc["A", "cost_ratio"] == pytest.approx((1.02 / 0.6) ** 0.25)
    assert board.loc["sov", "mean_rank"] == pytest.approx(1.5)
    assert list(board.index) == ["A", "B", "sov", "C"]
    table = verdict_section.board_table(hand, Palette(hand.methods), verdict.entries(hand),
                                        None)
    assert [c.text for c in table.rows[0][:5]] == ["1", "A", "1.4", "3", "4 of 5"]


def test_verdict_table_cells(hand):
    table = verdict_section.verdict_table(hand, Palette(hand.methods), verdict.entries(hand))
    row = {r[0].text: r for r in table.rows}
    assert table.columns == ["problem", "|Δ log Z| ≤ 0.1", "|Δ log Z| ≤ 0.01", "MAE ≤ 1e-2",
                             "MAE ≤ 1e-3"]
    assert row["P"][1].text == "A · 0.12 s" and row["P"][1].sub == "budget 100 · next B ×1.2"
    assert row["P"][2].text == "B · 0.60 s" and row["P"][3].text == "—"
    assert row["Q"][2].text == "not checkable" and row["R"][1].text == "none reached"
    assert row["R"][1].sub == "closest: B 0.30 at 100"


def test_many_problems_are_grouped_by_family_and_size(tmp_path):
    recs, problems = [], []
    for n in (20, 40):
        for seed in range(5):
            name = f"fam:n={n},seed={seed}"
            problems.append(summary(name, probs=None, n_train=n))
            for method, err, cpu in (("A", 0.05, 1.0), ("B", 0.02, 2.0)):
                recs += [{**r, "n_train": n} for r in _jobs(method, name, 100, err, cpu, n=2)]
    data = make_store(tmp_path / "g.sqlite", recs, problems)
    groups = verdict.groups(data)
    assert list(groups) == ["hand, N = 20", "hand, N = 40"]
    assert len(groups["hand, N = 20"]) == 5
    e = _entry(verdict.entries(data), "hand, N = 40", 0.1)
    assert [r.method for r in e.reached] == ["A", "B"] and e.ratio == pytest.approx(2.0)
    assert _entry(verdict.entries(data), "hand, N = 40", 0.01).closest.method == "B"


def test_readable_titles():
    one = make_problem("onefactor:n=100,dmin=0.95,dmax=0.999,random_signs=true")
    assert titles.title(one.name, one.summary()) == \
        "one-factor, N = 100, hard (|d| ∈ [0.95, 0.999], random signs)"
    plain = make_problem("onefactor:n=50,seed=3")
    assert titles.title(plain.name, plain.summary()) == \
        "one-factor, N = 50 (d ∈ [−0.99, 0.99], seed 3)"
    p2 = make_problem("linear1d-p2")
    assert titles.title(p2.name, p2.summary()) == \
        "linear1d-p2: linear1d, N = 200, 100 test points, sd_neg 2, sd_pos 1"
    assert titles.title("data.csv", {"family": "file"}) == "data.csv"
    assert titles.title("old", {"family": "onefactor", "params": {"dmin": "x"}}) == "old"


def test_titles_that_coincide_get_their_spec(tmp_path):
    recs = [record(f"j{p}", p, "A", 100, log_z=TRUE_LZ) for p in ("x", "y")]
    a, b = (summary(p, probs=None) for p in ("x", "y"))
    for s in (a, b):
        s.update(family="onefactor", params={"n": 20, "seed": 0, "dmin": -0.5, "dmax": 0.5,
                                              "random_signs": False})
    data = make_store(tmp_path / "t.sqlite", recs, [a, b])
    got = titles.titles(data)
    assert got["x"] != got["y"] and got["x"].endswith("[x]")


def test_nobody_reaching_a_target_ranks_nobody_but_lists_the_method(tmp_path):
    data = make_store(tmp_path / "n.sqlite", _jobs("A", "R", 100, 0.4, 0.1),
                      [summary("R", probs=None)])
    sec = verdict_section.section(data, Palette(data.methods), None)
    assert sec.table.rows[0][1].text == "none reached"
    ((rank, method, *_, why),) = sec.board.rows
    assert (rank.text, method.text) == ("—", "A")
    assert why.text == ("ran but reached no target; closest: 0.40 against |Δ log Z| ≤ 0.1 at "
                        "budget 100 (R)")
    empty = make_store(tmp_path / "e.sqlite", _jobs("A", "R", 100, 0.4, 0.1, status="failed"),
                       [summary("R", probs=None)])
    assert verdict_section.section(empty, Palette(empty.methods), None) is None
