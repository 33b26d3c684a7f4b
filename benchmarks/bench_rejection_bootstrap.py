"""Soft/hard-count rejection–bootstrap sampler against the floor.

Times the sampler at M particles on an N-dimensional one-factor problem and, in the same run,
the floor: one log_ndtr and one normal draw per particle-dimension plus a float64 matrix
product of M*N^2 flops, all single-threaded. Prints sampler / floor (target <= 3).

    python benchmarks/bench_rejection_bootstrap.py [--particles 1e5] [--dim 1000]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import blas_description, cpu_time, floor_seconds, reexec_without_coretype


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=float, default=1e5)
    parser.add_argument("--dim", type=int, default=1000)
    parser.add_argument("--counts", default="soft,hard")
    args = parser.parse_args()
    reexec_without_coretype()

    from harness.datasets.onefactor import onefactor
    from harness.methods.rejection_bootstrap import RejectionBootstrap

    M, N = int(args.particles), args.dim
    problem = onefactor(n=N, seed=0)
    print(f"M = {M}, N = {N}; BLAS: {blas_description()}")
    floor = floor_seconds(M, N)
    print("floor: " + ", ".join(f"{k} {v:.2f} s" for k, v in floor.items()))
    for count in args.counts.split(","):
        method = RejectionBootstrap(count=count)
        est, seconds = cpu_time(method.estimate, problem, M, np.random.default_rng(1))
        err = abs(est.log_marginal_likelihood - problem.truth.log_marginal_likelihood)
        ratio = seconds / floor["total"]
        print(f"{count:>4} count: {seconds:.2f} s CPU, ratio to floor {ratio:.2f}"
              f"  (|log error| {err:.3g}, chunks {est.diagnostics['chunks']},"
              f" block {est.diagnostics['block_size']})")


if __name__ == "__main__":
    main()
