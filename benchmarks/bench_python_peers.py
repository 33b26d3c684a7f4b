"""The Python GP tools researchers use (PyMC, GPyTorch) beside the harness's methods, in one run.

markov1d (Matérn-1/2, exact truth by the forward-backward filter: docs/math.md §3e) with 50 test
points, rho = 0.9, beta = 1, at each N of --sizes (200, 1,000 and 4,000 by default). Each row:
a method at one budget through harness.execution.runner.run_one (CPU seconds of the timed call,
set-up CPU apart, peak extra memory of the call), with its log Z error against the truth
(dlogZ; '—' for a method that gives none), test MAE and max error, status and the diagnostics
that decide it. Methods: the peers pymc-nuts, pymc-smc and gpytorch-vgp (the `peers` extra:
pip install -e ".[peers]"; a missing one is skipped with a line) beside ep, laplace,
vb-meanfield, vecchia-tilting and minimax-tilting. Every run is stopped at --limit CPU seconds
(15 minutes); above N = 1,000, a method whose CPU time at the previous size,
scaled by its cost's power of N (SCALING), predicts more than --limit is skipped with a line.
PyTensor's C compilation runs in g++ child processes in `prepare`: not in these seconds.

    python benchmarks/bench_python_peers.py [--sizes 200,1000,4000] [--limit 900]
                                            [--methods pymc-smc,gpytorch-vgp]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness.core.errors import InputError
from harness.datasets.markov1d import markov1d
from harness.execution.runner import run_one
from harness.model.limits import Limits
from harness.plugins.registry import get_method

CASES = [   # (method, settings, budget)
    ("pymc-nuts", {}, 1000),
    ("pymc-smc", {}, 2000),
    ("gpytorch-vgp", {}, 500),
    ("ep", {}, 100),
    ("laplace", {}, 100),
    ("vb-meanfield", {}, 200),
    ("vecchia-tilting", {}, 10_000),
    ("minimax-tilting", {}, 10_000),
]
# how a method's CPU time grows with N, to predict the next size from the last
SCALING = {"pymc-nuts": 2, "pymc-smc": 3, "gpytorch-vgp": 3, "ep": 3, "laplace": 3,
           "vb-meanfield": 3, "vecchia-tilting": 1, "minimax-tilting": 2}


def row(n: int, name: str, budget: int, record: dict, truth) -> str:
    est = record.get("test_probabilities")
    err = (np.abs(np.asarray(est) - truth.test_probabilities)
           if est is not None and record["status"] in ("ok", "unreliable") else None)
    lz = record.get("log_marginal_likelihood")
    dlz = (f"{lz - truth.log_marginal_likelihood:+.4f}" if lz is not None else "—")
    se = record.get("log_marginal_likelihood_se")
    d = record.get("diagnostics") or {}
    said = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in d.items() if k in ("rhat_max", "ess_min", "chain_log_z_sd",
                                                   "particle_drift", "divergences", "stages",
                                                   "converged"))
    return (f"| {n:,} | {name} | {budget:,} | {dlz} | "
            f"{'—' if se is None else f'{se:.3g}'} | "
            f"{'—' if err is None else f'{err.mean():.2e}'} | "
            f"{'—' if err is None else f'{err.max():.2e}'} | {record['cpu_seconds']:.2f} | "
            f"{record.get('setup_cpu_seconds') or 0:.2f} | "
            f"{record.get('peak_memory_mb') or 0:.0f} | {record['status']}"
            f"{' (approx.)' if not record.get('exact_method', True) else ''} | {said} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,1000,4000")
    parser.add_argument("--limit", type=float, default=900.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--methods", default="",
                        help="comma-separated names from CASES to run (default: all)")
    args = parser.parse_args()
    chosen = set(args.methods.split(",")) if args.methods else {c[0] for c in CASES}
    unknown = chosen - {c[0] for c in CASES}
    if unknown:
        parser.error(f"unknown methods {sorted(unknown)}: choose from {[c[0] for c in CASES]}")
    print("| N | method | budget | dlogZ | SE | test MAE | test max | CPU s | set-up CPU s "
          "| peak MB | status | diagnostics |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    last: dict[str, tuple[int, float]] = {}
    for n in [int(s) for s in args.sizes.split(",")]:
        problem = markov1d(n_train=n, n_test=50, rho=0.9, beta=1.0)
        for name, settings, budget in [c for c in CASES if c[0] in chosen]:
            try:
                cls = get_method(name)
            except InputError as exc:
                print(f"skipped {name} at N = {n}: {exc}", flush=True)
                continue
            if name in last and n > 1000:   # N = 200 and 1,000 always run
                prev_n, prev_cpu = last[name]
                predicted = prev_cpu * (n / prev_n) ** SCALING[name]
                if predicted > args.limit:
                    print(f"skipped {name} at N = {n:,}: predicted {predicted:,.0f} CPU s "
                          f"from {prev_cpu:.1f} s at N = {prev_n:,} (limit {args.limit:g} s)",
                          flush=True)
                    continue
            method = cls.from_settings(settings)
            wall = time.time()
            record = run_one(problem, method, budget, np.random.default_rng(args.seed),
                             limits=Limits(time=args.limit))
            last[name] = (n, record["cpu_seconds"] + (record.get("setup_cpu_seconds") or 0))
            print(row(n, name, budget, record, problem.truth)
                  + ("" if record["status"] != "failed" and record["status"] != "error"
                     else f" {record.get('reason', '')}")
                  + f" <!-- wall {time.time() - wall:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
