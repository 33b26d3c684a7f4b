"""Whether two versions of the harness behave identically: the check of a refactoring.

`record` runs, with the Python it is started by (a virtual environment holding one version of
the harness), the quick sweep (sweeps/quick.toml) and the engine-paths sweep
(sweeps/engine-paths.toml: every path of the SOV-family engine at N = 4,096 that the quick
sweep cannot reach), each into a store of its own under OUT, and writes OUT/records.json: every
job's record without its measured fields (times, memory peaks, provenance), and the memory
estimate of every registered method over a grid of sizes. `compare` reads two such folders and
prints, per method, how many jobs are bit-identical on every non-measured field (estimates,
standard errors, test probabilities, diagnostics, statuses and reasons), and every difference.
`agree` is the check of a change that moves the last bits (other special functions, say): per
method, how many jobs have log Z and every test probability within K combined standard errors
of the version before, sqrt(se_before² + se_after²) (a method that gives its test
probabilities without SEs, an MCMC average, is judged on log Z and its test errors against the
truth are shown), and every status that changed, with its reasons.

    # the version before, installed in its own environment, run from outside the checkout
    /tmp/venv-before/bin/python benchmarks/same_behaviour.py record --out /tmp/before
    python benchmarks/same_behaviour.py record --out /tmp/after
    python benchmarks/same_behaviour.py compare /tmp/before /tmp/after
    python benchmarks/same_behaviour.py agree /tmp/before /tmp/after --within 3
    # speed, in one run: each estimate timed in both versions, alternately
    python benchmarks/same_behaviour.py speed /tmp/venv-before/bin/python /tmp/venv-after/bin/python

The script imports nothing from the checkout it lives in (only the installed harness of the
Python running it), so the same file records any version.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

SWEEPS = Path(__file__).resolve().parents[1] / "sweeps"
SWEEP_FILES = ("quick.toml", "engine-paths.toml", "engine-parts.toml")
# Fields of a record that are measured (differ between two runs of the same code) or that
# describe where and when it ran.
MEASURED = {"cpu_seconds", "process_cpu_seconds", "wall_seconds", "setup_cpu_seconds",
            "setup_wall_seconds", "setup_cached", "peak_memory_mb", "memory_source",
            "finished_at", "stored_at", "provenance", "worker", "host", "attempts",
            "workspace_bytes", "peak_rss_mb", "checksum", "workers", "part_workers", "threads"}
MEASURED_PATTERN = re.compile(r"(_seconds|_wall|_cpu|_time)$")
SIZES = [(50, 0, 1000), (300, 40, 10_000), (2_000, 100, 4_000), (4_096, 50, 2_000),
         (20_000, 100, 4_000), (70_000, 10, 1_000)]


def strip(value, key: str = ""):
    """The record without its measured fields (recursively through dicts)."""
    if isinstance(value, dict):
        return {k: strip(v, k) for k, v in value.items()
                if k not in MEASURED and not MEASURED_PATTERN.search(k)}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def memory_estimates() -> dict[str, dict]:
    """{label @ sizes: the memory estimate's parts} for every registered method at its
    defaults and at the settings that choose another path of the engine."""
    from harness.plugins.registry import methods

    variants = {"sir": [{"proposal": "tilted"}, {"factorisation": "dense"},
                        {"proposal": "tilted", "factorisation": "tlr"}],
                "minimax-tilting": [{"walk": "importance"}, {"walk": "sequential"},
                                    {"factorisation": "tlr", "walk": "importance"},
                                    {"factorisation": "dense", "walk": "sequential"}],
                "sov-tlr": [{"factorisation": "tlr"}, {"factorisation": "dense"}],
                "sov": [{"reorder": "univariate"}, {"points": "lattice"}],
                "vecchia-tilting": [{"walk": "importance"}, {"walk": "sequential"}]}
    out = {}
    for name, cls in sorted(methods().items()):
        for settings in [{}, *variants.get(name, [])]:
            method = cls.from_settings(settings)
            for n_train, n_test, budget in SIZES:
                key = f"{method.label()} @ N={n_train}, n_test={n_test}, budget={budget}"
                try:
                    est = method.memory_estimate(n_train, n_test, budget)
                    out[key] = {"held": est.held, "work": est.work, "setup": est.setup,
                                "needs_dense": method.needs_dense(n_train)}
                except Exception as exc:   # noqa: BLE001 - recorded and compared as text
                    out[key] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def record(out: Path, sweeps: list[str], workers: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    records = {}
    for sweep in sweeps:
        store = out / f"{Path(sweep).stem}.sqlite"
        # outside any checkout, so that `-m harness` imports the installed harness
        with tempfile.TemporaryDirectory() as cwd:
            cmd = [sys.executable, "-m", "harness", "sweep", str(SWEEPS / sweep), "--store",
                   str(store), "--no-report", "--workers", str(workers), "-q"]
            print("$", " ".join(cmd), flush=True)
            subprocess.run(cmd, cwd=cwd, check=False)
        from harness.execution.store import ResultStore

        with ResultStore(store, read_only=True) as s:
            for rec in s.records():
                records[f"{Path(sweep).stem}/{rec['job_id']}"] = strip(rec)
    data = {"records": records, "memory": memory_estimates()}
    (out / "records.json").write_text(json.dumps(data, sort_keys=True, indent=1))
    print(f"{len(records)} records and {len(data['memory'])} memory estimates in "
          f"{out / 'records.json'}")


def same(a, b) -> bool:
    """Bit-identical (NaN equal to NaN)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def differences(a: dict, b: dict, prefix: str = "") -> list[str]:
    """The paths of the fields where a and b differ."""
    out = []
    for key in sorted(set(a) | set(b)):
        path = f"{prefix}{key}"
        if key not in a or key not in b:
            out.append(f"{path} ({'only after' if key not in a else 'only before'})")
        elif isinstance(a[key], dict) and isinstance(b[key], dict):
            out.extend(differences(a[key], b[key], path + "."))
        elif not same(a[key], b[key]):
            out.append(path)
    return out


def compare(before: Path, after: Path) -> int:
    a = json.loads((before / "records.json").read_text())
    b = json.loads((after / "records.json").read_text())
    rows: dict[str, Counter] = defaultdict(Counter)
    shown = []
    for job in sorted(set(a["records"]) | set(b["records"])):
        ra, rb = (None if r is None else strip(r)   # the fields measured as of this version
                  for r in (a["records"].get(job), b["records"].get(job)))
        rec = ra or rb
        group = f"{job.split('/')[0]}: {rec.get('method_name', rec.get('method'))}"
        if ra is None or rb is None:
            rows[group]["only after" if ra is None else "only before"] += 1
            continue
        diff = differences(ra, rb)
        rows[group]["jobs"] += 1
        rows[group]["identical" if not diff else "different"] += 1
        rows[group]["ok"] += rb.get("status") == "ok"
        if diff:
            shown.append(f"{job} ({rec.get('method')}): {', '.join(diff[:8])}")
    print(f"{'sweep: method':<36} {'jobs':>5} {'identical':>9} {'ok':>4} {'other':>6}")
    for group in sorted(rows):
        c = rows[group]
        other = ", ".join(f"{k} {v}" for k, v in c.items()
                          if k in ("different", "only before", "only after"))
        print(f"{group:<36} {c['jobs']:>5} {c['identical']:>9} {c['ok']:>4} {other:>6}")
    mem_a, mem_b = a["memory"], b["memory"]
    mem_same = sum(same(mem_a[k], mem_b[k]) for k in set(mem_a) & set(mem_b))
    print(f"memory estimates: {mem_same} of {len(set(mem_a) & set(mem_b))} identical "
          f"({len(set(mem_a) - set(mem_b))} only before, {len(set(mem_b) - set(mem_a))} "
          "only after)")
    for k in sorted(set(mem_a) & set(mem_b)):
        if not same(mem_a[k], mem_b[k]):
            shown.append(f"memory {k}: {differences(mem_a[k], mem_b[k])}")
    for line in shown:
        print("  " + line)
    total = sum(c["jobs"] for c in rows.values())
    identical = sum(c["identical"] for c in rows.values())
    print(f"{identical} of {total} jobs identical")
    return 0 if identical == total and mem_same == len(set(mem_a) & set(mem_b)) else 1


def _within(a, sa, b, sb, k: float) -> bool:
    """|a - b| <= k sqrt(sa² + sb²); without standard errors (a deterministic method), equal
    to 1e-9 relatively."""
    if a is None or b is None:
        return a is None and b is None
    if any(isinstance(v, float) and math.isnan(v) for v in (a, b)):
        return all(isinstance(v, float) and math.isnan(v) for v in (a, b))
    scale = math.hypot(sa or 0.0, sb or 0.0)
    return abs(a - b) <= (k * scale if scale > 0 else 1e-9 * max(1.0, abs(a)))


def agree(before: Path, after: Path, k: float) -> int:
    a = json.loads((before / "records.json").read_text())["records"]
    b = json.loads((after / "records.json").read_text())["records"]
    rows: dict[str, Counter] = defaultdict(Counter)
    mae: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    changed, off = [], []
    for job in sorted(set(a) & set(b)):
        ra, rb = a[job], b[job]
        group = f"{job.split('/')[0]}: {rb.get('method_name', rb.get('method'))}"
        rows[group]["jobs"] += 1
        lz = _within(ra.get("log_marginal_likelihood"), ra.get("log_marginal_likelihood_se"),
                     rb.get("log_marginal_likelihood"), rb.get("log_marginal_likelihood_se"), k)
        pa, pb = ra.get("test_probabilities") or [], rb.get("test_probabilities") or []
        sa, sb = ra.get("test_probabilities_se"), rb.get("test_probabilities_se")
        unmoved = len(pa) == len(pb) and all(_within(x, None, y, None, k)
                                             for x, y in zip(pa, pb, strict=True))
        if pa and (sa is None or sb is None) and not unmoved:   # no SE (an MCMC average):
            probs = True          # judged on log Z, the test errors against truth shown apart
            rows[group]["no test SE"] += 1
            mae[group][0].append(ra.get("mae"))
            mae[group][1].append(rb.get("mae"))
        else:
            sa, sb = sa or [None] * len(pa), sb or [None] * len(pb)
            probs = len(pa) == len(pb) and all(_within(*v, k) for v in zip(pa, sa, pb, sb,
                                                                             strict=True))
        rows[group]["agree"] += lz and probs
        rows[group]["identical"] += same(strip(ra), strip(rb))
        if not (lz and probs):
            off.append(f"{job} ({rb.get('method')}, {rb.get('problem')}): "
                       f"{'log Z' if not lz else ''}{' test probabilities' if not probs else ''}")
        if ra.get("status") != rb.get("status"):
            rows[group]["status changed"] += 1
            changed.append(f"{job} ({rb.get('method')}, {rb.get('problem')}, budget "
                           f"{rb.get('budget')}): {ra.get('status')} -> {rb.get('status')}; "
                           f"before: {ra.get('reason') or '-'}; after: {rb.get('reason') or '-'}")
    print(f"{'sweep: method':<36} {'jobs':>5} {'agree':>6} {'identical':>9} {'status changed':>15}")
    for group in sorted(rows):
        c = rows[group]
        print(f"{group:<36} {c['jobs']:>5} {c['agree']:>6} {c['identical']:>9} "
              f"{c['status changed']:>15}")
    total = sum(c["jobs"] for c in rows.values())
    agreeing = sum(c["agree"] for c in rows.values())
    print(f"{agreeing} of {total} jobs within {k:g} combined SE ({100 * agreeing / total:.1f} %); "
          f"{len(changed)} statuses changed")
    for group, (before_mae, after_mae) in sorted(mae.items()):
        mean = [sum(v for v in m if v is not None) / max(1, len(m)) for m in (before_mae,
                                                                               after_mae)]
        print(f"{group}: {len(before_mae)} jobs without test-probability SEs (judged on log Z; "
              f"their test MAE against truth: mean {mean[0]:.4f} before, {mean[1]:.4f} after)")
    for line in off:
        print("  off: " + line)
    for line in changed:
        print("  status: " + line)
    return 0


SPEED_CASES = [   # (problem, method, settings, budget): every engine path at a size that counts
    ("linear1d:n_train=1000,n_test=50", "sov", {}, 10_000),
    ("markov1d:n_train=4096,n_test=50,rho=0.9", "sov-tlr", {"reorder": "kdtree"}, 2_000),
    ("onefactor:n=1000", "minimax-tilting", {}, 10_000),
    ("markov1d:n_train=4096,n_test=50,rho=0.9", "minimax-tilting", {}, 2_000),
    ("markov1d:n_train=2048,n_test=50,rho=0.9", "sir", {"proposal": "tilted"}, 4_000),
    ("markov1d:n_train=4096,n_test=50,rho=0.9", "vecchia-tilting", {}, 2_000),
    ("markov1d:n_train=2000,n_test=50,rho=0.9", "vecchia-sov", {}, 4_000),
    ("linear1d-p1", "rejection-bootstrap", {}, 100_000),
    ("linear1d-p1", "ess", {}, 100),
]
TIMER = """
import json, sys, time, warnings
import numpy as np
from threadpoolctl import threadpool_limits
warnings.simplefilter("ignore")
from harness.api import as_method, as_problem
problem, method, settings, budget = json.loads(sys.argv[1])
p, m = as_problem(problem), as_method(method, settings)
m.prepare(p)
with threadpool_limits(1):
    m.estimate(p, budget, np.random.default_rng(0))          # set-up and caches warm
    t0 = time.process_time()
    m.estimate(p, budget, np.random.default_rng(1))
    print(time.process_time() - t0)
"""


def speed(before: str, after: str, repeats: int) -> int:
    """CPU seconds of each SPEED_CASES estimate in both versions, alternately, `repeats`
    times; the medians and their ratio (after / before)."""
    import statistics

    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    print("note: OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset for the timed processes", flush=True)
    print(f"{'problem':<42} {'method':<34} {'before s':>9} {'after s':>9} {'ratio':>6}")
    ratios = []
    for case in SPEED_CASES:
        times = {before: [], after: []}
        for _ in range(repeats):
            for python in (before, after):
                with tempfile.TemporaryDirectory() as cwd:
                    out = subprocess.run([python, "-c", TIMER, json.dumps(case)], cwd=cwd,
                                         env=env, capture_output=True, text=True, check=True)
                times[python].append(float(out.stdout.split()[-1]))
        b, a = statistics.median(times[before]), statistics.median(times[after])
        ratios.append(a / b)
        label = case[1] + (f"[{','.join(f'{k}={v}' for k, v in case[2].items())}]"
                           if case[2] else "")
        print(f"{case[0]:<42} {label:<34} {b:9.3f} {a:9.3f} {a / b:6.3f}", flush=True)
    print(f"geometric mean of the ratios: {statistics.geometric_mean(ratios):.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the sweeps and write OUT/records.json")
    rec.add_argument("--out", type=Path, required=True)
    rec.add_argument("--sweep", action="append", help="sweep file(s) in sweeps/ "
                     f"(default: {', '.join(SWEEP_FILES)})")
    rec.add_argument("--workers", type=int, default=2)
    cmp = sub.add_parser("compare", help="compare two recorded folders")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    agr = sub.add_parser("agree", help="jobs within K combined SEs, and status changes")
    agr.add_argument("before", type=Path)
    agr.add_argument("after", type=Path)
    agr.add_argument("--within", type=float, default=3.0, help="K (default 3)")
    spd = sub.add_parser("speed", help="time each estimate in two Pythons, alternately")
    spd.add_argument("before", help="the Python of the version before")
    spd.add_argument("after", help="the Python of the version after")
    spd.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.command == "speed":
        return speed(args.before, args.after, args.repeats)
    if args.command == "agree":
        return agree(args.before, args.after, args.within)
    if args.command == "record":
        record(args.out, args.sweep or list(SWEEP_FILES), args.workers)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
