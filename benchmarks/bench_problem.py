"""Building problems, structured against materialised, in one run.

For each problem: the CPU time (BLAS on one thread; robust to other load) and peak memory of
building it, then of the first access to the dense R and to its Cholesky factor, for this
working tree and for a baseline commit (by default main before structured problems, f01b4db),
each measured in its own fresh process; then the ratios current / baseline. Small problems are
built `--repeat` times in each of `--rounds` alternating baseline/current processes (the
minimum is reported, since the load drifts); the large one-factor problem once, and only
its build and R access are timed (its Cholesky factor costs a minute either way; the baseline
computes it while building).

    python benchmarks/bench_problem.py [--baseline REV] [--repeat 7] [--rounds 3]
                                       [--large-n 16384 (0: skip)]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = "f01b4db"   # main with harness/core/covariance.py, before problems used it
SMALL = [("onefactor n=500", "onefactor", {"n": 500}), ("linear1d-p3", "linear1d-p3", None),
         ("gauss-p1", "gauss-p1", None)]


def _import_tree(root: str):
    """Import harness (and its datasets/methods packages) from the tree at `root`."""
    sys.path.insert(0, root)
    import harness

    for sub in ("datasets", "methods"):
        path = os.path.join(root, sub)
        spec = importlib.util.spec_from_file_location(
            f"harness.{sub}", os.path.join(path, "__init__.py"),
            submodule_search_locations=[path])
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        setattr(harness, sub, module)
        spec.loader.exec_module(module)
    for module in (harness, harness.datasets):
        if not os.path.abspath(module.__file__).startswith(os.path.abspath(root) + os.sep):
            raise RuntimeError(f"{module.__name__} imported from {module.__file__}, not {root}")


def _builder(family_or_preset: str, params):
    from harness.plugins.registry import get_family, presets

    if params is None:
        family, params = presets()[family_or_preset]
    else:
        family = get_family(family_or_preset)
    return lambda: family.build(**params)


def _timed(fn):
    """(result, CPU seconds of this thread, peak MiB) of fn() (BLAS runs on this thread)."""
    from harness.core.memory import peak_memory

    with peak_memory() as mem:
        t0 = time.thread_time()
        out = fn()
        seconds = time.thread_time() - t0
    return out, seconds, mem.mb


def measure(root: str, repeat: int, large_n: int) -> dict:
    """This tree's timings (in a fresh process): small problems if repeat, large N if large_n."""
    _import_tree(root)
    from threadpoolctl import threadpool_limits

    out = {}
    with threadpool_limits(1):
        for label, name, params in SMALL if repeat else ():
            build = _builder(name, params)
            build()   # warm imports and caches
            rows = []
            for _ in range(repeat):
                problem, t_build, _ = _timed(build)
                _, t_r, _ = _timed(lambda p=problem: p.R)
                _, t_chol, _ = _timed(lambda p=problem: p.chol)
                rows.append((t_build, t_r, t_chol, t_build + t_r + t_chol))
            out[label] = {key: min(r[i] for r in rows)
                          for i, key in enumerate(("build", "R", "chol", "total"))}
        if large_n:
            problem, t_build, mb_build = _timed(_builder("onefactor", {"n": large_n}))
            _, t_r, mb_r = _timed(lambda: problem.R)
            out[f"onefactor n={large_n}"] = {"build": t_build, "build_mb": mb_build,
                                             "R": t_r, "R_mb": mb_r}
    return out


def _run_tree(root: str, repeat: int, large_n: int) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--measure", root,
           "--repeat", str(repeat), "--large-n", str(large_n)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _measure_both(base_root: str, args) -> tuple[dict, dict]:
    """Small problems in alternating rounds (min over rounds: load drifts), then large N once."""
    runs = {"base": [], "current": []}
    for _ in range(args.rounds):
        runs["base"].append(_run_tree(base_root, args.repeat, 0))
        runs["current"].append(_run_tree(ROOT, args.repeat, 0))
    out = []
    for key, root in (("base", base_root), ("current", ROOT)):
        best = {label: {step: min(r[label][step] for r in runs[key]) for step in row}
                for label, row in runs[key][0].items()}
        if args.large_n:
            best.update(_run_tree(root, 0, args.large_n))
        out.append(best)
    return out[0], out[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--large-n", type=int, default=16384)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.repeat, args.large_n)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        base_root = os.path.join(tmp, "baseline")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "-q", base_root,
                        args.baseline], check=True)
        try:
            base, current = _measure_both(base_root, args)
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", base_root],
                           check=True)
    print(f"baseline {args.baseline} vs this tree; CPU seconds (small: min of "
          f"{args.rounds} rounds x {args.repeat}), "
          "ratio = current / baseline")
    print(f"{'problem':<22}{'step':<10}{'baseline':>12}{'current':>12}{'ratio':>9}")
    for label, row in base.items():
        for key, b in row.items():
            c = current[label][key]
            unit = " MiB" if key.endswith("_mb") else " s"
            ratio = f"{c / b:9.2f}" if b else f"{'-':>9}"
            print(f"{label:<22}{key:<10}{b:>10.4g}{unit:<2}{c:>10.4g}{unit:<2}{ratio}")


if __name__ == "__main__":
    main()
