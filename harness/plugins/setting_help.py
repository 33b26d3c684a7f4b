"""Each setting of a method in one line, for `list -v` and `list --json`: its default, its
allowed values and what it does.

What a setting does is the method's to say, in its class attribute `setting_help`
(harness.model.method.Method; a base class's lines serve its subclasses). The settings that the
built-in methods share through their parts (harness.engine: the walk's points and
randomisations, the factor, the resampling, the AIS schedule of the MCMC methods) are said once
here, in SHARED, for a method whose settings the harness declares (its `__init__` is the
harness's) and that does not say otherwise: a plugin's own setting of the same name may mean
something else. The allowed values come from the method's `constraints` (Constraint.allowed).
"""

from __future__ import annotations

from typing import Any

from harness.model.method import Method

SHARED = {
    # the walk (harness.engine.importance_walk, .resampled_walk, .sampler)
    "points": "the walk's uniforms: scrambled Sobol' points, a rank-1 lattice or pseudo-random",
    "randomisations": "independent randomisations (or populations) of the walk; their spread "
                      "gives the standard errors",
    "block_size": "variables per block step of the walk",
    "chunk_mb": "memory of one chunk of particles or draws, in MiB",
    "walk": "importance (Botev's sampler), or sequential (resampling on the tilted weights); "
            "auto resamples from 2,048 variables on",
    "ess_threshold": "resample when the weights' effective sample size falls below this "
                     "fraction of the population",
    "resampling": "how a population is resampled",
    # the factor (harness.engine.dense_factor, .tlr_factor, .vecchia_factor)
    "reorder": "the order of the variables in the Cholesky factor",
    "factorisation": "the Cholesky factor: dense, or tile-low-rank (tlr) built from the "
                     "covariance; auto is tlr from 2,048 variables on",
    "tile_size": "rows of a tile of the tile-low-rank factor",
    "tolerance": "compression tolerance of each off-diagonal tile of the tile-low-rank factor, "
                 "relative to sqrt(max R_ii)",
    "m": "neighbours per variable of the Vecchia factor (the m nearest earlier variables)",
    "ordering": "the variables' order in the Vecchia factor (auto: sorted 1-D inputs, else "
                "maximin)",
    # the MCMC methods' posterior chain and AIS (harness.engine.ais)
    "skip": "transitions between kept samples, and at each AIS temperature",
    "burn_in": "blocks of `skip` transitions discarded at the start of the posterior chain",
    "ais_runs": "independent annealed importance sampling runs, for log Z and its standard error",
    "temperatures": "AIS temperatures",
    "jitter": "added to the diagonal of K, relative to mean(diag K)",
    "gpml_compat": "reproduce GPML's infMCMC as the paper ran it, its two errors included",
}


def _declared_by_harness(cls: type[Method]) -> bool:
    """Whether the class's settings (its __init__) are declared by the harness's own code."""
    owner = next((k for k in cls.__mro__ if "__init__" in vars(k)), cls)
    return owner.__module__.split(".")[0] == "harness"


def describe_settings(cls: type[Method]) -> dict[str, dict[str, Any]]:
    """setting -> {"default", "allowed", "help"} of a method class, in __init__'s order
    ("allowed" and "help" are empty where nothing says them)."""
    lines = cls.setting_lines()
    shared = SHARED if _declared_by_harness(cls) else {}
    out = {}
    for name, default in cls.setting_defaults().items():
        constraint = cls.constraints.get(name)
        out[name] = {"default": default,
                     "allowed": constraint.allowed() if constraint is not None else "",
                     "help": lines.get(name) or shared.get(name, "")}
    return out
