"""The paper's Figures 1–2 on linear1d-p3 (N = 400): CPU time to a target accuracy.

For ESS+AIS, HMC+AIS (both at GPML's defaults apart from the budget: skip 40, burn-in 10,
3 AIS runs, temperatures = samples = the budget) and the soft-count rejection–bootstrap
sampler, walk up a ladder of budgets; at each budget run `--reps` seeds and record the mean
CPU seconds (thread time, one BLAS thread), the mean |Δ log Z| and the mean MAE of the test
probabilities against the exact oracle. The time to a target is the mean CPU time of the
first budget whose mean error meets it (Figure 2: |Δ log Z| <= 0.05; Figure 1: MAE <= 0.002).
A ladder stops once both targets are met or a single run takes more than --max-run-seconds;
a target not reached is reported as "> t" (a lower bound). Because the ladders are coarse
(factors 2–3) and the mean error of a few seeds is noisy, the time is also given interpolated
(log time linear in log error between the two budgets around the target). Everything is
measured in this one run, and the ratios ESS / new and HMC / new are printed (the paper:
about 10 for log Z).

Also prints the CPU time of GPML-default ESS (200 samples) on P3, corrected and gpml_compat,
for comparison with GPML's infMCMC under Octave (22–26 CPU s).

    python benchmarks/bench_paper_figures.py [--reps 4] [--max-run-seconds 60] \
        [--methods ess,hmc,rb]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import blas_description, cpu_time, reexec_without_coretype

LADDERS = {
    "ess": [25, 50, 100, 200, 400, 800, 1600, 3200, 6400],
    "hmc": [25, 50, 100, 200, 400, 800, 1600],
    "rb": [3000, 10000, 30000, 100000, 300000, 1000000, 3000000],
}


def make(name):
    from harness.methods.ess import EllipticalSlice
    from harness.methods.hmc import HamiltonianMC
    from harness.methods.rejection_bootstrap import RejectionBootstrap

    return {"ess": EllipticalSlice, "hmc": HamiltonianMC,
            "rb": lambda: RejectionBootstrap(count="soft")}[name]()


def interpolated(rows, key, target):
    """CPU seconds at which the mean error crosses the target, interpolating log time
    linearly in log error between the last rung above it and the first at or below it."""
    col = {"logz": 2, "mae": 3}[key]
    for prev, row in zip([None, *rows[:-1]], rows, strict=True):
        if row[col] <= target:
            if prev is None or prev[col] <= row[col]:
                return row[1]
            f = (np.log(prev[col]) - np.log(target)) / (np.log(prev[col]) - np.log(row[col]))
            return float(np.exp(np.log(prev[1]) + f * (np.log(row[1]) - np.log(prev[1]))))
    return None


def ladder(name, problem, reps, targets, max_run_seconds, log):
    from harness.core.metrics import mae

    method = make(name)
    method.prepare(problem)
    truth = problem.truth
    reached = {"logz": None, "mae": None}
    rows = []
    last = None
    for budget in LADDERS[name]:
        secs, dz, errs = [], [], []
        for seed in range(reps):
            est, s = cpu_time(method.estimate, problem, budget, np.random.default_rng(seed))
            secs.append(s)
            dz.append(abs(est.log_marginal_likelihood - truth.log_marginal_likelihood))
            errs.append(mae(est.test_probabilities, truth.test_probabilities))
        row = (budget, float(np.mean(secs)), float(np.mean(dz)), float(np.mean(errs)))
        rows.append(row)
        last = row
        log(f"  {name:>3} budget {budget:>8}: {row[1]:8.2f} s  |Δlog Z| {row[2]:.4f}"
            f"  MAE {row[3]:.5f}")
        for key, value in (("logz", row[2]), ("mae", row[3])):
            if reached[key] is None and value <= targets[key]:
                reached[key] = row
        if all(reached.values()) or max(secs) > max_run_seconds:
            break
    return reached, last, {k: interpolated(rows, k, targets[k]) for k in targets}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--max-run-seconds", type=float, default=60.0)
    parser.add_argument("--target-logz", type=float, default=0.05)
    parser.add_argument("--target-mae", type=float, default=0.002)
    parser.add_argument("--methods", default="rb,ess,hmc")
    parser.add_argument("--skip-defaults", action="store_true",
                        help="do not time GPML-default ESS at 200 samples")
    args = parser.parse_args()
    reexec_without_coretype()

    from harness.datasets.linear1d import FAMILY

    def log(msg):
        print(msg, flush=True)

    problem = FAMILY.make(FAMILY.presets["linear1d-p3"])
    log(f"linear1d-p3: N = {problem.n_train}, {problem.n_test} test points, "
        f"log Z = {problem.truth.log_marginal_likelihood:.4f}; BLAS: {blas_description()}")

    if not args.skip_defaults:
        from harness.methods.ess import EllipticalSlice

        for compat in (False, True):
            m = EllipticalSlice(gpml_compat=compat)
            m.prepare(problem)
            times = [cpu_time(m.estimate, problem, 200, np.random.default_rng(s))[1]
                     for s in range(3)]
            log(f"ESS+AIS at GPML defaults (200 samples, {'gpml_compat' if compat else 'corrected'}"
                f"): {np.mean(times):.2f} s CPU (runs: {', '.join(f'{t:.2f}' for t in times)});"
                f" GPML infMCMC/Octave: 22–26 s -> {22 / np.mean(times):.0f}–"
                f"{26 / np.mean(times):.0f}x")

    targets = {"logz": args.target_logz, "mae": args.target_mae}
    results = {}
    for name in args.methods.split(","):
        log(f"{name}: budgets {LADDERS[name]}, {args.reps} seeds each")
        results[name] = ladder(name, problem, args.reps, targets, args.max_run_seconds, log)

    def seconds(name, key, interp):
        reached, last, between = results[name]
        if interp and between[key] is not None:
            return between[key], ""
        if reached[key] is not None:
            return reached[key][1], ""
        return last[1], ">"

    for interp, what in ((False, "mean of the runs at the first budget that meets them"),
                         (True, "interpolated between the budgets around the target")):
        log(f"\nCPU seconds to the targets ({what}):")
        for key, label in (("logz", f"|Δ log Z| <= {args.target_logz} (Figure 2)"),
                           ("mae", f"MAE <= {args.target_mae} (Figure 1)")):
            parts = []
            for name in results:
                s, mark = seconds(name, key, interp)
                parts.append(f"{name} {mark}{s:.2f} s")
            log(f"  {label}: " + ", ".join(parts))
            if "rb" in results:
                base, base_mark = seconds("rb", key, interp)
                for name in results:
                    if name == "rb":
                        continue
                    s, mark = seconds(name, key, interp)
                    qual = ">" if mark and not base_mark else ("?" if base_mark else "")
                    log(f"    ratio {name} / rejection-bootstrap: {qual}{s / base:.2f}")


if __name__ == "__main__":
    main()
