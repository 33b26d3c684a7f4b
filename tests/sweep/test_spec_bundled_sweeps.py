"""Every sweep file shipped in sweeps/ is valid: it parses, names registered problems and
methods, and expands to the jobs it promises (problems are not built here; `sweep --check`
builds them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.sweep.spec import load_sweep

SWEEPS = sorted((Path(__file__).resolve().parents[2] / "sweeps").glob("*.toml"))


def test_the_bundled_sweeps_are_found():
    assert {p.name for p in SWEEPS} >= {"quick.toml", "hard.toml", "scale.toml"}


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.name)
def test_a_bundled_sweep_file_is_valid(path):
    sweep = load_sweep(path, build=False)
    assert sweep.problems
    if sweep.kind == "reference":   # one reference per problem, no estimate jobs
        assert sweep.reference is not None
    else:
        assert sweep.n_jobs > 0 and sweep.methods


def test_the_hard_sweep_has_short_range_exact_truth_and_replicates():
    sweep = load_sweep(Path(SWEEPS[0]).parent / "hard.toml", build=False)
    assert sweep.replicates >= 10
    assert {p.spec for p in sweep.problems} >= {"markov-p2", "markov-p3", "markov-p4"}
    assert {m.name for m in sweep.methods} >= {"sov", "sov-tlr", "sir", "minimax-tilting"}
