"""Results stores for tests: a store of real runs (real_store), and hand-made records and
problem summaries with known answers (record, summary, make_store) for the tests of the
analysis and of the report; one_line for commands that must fail in one line."""

from __future__ import annotations

TRUE_LZ = -10.0
TRUE_P = [0.25, 0.75]


def record(job_id, problem, method, budget, replicate=0, *, log_z=None, probs=None,
           status="ok", reason="", exact=True, cpu=1.0, unit="particles", n_train=20):
    """A hand-made job record."""
    return {
        "job_id": job_id, "sweep": "hand", "replicate": replicate, "problem_spec": problem,
        "sweep_seed": 0, "problem": problem, "method": method, "method_name": method.split("[")[0],
        "exact_method": exact, "budget": budget, "budget_unit": unit, "status": status,
        "reason": reason, "log_marginal_likelihood": log_z, "log_marginal_likelihood_se": None,
        "test_probabilities": probs, "cpu_seconds": cpu, "wall_seconds": cpu,
        "peak_memory_mb": 1.0, "n_train": n_train, "n_test": 0 if probs is None else len(probs),
    }


def summary(name, *, kind="exact", lz=TRUE_LZ, se=0.0, probs=TRUE_P, posterior=None,
            family="hand", n_train=20):
    """A hand-made problem summary (the truth TRUE_LZ, TRUE_P unless told)."""
    return {"name": name, "family": family, "params": {}, "description": "hand-made",
            "n_train": n_train, "n_test": len(probs or []), "n_features": 1, "kernel": None,
            "truth_kind": kind, "truth_source": "by hand",
            "true_log_marginal_likelihood": lz if kind else None,
            "true_log_marginal_likelihood_se": se if kind else None,
            "true_test_probabilities": probs if kind else None, "bayes_posterior": posterior}


def make_store(path, records, problems, metadata=None):
    """A store of these records and problem summaries, loaded (harness.analysis.aggregate)."""
    from harness.analysis import aggregate as agg
    from harness.execution.store import ResultStore

    with ResultStore(path) as st:
        for p in problems:
            st.add_problem(p)
        for r in records:
            st.add_record(r)
        for k, v in (metadata or {}).items():
            st.set_metadata(k, v)
    return agg.load(path)


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
