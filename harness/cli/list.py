"""`python -m harness list`: the registered methods, problem families and presets; with -v (and
always in --json) each method's settings with their defaults, allowed values and what they do
(harness.plugins.setting_help); the optional peers whose packages are missing, with the command
that installs them."""

from __future__ import annotations

import json

FILES = ("any .npz (cov, or X_train/y_train/X_test/kernel/alpha/beta) or .csv (label column y, "
         "optional split column)")
SETTING_WIDTH = 26   # `name=default` column of a setting in `list -v`


def setup(p):
    """List the registered methods, problem families and presets (-v: each method's settings
    too, with its default and one line on it; `--set KEY=VALUE` changes one)."""
    p.description = setup.__doc__
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: methods (with their settings), problem "
                   "families, presets")


def listing() -> dict:
    """What `list` shows, as plain data."""
    from harness.model.settings import as_text
    from harness.plugins.registry import methods, presets, problem_families
    from harness.plugins.setting_help import describe_settings

    return {
        "methods": [{"name": name, "kind": "exact" if cls.tags.exact else "approximate",
                     "summary": cls.summary, "budget_unit": cls.budget_unit,
                     "settings": describe_settings(cls)}
                    for name, cls in methods().items()],
        "problem_families": [{"name": name, "truth": fam.truth, "summary": fam.summary}
                             for name, fam in problem_families().items()],
        "presets": [{"name": name, "family": fam.name,
                     "parameters": {k: as_text(v) for k, v in params.items()}}
                    for name, (fam, params) in presets().items()],
        "files": FILES,
        "not_installed": not_installed(),
    }


def not_installed() -> list[dict]:
    """The optional peers (harness.plugins.registry.PEERS) whose packages are missing, each
    with what is missing and the command that installs it."""
    from harness.plugins.registry import PEERS, MissingExtra, get_method

    out = []
    for name in PEERS:
        try:
            get_method(name)
        except MissingExtra as exc:
            out.append({"name": name, "why": str(exc)})
    return out


def setting_line(name: str, setting: dict) -> str:
    """One setting as `list -v` shows it: name=default, what it does; its allowed values."""
    from harness.model.settings import as_text

    said = "; ".join(part for part in (setting["help"], setting["allowed"]) if part)
    return f"{name}={as_text(setting['default'])}".ljust(SETTING_WIDTH) + f" {said}".rstrip()


def run(args) -> int:
    from harness.cli.args import NORMAL, VERBOSE

    data = listing()
    if args.json:
        print(json.dumps(data, allow_nan=False))
        return 0
    verbosity = getattr(args, "verbosity", NORMAL)
    verbose = verbosity == VERBOSE
    print("methods:")
    for m in data["methods"]:
        print(f"  {m['name']:<24} {m['kind']:<12} {m['summary']}")
        if verbose:
            for name, setting in m["settings"].items():
                print("      " + setting_line(name, setting))
    print("problem families:")
    for f in data["problem_families"]:
        print(f"  {f['name']:<24} truth={f['truth']:<9} {f['summary']}")
    print("presets:")
    for p in data["presets"]:
        spec = ",".join(f"{k}={v}" for k, v in p["parameters"].items())
        print(f"  {p['name']:<24} {p['family']}:{spec}")
    print(f"files: {FILES}")
    if data["not_installed"]:
        names = ", ".join(m["name"] for m in data["not_installed"])
        print(f"not installed (optional peers: PyMC, GPyTorch): {names}; "
              f'pip install -e ".[peers]" adds them')
    if verbosity == NORMAL:
        print("each method's settings, with its default and what it does: list -v")
    return 0
