"""`python -m harness list`: the registered methods, problem families and presets."""

from __future__ import annotations

import json

FILES = ("any .npz (cov, or X_train/y_train/X_test/kernel/alpha/beta) or .csv (label column y, "
         "optional split column)")


def setup(p):
    """List the registered methods, problem families and presets."""
    p.description = setup.__doc__
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: methods, problem families, presets")


def listing() -> dict:
    """What `list` shows, as plain data."""
    from harness.model.settings import as_text
    from harness.plugins.registry import methods, presets, problem_families

    return {
        "methods": [{"name": name, "kind": "exact" if cls.tags.exact else "approximate",
                     "summary": cls.summary, "budget_unit": cls.budget_unit}
                    for name, cls in methods().items()],
        "problem_families": [{"name": name, "truth": fam.truth, "summary": fam.summary}
                             for name, fam in problem_families().items()],
        "presets": [{"name": name, "family": fam.name,
                     "parameters": {k: as_text(v) for k, v in params.items()}}
                    for name, (fam, params) in presets().items()],
        "files": FILES,
    }


def run(args) -> int:
    data = listing()
    if args.json:
        print(json.dumps(data, allow_nan=False))
        return 0
    print("methods:")
    for m in data["methods"]:
        print(f"  {m['name']:<24} {m['kind']:<12} {m['summary']}")
    print("problem families:")
    for f in data["problem_families"]:
        print(f"  {f['name']:<24} truth={f['truth']:<9} {f['summary']}")
    print("presets:")
    for p in data["presets"]:
        spec = ",".join(f"{k}={v}" for k, v in p["parameters"].items())
        print(f"  {p['name']:<24} {p['family']}:{spec}")
    print(f"files: {FILES}")
    return 0
