"""The first page's tables (harness.report.verdict_section, approximations_section) and the
appendix's best-method table (harness.report.tables.best_table) on hand-made stores: every
method listed in the leaderboard, with why when it has no rank; a target that cannot be
checked says why and gives the command that fixes it; the best-method table and the verdict
name the same method; the approximations table states each approximation's error."""

from __future__ import annotations

import shlex

from store_helpers import TRUE_LZ, make_store, record, summary

from harness.analysis import verdict
from harness.report import approximations_section, tables, verdict_section
from harness.report.style import Palette


def _runs(method, problem, budget, error, cpu, *, n=3, status="ok", exact=True, spread=0.0):
    return [record(f"{problem}-{method}-{budget}-{status}-{i}", problem, method, budget, i,
                   log_z=TRUE_LZ - error - spread * i, cpu=cpu, status=status, exact=exact)
            for i in range(n)]


def _section(data):
    return verdict_section.section(data, Palette(data.methods), None)


def test_every_method_is_in_the_leaderboard_with_why_it_has_no_rank(tmp_path):
    recs = (_runs("A", "P", 100, 0.05, 0.1) + _runs("B", "P", 100, 0.3, 0.05)
            + _runs("D", "P", 100, 0.0, 0.01, n=6, status="unreliable")
            + _runs("laplace", "P", 100, 0.001, 0.001, n=1, exact=False))
    data = make_store(tmp_path / "l.sqlite", recs, [summary("P", probs=None)])
    board = _section(data).board
    rows = {r[1].text.split(" (")[0]: r for r in board.rows}
    assert set(rows) == {"A", "B", "D", "laplace"}
    assert board.columns[-1] == "why not ranked"
    assert rows["A"][0].text == "1" and rows["A"][-1].text == ""
    assert rows["B"][-1].text.startswith("ran but reached no target; closest: 0.30 against "
                                         "|Δ log Z| ≤ 0.1 at budget 100")
    assert rows["D"][0].text == "—" and rows["D"][-1].text == "0 of 6 runs ok: 6 unreliable"
    assert rows["laplace"][-1].text == "approximation (never ranked): see 'Approximations'"
    assert [r[1].text.split(" (")[0] for r in board.rows][-1] == "laplace"


def test_a_target_not_checkable_says_why_and_gives_the_command(tmp_path):
    """Q: a reference with SE 0.01 (floor 0.02 > 0.01); S: no truth, a consensus of sov's
    runs spread by 0.1 nats. Each uncheckable cell points to a note with the reference
    command (the problem's spec, the store, SEs a quarter of the tightest targets)."""
    recs = _runs("A", "Q", 100, 0.001, 0.1) + _runs("sov", "S", 100, 0.0, 0.1, spread=0.1)
    for r in recs:
        if r["problem"] == "Q":
            r["problem_spec"] = "hand:n=20,seed=1"
    store = tmp_path / "my store.sqlite"
    data = make_store(store, recs, [summary("Q", probs=None, kind="reference", se=0.01),
                                    summary("S", probs=None, kind=None)])
    table = _section(data).table
    row = {r[0].text: r for r in table.rows}
    q, s = row["Q"][2], row["S"][2]
    assert q.text == s.text == "not checkable"
    assert "the reference's log Z SE is 0.010 (known to ±0.020), too coarse for ≤ 0.01" in q.sub
    assert "the truth is the consensus of the exact methods, known to ±" in s.sub
    assert "fix: command [1] below" in q.sub and "fix: command [2] below" in s.sub
    quoted = shlex.quote(str(store))
    assert table.notes[1] == (
        f"[1] Q: python -m harness reference hand:n=20,seed=1 --store {quoted} "
        f"--target-se 0.0025 --target-test-se 0.00025 && python -m harness report --store "
        f"{quoted}")
    assert table.notes[2].startswith("[2] S: python -m harness reference S --store")
    assert row["Q"][3].text == "—" and row["Q"][3].sub == "no test points"


def test_best_table_names_the_verdicts_winner(tmp_path):
    """A is cheap and within 0.1 nats; B is five times dearer and far more accurate. The old
    table (lowest error at equal CPU time) named B 'ahead by > 2 SE' where the verdict names A;
    both now name A for ≤ 0.1 and B for ≤ 0.01."""
    recs = _runs("A", "P", 100, 0.05, 0.1, spread=0.001) + _runs("B", "P", 100, 0.002, 0.5,
                                                                  spread=0.0001)
    data = make_store(tmp_path / "b.sqlite", recs, [summary("P", probs=None)])
    best = tables.frame(tables.best_table(data, Palette(data.methods)))
    winners = dict(zip(best["target"], best["cheapest exact method"], strict=True))
    found = {e.target.name: e.reached[0].method for e in verdict.entries(data)}
    assert winners == found == {"|Δ log Z| ≤ 0.1": "A", "|Δ log Z| ≤ 0.01": "B"}
    assert not best.duplicated().any()


def test_approximations_table_states_the_error_and_the_exact_method_as_close(tmp_path):
    recs = (_runs("laplace", "P", 100, 0.02, 0.001, n=1, exact=False)
            + _runs("A", "P", 100, 0.015, 0.5) + _runs("vecchia-sov", "P", 100, 0.0, 0.01,
                                                       status="unreliable", exact=False))
    data = make_store(tmp_path / "a.sqlite", recs, [summary("P", probs=None)])
    table = _section(data).approximations
    assert table.columns == ["problem", "laplace", "vecchia-sov"]
    ((head, laplace, vecchia),) = table.rows
    assert laplace.text == "0.020 nats"
    assert laplace.sub == "0.0010 s @100\nexact as close: log Z A ×500"
    assert vecchia.text == "not measured" and vecchia.sub == "no ok run (0 of 3 ok: 3 unreliable)"
    assert approximations_section.CAPTION in table.caption


def test_best_table_gives_runner_up_ratio_and_says_when_none_reached(tmp_path):
    recs = (_runs("A", "P", 100, 0.05, 0.1) + _runs("C", "P", 100, 0.08, 0.3)
            + _runs("B", "Q", 100, 0.5, 1.0))
    data = make_store(tmp_path / "r.sqlite", recs, [summary("P", probs=None),
                                                     summary("Q", probs=None)])
    best = tables.frame(tables.best_table(data, Palette(data.methods))).set_index("target")
    coarse = best.iloc[0]
    assert (coarse["cheapest exact method"], coarse["runner-up"]) == ("A", "C")
    assert coarse["its cost / cheapest"] == "×3.0" and coarse["reached by"] == "2 of 2"
    only_q = tables.frame(tables.best_table(data, Palette(data.methods), ["Q"]))
    assert list(only_q["cheapest exact method"]) == ["none reached (closest B 0.50)"] * 2
