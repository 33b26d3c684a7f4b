"""Which runs of the SOV family and of rejection-bootstrap are wrong, and which diagnostics see
it: the study behind harness.model.reliability's thresholds (docs/studies.md, "Reliability
rules").

Runs sov, sov-tlr, sir, minimax-tilting and rejection-bootstrap (hard and soft count, 10
populations) on problems with exact truth — markov1d (N = 500, 2,000; rho = 0.9, 0.99), the
hard one-factor orthant (N = 500), linear1d-p2 — at budgets 10^3 and 10^4 over seeds, and
records per run: |log Ẑ - log Z| / SE, max_j |p̂_j - p_j| / SE_j (and the rms over j), ESS,
ESS / S, the largest randomisation's share, Pareto k̂, sir's first-variable lineage fraction,
the sd of the per-randomisation (per-population) log Ẑ_k, dead populations, status. A run is
`off` when either z-score is >= 3. Then, for the stored status (the rules in
harness.model.reliability) and for alternative thresholds (k̂, the sd of log Ẑ_k, a dead
population), prints the share of off runs flagged and of within-3-SE runs flagged per method
x family x N x budget (Markdown), and the false alarms on the quick sweep's problems at its
budgets (rejection-bootstrap: 10^3 and 10^4).

    python benchmarks/bench_reliability.py [--quick] [--methods sov,sir] [--seeds 10]
                                           [--out runs.jsonl]
    python benchmarks/bench_reliability.py --analyse runs.jsonl

--quick: N = 500 only, 3 seeds, quick sweep 2 seeds (about 2 minutes on one core; the full
study about 11). The full study bounds its CPU by running N = 2,000 at budget 10^4 only for
sov-tlr and minimax-tilting (sov, sir: 10^3 only there), and rejection-bootstrap only on the N
= 500 / one-factor / linear1d problems (`--methods rejection-bootstrap --seeds 10`: 360 runs,
3.7 CPU minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SOV_FAMILY = ["sov", "sov-tlr", "sir", "minimax-tilting"]
RB = ["rejection-bootstrap[count=hard]", "rejection-bootstrap"]   # hard and soft count
QUICK_SWEEP = ["onefactor:n=100", "linear1d-p1", "linear1d-p2",
               "linear-lowrank:n_train=60,n_test=20,d=2,beta=9",
               "onefactor:n=100,dmin=0.95,dmax=0.999,random_signs=true"]
QUICK_BUDGETS = {"sov": [1000, 10000], "sov-tlr": [1000, 10000], "sir": [100, 1000],
                 "minimax-tilting": [100, 1000]}


def markov(n, rho, seed):
    return f"markov1d:n_train={n},rho={rho},beta=1,n_test=20,seed={seed}"


def plan(quick: bool, seeds: int = 0):
    """(family, N, spec, method, budget, seed) for every run of the study."""
    seeds = range(1, 1 + (seeds or (3 if quick else 6)))
    out = []
    for seed in seeds:
        for rho in (0.9, 0.99):
            for m in SOV_FAMILY + RB:
                for b in (1000, 10000):
                    out.append((f"markov1d rho={rho}", 500, markov(500, rho, seed), m, b, seed))
        if not quick:
            for rho in (0.9, 0.99):
                for m in SOV_FAMILY:
                    for b in (1000, 10000):
                        if b == 10000 and m in ("sov", "sir"):
                            continue
                        out.append((f"markov1d rho={rho}", 2000, markov(2000, rho, seed),
                                    m, b, seed))
        for m in SOV_FAMILY + RB:
            for b in (1000, 10000):
                out.append(("onefactor hard", 500, "onefactor:n=500,dmin=0.95,dmax=0.999,"
                            f"random_signs=true,seed={seed}", m, b, seed))
                out.append(("linear1d-p2", 200, "linear1d-p2", m, b, seed))
    return out


def quick_plan(quick: bool, seeds: int = 0):
    seeds = range(1, 1 + (seeds or (2 if quick else 5)))
    return [("quick sweep", 0, spec, m, b, seed) for seed in seeds for spec in QUICK_SWEEP
            for m in SOV_FAMILY + RB for b in QUICK_BUDGETS.get(m, [1000, 10000])]


def build(label: str):
    """The method of a label 'name' or 'name[key=value,...]' (Method.label's form)."""
    from harness.plugins.registry import get_method

    name, _, rest = label.rstrip("]").partition("[")
    return get_method(name).from_settings(dict(kv.split("=") for kv in rest.split(",") if kv))


def one_run(family, n, spec, method, budget, seed, problems):
    from harness.api import as_problem

    if spec not in problems:
        problems.clear()
        problems[spec] = as_problem(spec)
    p = problems[spec]
    t = time.process_time()
    est = build(method).estimate(p, budget, np.random.default_rng(1000 + seed))
    d = dict(est.diagnostics)
    rec = {"family": family, "N": n, "spec": spec, "method": method, "budget": budget,
           "seed": seed, "status": est.status, "reason": est.reason,
           "cpu": time.process_time() - t, "ess": d.get("ess"),
           "ess_fraction": d.get("ess_fraction"),
           "top_share": d.get("top_randomisation_share"), "pareto_k": d.get("pareto_k"),
           "lz_sd": d.get("log_z_randomisation_sd"), "z_logz": None, "z_test": None,
           "lineage_fraction": d.get("ancestor_lineage_fraction"),
           "dead_populations": d.get("dead_populations"),
           "k_eff": d.get("randomisations_effective")}
    lz, se = est.log_marginal_likelihood, est.log_marginal_likelihood_se
    if est.status in ("ok", "unreliable") and lz is not None and se:
        rec["z_logz"] = abs(lz - p.truth.log_marginal_likelihood) / se
        rec["err_logz"] = lz - p.truth.log_marginal_likelihood
        J, Jse = est.test_probabilities, est.test_probabilities_se
        if p.n_test and Jse is not None and p.truth.test_probabilities is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.abs(J - p.truth.test_probabilities) / np.asarray(Jse)
            rec["z_test"] = float(np.nanmax(np.where(np.isfinite(z), z, 1e9)))
            rec["err_test"] = float(np.max(np.abs(J - p.truth.test_probabilities)))
            rec["z_test_rms"] = float(np.sqrt(np.nanmean(np.where(np.isfinite(z), z, 1e9)**2)))
    return rec


def off(r):
    return (r["z_logz"] or 0) >= 3 or (r["z_test"] or 0) >= 3


def k_above(r, threshold):
    """The k̂ rule as applied (harness.model.reliability): not for sir, whose final weights
    after resampling are not importance weights."""
    return r["method"] != "sir" and (r["pareto_k"] or 0) > threshold


def sd_above(threshold):
    """Flag: the stored status, or the per-randomisation log Ẑ_k spread above threshold."""
    return lambda r: r["status"] == "unreliable" or (r["lz_sd"] or 0) > threshold


RULES = {
    # the status the run stored: harness.model.reliability as of the run (ESS < 1.1, one
    # randomisation > 99 %, Pareto k̂ > 1 except for sir, sir's degenerate paths; saddle point)
    "stored status": lambda r: r["status"] == "unreliable",
    # alternatives, for comparison (PSIS's usual thresholds)
    "status or k̂ > 0.7 (not sir)": lambda r: r["status"] == "unreliable" or k_above(r, 0.7),
    "status or k̂ > 0.5 (not sir)": lambda r: r["status"] == "unreliable" or k_above(r, 0.5),
    # the sd of the per-randomisation log Ẑ_k (rejection-bootstrap's populations)
    **{f"status or log Ẑ_k sd > {s:g}": sd_above(s) for s in (0.5, 0.75, 1.0, 1.5, 2.0)},
    "status or a dead population": lambda r: r["status"] == "unreliable"
                                             or (r.get("dead_populations") or 0) > 0,
}


def analyse(runs, rule_names=None):
    runs = [r for r in runs if r["status"] in ("ok", "unreliable") and r["z_logz"] is not None]
    for name in rule_names or RULES:
        flag = RULES[name]
        print(f"\n### {name}\n")
        print("| method | family | N | budget | runs | off (>=3 SE) | off in log Z / test | "
              "off flagged | within flagged | k̂ median [min, max] | ESS/S median |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        groups = defaultdict(list)
        for r in runs:
            groups[(r["method"], r["family"], r["N"], r["budget"])].append(r)
        for key in sorted(groups):
            g = groups[key]
            o = [r for r in g if off(r)]
            w = [r for r in g if not off(r)]
            ks = [r["pareto_k"] for r in g if r["pareto_k"] is not None]
            kq = (f"{np.median(ks):.2f} [{min(ks):.2f}, {max(ks):.2f}]" if ks else "-")
            ef = [r["ess_fraction"] for r in g if r["ess_fraction"] is not None]
            o_lz = sum((r["z_logz"] or 0) >= 3 for r in g)
            o_t = sum((r["z_test"] or 0) >= 3 for r in g)
            print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {len(g)} | {len(o)} | "
                  f"{o_lz} / {o_t} | {sum(map(flag, o))}/{len(o)} | "
                  f"{sum(map(flag, w))}/{len(w)} | {kq} | "
                  f"{np.median(ef) if ef else float('nan'):.2g} |")
        o = [r for r in runs if off(r) and r["family"] != "quick sweep"]
        w = [r for r in runs if not off(r) and r["family"] != "quick sweep"]
        q = [r for r in runs if r["family"] == "quick sweep"]
        print(f"\nAll study runs: off flagged {sum(map(flag, o))}/{len(o)}, within flagged "
              f"{sum(map(flag, w))}/{len(w)}; quick sweep flagged {sum(map(flag, q))}/{len(q)}")
        for m in sorted({r["method"] for r in runs}):
            om = [r for r in o if r["method"] == m]
            wm = [r for r in w if r["method"] == m]
            far = sum(1 for r in om
                      if not flag(r) and max(r["z_logz"] or 0, r["z_test"] or 0) >= 5)
            print(f"- {m}: off flagged {sum(map(flag, om))}/{len(om)}, within flagged "
                  f"{sum(map(flag, wm))}/{len(wm)}, off by >= 5 SE and not flagged {far}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="")
    parser.add_argument("--analyse", default="")
    parser.add_argument("--methods", default="", help="only these (comma-separated)")
    parser.add_argument("--seeds", type=int, default=0, help="seeds per case (default: 6, "
                        "quick sweep 5; --quick 3 and 2)")
    args = parser.parse_args()
    if args.analyse:
        with open(args.analyse) as f:
            analyse([json.loads(line) for line in f])
        return
    import warnings
    warnings.simplefilter("ignore")
    runs, problems = [], {}
    out = open(args.out, "w") if args.out else None
    todo = (sorted(plan(args.quick, args.seeds), key=lambda x: x[2])
            + quick_plan(args.quick, args.seeds))
    if args.methods:   # by name: both counts of rejection-bootstrap
        todo = [job for job in todo if job[3].split("[")[0] in args.methods.split(",")]
    t0 = time.time()
    for i, job in enumerate(todo):
        r = one_run(*job, problems)
        runs.append(r)
        if out:
            out.write(json.dumps(r) + "\n")
            out.flush()
        if i % 20 == 0:
            print(f"[{i}/{len(todo)} {time.time() - t0:.0f}s]", file=sys.stderr, flush=True)
    analyse(runs)


if __name__ == "__main__":
    main()
