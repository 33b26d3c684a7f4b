"""How many randomisations an SOV-family standard error needs: the measurement behind
`randomisations = 0` (harness.core.qmc.auto_randomisations, minimax-tilting's default).

The standard error of log Ẑ and of each test probability comes from the spread of K independent
randomisations, so z = (estimate - truth) / SE behaves like a Student t with K - 1 degrees of
freedom: with K = 10, P(|t_9| > 3) = 1.5 % per number, and half the runs have one of 50 test
probabilities beyond 3 SE even when every SE is right. With heavy-tailed weights (Pareto k̂
0.5-1) the low tail is worse. For each seed this runs `minimax-tilting` once with K = 40
randomisations on the exact markov1d family and keeps the per-randomisation sums (SovSums); the
same sums grouped 4 and 2 at a time are the estimates with K = 10 and 20 from the same points
(a group of randomisations is one randomisation of their union), so the three K are compared
on identical samples. Printed per (N, rho, budget, K): the RMS and minimum of z for log Z, the
runs with |z| > 3, the share of (run, test point) pairs beyond 3 SE, the runs with any test
point beyond 3 SE, the worst |z|, and the median Pareto k̂ (above 1 the run is `unreliable`
whatever K: harness.model.reliability). For reference, with exact t_{K-1} SEs: a test point
beyond 3 SE with probability 1.5 % (K = 10), 0.74 % (20), 0.47 % (40); any of 50 in 53 %, 31 %,
21 % of runs.

    python benchmarks/bench_randomisations.py [--sizes 2000] [--rhos 0.9,0.99]
        [--budgets 1000,10000] [--seeds 30]

Measured (2 shared cores, 30 seeds, N = 2,000; 8 seeds at 10^5, 10 at N = 8,192):

    N     rho   budget  K   logZ rms z  |z|>3  test >3 SE  runs any>3  max|z|  k̂ median
    2000  0.9   1e3    10   1.21        1      2.4 %       20/30       8.0     0.77
    2000  0.9   1e3    40   1.04        0      1.4 %       11/30       4.4
    2000  0.9   1e4    10   1.57        1      1.5 %       18/30       7.2     0.64
    2000  0.9   1e4    40   1.18        0      0.5 %        7/30       3.8
    2000  0.99  1e4    10   1.39        1      1.8 %       15/30       6.5     0.58
    2000  0.99  1e4    40   1.30        1      0.7 %        8/30       3.7
    2000  0.9   1e5    10   1.18        0      2.2 %        5/8        5.0     0.54
    2000  0.9   1e5    40   1.18        0      0.5 %        1/8        4.2
    8192  0.9   1e4    40   3.68        5      14.4 %       8/10      26.8     1.57 (all unreliable)
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.special import logsumexp

from harness.engine.randomisations import SovSums, sov_run
from harness.methods.minimax_tilting import MinimaxTilting
from harness.plugins.specs import make_problem

K_MAX = 40


def grouped(sums: SovSums, g: int) -> SovSums:
    """The same points as K / g randomisations: each g consecutive ones pooled into one."""
    k = len(sums.sizes) // g
    return SovSums(sums.sizes.reshape(k, g).sum(axis=1),
                   logsumexp(sums.log_w.reshape(k, g), axis=1),
                   logsumexp(sums.log_wf.reshape(k, g, -1), axis=1),
                   sums.log_w2, sums.max_log_w, sums.chunks, sums.top_log_w, sums.lineages)


def z_scores(sums: SovSums, truth, g: int) -> tuple[float, np.ndarray, float | None]:
    run = sov_run(grouped(sums, g))
    z = (run.log_z - truth.log_marginal_likelihood) / run.log_z_se
    return z, (run.test - truth.test_probabilities) / run.test_se, run.pareto_k


def study(n: int, rho: float, budget: int, seeds: int) -> None:
    problem = make_problem(f"markov1d:n_train={n},rho={rho},beta=1.0,n_test=50,seed=1")
    method = MinimaxTilting(randomisations=K_MAX, walk="importance")
    factor = method.set_up(problem)[0]
    runs = [method.sums(problem, budget, np.random.default_rng([seed, 77]), factor)
            for seed in range(seeds)]
    for g in (4, 2, 1):
        rows = [z_scores(s, problem.truth, g) for s in runs]
        z = np.array([r[0] for r in rows])
        zt = np.array([r[1] for r in rows])
        k = [r[2] for r in rows if r[2] is not None]
        any_off = int(np.sum((np.abs(zt) > 3).any(axis=1)))
        print(f"{n:6d} {rho:5.2f} {budget:8d} {K_MAX // g:3d}   {np.sqrt(np.mean(z ** 2)):5.2f} "
              f"{z.min():+6.2f} {int(np.sum(np.abs(z) > 3)):4d}   "
              f"{100 * np.mean(np.abs(zt) > 3):5.1f} % {any_off:3d}/{seeds:<3d} "
              f"{np.abs(zt).max():6.1f}   {np.median(k) if k else float('nan'):.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2000")
    ap.add_argument("--rhos", default="0.9,0.99")
    ap.add_argument("--budgets", default="1000,10000")
    ap.add_argument("--seeds", type=int, default=30)
    args = ap.parse_args()
    print("     N   rho   budget   K   logZ: rms z  min z  |z|>3   test: >3 SE  runs any>3  "
          "max|z|   k̂ median")
    for n in map(int, args.sizes.split(",")):
        for rho in map(float, args.rhos.split(",")):
            for budget in map(int, args.budgets.split(",")):
                study(n, rho, budget, args.seeds)


if __name__ == "__main__":
    main()
