"""
Two methods against the truth: error per CPU second
===================================================

The question the harness answers: which exact method gives the most accuracy per CPU second?
On ``linear1d-p1`` (a linear-kernel GPC problem of the paper, with exact log Z and exact test
probabilities, docs/math.md §3b) we run ``sov`` and ``minimax-tilting`` at three budgets and
two seeds, and plot the error in log Z and in the test probabilities against the CPU time.
A sweep does the same at scale and in parallel (``python -m harness sweep``).
"""

import matplotlib.pyplot as plt

import harness

problem = "linear1d-p1"
rows = []
for method in ("sov", "minimax-tilting"):
    for budget in (300, 1000, 3000):
        for seed in (0, 1):
            r = harness.estimate(problem, method, budget=budget, seed=seed)
            rows.append((method, budget, seed, r.cpu_seconds, r.abs_log_error, r.mae))
            print(f"{method:>16} budget {budget:>5} seed {seed}: |Δ log Z| {r.abs_log_error:.1e}"
                  f", MAE {r.mae:.1e}, {r.cpu_seconds:.3f} CPU s, {r.status}")

# %%
# Each point is one run; lower and further left is better.

fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
for method, marker in (("sov", "o"), ("minimax-tilting", "s")):
    mine = [row for row in rows if row[0] == method]
    for ax, column in zip(axes, (4, 5), strict=True):
        ax.scatter([row[3] for row in mine], [row[column] for row in mine], marker=marker,
                   label=method)
for ax, what in zip(axes, ("|log Ẑ − log Z|", "MAE of the test probabilities"), strict=True):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("CPU seconds")
    ax.set_ylabel(what)
    ax.legend()
fig.suptitle(problem)
fig.tight_layout()
