"""
Estimate log Z where the exact answer is known
==============================================

The one-factor family (``onefactor``) has orthant covariances R = d dᵀ + diag(1 − d²), whose
probability P(v ≥ 0) the harness computes exactly by 1-D quadrature (docs/math.md §3a). So
every estimate can be set beside the truth: here ``sov`` (separation of variables) at four
budgets, with its standard error.
"""

import matplotlib.pyplot as plt

import harness

problem = "onefactor:n=100,seed=1"
budgets = [300, 1000, 3000, 10000]
runs = [harness.estimate(problem, "sov", budget=b, seed=0) for b in budgets]

truth = runs[0].true_log_marginal_likelihood
for b, r in zip(budgets, runs, strict=True):
    print(f"budget {b:>6}: log Z {r.log_marginal_likelihood:.4f} "
          f"± {r.log_marginal_likelihood_se:.4f} (exact {truth:.4f}), "
          f"{r.cpu_seconds:.2f} CPU s, status {r.status}")

# %%
# The estimates with two standard errors, and the exact value: the error bars shrink as
# 1/√budget and cover the truth.

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.errorbar(budgets, [r.log_marginal_likelihood for r in runs],
            yerr=[2 * r.log_marginal_likelihood_se for r in runs], fmt="o", capsize=3,
            label="sov ± 2 SE")
ax.axhline(truth, color="k", lw=1, ls="--", label="exact (quadrature)")
ax.set_xscale("log")
ax.set_xlabel("budget (quasi-Monte Carlo points)")
ax.set_ylabel("log Z")
ax.set_title(problem)
ax.legend()
fig.tight_layout()
