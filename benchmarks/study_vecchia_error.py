"""The Vecchia methods' stated approximation error against their actual error (docs/studies.md,
"Vecchia approximation error"; docs/math.md §7a, §14).

For each problem, method and m (its default and a small one, and `ordering=given` on the
problem's interleaved order), over --seeds seeds at --budget points: the run without the
estimate (`approximation_error=none`, the Monte Carlo SE alone) and with it (the default):
statuses, the largest |log Ẑ - log Z| in units of the MC SE and of the stated total error
√(SE² + δ̂² + SE_ref²) (over the ok runs and over all), the test probabilities' mean |error|
over the mean stated total and their largest |error| / total (ok runs), and the CPU ratio of
the estimate with and without it (set-up and estimate, one BLAS thread). Truth: exact
(markov1d, one-factor, linear1d) or the shipped reference (gauss-p6: RBF; --large adds the
2-D Matérn-3/2 gauss2class-matern16k, ~10 CPU min).

    python benchmarks/study_vecchia_error.py [--budget 4000] [--seeds 3] [--large]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (spec, small m, orderings): "given" runs on the problem's own (interleaved) order
CASES = [
    ("markov1d:n_train=2000,n_test=50,rho=0.9", 5, ("auto", "given")),
    ("markov1d:n_train=4000,n_test=100,rho=0.99", 30, ("auto",)),
    ("onefactor:n=1000", 15, ("auto",)),
    ("linear1d-p3", 10, ("auto",)),
    ("gauss-p6", 15, ("auto",)),
]
LARGE = [("gauss2class-matern16k", 30, ("auto",))]


def truth(problem):
    """(log Z, test probabilities or None, the truth's SE, where from)."""
    if problem.truth is not None and problem.truth.kind == "exact":
        p = problem.truth.test_probabilities
        return (problem.truth.log_marginal_likelihood, p if p is not None and len(p) else None,
                0.0, "exact")
    import harness
    path = os.path.join(os.path.dirname(harness.__file__), "data", "references",
                        f"{problem.name}.json")
    with open(path) as f:
        ref = json.load(f)
    return (ref["log_marginal_likelihood"], np.asarray(ref["test_probabilities"]),
            ref["log_marginal_likelihood_se"], "shipped reference")


def timed(method, problem, budget, seed):
    t0 = time.process_time()
    method.prepare(problem)
    setup = time.process_time() - t0
    t0 = time.process_time()
    est = method.estimate(problem, budget, np.random.default_rng(seed))
    return est, setup, time.process_time() - t0


def row(problem, cls, m, ordering, budget, seeds, z, probs, ref_se) -> str:
    before, after, test, cpu, statuses = [], [], [], [], []
    ok_after = []
    for seed in range(seeds):
        with warnings.catch_warnings():   # ordering=given's warning: the table says it
            warnings.simplefilter("ignore")
            plain, s0, e0 = timed(cls(m=m, ordering=ordering, approximation_error="none"),
                                  problem, budget, seed)
            est, s1, e1 = timed(cls(m=m, ordering=ordering), problem, budget, seed)
        assert est.log_marginal_likelihood == plain.log_marginal_likelihood   # unchanged
        cpu.append((s0, e0, s1, e1))
        statuses.append(est.status)
        err = abs(est.log_marginal_likelihood - z)
        se = est.log_marginal_likelihood_se
        total = np.sqrt(se**2 + (est.approximation_error or 0.0)**2 + ref_se**2)
        before.append(err / np.hypot(se, ref_se))
        after.append(err / total)
        if est.status == "ok":
            ok_after.append(err / total)
        if probs is not None and est.status == "ok":
            e = np.abs(est.test_probabilities - probs)
            tot = np.hypot(est.test_probabilities_se, est.test_approximation_error)
            test.append((e.mean() / tot.mean(), float(np.max(e / tot))))
    s0, e0, s1, e1 = (sum(c[i] for c in cpu) for i in range(4))
    ok = statuses.count("ok")
    first = (f"{max(ok_after):5.2f}" if ok_after else "    –") + f" {max(after):6.2f}"
    tests = (f"{max(t[0] for t in test):5.2f} {max(t[1] for t in test):6.2f}" if test
             else "    –      –")
    return (f"{cls.name:16} {m:4d} {ordering:6} {ok}/{seeds} ok  {max(before):7.1f}  {first}  "
            f"{tests}  {(s1 + e1) / max(s0 + e0, 1e-9):5.2f} ({e1 / max(e0, 1e-9):4.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", type=int, default=4000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--methods", default="vecchia-tilting,vecchia-sov,vecchia-sir")
    args = ap.parse_args()
    from harness.engine.vecchia_factor import DEFAULT_M
    from harness.methods.vecchia_sir import VecchiaSir
    from harness.methods.vecchia_sov import VecchiaSov
    from harness.methods.vecchia_tilting import VecchiaTilting
    from harness.plugins.specs import make_problem

    classes = [c for c in (VecchiaTilting, VecchiaSov, VecchiaSir)
               if c.name in args.methods.split(",")]
    print(f"budget {args.budget}, {args.seeds} seeds. err/SE: the largest |log Ẑ - log Z| / "
          "MC SE (without the estimate); err/tot: / the stated total (ok runs, all runs); "
          "test: mean|err| / mean total, max |err| / total (ok runs); CPU: with / without "
          "(set-up + estimate; estimate alone)")
    with threadpool_limits(1):
        for spec, small, orderings in CASES + (LARGE if args.large else []):
            problem = make_problem(spec)
            z, probs, ref_se, source = truth(problem)
            print(f"\n{spec} (N = {problem.n_train}, {source})")
            print(f"{'method':16} {'m':>4} {'order':6} status  err/SE  err/tot(ok, all)  "
                  f"test(mean, max)  CPU ratio")
            for ordering in orderings:
                ms = (small, DEFAULT_M) if ordering == "auto" else (10, DEFAULT_M)
                for m in ms:
                    for cls in classes:
                        print(row(problem, cls, m, ordering, args.budget, args.seeds, z,
                                  probs, ref_se), flush=True)


if __name__ == "__main__":
    main()
