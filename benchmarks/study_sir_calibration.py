"""Small-budget calibration of `sir`'s standard errors: the measurement behind their t factor
(harness.core.qmc.t_coverage_factor; docs/math.md §7b, docs/studies.md "Small-budget
calibration").

`sir`'s standard errors come from the spread of K independent populations (10 of 100
particles at 10^3 points, 40 of 250 at 10^4), so z = (estimate - truth) / SE is a t with K - 1
degrees of freedom: P(|t_9| > 3) = 1.5 % where a normal gives 0.27 %. The SEs are now
multiplied by t_{K-1}^{-1}(Φ(2.5)) / 2.5 (1.246 for K = 10, 1.049 for 40), so that ±2.5 SE keeps
the normal coverage (and ±3 SE misses 0.46 % under t_9); the estimates are unchanged. Each
run here gives both: "after" is the reported SE, "before" the reported SE over the run's
`se_t_factor` (the SE without the factor, as the harness reported it before).

On the exact markov1d family (N = 2,000, rho 0.9, 50 test points, problem seed 1), per
configuration and budget over `--seeds` runs: the runs ok; among the ok runs the share of
(run, test point) pairs beyond 3 SE and the sd of the test z's, the sd and the largest |z| of
log Z, before -> after. Configurations (`--configs`):

  tilted      sir proposal=tilted on the problem in its interleaved order (the issue's case)
  sov         sir with its default proposal on the same problem (path-degenerate: flagged)
  sov-n500    sir default on markov1d N = 500, rho 0.9, in the given order (ok runs)
  mmt-n4096   minimax-tilting at N = 4,096 (its sequential walk: the same populations)
  vt-n4096    vecchia-tilting at N = 4,096 (its resampling walk; m = 60, companions for its
              approximation error: z's here are against the exact truth over the Monte Carlo SE)
  vsir-n4096  vecchia-sir at N = 4,096 (SOV proposal, resampled: path-degenerate, flagged)

    python benchmarks/study_sir_calibration.py [--seeds 30] [--budgets 1000,10000]
        [--configs tilted,sov,sov-n500,mmt-n4096,vt-n4096,vsir-n4096] [--first-seed 0]

The measured table is in docs/studies.md, "Small-budget calibration".
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from harness.core.qmc import t_coverage_factor
from harness.methods.minimax_tilting import MinimaxTilting
from harness.methods.sir import Sir
from harness.methods.vecchia_sir import VecchiaSir
from harness.methods.vecchia_tilting import VecchiaTilting
from harness.plugins.specs import make_problem

MARKOV = "markov1d:n_train={n},rho=0.9,beta=1.0,n_test=50,seed=1,order={order}"
CONFIGS = {
    "tilted": (lambda: Sir(proposal="tilted"), MARKOV.format(n=2000, order="interleave")),
    "sov": (lambda: Sir(), MARKOV.format(n=2000, order="interleave")),
    "sov-n500": (lambda: Sir(), MARKOV.format(n=500, order="as-given")),
    "mmt-n4096": (lambda: MinimaxTilting(), MARKOV.format(n=4096, order="interleave")),
    "vt-n4096": (lambda: VecchiaTilting(), MARKOV.format(n=4096, order="interleave")),
    "vsir-n4096": (lambda: VecchiaSir(), MARKOV.format(n=4096, order="interleave")),
}


def runs(config: str, budget: int, seeds: range) -> list[dict]:
    """Per seed: ok, K, the factor, the log Z error and SE after the factor, the test errors
    and SEs after it (a method without the factor: its SEs times t_coverage_factor(K))."""
    make, spec = CONFIGS[config]
    method, problem = make(), make_problem(spec)
    truth = problem.truth
    out = []
    with threadpool_limits(1):
        method.prepare(problem)
        for seed in seeds:
            est = method.estimate(problem, budget, np.random.default_rng([seed, 77]))
            if est.log_marginal_likelihood_se is None:
                continue
            k = est.diagnostics["randomisations"]
            applied = "se_t_factor" in est.diagnostics
            factor = est.diagnostics["se_t_factor"] if applied else t_coverage_factor(k)
            scale = 1.0 if applied else factor
            out.append({
                "ok": est.status == "ok", "K": k, "factor": factor, "applied": applied,
                "lz": est.log_marginal_likelihood - truth.log_marginal_likelihood,
                "lz_se": scale * est.log_marginal_likelihood_se,
                "test": est.test_probabilities - truth.test_probabilities,
                "test_se": scale * est.test_probabilities_se})
    return out


def summary(rows: list[dict], before: bool) -> tuple[float, float, float, float]:
    """(share of test z's beyond 3 SE, their sd, sd of log Z z, max |log Z z|) of the ok runs."""
    div = (lambda r: r["factor"]) if before else (lambda r: 1.0)
    zl = np.array([r["lz"] / (r["lz_se"] / div(r)) for r in rows])
    zt = np.concatenate([r["test"] / (r["test_se"] / div(r)) for r in rows])
    return (float(np.mean(np.abs(zt) > 3)), float(np.std(zt)), float(np.std(zl, ddof=1)),
            float(np.abs(zl).max()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="seeds first-seed .. first-seed + seeds - 1 (to run in pieces)")
    ap.add_argument("--budgets", default="1000,10000")
    ap.add_argument("--configs", default="tilted,sov,sov-n500")
    args = ap.parse_args()
    print("config      budget   K  factor  ok      test >3 SE         test z sd    "
          "log Z z sd    max |log Z z|   CPU s")
    for config in args.configs.split(","):
        for budget in map(int, args.budgets.split(",")):
            t0 = time.process_time()
            rows = runs(config, budget, range(args.first_seed, args.first_seed + args.seeds))
            cpu = time.process_time() - t0
            ok = [r for r in rows if r["ok"]]
            mark = " " if rows[0]["applied"] else "*"   # *: the factor not applied by the run
            head = (f"{config:10s} {budget:7d} {rows[0]['K']:3d}  {rows[0]['factor']:5.3f}{mark} "
                    f"{len(ok):3d}/{len(rows):<3d}")
            if len(ok) < 2:
                print(f"{head}  (no ok runs to judge: flagged by the run's own rules)"
                      f"{cpu:52.0f}", flush=True)
                continue
            b, a = summary(ok, True), summary(ok, False)
            print(f"{head}  {100 * b[0]:5.2f} -> {100 * a[0]:5.2f} %   {b[1]:4.2f} -> {a[1]:4.2f}"
                  f"  {b[2]:4.2f} -> {a[2]:4.2f}  {b[3]:5.2f} -> {a[3]:5.2f}   {cpu:6.0f}",
                  flush=True)


if __name__ == "__main__":
    main()
