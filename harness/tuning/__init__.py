"""Hyperparameter tuning of GPC problems by maximising, or sampling with, log Ẑ (docs/math.md §12).

space            log-spaced grids over problem parameters; with_params, check_space
evaluate         one recorded evaluation of a method at a parameter point (what CPU counts)
strategies       grid search and explore-then-exploit
pseudo_marginal  emcee over the log-parameters driven by an unbiased Ẑ
exact            the exact log Z surface, its optimum and the exact posterior (exact families)
job              run_tune_job: the worker entry point of a sweep's `tune` job

A job spec is an estimate job's dict plus "kind": "tune" and "tune": {"space": {name: [low,
high, num]}, "strategy": "grid" | "explore-exploit" | "pseudo-marginal", "explore_budget",
"top_k", "walkers", "steps"[, "burn"]}; the record lists every evaluation, the chosen point,
the total CPU of the evaluations and, for pseudo-marginal, the chain.
"""
