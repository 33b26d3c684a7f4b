"""The summary line of results not ok (harness.model.status_summary): counts by status, in a
fixed order, with their reasons' kinds."""

from __future__ import annotations

from harness.model.status_summary import KIND_CHARACTERS, not_ok, not_ok_summary, reason_kinds


def test_reason_kinds_are_the_heads_of_the_reasons_parts():
    assert reason_kinds("weights degenerate: ESS 1.0 of 1000; paths degenerate: 3 of 1000; "
                        "weights degenerate: again") == ["weights degenerate", "paths degenerate"]
    assert reason_kinds("CPU-time limit of 5 s exceeded (used 5.1 s)") == [
        "CPU-time limit of 5 s exceeded"]
    assert reason_kinds("ValueError: range() arg 3 must not be zero") == ["ValueError"]
    assert reason_kinds("") == reason_kinds(None) == []
    long = reason_kinds("x" * 200)[0]
    assert len(long) == KIND_CHARACTERS and long.endswith("…")


def test_the_summary_counts_each_status_not_ok_with_its_reasons():
    results = [("ok", ""), ("failed", "memory: 9 GB > 8 GB"), ("unreliable", "tail: k 0.9"),
               ("unreliable", "tail: k 1.2; spread: sd 2"), ("error", None),
               ("timeout", "CPU-time limit of 5 s exceeded (used 5.1 s)")]
    assert not_ok(results)[-1] == ("timeout", "CPU-time limit of 5 s exceeded (used 5.1 s)")
    assert not_ok_summary(results) == (
        "2 unreliable (tail ×2, spread), 1 timeout (CPU-time limit of 5 s exceeded), "
        "1 failed (memory), 1 error")
    assert not_ok_summary([("ok", "")]) == "" == not_ok_summary([])


def test_more_kinds_than_shown_are_counted():
    results = [("failed", f"E{i}: x") for i in range(5)]
    assert not_ok_summary(results) == "5 failed (E0, E1, E2, 2 other reasons)"
