"""Minimax-tilting set-up against N, every ratio measured within this one run.

Set-up = univariate reordering (harness.core.reorder.pivoted_cholesky, blocked, ~ (2/3) N^3 flops)
+ the saddle point ∇ψ = 0 (harness.core.saddle_point). For each N, on one-factor problems (or the
2-D RBF orthant problem with --family rbf: uniform points in the unit square), one thread
of BLAS:

- reorder:   CPU seconds of the reordered factor; potrf: a plain LAPACK Cholesky of R, for scale;
- newton:    damped Newton with conjugate-gradient steps (the default): seconds, Newton steps,
             CG iterations, final max |∇ψ|;
- cholesky:  the same Newton steps solved by forming I + BᵀWB and a LAPACK Cholesky (O(N³) per
             step), for N <= --cholesky-max: the measurement behind the default;
- hybr:      the reference solver (MINPACK hybrj, dense 2(N-1) x 2(N-1) Jacobian), for
             N <= --hybr-max, with max |μ_newton - μ_hybr|;
- estimate:  log Z error against the exact truth in reported standard errors at --points points
             (one-factor only), to show the saddle point is the right one at every N.

The fitted exponents are least-squares slopes of log(seconds) against log(N) over N >= 1000
(over all N measured for the solvers run only at small N).

    python benchmarks/bench_tilting.py [--sizes 500,1000,2000,4000,8000,10000] [--family rbf]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import blas_description, cpu_time, reexec_without_coretype


def make_problem(family: str, N: int):
    from harness.datasets.onefactor import onefactor
    from harness.model.problem import Problem

    if family == "onefactor":
        return onefactor(n=N, seed=N)
    if family == "hard":
        return onefactor(n=N, seed=N, dmin=0.95, dmax=0.999, random_signs=True)
    from scipy.spatial.distance import cdist  # 2-D RBF orthant: uniform points, ℓ = 0.1, K + I
    X = np.random.default_rng(N).random((N, 2))
    R = np.exp(-cdist(X, X, "sqeuclidean") / (2 * 0.1**2))
    R[np.diag_indices(N)] += 1.0
    return Problem.orthant("rbf-orthant", R)


def fitted_exponent(sizes, seconds, from_n=1000) -> float:
    """Slope of log(seconds) on log(N) over N >= from_n (over every N if fewer than 2 there)."""
    pts = [(n, t) for n, t in zip(sizes, seconds, strict=True) if t and t > 0]
    if sum(n >= from_n for n, _ in pts) >= 2:
        pts = [(n, t) for n, t in pts if n >= from_n]
    if len(pts) < 2:
        return float("nan")
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def run_size(family: str, N: int, args) -> dict:
    import scipy.linalg

    from harness.core.memory import peak_memory
    from harness.core.saddle_point import solve_saddle_point, solve_saddle_point_hybr
    from harness.methods.minimax_tilting import MinimaxTilting
    from harness.model.ordered import ordered_problem

    problem = make_problem(family, N)
    row: dict = {"N": N}
    _, row["potrf"] = cpu_time(scipy.linalg.cholesky, problem.R, lower=True, check_finite=False)
    with peak_memory() as mem:
        op, row["reorder"] = cpu_time(ordered_problem, problem, "univariate")
        sp, row["newton"] = cpu_time(solve_saddle_point, op.chol)
    row["setup"] = row["reorder"] + row["newton"]
    row["setup_mb"] = mem.mb
    row["its"], row["cg"], row["res"] = sp.iterations, sp.cg_iterations, sp.residual
    row["converged"] = sp.converged
    if N <= args.cholesky_max:
        ch, row["cholesky"] = cpu_time(solve_saddle_point, op.chol, linear_solver="cholesky")
        row["chol_dmu"] = float(np.max(np.abs(ch.mu - sp.mu)))
    if N <= args.hybr_max:
        ref, row["hybr"] = cpu_time(solve_saddle_point_hybr, op.chol)
        row["dmu"] = float(np.max(np.abs(ref.mu - sp.mu)))
    if args.points and problem.truth is not None:
        method = MinimaxTilting()
        method.prepare(problem)   # cached: the set-up above is reused
        est, row["estimate"] = cpu_time(method.estimate, problem, args.points,
                                        np.random.default_rng(1))
        err = est.log_marginal_likelihood - problem.truth.log_marginal_likelihood
        row["z_err_se"] = err / est.log_marginal_likelihood_se
    return row


def fmt(value, spec=".2f", missing="-"):
    return missing if value is None else format(value, spec)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,1000,2000,4000,8000,10000")
    parser.add_argument("--family", default="onefactor", choices=("onefactor", "hard", "rbf"))
    parser.add_argument("--hybr-max", type=int, default=1000)
    parser.add_argument("--cholesky-max", type=int, default=2000)
    parser.add_argument("--points", type=int, default=1000,
                        help="QMC points of a tilting estimate per N (0: none)")
    args = parser.parse_args()
    reexec_without_coretype()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"BLAS: {blas_description()} (one thread); family {args.family}; "
          "thread CPU seconds", flush=True)
    head = (f"{'N':>6} {'reorder':>8} {'potrf':>6} {'newton':>7} {'steps/cg':>8} "
            f"{'|grad|':>7} {'set-up':>7} {'MB':>6} {'hybr':>7} {'hybr/nt':>7} {'|dmu|':>7} "
            f"{'chol-nt':>7} {'chol/cg':>7} {'est':>6} {'err/se':>6}")
    print(head)
    rows = []
    for N in sizes:
        with threadpool_limits(1):   # also while building: OpenBLAS 0.3.31's threaded dpotrf
            r = run_size(args.family, N, args)   # segfaults at N = 16384 on this machine
        rows.append(r)
        hybr, chol = r.get("hybr"), r.get("cholesky")
        print(f"{N:>6} {r['reorder']:>8.2f} {r['potrf']:>6.2f} {r['newton']:>7.3f} "
              f"{r['its']:>3}/{r['cg']:<4} {r['res']:>7.0e} {r['setup']:>7.2f} "
              f"{fmt(r['setup_mb'], '.0f'):>6} {fmt(hybr):>7} "
              f"{fmt(hybr and hybr / r['newton'], '.0f'):>7} {fmt(r.get('dmu'), '.0e'):>7} "
              f"{fmt(chol):>7} {fmt(chol and chol / r['newton'], '.0f'):>7} "
              f"{fmt(r.get('estimate')):>6} {fmt(r.get('z_err_se'), '+.1f'):>6}"
              + ("" if r["converged"] else "  NOT CONVERGED"), flush=True)
    print("fitted exponent of seconds against N (N >= 1000 where measured): "
          + ", ".join(f"{k} {fitted_exponent(sizes, [r.get(k) for r in rows]):.2f}"
                      for k in ("reorder", "potrf", "newton", "setup", "hybr", "cholesky")))
    big = rows[-1]
    print(f"at N = {big['N']}: set-up {big['setup']:.1f} s = reorder {big['reorder']:.1f} s "
          f"({big['reorder'] / big['setup']:.0%}; {big['reorder'] / big['potrf']:.1f}x a plain "
          f"Cholesky) + saddle point {big['newton']:.1f} s ({big['its']} Newton steps, "
          f"{big['cg']} CG iterations)")


if __name__ == "__main__":
    main()
