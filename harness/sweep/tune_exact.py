"""Exact references of a tuning sweep, computed once on the client and kept in the store.

For each problem of a `kind = "tune"` sweep the store's metadata gets

    tune_reference:<problem name> = {"space": {name: [low, high, num]},
                                      "surface": harness.tuning.exact.exact_surface(...)
                                                 or None (no exact truth: the report uses the
                                                 consensus of the exact methods instead),
                                      "posterior": {"log_grid": [...], "log_density": [...]}
                                                   or None}

The posterior (exact density of the natural-log parameter, on a grid of log θ, under the
uniform prior on the log box) is
computed for one-parameter spaces when the sweep runs the pseudo-marginal strategy (docs/math.md
§12). A stored reference for the same space is reused, so resuming a sweep recomputes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

REFERENCE_PREFIX = "tune_reference:"
POSTERIOR_POINTS = 201


def reference_key(problem_name: str) -> str:
    return REFERENCE_PREFIX + problem_name


def compute_reference(spec: str, tune, want_posterior: bool) -> dict[str, Any]:
    """The stored reference of one problem (see the module docstring)."""
    from harness.tuning.exact import exact_log_posterior, exact_surface
    from harness.tuning.space import TuneSpace

    space = TuneSpace.from_dict(tune.space)
    surface = exact_surface(spec, space)
    posterior = None
    if surface is not None and want_posterior and len(space.names) == 1:
        grid, log_density = exact_log_posterior(spec, space, POSTERIOR_POINTS)
        posterior = {"log_grid": [float(x) for x in np.log(grid)],
                     "log_density": [float(x) for x in log_density]}
    return {"space": tune.space, "surface": surface, "posterior": posterior}


def record_references(store, sweep, out=None) -> None:
    """Compute (or reuse) the reference of every problem of a tuning sweep; no-op otherwise."""
    if sweep.tune is None:
        return
    meta = store.metadata()
    want_posterior = "pseudo-marginal" in sweep.tune.strategies
    for p in sweep.problems:
        old = meta.get(reference_key(p.name))
        if (isinstance(old, dict) and old.get("space") == sweep.tune.space
                and (old.get("posterior") is not None or not want_posterior
                     or old.get("surface") is None or len(sweep.tune.space) != 1)):
            continue
        if out is not None:
            print(f"tune reference: {p.name} ...", file=out, flush=True)
        store.set_metadata(reference_key(p.name),
                           compute_reference(p.spec, sweep.tune, want_posterior))


def stored_references(metadata: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{problem name: reference} of a store's metadata."""
    return {k[len(REFERENCE_PREFIX):]: v for k, v in metadata.items()
            if k.startswith(REFERENCE_PREFIX) and isinstance(v, dict)}
