"""Helpers of the store tests (test_store.py, test_store_integrity.py) and of the report tests
that need a small store of real runs."""

from __future__ import annotations


def one_line(capsys) -> str:
    """The command's stderr, which must be one line and no traceback."""
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def real_store(path, specs, methods, budgets, replicates, sweep="small", metadata=None,
               skip=lambda problem, method: False):
    """A store of real runs (harness.execution.runner.run_one, seeded from each job's key) of
    every method instance on every problem spec at every budget and replicate, but the
    (problem, method) pairs `skip` names; returns its path."""
    from harness.core.seeding import rng_for
    from harness.execution.runner import run_one
    from harness.execution.store import ResultStore
    from harness.plugins.specs import make_problem

    with ResultStore(path) as store:
        for key, value in (metadata or {}).items():
            store.set_metadata(key, value)
        for spec in specs:
            problem = make_problem(spec)
            store.add_problem(problem.summary())
            for m in methods:
                if skip(problem, m):
                    continue
                for b in budgets:
                    for rep in range(replicates):
                        key = {"problem": problem.name, "method": m.label(), "budget": b, "r": rep}
                        store.add_record(run_one(
                            problem, m, b, rng_for(key), job_id=f"{spec}-{m.label()}-{b}-{rep}",
                            replicate=rep, sweep=sweep, problem_spec=spec, sweep_seed=0))
    return path
