"""Bias and spread of log Ẑ on the hard exact families.

For every exact method that estimates log Z (or those named with --methods), at each budget,
runs 10 seeds on linear-lowrank (d = 2, beta = 1 and beta = 9, N = 400), the hard one-factor
presets and three nearly singular one-factor problems (|d_i| = 1 - 1e-9 to 1 - 1e-13), and
prints a table of mean(log Ẑ) - log Z (bias), the standard deviation over seeds (spread),
bias / standard error of the mean, and, for the rejection–bootstrap sampler, the number of
distinct first-variable ancestors (path degeneracy).

    python benchmarks/bench_hard_exact.py [--budgets 1e4,1e5] [--seeds 10] [--methods a,b]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import cpu_time, reexec_without_coretype

PROBLEMS = ["lowrank-d2-beta1", "lowrank-d2-beta9", "onefactor-hard-n500", "onefactor-hard-n2000",
            # nearly singular: every |d_i| = 1 - 1e-9, 1 - 5e-11, 1 - 1e-13
            *(f"onefactor:n=10,dmin={d},dmax={d},random_signs=true"
              for d in ("0.999999999", "0.99999999995", "0.9999999999999"))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="1e4,1e5")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--methods", default="")
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    args = parser.parse_args()
    reexec_without_coretype()

    from harness.plugins.registry import get_method, methods
    from harness.plugins.specs import make_problem

    names = args.methods.split(",") if args.methods else [
        n for n, c in methods().items() if c.tags.exact and c.tags.estimates_log_z]
    budgets = [int(float(b)) for b in args.budgets.split(",")]
    print(f"{'problem':<22} {'method':<34} {'budget':>8} {'bias':>9} {'spread':>8} "
          f"{'bias/se':>8} {'cpu s':>7}  ancestors")
    for spec in args.problems.split(","):
        problem = make_problem(spec)
        truth = problem.truth.log_marginal_likelihood
        for name in names:
            cls = get_method(name)
            variants = [{"count": "soft"}, {"count": "hard"}] if name == "rejection-bootstrap" \
                else [{}]
            for settings in variants:
                method = cls(**settings)
                if not cls.tags.handles_orthant and problem.is_orthant:
                    continue
                for budget in budgets:
                    lz, cpu, anc = [], [], []
                    for seed in range(args.seeds):
                        est, sec = cpu_time(method.estimate, problem, budget,
                                            np.random.default_rng(seed))
                        cpu.append(sec)
                        if est.status == "ok":
                            lz.append(est.log_marginal_likelihood)
                            anc.append(est.diagnostics.get("distinct_ancestors", np.nan))
                    if len(lz) < 2:
                        print(f"{spec:<22} {method.label():<34} {budget:>8}  failed")
                        continue
                    lz = np.array(lz)
                    bias, sd = lz.mean() - truth, lz.std(ddof=1)
                    anc_text = "" if np.all(np.isnan(anc)) else f"{np.nanmean(anc):.0f}"
                    print(f"{spec:<22} {method.label():<34} {budget:>8} {bias:>9.4f} "
                          f"{sd:>8.4f} {bias / (sd / np.sqrt(len(lz))):>8.1f} "
                          f"{np.mean(cpu):>7.2f}  {anc_text}", flush=True)


if __name__ == "__main__":
    main()
