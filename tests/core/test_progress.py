"""Progress of long work (harness.core.progress): phases nest, advances count towards the
innermost phase, and the shared walk, the set-up's factorisations and the runner report theirs
so that every method built on them shows its progress."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core import progress
from harness.core.covariance import DenseCovariance
from harness.core.reorder import pivoted_cholesky
from harness.core.tlr import tlr_cholesky
from harness.datasets.linear1d import linear1d
from harness.datasets.onefactor import onefactor
from harness.plugins.registry import get_method

pytestmark = pytest.mark.usefixtures("one_blas_thread")


class Recorder:
    """A sink that keeps, per phase, its total and what was advanced while it was innermost."""

    def __init__(self):
        self.open: list[str] = []
        self.events: list[tuple] = []
        self.done: dict[str, float] = {}
        self.totals: dict[str, float | None] = {}

    def begin(self, name, total):
        self.open.append(name)
        self.events.append(("begin", name))
        self.totals[name] = total
        self.done.setdefault(name, 0.0)

    def advance(self, amount):
        if self.open:   # an advance outside every phase counts for nothing
            self.done[self.open[-1]] += amount

    def end(self, name):
        assert self.open.pop() == name
        self.events.append(("end", name))


def recorded(fn):
    sink = Recorder()
    with progress.listening(sink):
        fn()
    assert not sink.open
    return sink


def test_phases_nest_and_an_advance_counts_for_the_innermost():
    def work():
        with progress.phase("outer", total=2):
            with progress.phase("inner", total=10):
                progress.advance(4)
                progress.advance(6)
            progress.advance()
        progress.advance(5)   # outside every phase

    sink = recorded(work)
    assert sink.events == [("begin", "outer"), ("begin", "inner"), ("end", "inner"),
                           ("end", "outer")]
    assert sink.done == {"outer": 1.0, "inner": 10.0}


def test_a_phase_ends_when_its_work_raises():
    def work():
        with pytest.raises(ValueError), progress.phase("failing"):
            raise ValueError("x")

    assert recorded(work).events == [("begin", "failing"), ("end", "failing")]


@pytest.mark.parametrize("name,settings", [
    ("sov", {}), ("sir", {}), ("minimax-tilting", {}), ("rejection-bootstrap", {}),
    ("sov-tlr", {"factorisation": "tlr", "tile_size": "8"}),
])
def test_methods_on_the_shared_walk_report_their_sampling_to_its_total(name, settings):
    problem = linear1d(n_train=30, n_test=5, seed=3)
    method = get_method(name).from_settings(settings)
    sink = recorded(lambda: method.estimate(problem, 300, np.random.default_rng(0)))
    assert sink.totals["sampling"] == 300 * 30
    assert sink.done["sampling"] == pytest.approx(300 * 30, rel=0.02)   # a dead chunk stops early


def test_factorisations_and_reorderings_advance_to_their_totals():
    problem = onefactor(n=120, seed=2)
    cov = DenseCovariance(problem.R)
    sink = recorded(lambda: (tlr_cholesky(cov, 16, 1e-8), pivoted_cholesky(problem.R)))
    for phase_name in ("tile-low-rank factorisation", "reordering"):
        assert sink.done[phase_name] == pytest.approx(sink.totals[phase_name])
        assert sink.totals[phase_name] > 0


def test_a_run_reports_its_set_up_then_its_estimate():
    from harness.execution.timed import run_method

    problem = onefactor(n=40, seed=5)
    method = get_method("minimax-tilting")()
    sink = recorded(lambda: run_method(problem, method, 200, np.random.default_rng(1)))
    begun = [name for kind, name in sink.events if kind == "begin"]
    assert begun[0] == "set-up" and "saddle point (Newton steps)" in begun
    assert begun.index("estimate") < begun.index("sampling")
    assert sink.done["saddle point (Newton steps)"] >= 1
