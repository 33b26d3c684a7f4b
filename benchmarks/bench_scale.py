"""Cost against N at large N: every exact method that fits, in one run.

For N = 4,096 … 65,536 (x2; --sizes or --min-n/--max-n to limit), on one-factor problems
(exact truth, docs/math.md §3a) and 2-D RBF problems (gauss2class, judged by the consensus of the
methods at that N, docs/math.md §3d), each method runs once through harness.execution.runner.run_one
in a fresh process (so that its peak resident memory is its own, problem and set-up included):

    build s        building the problem (and its exact truth)
    set-up CPU s   Method.prepare: factorisation, compression, reordering, saddle point
    estimate CPU s the runner's thread CPU time of the estimate; per sample = / budget
    peak RSS MB    the job process's resident high-water mark (VmHWM), everything included
    error, SE      |log Ẑ − log Z| (truth, or consensus for RBF) and the reported SE
    × sov          the method's set-up + estimate CPU over dense sov's at the same N

then the fitted exponents p of set-up CPU, estimate CPU and peak RSS ~ N^p (least squares on
log–log, harness.report.scaling.fit_exponent), as Markdown tables. A method whose memory
estimate exceeds --memory-limit is not run and says why (harness.model.footprint, from the problem's
summary: structured problems hold O(N), the dense K, R and L are counted by the methods that
read them).

    python benchmarks/bench_scale.py                                  # the full range (hours)
    python benchmarks/bench_scale.py --sizes 1024,2048,4096 --budget 1000     # a quick check
    python benchmarks/bench_scale.py --families onefactor --methods sov-tlr,sov --max-n 16384
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

METHODS = ("sov-tlr", "sov", "sir", "minimax-tilting", "rejection-bootstrap", "ess", "hmc")
FAMILIES = {
    "onefactor": "onefactor:n={n},seed={seed}",
    "rbf": "gauss2class:n_train={n},n_test={n_test},d=2,alpha=0.5,beta=1.0,seed={seed}",
}


# ---- one job, in its own process ----------------------------------------------------------
def _vm_hwm_mb() -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_job(job: dict) -> dict:
    """Build the problem, run the method once through run_one; plain results."""
    from threadpoolctl import threadpool_limits

    from harness.core.seeding import rng_for
    from harness.execution import runner
    from harness.plugins.registry import get_method
    from harness.plugins.specs import make_problem

    with threadpool_limits(1):
        t0 = time.thread_time()
        problem = make_problem(job["spec"])
        build = time.thread_time() - t0
        method = get_method(job["method"])()
    rng = rng_for({"bench": "scale", **job})
    rec = runner.run_one(problem, method, job["budget"], rng)
    truth = problem.truth
    return {
        **job, "status": rec["status"], "reason": rec.get("reason", ""),
        "build_seconds": build,
        "setup_cpu_seconds": rec.get("setup_cpu_seconds"),
        "cpu_seconds": rec["cpu_seconds"], "peak_rss_mb": _vm_hwm_mb(),
        "estimate_peak_mb": rec.get("peak_memory_mb"),
        "log_z": rec.get("log_marginal_likelihood"),
        "log_z_se": rec.get("log_marginal_likelihood_se"),
        "true_log_z": (truth.log_marginal_likelihood
                       if truth is not None and truth.kind == "exact" else None),
    }


# ---- planning -----------------------------------------------------------------------------
def refusal(method_name: str, summary: dict, budget: int, limit: int) -> str | None:
    """Why this job is not run: the method cannot take the problem, or it does not fit."""
    from harness.model.footprint import format_bytes, too_large
    from harness.plugins.registry import get_method

    method = get_method(method_name)
    if summary.get("kernel") is None and not method.tags.handles_orthant:
        return "needs data and a kernel (a pure orthant problem)"
    est = too_large(summary, method(), budget, limit)
    return None if est is None else (f"needs {est.describe()}; limit {format_bytes(limit)}")


def spawn(job: dict, timeout: float) -> dict:
    """run_job in a fresh interpreter; a crash, a kill or a timeout is a row with a reason."""
    cmd = [sys.executable, os.path.abspath(__file__), "--one", json.dumps(job)]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {**job, "status": "timeout", "reason": f"wall time > {timeout:g} s"}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return {**job, "status": "crashed", "reason": f"exit {out.returncode}: {tail}"}
    return {**json.loads(lines[-1]), "wall_seconds": time.perf_counter() - t0}


# ---- tables -------------------------------------------------------------------------------
def _f(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return f"{x:.{digits}g}"


def add_errors(rows: list[dict]) -> None:
    """|log Ẑ − log Z| against the truth, else against the median of the methods at that N."""
    by_n: dict[tuple[str, int], list[float]] = {}
    for r in rows:
        if r.get("status") == "ok" and r.get("log_z") is not None:
            by_n.setdefault((r["family"], r["n"]), []).append(r["log_z"])
    for r in rows:
        ref = r.get("true_log_z")
        r["against"] = "truth"
        if ref is None:
            values = by_n.get((r["family"], r["n"]), [])
            ref = statistics.median(values) if len(values) >= 2 else None
            r["against"] = "consensus"
        ok = r.get("status") == "ok" and r.get("log_z") is not None and ref is not None
        r["error"] = abs(r["log_z"] - ref) if ok else None


def markdown(rows: list[dict], methods: list[str]) -> str:
    from harness.report.scaling import fit_exponent

    out = []
    for family in dict.fromkeys(r["family"] for r in rows):
        fam = [r for r in rows if r["family"] == family]
        against = fam[0].get("against", "truth")
        out += [f"\n### {family} (error against {against})\n",
                "| N | method | build s | set-up CPU s | estimate CPU s | µs per sample | "
                "peak RSS MB | log Ẑ | SE | error | error / SE | × sov | status |",
                "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        sov = {r["n"]: r for r in fam if r["method"] == "sov" and r.get("status") == "ok"}
        for r in sorted(fam, key=lambda r: (r["n"], methods.index(r["method"]))):
            ok = r.get("status") == "ok"
            total = (r.get("setup_cpu_seconds") or 0) + (r.get("cpu_seconds") or 0)
            base = sov.get(r["n"])
            ratio = (total / ((base.get("setup_cpu_seconds") or 0) + base["cpu_seconds"])
                     if ok and base else None)
            se, err = r.get("log_z_se"), r.get("error")
            out.append("| " + " | ".join([
                str(r["n"]), r["method"], _f(r.get("build_seconds")),
                _f(r.get("setup_cpu_seconds")), _f(r.get("cpu_seconds")),
                _f(1e6 * r["cpu_seconds"] / r["budget"]) if ok else "—",
                _f(r.get("peak_rss_mb"), 4), _f(r.get("log_z"), 8), _f(se, 2), _f(err, 2),
                _f(err / se, 2) if ok and err is not None and se else "—", _f(ratio, 3),
                "ok" if ok else f"{r.get('status')}: {r.get('reason', '')}"[:120]]) + " |")
        out += [f"\n**Fitted exponents, {family}** (y ~ N^p, least squares on log–log):\n",
                "| method | set-up CPU | estimate CPU | peak RSS | sizes |",
                "|---|---:|---:|---:|---:|"]
        for m in methods:
            ok = [r for r in fam if r["method"] == m and r.get("status") == "ok"]
            if not ok:
                continue
            n = [r["n"] for r in ok]
            fits = [fit_exponent(n, [r.get(k) or math.nan for r in ok])
                    for k in ("setup_cpu_seconds", "cpu_seconds", "peak_rss_mb")]
            out.append(f"| {m} | " + " | ".join(f.text() for f in fits) + f" | {len(ok)} |")
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", help="comma-separated N (default: --min-n … --max-n, x2)")
    p.add_argument("--min-n", type=int, default=4096)
    p.add_argument("--max-n", type=int, default=65536)
    p.add_argument("--families", default="onefactor,rbf")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--budget", type=int, default=10_000)
    p.add_argument("--n-test", type=int, default=100, help="test points of the RBF problems")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--memory-limit", default="8GB", help="skip jobs estimated above this")
    p.add_argument("--timeout", type=float, default=3600.0, help="wall seconds per job")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(run_job(json.loads(args.one))), flush=True)
        return 0
    from benchmarks.common import blas_description, reexec_without_coretype

    reexec_without_coretype()
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes else
             [args.min_n * 2**k for k in range(64) if args.min_n * 2**k <= args.max_n])
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    from harness.model.footprint import parse_bytes
    from harness.plugins.specs import make_problem

    limit = parse_bytes("--memory-limit", args.memory_limit)
    print(f"# bench_scale: N = {sizes}, budget {args.budget}, memory limit "
          f"{args.memory_limit}; BLAS: {blas_description()} (one thread)", flush=True)
    rows = []
    for family in families:
        for n in sizes:
            n_test = 0 if family == "onefactor" else args.n_test
            spec = FAMILIES[family].format(n=n, n_test=n_test, seed=args.seed)
            summary = make_problem(spec).summary()   # structured: O(N) to build
            for m in methods:
                job = {"family": family, "n": n, "spec": spec, "method": m,
                       "budget": args.budget, "seed": args.seed}
                why = refusal(m, summary, args.budget, limit)
                row = ({**job, "status": "not run", "reason": why} if why
                       else spawn(job, args.timeout))
                rows.append(row)
                print(f"  {family} N={n} {m}: {row['status']}"
                      + (f", set-up {_f(row.get('setup_cpu_seconds'))} s, estimate "
                         f"{_f(row.get('cpu_seconds'))} s, peak {_f(row.get('peak_rss_mb'), 4)} MB"
                         if row["status"] == "ok" else f" ({row.get('reason', '')[:100]})"),
                      flush=True)
    add_errors(rows)
    print(markdown(rows, methods))
    return 0


if __name__ == "__main__":
    sys.exit(main())
