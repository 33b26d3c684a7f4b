"""Plugin discovery: built-in plugins and third-party ones through entry points."""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

from harness import registry
from harness.errors import InputError


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    """A fake installed distribution that registers one method and one problem family."""
    (tmp_path / "thirdparty_plugin.py").write_text(textwrap.dedent('''
        import numpy as np
        from harness.estimate import Estimate
        from harness.family import ProblemFamily
        from harness.method import Method
        from harness.problem import Problem

        class Coin(Method):
            name = "coin"
            summary = "returns -N log 2 and 1/2 everywhere (independent variables)"
            exact = False
            def __init__(self, bias: float = 0.5):
                self.bias = bias
            def _estimate(self, problem, budget, rng):
                return Estimate(-problem.n_train * np.log(2), np.full(problem.n_test, 0.5))

        def identity(n: int = 3, name: str = "identity"):
            return Problem.orthant(name, np.eye(n), family="identity")

        FAMILY = ProblemFamily("identity", identity, "R = I", truth="none")
    '''))
    dist = tmp_path / "thirdparty_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[gpc_harness.methods]\ncoin = thirdparty_plugin:Coin\n\n"
        "[gpc_harness.problems]\nidentity = thirdparty_plugin:FAMILY\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.clear_cache()
    yield
    registry.clear_cache()
    sys.modules.pop("thirdparty_plugin", None)


def test_builtin_plugins_are_found():
    assert "rejection-bootstrap" in registry.methods()
    assert {"onefactor", "linear1d"} <= set(registry.problem_families())
    assert "linear1d-p3" in registry.presets()


def test_third_party_plugins_are_found_through_entry_points(third_party):
    method = registry.get_method("coin").from_settings({"bias": "0.3"})
    assert method.bias == 0.3 and method.label() == "coin[bias=0.3]"
    problem = registry.get_family("identity").make({"n": "4"})
    est = method.estimate(problem, 10, np.random.default_rng(0))
    assert est.log_marginal_likelihood == pytest.approx(-4 * np.log(2))
    assert "rejection-bootstrap" in registry.methods()  # built-ins stay


def test_unknown_names_are_clear_errors():
    with pytest.raises(InputError, match="unknown method 'nope'.*rejection-bootstrap"):
        registry.get_method("nope")
    with pytest.raises(InputError, match="unknown problem family 'nope'"):
        registry.get_family("nope")
