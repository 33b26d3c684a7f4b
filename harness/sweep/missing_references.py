"""References an estimate sweep computes itself, for its problems with no truth (docs/design.md,
"References inside a sweep").

A problem without exact truth (a user's file, a data set) has its errors measured against a
reference (harness.references.compute): an unbiased method run in rounds of independent parts
until its standard errors are small, then checked against a second unbiased method. The report's
verdict can only judge a target the reference resolves (an error below REFERENCE_FACTOR
reference SEs cannot be told from zero), so a sweep computes, after its jobs and on its own
cluster, the reference of every problem that has neither truth nor a stored reference that
resolves the verdict's tightest targets (|Δ log Z| ≤ 0.01 nats, test MAE ≤ 1e-3):

    minimax-tilting, checked with sir; log Z SE ≤ SHARE × 0.01 nats and every test
    probability's SE ≤ SHARE × 1e-3 (SHARE = 1/4), at most MAX_CPU CPU seconds

and stores it in the store's references table, where `report` finds it. A reference stored
with these same settings is not computed again, whatever its status (a run that stopped at
its CPU limit would stop there again); `python -m harness reference` with other settings
replaces it. `sweep --no-reference` skips all this.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.model.reference_values import resolves, same_problem
from harness.sweep.grid import ProblemEntry
from harness.sweep.reference_kind import (
    ReferenceSettings,
    expected_record,
    is_stored,
)

LOG_Z_TARGET = 0.01     # the verdict's tightest targets (harness.analysis.verdict.TARGETS)
MAE_TARGET = 1e-3
SHARE = 0.25            # the reference's SE as a share of the target
MAX_CPU = 600.0         # CPU seconds of the reference method per problem

IN_SWEEP = ReferenceSettings(target_se=SHARE * LOG_Z_TARGET, target_test_se=SHARE * MAE_TARGET,
                             max_cpu=MAX_CPU)


def missing(problems: Sequence[ProblemEntry], stored: dict[str, dict[str, Any]], seed: int
            ) -> list[ProblemEntry]:
    """The problems that need a reference computed (module doc): no truth of their own (exact,
    shipped or beside their file), and no stored reference of the same problem that resolves
    the tightest targets or was computed with IN_SWEEP's settings."""
    out = []
    for p in problems:
        if p.summary.get("truth_kind"):
            continue
        record = stored.get(p.name)
        if record is not None and same_problem(p.summary, record) and (
                resolves(record, LOG_Z_TARGET, MAE_TARGET)
                or is_stored(record, expected_record(p.spec, IN_SWEEP, seed))):
            continue
        out.append(p)
    return out


def plan_line(problems: Sequence[ProblemEntry]) -> str:
    """One line for a sweep's plan: which problems get a reference computed, and to what."""
    from harness.references.compute import resolved_check_method

    names = ", ".join(p.name for p in problems)
    return (f"reference to compute for {len(problems)} problem(s) without truth ({names}): "
            f"{IN_SWEEP.method} to log Z SE {IN_SWEEP.target_se:g} and test SE "
            f"{IN_SWEEP.target_test_se:g} (a quarter of the verdict's tightest targets), "
            f"checked with {resolved_check_method(IN_SWEEP.method, IN_SWEEP.check_method)}, "
            f"at most {MAX_CPU:g} CPU s each; --no-reference skips it")


def compute_missing(store, problems: Sequence[ProblemEntry], seed: int, client,
                    out: Callable[[str], None], rounds: Callable[[str], None]
                    ) -> list[tuple[str, str]]:
    """Compute and store the references of `problems` (module doc) on `client`; each one's
    (status, reason), as harness.sweep.reference_kind.compute_into."""
    from harness.sweep.reference_kind import compute_into

    return compute_into(store, problems, lambda _spec: IN_SWEEP, seed, client, None,
                        out=out, rounds=rounds)
