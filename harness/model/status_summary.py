"""Results that are not ok, in one line: how many of each status, with their reasons in brief.

The statuses a stored result may have: `ok`; `unreliable` (an answer the method's own
diagnostics call degenerate, harness.model.reliability); `timeout` (stopped at its CPU-time
limit); `failed` (no answer, with the method's reason, or a memory limit); `error` (the method
raised). A reason is one or more `kind: details` parts joined by '; ' (unreliable_reason); its
kinds (`reason_kinds`) are what the summary names, e.g. `sweep`'s

    not ok: 2 unreliable (weights degenerate ×2, weights heavy-tailed), 1 timeout (CPU-time
    limit of 5 s exceeded)

Whether a result is ok is its status alone: an approximation (Tags.exact False: laplace, ep,
vb-meanfield, the vecchia-* methods) that returns its answer is ok like any other.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

NOT_OK = ("unreliable", "timeout", "failed", "error")   # the order a summary names them in
KINDS_SHOWN = 3             # reasons named per status; the rest are counted
KIND_CHARACTERS = 60        # a longer kind (a reason without a 'kind:' head) is cut
_KIND_END = re.compile(r":| \(")


def reason_kinds(reason: str | None) -> list[str]:
    """The kinds of a stored reason, each once, in order: every '; '-separated part up to its
    first ':' or ' (' ('weights degenerate: ESS 1.0 ...; paths degenerate: ...' gives
    ['weights degenerate', 'paths degenerate']; 'CPU-time limit of 5 s exceeded (used 5.1 s)'
    gives ['CPU-time limit of 5 s exceeded']); [] for no reason."""
    kinds: list[str] = []
    for part in str(reason or "").split("; "):
        kind = _KIND_END.split(part, maxsplit=1)[0].strip()
        if len(kind) > KIND_CHARACTERS:
            kind = kind[:KIND_CHARACTERS - 1].rstrip() + "…"
        if kind and kind not in kinds:
            kinds.append(kind)
    return kinds


def not_ok(results: Iterable[tuple[str, str | None]]) -> list[tuple[str, str]]:
    """The (status, reason) pairs of `results` whose status is not ok."""
    return [(status, reason or "") for status, reason in results if status != "ok"]


def not_ok_summary(results: Iterable[tuple[str, str | None]]) -> str:
    """'2 unreliable (weights degenerate ×2), 1 failed (memory)' for the (status, reason)
    pairs of some results: the count of each status other than ok and its reasons' kinds
    (the KINDS_SHOWN most frequent, with how many results gave each when more than one);
    '' when every result is ok."""
    counts: Counter = Counter()
    kinds: dict[str, Counter] = {}
    for status, reason in not_ok(results):
        counts[status] += 1
        kinds.setdefault(status, Counter()).update(reason_kinds(reason))
    parts = []
    for status in sorted(counts, key=lambda s: (s not in NOT_OK, NOT_OK.index(s)
                                                if s in NOT_OK else 0, s)):
        common = kinds[status].most_common()
        named = [kind if n == 1 else f"{kind} ×{n}" for kind, n in common[:KINDS_SHOWN]]
        if len(common) > KINDS_SHOWN:
            named.append(f"{len(common) - KINDS_SHOWN} other reasons")
        parts.append(f"{counts[status]} {status}" + (f" ({', '.join(named)})" if named else ""))
    return ", ".join(parts)
