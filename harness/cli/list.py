"""`python -m harness list`: the registered methods, problem families and presets."""

from __future__ import annotations


def setup(p):
    """List the registered methods, problem families and presets."""
    p.description = setup.__doc__


def run(args) -> int:
    from harness.plugins.registry import methods, presets, problem_families

    print("methods:")
    for name, cls in methods().items():
        kind = "exact" if cls.tags.exact else "approximate"
        print(f"  {name:<24} {kind:<12} {cls.summary}")
    print("problem families:")
    for name, fam in problem_families().items():
        print(f"  {name:<24} truth={fam.truth:<9} {fam.summary}")
    print("presets:")
    for name, (fam, params) in presets().items():
        spec = ",".join(f"{k}={v}" for k, v in params.items())
        print(f"  {name:<24} {fam.name}:{spec}")
    print("files: any .npz (cov, or X_train/y_train/X_test/kernel/alpha/beta) or .csv "
          "(label column y, optional split column)")
    return 0
