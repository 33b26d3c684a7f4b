"""Exact GP regression: the optimiser against a brute-force grid on the sine example.

For the PRML example (n = 10 on [0, 0.7], noise sd 0.1) and the CLI's default (n = 30, noise sd
0.3), over --seeds data seeds: single-threaded CPU time and objective evaluations of
GaussianProcessRegressor.fit (RBF kernel and noise, L-BFGS-B from 1 + 4 starts) against a
coarse-to-fine grid over (ln α, ln β, ln σ²) (step 0.5 over the box, then 0.05 around its best
point), the gap in log evidence (optimiser − grid, >= 0 when the optimiser wins) and the largest
distance in θ between their maxima (in fine grid steps). A full grid of step 0.05 over the box
would have --full points; its time is extrapolated from the grid's time per point.

    python benchmarks/bench_gpr.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import blas_description, cpu_time, reexec_without_coretype

BOX = [(-6, 2), (-4, 3), (-9, 1)]   # ln α, ln β, ln σ²
FINE = 0.05


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    reexec_without_coretype()
    from harness.core.gpr import GaussianProcessRegressor, grid_maximum
    from harness.core.kernels import RBF
    from harness.datasets.sine import sine_data

    full = int(np.prod([round((high - low) / FINE) + 1 for low, high in BOX]))
    print(f"BLAS: {blas_description()}; full fine grid would have {full} points")
    print(f"{'data':<18} {'seed':>4} {'fit s':>7} {'evals':>6} {'grid s':>7} {'points':>7} "
          f"{'full s (extrap.)':>16} {'gap nats':>10} {'|Δθ|/step':>9}")
    for n, sd in ((10, 0.1), (30, 0.3)):
        for seed in range(args.seeds):
            X, t = sine_data(n=n, noise_sd=sd, seed=seed)
            gpr, fit_s = cpu_time(GaussianProcessRegressor(RBF(), noise=0.01, seed=0).fit, X, t)
            grid, grid_s = cpu_time(grid_maximum, X, t, RBF(), BOX, 0.5, FINE)
            gap = gpr.log_evidence_ - grid["log_evidence"]
            dist = np.max(np.abs(gpr.theta_ - grid["theta"])) / FINE
            print(f"n={n:<3} sd={sd:<9} {seed:>4} {fit_s:>7.3f} {gpr.evaluations_:>6} "
                  f"{grid_s:>7.3f} {grid['points']:>7} {grid_s / grid['points'] * full:>16.1f} "
                  f"{gap:>10.2e} {dist:>9.2f}")


if __name__ == "__main__":
    main()
