"""Memory estimates (Method.memory_estimate, harness.model.footprint) against measured peaks.

Each job runs in a fresh process: the estimate's job part is compared with the runner's
peak_memory_mb (the estimate call), and its total with the whole job's resident peak (building
the problem, then prepare and estimate: VmHWM, reset after the build, minus the resident size
after the imports; the build's transient work is the problem family's business). Prints the
ratios estimate / measured; both should be >= 1 and not far above.

    python benchmarks/bench_memory_estimates.py [--n 2000] [--methods sov,ep,...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, re, sys
import numpy as np
from harness.model.footprint import job_memory
from harness.plugins.registry import get_method
from harness.execution.runner import run_one
from harness.plugins.specs import make_problem
import harness.methods.hmc, harness.methods.ess, harness.methods.sov  # noqa: imports, JIT
def status(field):
    return int(re.search(rf"^{field}:\s+(\d+) kB", open("/proc/self/status").read(),
                         re.M).group(1)) * 1024
spec, name, budget, settings = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
method = get_method(name).from_settings(settings)
method.prepare  # noqa
base = status("VmRSS")
problem = make_problem(spec)
open("/proc/self/clear_refs", "w").write("5")   # the build's own transients are not counted
record = run_one(problem, method, budget, np.random.default_rng(0))
whole = status("VmHWM") - base
est = job_memory(problem.summary(), method, budget)
print(json.dumps({"job_mb": record["peak_memory_mb"], "whole_mb": whole / 2**20,
                  "est_job_mb": est.job_bytes / 2**20, "est_total_mb": est.total_bytes / 2**20,
                  "status": record["status"], "breakdown": est.breakdown}))
"""

JOBS = {
    "sov": ("onefactor:n={n}", 3000, {}),
    "sov[reorder=univariate]": ("onefactor:n={n}", 2000, {"reorder": "univariate"}),
    "rejection-bootstrap": ("onefactor:n={n}", 3000, {}),
    "sir": ("onefactor:n={n}", 2000, {}),
    "sov-tlr": ("onefactor:n={n}", 3000, {}),
    "scipy-genz": ("onefactor:n={n}", 100, {}),
    "minimax-tilting": ("onefactor:n={m}", 1000, {}),
    "vb-meanfield": ("gauss2class:n_train={n},n_test=200", 2000, {}),
    "ep": ("gauss2class:n_train={n},n_test=200", 3, {}),
    "laplace": ("gauss2class:n_train={n},n_test=200", 5, {}),
    "ess": ("gauss2class:n_train={n},n_test=200", 20, {"skip": 1, "burn_in": 2}),
    "hmc": ("gauss2class:n_train={n},n_test=200", 10, {"skip": 1, "burn_in": 2,
                                                      "leapfrog_steps": 2}),
    "emcee": ("gauss2class:n_train={m},n_test=50", 6, {}),
}


def measure(label: str, n: int) -> dict:
    spec, budget, settings = JOBS[label]
    name = label.split("[")[0]
    spec = spec.format(n=n, m=max(n // 4, 100))
    out = subprocess.run([sys.executable, "-c", CHILD, spec, name, str(budget),
                          json.dumps(settings)], capture_output=True, text=True, check=True,
                         env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                              "PATH": "/usr/bin:/bin"})
    return {"label": label, "spec": spec, "budget": budget,
            **json.loads(out.stdout.strip().splitlines()[-1])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--methods", default=",".join(JOBS))
    args = ap.parse_args()
    print(f"{'method':26s} {'problem':40s} {'budget':>7s} {'job MB':>8s} {'est':>8s} "
          f"{'ratio':>6s} {'whole MB':>9s} {'est':>8s} {'ratio':>6s}")
    for label in args.methods.split(","):
        r = measure(label, args.n)
        print(f"{label:26s} {r['spec']:40s} {r['budget']:7d} {r['job_mb']:8.1f} "
              f"{r['est_job_mb']:8.1f} {r['est_job_mb'] / max(r['job_mb'], 1e-9):6.2f} "
              f"{r['whole_mb']:9.1f} {r['est_total_mb']:8.1f} "
              f"{r['est_total_mb'] / r['whole_mb']:6.2f}  {r['status']}", flush=True)


if __name__ == "__main__":
    main()
