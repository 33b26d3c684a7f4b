"""Jobs: one problem × method instance × budget × replicate, with a stable id.

The job key holds everything that determines a result: the problem's canonical spec, the
method's registry name (for a method file, its id `Class@<content hash>`: editing the file
makes new jobs) and full settings (defaults included), the budget, the replicate and
the sweep seed. The job id is the SHA-256 of the key's canonical JSON, and the job's random
stream is seeded from the same key (harness.core.seeding), so a result never depends on the worker
that ran it, nor on the order, nor on the sweep's name or its other jobs. Two sweeps that
share a job share its id (and its stored result). A tuning job's key also holds "kind": "tune"
and the tuning settings that determine its strategy's result
(harness.sweep.tune.TuneSettings.key_part); an estimate job's key has no "kind". A job split
into parts (the sweep's `parts`, for a method that can split: harness.execution.parts) has
"parts" in its key (the number asked of SplitsEstimates.split_budget); with parts = 1, or a
method that cannot split, the key has no "parts".

A user file's problem is keyed by its content and options (ProblemEntry.identity), not by its
path, so a moved data folder keeps its jobs. A store made before keyed them by the file's
spec (its absolute path): such a job keeps that former key and id in the store that holds it
(`keep_stored_keys`), so the store resumes, its results unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.core.seeding import key_digest
from harness.model.splitting import splits
from harness.sweep.feasibility import incompatible, memory_refusal, too_large_budgets
from harness.sweep.grid import MethodInstance
from harness.sweep.spec import Sweep


def job_key(problem: str, method: str, settings: dict[str, Any], budget: int, replicate: int,
            seed: int) -> dict[str, Any]:
    return {"problem": problem, "method": method, "settings": dict(settings),
            "budget": int(budget), "replicate": int(replicate), "seed": int(seed)}


@dataclass(frozen=True)
class Job:
    job_id: str
    key: dict[str, Any]
    sweep: str
    problem: str          # canonical spec (what the worker builds)
    problem_name: str     # Problem.name
    n_train: int
    n_test: int
    method: str           # registry name
    label: str            # instance name
    settings: dict[str, Any]
    budget_unit: str
    budget: int
    replicate: int
    seed: int
    time_limit: float | None
    kind: str = "estimate"         # or "tune"
    tune: dict[str, Any] | None = None   # a tune job's settings (TuneSettings.job_tune)
    method_file: dict[str, str] | None = None   # a method from a file: its source (plugin_file)
    memory_limit: int | None = None     # the sweep file's, bytes (else the worker's own)
    part_budgets: tuple[int, ...] = ()   # a split job's part budgets (empty: not split)
    former_key: dict[str, Any] | None = None   # a file problem's key by its path (module doc)

    def spec(self) -> dict[str, Any]:
        """The plain dict sent to a worker (harness.sweep.execute.run_job)."""
        return {"job_id": self.job_id, "key": self.key, "sweep": self.sweep,
                "problem": self.problem, "method": self.method, "settings": self.settings,
                "budget": self.budget, "replicate": self.replicate, "seed": self.seed,
                "time_limit": self.time_limit, "kind": self.kind, "tune": self.tune,
                **({"method_file": self.method_file} if self.method_file else {}),
                **({"memory_limit": self.memory_limit} if self.memory_limit else {})}


def split_plan(sweep: Sweep, method: MethodInstance, budget: int, n_train: int
               ) -> tuple[int, tuple[int, ...]]:
    """(parts asked for, part budgets) of a job: (1, ()) unless the sweep splits, the method
    can, and the budget makes more than one part (harness.execution.parts)."""
    from harness.execution.parts import part_budgets, resolve_parts
    from harness.plugins.registry import get_method

    if sweep.parts == 1:
        return 1, ()
    instance = get_method(method.name)(**method.settings)
    if not splits(instance):
        return 1, ()
    n = resolve_parts(instance, budget, n_train, sweep.parts)
    budgets = tuple(part_budgets(instance, budget, n)) if n > 1 else ()
    return (n, budgets) if len(budgets) > 1 else (1, ())


def skipped_pairs(sweep: Sweep, memory_limit: int | None = None) -> list[str]:
    """The reasons for every problem × method pair (or some of its budgets) that plan() leaves
    out: the method cannot run on the problem, or a job's memory estimate exceeds
    `memory_limit` bytes (a worker's; the sweep file's memory_limit takes precedence)."""
    limit = effective_limit(sweep, memory_limit)
    return [reason for p in sweep.problems for m in sweep.methods
            if (reason := incompatible(p, m) or memory_refusal(p, m, limit)) is not None]


def effective_limit(sweep: Sweep, memory_limit: int | None) -> int | None:
    """A worker's memory: the sweep file's memory_limit, else the cluster's."""
    return sweep.memory_limit if sweep.memory_limit is not None else memory_limit


def plan(sweep: Sweep, memory_limit: int | None = None) -> list[Job]:
    """Every job of the sweep, problem by problem (in file order), larger budgets first.

    Keeping a problem's jobs together lets each worker reuse the problem it has built; the
    larger budgets first shortens the tail of a sweep. Jobs that skipped_pairs reports are
    left out. A deterministic method (`Tags(stochastic=False)`) gets replicate 0 only: its other
    replicates would repeat it (and replicate 0's job id is the same as with every replicate).
    """
    jobs = []
    limit = effective_limit(sweep, memory_limit)
    strategies = sweep.tune.strategies if sweep.tune else (None,)
    for p in sweep.problems:
        over = {m.label: too_large_budgets(p, m, limit) for m in sweep.methods}
        for budget in sorted({b for m in sweep.methods for b in m.budgets}, reverse=True):
            for m in sweep.methods:
                if budget not in m.budgets or incompatible(p, m) or budget in over[m.label]:
                    continue
                for strategy in strategies:
                    for r in range(sweep.replicates_of(m)):
                        key = job_key(p.key, m.name, m.settings, budget, r, sweep.seed)
                        n_parts, budgets = split_plan(sweep, m, budget, p.n_train)
                        if budgets:
                            key["parts"] = n_parts
                        tune = None
                        if strategy is not None:
                            key.update(kind="tune", tune=sweep.tune.key_part(strategy, budget))
                            tune = sweep.tune.job_tune(strategy, budget)
                        jobs.append(Job(key_digest(key), key, sweep.name, p.spec, p.name,
                                        p.n_train, p.n_test, m.name, m.label, m.settings,
                                        m.budget_unit, budget, r, sweep.seed, sweep.time_limit,
                                        sweep.kind, tune, m.file, sweep.memory_limit,
                                        part_budgets=budgets,
                                        former_key=({**key, "problem": p.spec}
                                                    if p.key != p.spec else None)))
    return jobs


def keep_stored_keys(jobs: list[Job], stored: set[str]) -> tuple[list[Job], int]:
    """(jobs, how many kept a former key): a file problem's job that a store holds under its
    former key (by the file's path, before keys came from the content) and not under its own
    keeps the former key and id, so that store resumes with its results (module doc)."""
    kept = []
    for job in jobs:
        if job.former_key is not None and job.job_id not in stored \
                and (former := key_digest(job.former_key)) in stored:
            job = replace(job, job_id=former, key=job.former_key)
        kept.append(job)
    return kept, sum(a is not b for a, b in zip(jobs, kept, strict=True))


def former_keys_line(n: int) -> str:
    """The line that says `n` jobs kept their former keys (keep_stored_keys)."""
    return (f"{n} stored jobs of file problems keep the key of the file's path they were "
            "stored under (a store made before a file problem was keyed by its content): "
            "resumed as they are; a new store keys them by content")


def moved_files_lines(sweep: Sweep, jobs: list[Job], stored: set[str],
                      stored_problems: Callable[[], dict[str, dict[str, Any]]]) -> list[str]:
    """Why a store does not resume a file problem of the sweep: none of its jobs is stored,
    and the store holds a file problem of the same file name from another folder (keyed by
    that path when stored before file problems were keyed by content, or another file).
    `stored_problems()` gives the store's problem summaries by name (read only if needed)."""
    names = {p.name for p in sweep.problems}
    done = {j.problem_name for j in jobs if j.job_id in stored}
    lines: list[str] = []
    summaries = None
    for p in sweep.problems:
        path = (p.summary.get("params") or {}).get("path")
        if not p.identity or p.name in done or path is None:
            continue
        summaries = stored_problems() if summaries is None else summaries
        others = sorted(n for n, s in summaries.items() if n not in names
                        and s.get("family") == "file"
                        and Path(str((s.get("params") or {}).get("path"))).name == Path(path).name)
        if others:
            lines.append(f"not resumed: the store's results of {', '.join(others)} are not "
                         f"those of {p.name}: stored before a file problem was keyed by its "
                         "content, they are keyed by that path (or the file differs)")
    return lines
