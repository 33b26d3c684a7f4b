"""Tilting with its saddle point stopped early: which Newton decrement is harmless
(the threshold of harness.model.reliability.unconverged_saddle_point).

minimax-tilting with the saddle-point solver (harness.core.saddle_point) capped at 0, 1, 2, 4,
8 and 100 Newton steps, on problems with exact truth: one-factor covariances with every |d_i| =
1 - 1e-9 or 1 - 1e-13 and random signs (N = 10, 50; nearly singular), onefactor n = 100, the
hard one-factor n = 100, linear1d-p1, a rank-2 linear kernel and a small markov1d. Prints per
cap: converged, the decrement λ² and max |∇ψ| where the solver stopped, and per seed
(log Ẑ - log Z) / SE, Pareto k̂ and the status (o ok, u unreliable, f failed). The rule in
harness.model.reliability (unreliable when not converged with λ² > 1) comes from this table.

    python benchmarks/bench_saddle_caps.py [--budget 1000] [--seeds 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import reexec_without_coretype

SINGULAR = "onefactor:n={n},dmin={d},dmax={d},random_signs=true"
PROBLEMS = {
    "d=1-1e-9 N=10": SINGULAR.format(n=10, d="0.999999999"),
    "d=1-1e-13 N=10": SINGULAR.format(n=10, d="0.9999999999999"),
    "d=1-1e-9 N=50": SINGULAR.format(n=50, d="0.999999999"),
    "hard n=100": "onefactor:n=100,dmin=0.95,dmax=0.999,random_signs=true",
    "onefactor n=100": "onefactor:n=100",
    "linear1d-p1": "linear1d-p1",
    "rank-2 linear": "linear-lowrank:n_train=60,n_test=20,d=2,beta=9",
    "markov1d": "markov1d:n_train=150,rho=0.9,beta=1,n_test=10,seed=1",
}
CAPS = (0, 1, 2, 4, 8, 100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    reexec_without_coretype()
    warnings.simplefilter("ignore")

    import harness.engine.tilted_step as tw
    from harness.core.saddle_point import solve_saddle_point
    from harness.methods.minimax_tilting import MinimaxTilting
    from harness.plugins.specs import make_problem

    for name, spec in PROBLEMS.items():
        for cap in CAPS:
            make_problem.cache_clear()   # a fresh problem: no saddle point cached on it
            problem = make_problem(spec)
            truth = problem.truth.log_marginal_likelihood
            tw.solve_saddle_point = lambda L, cap=cap: solve_saddle_point(L, max_iter=cap)
            z, k_hat, status = [], [], ""
            for seed in range(args.seeds):
                est = MinimaxTilting().estimate(problem, args.budget,
                                                   np.random.default_rng(seed))
                d = est.diagnostics
                z.append(np.nan if est.log_marginal_likelihood is None else
                         (est.log_marginal_likelihood - truth) / est.log_marginal_likelihood_se)
                k_hat.append(d.get("pareto_k"))
                status += est.status[0]
            print(f"{name:16s} cap {cap:3d}  converged {d.get('saddle_converged')}  "
                  f"λ² {d.get('saddle_decrement', np.nan):8.2e}  "
                  f"|∇ψ| {d.get('saddle_residual', np.nan):8.2e}  z "
                  + " ".join(f"{v:+6.1f}" for v in z) + "  k̂ "
                  + " ".join("  - " if k is None else f"{k:+.2f}" for k in k_hat)
                  + f"  {status}", flush=True)


if __name__ == "__main__":
    main()
