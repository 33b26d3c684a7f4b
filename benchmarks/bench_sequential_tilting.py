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

Measured with the first-order twist, before any look-ahead (2 shared cores, budget 4,000,
rho 0.9; 10 seeds at N = 8,192, 8 at N = 32,768 with K = 20 and 1 with K = 40; the last row is
markov-p4, N = 4,096 with rho 0.95 and beta 2, 6 seeds):

    N       K   ok      logZ rms z  worst  test >3 SE  worst  sd z  sd log Ẑ_k  eff. K  lineages
    8192    10  10/10   1.39        -3.63  2.5 %       5.3    1.20  0.30        9.3     273
    8192    20  10/10   0.77        +1.64  0.8 %       3.4    1.02  0.36        17.8    294
    8192    40  10/10   1.19        -2.45  0.6 %       3.8    1.10  0.54        30.2    312
    32768   20  0/8 *   0.52        +0.69  1.6 %       5.4    1.21  0.84        10.7    108
    32768   40  0/1 *   0.18        +0.18  3.0 %       4.3    1.42  1.35        7.3     166
    p4      20  6/6     0.74        +1.23  3.2 %       4.9    1.13  0.42        17.6    240

    * flagged by the path rule (fewer than 5 % of the particles' first-variable ancestors
      left; harness.model.reliability.degenerate_paths) and, at K = 40, by the spread rule.
    The sd z column pools the runs' test z's; a t with K - 1 degrees of freedom has sd 1.13
    (K = 10), 1.06 (20), 1.03 (40).

With the Gaussian look-ahead over each block (docs/math.md §7b) against the first-order twist
alone, in one run (N = 8,192, 5 seeds; `--sizes 8192 --populations 10,20 --seeds 5`), and the
method alone at larger N (`--sizes 32768 --populations 20 --seeds 4 --twists block`; at 65,536
two seeds here and two through `minimax-tilting`'s default, the same walk):

    N     twist  K  ok  logZ rms z worst test >3 SE worst sd z sd log Ẑ_k lineages cpu s
    8192  block  10 5/5 0.81       +1.50 0.8 %      3.8   1.08 0.04       4000     9.9
    8192  linear 10 5/5 0.87       +1.40 3.8 %      5.3   1.29 0.30       277      9.2
    8192  block  20 5/5 0.84       +1.33 0.4 %      3.4   1.03 0.04       3996     10.1
    8192  linear 20 5/5 0.80       +1.64 1.0 %      3.4   1.03 0.34       288      9.8
    32768 block  20 4/4 0.62       +1.07 1.0 %      3.9   1.05 0.07       2958     41
    65536 block  20 4/4 1.13       +2.09 1.5 %      3.3   1.10 0.10       ~2330    101-133

    (medians of sd log Ẑ_k and lineages; at 65,536 2,303 and 2,325 in two runs, a median of
    2,360 in the other two.) The one-step look-ahead this replaced had, with
    K = 20: 785 lineages and sd 0.19 at N = 8,192; 252 and 0.40 at 32,768 (8 seeds, 1.0 %
    beyond 3 SE, worst 5.1); 194 and 0.80 at 65,536, where all 4 runs were flagged by the path
    rule, rightly (their test z's had sd up to 1.83). N = 65,536: 8 min 36 s wall for the
    whole process with two runs (problem, exact truth, set-up), 101-133 CPU s a run.
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
