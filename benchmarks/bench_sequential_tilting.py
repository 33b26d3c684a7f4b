"""How many populations the sequential tilted walk needs (`sir` with proposal 'tilted', and
`minimax-tilting` from N = 2,048): the measurement behind sir's `randomisations = 0`
(harness.engine.resampled_walk.Resampled.randomisations_for, populations of about 200
particles) and docs/math.md §7b.

The standard errors come from the spread of K independent populations, so z = (estimate -
truth) / SE behaves at best like a Student t with K - 1 degrees of freedom (a test point beyond
3 SE with probability 1.5 % for K = 10, 0.74 % for 20, 0.47 % for 40), and each population's
log Ẑ_k spreads more the fewer particles it holds (variance ~ N / particles), which makes the
SE noisier still. For each (N, K) this runs `sir` with the tilted proposal on the exact markov1d
family (rho, 100 test points) over seeds and prints: the runs ok, the RMS and worst z of log Z,
the share of (run, test point) pairs beyond 3 SE, the worst test |z|, the sd of the test z's,
and the medians of the populations' sd of log Ẑ_k, of the effective populations and of the
first-variable lineages.

    python benchmarks/bench_sequential_tilting.py [--sizes 8192,32768] [--populations 10,20,40]
        [--budget 4000] [--rho 0.9] [--seeds 10] [--twists block,linear]

`--twists`: 'block' is the method as it is, 'linear' the first-order twist alone (the step
ignores the walk's blocks: no Gaussian look-ahead; docs/math.md §7b), in the same run.

The results (N = 8,192 to 65,536, K = 10 to 40, first-order twist against the block
look-ahead): docs/studies.md, "Populations of the sequential tilted walk".
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import cpu_time

TWISTS = ("block", "linear")


@contextmanager
def twisted(kind: str):
    """'block' (the method as it is) or 'linear': the first-order twist alone, without the
    Gaussian look-ahead over each block (docs/math.md §7b), by having the step ignore the
    walk's announcement of its blocks."""
    from harness.engine.tilted_step import TiltStep

    if kind == "block":
        yield
        return
    enter = TiltStep.enter_block
    TiltStep.enter_block = lambda self, i0, i1, W, D: None
    try:
        yield
    finally:
        TiltStep.enter_block = enter


def study(problem, K: int, budget: int, seeds: int, twist: str) -> None:
    from harness.methods.sir import Sir

    truth = problem.truth
    method = Sir(proposal="tilted", randomisations=K)
    method.prepare(problem)
    method.estimate(problem, 400, np.random.default_rng(0))   # once-per-problem work, untimed
    zl, zt, sdk, keff, lineages, ok, cpu = [], [], [], [], [], 0, 0.0
    for seed in range(seeds):
        with twisted(twist):
            est, seconds = cpu_time(method.estimate, problem, budget,
                                    np.random.default_rng(seed))
        d = est.diagnostics
        cpu += seconds
        ok += est.status == "ok"
        zl.append((est.log_marginal_likelihood - truth.log_marginal_likelihood)
                  / est.log_marginal_likelihood_se)
        zt.append((est.test_probabilities - truth.test_probabilities) / est.test_probabilities_se)
        sdk.append(d["log_z_randomisation_sd"])
        keff.append(d["randomisations_effective"])
        lineages.append(d["ancestor_lineages"])
    zl, zt = np.array(zl), np.concatenate(zt)
    worst = zl[np.argmax(np.abs(zl))]
    print(f"{problem.n_train:7d} {twist:>10} {K:3d} {ok:3d}/{seeds:<3d} "
          f"{np.sqrt(np.mean(zl ** 2)):6.2f} {worst:+7.2f} "
          f"{100 * np.mean(np.abs(zt) > 3):6.1f} % {np.abs(zt).max():6.1f} {zt.std():6.2f} "
          f"{np.median(sdk):8.2f} {np.median(keff):7.1f} {np.median(lineages):9.0f} "
          f"{cpu / seeds:7.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8192,32768")
    parser.add_argument("--populations", default="10,20,40")
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--rho", type=float, default=0.9)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--twists", default=",".join(TWISTS),
                        help="block (the method), linear (the first-order twist alone)")
    args = parser.parse_args()
    from harness.plugins.specs import make_problem

    print("      N      twist   K  ok      logZ rms z  worst  test>3SE  worst  sd z  sd logZk   "
          "eff.K  lineages  cpu s/run")
    for n in (int(s) for s in args.sizes.split(",")):
        problem = make_problem(f"markov1d:n_train={n},n_test=100,rho={args.rho}")
        for K in (int(k) for k in args.populations.split(",")):
            for twist in args.twists.split(","):
                if twist not in TWISTS:
                    parser.error(f"--twists: {twist!r} is not one of {', '.join(TWISTS)}")
                study(problem, K, args.budget, args.seeds, twist)


if __name__ == "__main__":
    main()
