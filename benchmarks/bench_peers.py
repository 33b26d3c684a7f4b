"""The R peers side by side with the harness's methods, on the same problems.

Two orthant problems, P(v >= 0) with v ~ N(0, R), at each size N of --sizes (seed --seed):
  onefactor  R = d dᵀ + diag(1 - d²), d ~ U(-0.99, 0.99) (the harness family `onefactor`):
             exact log P by 1-D quadrature (docs/math.md §3a);
  matern32   N points uniform in the unit square, R = K + I with the Matérn-3/2 kernel of
             range 0.1 as the R packages write it, K(r) = (1 + r / 0.1) exp(-r / 0.1): no exact
             truth, so every row's error (in combined SEs) is against the harness's
             `minimax-tilting` at --yardstick-factor times the budget (--yardstick-set).
Each method runs in a process of its own, measured alike (os.wait4: user + system CPU of the
whole process, problem and set-up included, and its peak resident memory): the harness's
`minimax-tilting`, `sov-tlr` (reorder=kdtree on matern32), `sir`, `vecchia-sov` and
`vecchia-tilting` through harness.api.estimate; R's tlrmvnmvt (tile-low-rank QMC), VeccTMVN
(Vecchia SOV with minimax tilting) and TruncatedNormal (Botev's minimax tilting), each in its
own `Rscript`, at their defaults except the sample size, matched to --budget points
(tlrmvnmvt N = budget / 20 with antithetic twins, VeccTMVN 12 × budget / 12, TruncatedNormal
B = budget). A run whose expected peak memory (the harness's memory estimate, or PEER_MEMORY)
exceeds --max-gb is skipped, saying so, and every run's data segment is capped at --max-gb.
Reported errors: the harness's SE of log P; tlrmvnmvt's SE of P over P; VeccTMVN's and
TruncatedNormal's the same quantity computed in log space from what their samplers return
(their own errors underflow once P < 1e-154). tlrmvnmvt has no error when the expected log P
is below -700 (it runs with uselog2 = TRUE).

The peers: R, the Debian packages of their dependencies (r-base-core, r-base-dev, r-cran-rcpp,
r-cran-rcppeigen, r-cran-rcpparmadillo, r-cran-bh, r-cran-matrix, r-cran-truncnorm,
r-cran-nleqslv, r-cran-fields, r-cran-fnn, r-cran-spam, r-cran-numderiv; libopenblas0-serial
for a one-thread BLAS), then each remaining package built from source with `R CMD INSTALL
--library=DIR SOURCE` (sparseinv, GpGp, GPvecchia, qrng, spacefillr, alabama, then
TruncatedNormal, tlrmvnmvt, VeccTMVN), DIR named by R_LIBS_USER. A missing peer is skipped
with one line.

    nice python benchmarks/bench_peers.py [--sizes 1000] [--budget 10000] [--max-gb 16]
        [--problems onefactor,matern32] [--methods ...] [--set METHOD:KEY=VALUE]
        [--peers ...] [--yardstick-value=LOG_P,SE] [--timeout 7200]

The results at N = 16,384 and 1,000, and what they show: docs/studies.md, "The R peers at
N = 16,384".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import blas_description, run_measured

PROBLEMS = ("onefactor", "matern32")
RHO = 0.1                     # the Matérn-3/2 range as the R packages write it: (1 + r/ρ) e^{-r/ρ}
ALPHA = RHO * math.sqrt(3.0)  # the same kernel as the harness writes it: (1 + √3 r/α) e^{-√3 r/α}
METHODS = ("minimax-tilting", "sov-tlr", "sir", "vecchia-sov", "vecchia-tilting")
SETTINGS = {("sov-tlr", "matern32"): {"reorder": "kdtree"}}
PEERS = ("tlrmvnmvt", "VeccTMVN", "TruncatedNormal")
SMALL_LOG_P = -700.0              # below: P is near the end of double precision (1e-308)
# peak resident bytes ≈ base + dense × 8 N² (when the peer gets the dense R: TruncatedNormal
# always, the others on one-factor) + per_point × 8 N × budget: fitted to runs at N = 1,000 and
# 2,000 with budget 10⁴ (TruncatedNormal 0.58 and 1.38 GB on one-factor; VeccTMVN 4 × 8 N²
# there, and 9.59 GB on one-factor at N = 16,384, 4.3 × 8 N², in two runs on two days)
PEER_MEMORY = {"TruncatedNormal": (0.1e9, 21.0, 4.0), "tlrmvnmvt": (0.1e9, 3.5, 0.25),
               "VeccTMVN": (0.3e9, 4.5, 0.1)}

R_SCRIPT = r"""
# bench_peers.py's R side: one peer on one orthant problem, P(v >= 0), v ~ N(0, R).
# args: peer kind n budget inputs rho small seed; prints "RESULT log_p se_log_p points note".
args <- commandArgs(trailingOnly = TRUE)
peer <- args[1]; kind <- args[2]; n <- as.integer(args[3]); budget <- as.numeric(args[4])
rho <- as.numeric(args[6]); small <- args[7] == "1"; set.seed(as.integer(args[8]))
suppressPackageStartupMessages(library(peer, character.only = TRUE))
x <- readBin(args[5], "double", n = if (kind == "onefactor") n else 2L * n)
locs <- if (kind == "onefactor") NULL else matrix(x, n, 2)
dense <- function() {   # d d' + diag(1 - d^2), or Matérn-3/2 K + I from the points
  if (is.null(locs)) { S <- tcrossprod(x); diag(S) <- 1; return(S) }
  S <- as.matrix(dist(locs)) / rho
  S <- (1 + S) * exp(-S); diag(S) <- 2; S
}
log_mean <- function(lw) {   # log mean(exp(lw)) and its SE: sd / sqrt(count) / mean
  w <- exp(lw - max(lw)); c(max(lw) + log(mean(w)), sd(w) / sqrt(length(w)) / mean(w))
}
zero <- rep(0, n); inf <- rep(Inf, n); note <- "-"
if (peer == "tlrmvnmvt") {
  N <- max(100, ceiling(budget / 20)); points <- 20 * N
  alg <- tlrmvnmvt::TLRQMC(N = N)   # tile size m = 64, truncation epsl = 1e-4 (defaults)
  p <- if (is.null(locs)) tlrmvnmvt::pmvn(zero, inf, sigma = dense(), uselog2 = small,
                                          algorithm = alg)
       else tlrmvnmvt::pmvn(zero, inf, uselog2 = small, algorithm = alg, geom = locs,
                            kernelType = "matern", para = c(1, rho, 1.5, 1))
  if (small) { log_p <- p * log(2); se <- NA; note <- "uselog2:no-error-reported" }
  else { log_p <- log(p); se <- attr(p, "error") / p }
} else if (peer == "VeccTMVN") {
  level2 <- ceiling(budget / 12); points <- 12 * level2
  # its sampler returns the 12 level-1 estimates as (mantissa, exponent): keep them
  trace("sample_psi_idea5_cpp", where = asNamespace("VeccTMVN"), print = FALSE,
        exit = quote(assign("psi", returnValue(), envir = globalenv())))
  p <- if (is.null(locs)) VeccTMVN::pmvn(zero, inf, 0, sigma = dense(), NLevel1 = 12,
                                         NLevel2 = level2, retlog = TRUE)
       else VeccTMVN::pmvn(zero, inf, 0, locs = locs, covName = "matern15_isotropic",
                           covParms = c(1, rho, 1), NLevel1 = 12, NLevel2 = level2,
                           retlog = TRUE)
  r <- log_mean(log(psi[[1]]) + psi[[2]]); log_p <- r[1]; se <- r[2]
  if (abs(log_p - p) > 1e-6 * (1 + abs(p))) note <- sprintf("its-retlog-says-%.6f", p)
} else {
  points <- budget
  # its sampler (mvnpr) leaves the log weights in p just before p = exp(p): keep them
  body_steps <- as.list(body(get("mvnpr", asNamespace("TruncatedNormal"))))
  at <- which(vapply(body_steps, function(e) paste(deparse(e), collapse = "") == "p = exp(p)",
                     TRUE))
  if (length(at) == 1)
    trace("mvnpr", at = at, where = asNamespace("TruncatedNormal"), print = FALSE,
          tracer = quote(assign("lw", as.vector(p), envir = globalenv())))
  p <- TruncatedNormal::pmvnorm(mu = zero, sigma = dense(), lb = zero, ub = inf, B = budget,
                                type = "mc")
  if (exists("lw")) { r <- log_mean(lw); log_p <- r[1]; se <- r[2] }
  else { log_p <- log(p); se <- attr(p, "relerr"); note <- "its-own-relerr" }
}
cat(sprintf("RESULT %.12g %.6g %d %s\n", log_p, se, as.integer(points), note))
"""


# ---- problems ---------------------------------------------------------------------------
def build(kind: str, n: int, seed: int):
    """The harness Problem, and the array that describes it to R (d, or the points)."""
    if kind == "onefactor":
        from harness.datasets.onefactor import onefactor

        problem = onefactor(n=n, seed=seed)
        return problem, problem.cov.d
    from harness.core.kernels import Matern32
    from harness.model.problem import Problem

    X = np.random.default_rng(seed).uniform(size=(n, 2))
    # every label +1: R = K + I, built from the points tile by tile (nothing dense here)
    problem = Problem(name=f"matern32-{n}", X_train=X, y_train=np.ones(n, dtype=np.int8),
                      X_test=np.empty((0, 2)), kernel=Matern32(alpha=ALPHA, beta=1.0))
    return problem, X


def harness_job(job: dict) -> dict:
    """In the child: one harness method on one problem (harness.api.estimate)."""
    import harness
    from harness.core.errors import InputError

    problem, _ = build(job["kind"], job["n"], job["seed"])
    try:
        r = harness.estimate(problem, job["method"], budget=job["budget"], seed=job["seed"],
                             memory_limit=f"{job['max_gb']}GB", **job["settings"])
    except InputError as e:
        return {"skipped": str(e)}
    diagnostics = r.to_dict().get("diagnostics") or {}
    return {"log_p": r.log_marginal_likelihood, "se": r.log_marginal_likelihood_se,
            "status": r.status, "reason": r.reason or "",
            "points": int(diagnostics.get("randomisations", 1)
                          * diagnostics.get("points_per_randomisation", job["budget"])),
            "setup_cpu": r.setup_cpu_seconds, "estimate_cpu": r.cpu_seconds}


# ---- running ----------------------------------------------------------------------------
def child_env() -> dict:
    """One thread for every BLAS and OpenMP pool of a child (R's and numpy's)."""
    env = dict(os.environ)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[key] = "1"
    return env


def run_harness(job: dict, timeout: float) -> dict:
    m = run_measured([sys.executable, os.path.abspath(__file__), "--child", json.dumps(job)],
                     timeout=timeout, env=child_env(), data_limit_gb=job["max_gb"])
    row = {"cpu": m["cpu"], "wall": m["wall"], "peak_gb": m["peak_gb"]}
    if m["timeout"]:
        return {**row, "status": "timeout", "reason": f"killed after {timeout:.0f} s wall"}
    lines = m["stdout"].strip().splitlines()
    if m["rc"] or not lines:
        return {**row, "status": "error", "reason": last_line(m["stderr"])}
    out = json.loads(lines[-1])
    if "skipped" in out:
        return {"status": "skipped", "reason": out["skipped"]}
    return {**row, **out}


def last_line(text: str) -> str:
    lines = [s for s in text.strip().splitlines() if s.strip()]
    return lines[-1].strip() if lines else "no output"


def peer_gb(peer: str, kind: str, n: int, budget: int) -> float:
    """Expected peak memory of a peer's run, GB (PEER_MEMORY)."""
    base, dense, per_point = PEER_MEMORY[peer]
    if not (peer == "TruncatedNormal" or kind == "onefactor"):
        dense = 0.0   # tlrmvnmvt and VeccTMVN build the Matérn covariance from the points
    return (base + 8.0 * n * n * dense + 8.0 * n * budget * per_point) / 1e9


def run_peer(peer: str, kind: str, n: int, budget: int, inputs: str, script: str, *,
             small: bool, seed: int, max_gb: float, timeout: float) -> dict:
    need = peer_gb(peer, kind, n, budget)
    if need > max_gb:
        return {"status": "skipped", "reason": f"expected peak {need:.3g} GB > --max-gb "
                f"{max_gb:g} (PEER_MEMORY)"}
    argv = ["Rscript", "--vanilla", script, peer, kind, str(n), str(budget), inputs,
            repr(RHO), "1" if small else "0", str(seed)]
    m = run_measured(argv, timeout=timeout, env=child_env(), data_limit_gb=max_gb)
    row = {"cpu": m["cpu"], "wall": m["wall"], "peak_gb": m["peak_gb"]}
    if m["timeout"]:
        return {**row, "status": "timeout", "reason": f"killed after {timeout:.0f} s wall"}
    result = [s for s in m["stdout"].splitlines() if s.startswith("RESULT ")]
    if m["rc"] or not result:
        return {**row, "status": "error", "reason": last_line(m["stderr"] or m["stdout"])}
    _, log_p, se, points, note = result[-1].split(" ", 4)
    log_p, se = float(log_p), (None if se == "NA" else float(se))
    note = "" if note == "-" else note.replace("-", " ").replace(":", ": ")
    if not math.isfinite(log_p):
        return {**row, "status": "failed", "points": int(points),
                "reason": f"log P = {log_p} (P below the double range)"}
    return {**row, "status": "ok", "log_p": log_p, "se": se, "points": int(points),
            "reason": note}


def available_peers(wanted) -> list[str]:
    """The peers R can load (R_LIBS_USER respected); one line for each one skipped."""
    if shutil.which("Rscript") is None:
        print(f"skipped: {', '.join(wanted)}: R not found (no Rscript on PATH; module doc says "
              "how to install R and the peers)")
        return []
    found = []
    for peer in wanted:
        ok = subprocess.run(["Rscript", "--vanilla", "-e",
                             f"suppressPackageStartupMessages(library({peer}))"],
                            capture_output=True, text=True, env=child_env(), check=False)
        if ok.returncode:
            said = (ok.stderr.strip().splitlines() or ["no output"])[0]
            print(f"skipped: {peer}: R cannot load it ({said}); build it from "
                  "its public source with R CMD INSTALL and set R_LIBS_USER (module doc)")
        else:
            found.append(peer)
    return found


# ---- the table --------------------------------------------------------------------------
HEADER = (f"{'method':24} {'points':>7} {'log P':>12} {'± SE':>8} {'error':>9} {'err/SE':>7} "
          f"{'CPU s':>8} {'peak GB':>7} {'wall s':>7}  status: note")


def show(name: str, row: dict, ref: float | None, ref_se: float) -> None:
    if row["status"] == "skipped":
        print(f"{name:24} skipped: {row['reason']}", flush=True)
        return
    cost = f"{row['cpu']:8.1f} {row['peak_gb']:7.2f} {row['wall']:7.1f}"
    log_p, se = row.get("log_p"), row.get("se")
    if log_p is None:
        print(f"{name:24} {'':>7} {'':>12} {'':>8} {'':>9} {'':>7} {cost}  {row['status']}: "
              f"{row['reason']}", flush=True)
        return
    se_text = f"{se:8.4f}" if se is not None else f"{'n/a':>8}"
    err = err_se = ""
    if ref is not None:
        err = f"{log_p - ref:+9.3f}"
        combined = math.hypot(se or 0.0, ref_se)
        err_se = f"{(log_p - ref) / combined:+7.1f}" if combined > 0 else ""
    note = f"{row['status']}: {row['reason']}" if row.get("reason") else row["status"]
    print(f"{name:24} {row['points']:7d} {log_p:12.4f} {se_text} {err:>9} {err_se:>7} {cost}  "
          f"{note}", flush=True)


def compare(kind: str, n: int, args, peers: list[str], tmp: str, script: str) -> None:
    problem, data = build(kind, n, args.seed)
    inputs = os.path.join(tmp, f"{kind}-{n}.bin")
    np.asarray(data, dtype="<f8").ravel(order="F").tofile(inputs)   # R reads column-major

    def job(method: str, budget: int) -> dict:
        return {"kind": kind, "n": n, "seed": args.seed, "method": method, "budget": budget,
                "max_gb": args.max_gb,
                "settings": {**SETTINGS.get((method, kind), {}), **args.set.get(method, {})}}

    print(f"\n{kind} N = {n:,} (seed {args.seed}), budget {args.budget:,} points", flush=True)
    if problem.truth is not None:
        ref, ref_se = problem.truth.log_marginal_likelihood, 0.0
        print(f"exact log P = {ref:.4f} ({problem.truth.source}); error = log P̂ - exact")
        print(HEADER, flush=True)
    elif args.yardstick_value is not None:
        ref, ref_se = args.yardstick_value
        print(f"no exact truth: yardstick = {ref:.4f} ± {ref_se:.4f} (--yardstick-value); "
              "error = log P̂ - yardstick, err/SE in combined SEs")
        print(HEADER, flush=True)
    else:
        budget = args.yardstick_factor * args.budget
        yard_job = {**job("minimax-tilting", budget), "settings": args.yardstick_settings}
        settings = "".join(f", {k}={v}" for k, v in args.yardstick_settings.items())
        print(f"no exact truth: yardstick = harness minimax-tilting{settings} at {budget:,} "
              "points; error = log P̂ - yardstick, err/SE in combined SEs")
        print(HEADER, flush=True)
        yard = run_harness(yard_job, args.timeout)
        show("yardstick", yard, None, 0.0)
        ref, ref_se = yard.get("log_p"), yard.get("se") or 0.0
        if ref is not None and yard["status"] != "ok":
            print(f"{'':24} (the yardstick is {yard['status']}: errors below are against an "
                  "estimate whose SE may not cover its own error)", flush=True)
    estimates = []
    for method in args.methods:
        row = run_harness(job(method, args.budget), args.timeout)
        label = method + "".join(f"[{k}={v}]" for k, v in job(method, 0)["settings"].items())
        show(label, row, ref, ref_se)
        if row.get("log_p") is not None:
            estimates.append(row["log_p"])
    expected = ref if ref is not None else (min(estimates) if estimates else 0.0)
    for peer in peers:
        row = run_peer(peer, kind, n, args.budget, inputs, script,
                       small=expected < SMALL_LOG_P, seed=args.seed, max_gb=args.max_gb,
                       timeout=args.timeout)
        show(peer, row, ref, ref_se)


def names(text: str, allowed, field: str) -> list[str]:
    chosen = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in allowed]
    if unknown:
        raise SystemExit(f"error: --{field}: unknown {', '.join(unknown)} "
                         f"(choose from {', '.join(allowed)})")
    return chosen


def pairs(items: list[str], option: str, example: str) -> dict[str, str]:
    """KEY=VALUE items of a repeatable option (harness.plugins.specs.parse_pairs), or exit
    with its message."""
    from harness.core.errors import InputError
    from harness.plugins.specs import parse_pairs

    out: dict[str, str] = {}
    try:
        for item in items:
            out.update(parse_pairs(item, option))
    except InputError as e:
        raise SystemExit(f"error: {e} ({example})") from None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000", help="comma-separated N (default 1000)")
    ap.add_argument("--budget", type=int, default=10_000, help="points per method")
    ap.add_argument("--yardstick-factor", type=int, default=4,
                    help="matern32's yardstick runs minimax-tilting at this x the budget")
    ap.add_argument("--yardstick-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting of the yardstick's minimax-tilting (e.g. "
                         "factorisation=dense), repeatable")
    ap.add_argument("--set", action="append", default=[], metavar="METHOD:KEY=VALUE",
                    help="a setting of one of --methods (e.g. sir:proposal=tilted), repeatable")
    ap.add_argument("--yardstick-value", metavar="LOG_P,SE",
                    help="matern32's yardstick measured before (an earlier run's yardstick "
                         "row), not run again: --yardstick-value=-77.98,0.044")
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--max-gb", type=float, default=16.0,
                    help="skip a run whose expected peak memory exceeds this")
    ap.add_argument("--timeout", type=float, default=7200.0, help="wall seconds per run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(harness_job(json.loads(args.child))))
        return
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    args.yardstick_settings = pairs(args.yardstick_set, "--yardstick-set",
                                    "e.g. factorisation=dense")
    if args.yardstick_value is not None:
        try:
            log_p, se = (float(v) for v in args.yardstick_value.split(","))
        except ValueError:
            raise SystemExit(f"error: --yardstick-value {args.yardstick_value}: give LOG_P,SE, "
                             "e.g. --yardstick-value=-77.98,0.044") from None
        args.yardstick_value = (log_p, se)
    problems = names(args.problems, PROBLEMS, "problems")
    args.methods = names(args.methods, METHODS, "methods")
    method_settings: dict[str, dict[str, str]] = {}
    for item in args.set:
        method, _, kv = item.partition(":")
        if method not in args.methods:
            raise SystemExit(f"error: --set {item}: give METHOD:KEY=VALUE with METHOD one of "
                             f"--methods ({', '.join(args.methods)}), e.g. sir:proposal=tilted")
        method_settings.setdefault(method, {}).update(
            pairs([kv], "--set", "e.g. sir:proposal=tilted"))
    args.set = method_settings
    print(f"harness BLAS: {blas_description()}; one thread per run (OMP/OPENBLAS/MKL_NUM_"
          f"THREADS=1); CPU = user + system seconds of the run's whole process, peak = its "
          f"resident high-water mark", flush=True)
    peers = available_peers(names(args.peers, PEERS, "peers"))
    with tempfile.TemporaryDirectory(prefix="bench_peers.") as tmp:
        script = os.path.join(tmp, "peer.R")
        with open(script, "w", encoding="utf-8") as f:
            f.write(R_SCRIPT)
        for n in sizes:
            for kind in problems:
                compare(kind, n, args, peers, tmp, script)


if __name__ == "__main__":
    main()
