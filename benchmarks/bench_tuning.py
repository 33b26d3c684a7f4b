"""Hyperparameter tuning on the scaled linear kernel, against the exact optimum.

1. search: grid and explore-then-exploit over the scale of linear1d (K = scale x x^T,
   13 log-spaced points on [0.1, 100]) for each exact method: the CPU time to tune (sum of
   the evaluations' prepare + estimate CPU), the chosen scale, its distance from the exact
   optimum (harness.tuning.exact) in log units and in grid steps.
2. pseudo-marginal: emcee over log scale driven by each unbiased Ẑ on a small problem:
   posterior mean, sd and quantiles of log scale against the exact posterior (1-D oracle on
   a grid), with Monte Carlo standard errors from the integrated autocorrelation time, and
   the acceptance fraction (tau about the ensemble's mean: pseudo_marginal.integrated_time).

    python benchmarks/bench_tuning.py [--parts search,pm] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SPACE = {"scale": [0.1, 100.0, 13]}
# (method, settings, budget, explore budget): budgets where se(log Ẑ) is ~0.01-0.03 at N = 100
SEARCH = [("sov", {}, 8000, 500), ("minimax-tilting", {}, 1000, 100), ("sir", {}, 8000, 500),
          ("rejection-bootstrap", {}, 200_000, 5000),
          ("rejection-bootstrap", {"count": "hard"}, 200_000, 5000)]
PM = [("rejection-bootstrap", {"count": "hard"}, 500), ("sov", {}, 256),
      ("sir", {}, 256), ("minimax-tilting", {}, 128)]


def tune_job(spec, method, settings, budget, strategy, key, **tune):
    return {"job_id": key, "key": {"bench": key}, "sweep": "bench", "problem": spec,
            "method": method, "settings": settings, "budget": budget, "replicate": 0,
            "seed": 0, "time_limit": None, "kind": "tune",
            "tune": {"space": SPACE, "strategy": strategy, **tune}}


def prepare_seconds(record) -> float:
    return sum(e["prepare_cpu_seconds"] for e in record["evaluations"])


def part_search(args):
    from harness.tuning.exact import exact_surface
    from harness.tuning.job import run_tune_job
    from harness.tuning.space import TuneSpace

    space = TuneSpace.from_dict(SPACE)
    step = space.axes[0].log_step
    for spec in args.problems:
        surface = exact_surface(spec, space)
        opt = surface["optimum"]["scale"]
        print(f"\n== search: {spec}, exact optimum scale {opt:.4f} "
              f"(log Z {surface['optimum_log_z']:.4f}), grid step {step:.3f} log units ==")
        for method, settings, budget, explore in SEARCH[: 2 if args.quick else None]:
            for strategy, extra in (("grid", {}),
                                    ("explore-exploit", {"explore_budget": explore, "top_k": 3})):
                r = run_tune_job(tune_job(spec, method, settings, budget, strategy,
                                          f"{spec}-{method}-{settings}-{strategy}", **extra))
                if r["status"] != "ok":
                    print(f"  {r['method']:<34} {strategy:<16} {r['status']}: {r['reason']}")
                    continue
                d = np.log(r["chosen"]["scale"] / opt)
                print(f"  {r['method']:<34} {strategy:<16} CPU {r['cpu_seconds']:7.2f} s "
                      f"(prepare {prepare_seconds(r):.2f} s; {r['n_evaluations']} evaluations), "
                      f"chosen {r['chosen']['scale']:.4f}, "
                      f"distance {d:+.3f} ({abs(d) / step:.2f} steps)")


def part_pm(args):
    from harness.tuning.exact import exact_log_posterior, posterior_summary
    from harness.tuning.job import run_tune_job
    from harness.tuning.pseudo_marginal import integrated_time
    from harness.tuning.space import TuneSpace

    spec = "linear1d:n_train=40,n_test=0"
    space = TuneSpace.from_dict(SPACE)
    grid, log_density = exact_log_posterior(spec, space, 401)
    probs = (0.1, 0.5, 0.9)
    exact = posterior_summary(np.log(grid), log_density, probs)
    walkers, steps, burn = (12, 150, 50) if args.quick else (16, 400, 100)
    print(f"\n== pseudo-marginal: {spec}, {walkers} walkers x {steps} steps (burn {burn}) ==")
    print(f"  exact posterior of log scale: mean {exact['mean']:.3f}, sd {exact['sd']:.3f}, "
          f"quantiles " + ", ".join(f"{v:.3f}" for v in exact["quantiles"].values()))
    for method, settings, budget in PM[: 2 if args.quick else None]:
        r = run_tune_job(tune_job(spec, method, settings, budget, "pseudo-marginal",
                                  f"pm-{method}", walkers=walkers, steps=steps, burn=burn))
        if r["status"] != "ok":
            print(f"  {r['method']}: {r['status']}: {r['reason']}")
            continue
        chain = np.array(r["chain"]["samples"])[:, 0].reshape(steps - burn, walkers)
        x = chain.ravel()
        tau = integrated_time(chain)
        se = x.std() * np.sqrt(tau / x.size)
        ses = [e["log_z_se"] for e in r["evaluations"] if e["log_z_se"] is not None]
        print(f"  {r['method']:<34} budget {budget}: mean {x.mean():.3f} ± {se:.3f} "
              f"(z = {(x.mean() - exact['mean']) / se:+.2f}), sd {x.std():.3f}, quantiles "
              + ", ".join(f"{np.quantile(x, p):.3f}" for p in probs)
              + f"; acceptance {r['chain']['acceptance_fraction']:.2f}, tau {tau:.1f}, "
              f"median se(log Ẑ) {np.median(ses):.3f}, CPU {r['cpu_seconds']:.1f} s "
              f"(prepare {prepare_seconds(r):.1f} s) "
              f"({r['n_evaluations']} evaluations)")


def main():
    from threadpoolctl import threadpool_limits

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="search,pm")
    parser.add_argument("--problems", nargs="+", default=["linear1d:n_train=100,n_test=0"])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    with threadpool_limits(1):
        for part in args.parts.split(","):
            {"search": part_search, "pm": part_pm}[part](args)


if __name__ == "__main__":
    main()
