"""Plugin discovery: built-in plugins and third-party ones through entry points."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.plugins import registry


@pytest.fixture
def third_party(install_plugin):
    """A fake installed distribution that registers one method and one problem family."""
    return install_plugin("thirdparty_plugin", '''
        import numpy as np
        from harness.model.result import Estimate
        from harness.model.family import ProblemFamily
        from harness.model.method import Method
        from harness.model.tags import Tags
        from harness.model.problem import Problem

        class Coin(Method):
            name = "coin"
            summary = "returns -N log 2 and 1/2 everywhere (independent variables)"
            tags = Tags(exact=False)
            def __init__(self, bias: float = 0.5):
                self.bias = bias
            def _estimate(self, problem, budget, rng):
                return Estimate(-problem.n_train * np.log(2), np.full(problem.n_test, 0.5))

        def identity(n: int = 3, name: str = "identity"):
            return Problem.orthant(name, np.eye(n), family="identity")

        FAMILY = ProblemFamily("identity", identity, "R = I", truth="none")
    ''', methods={"coin": "thirdparty_plugin:Coin"},
        problems={"identity": "thirdparty_plugin:FAMILY"})


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
    with pytest.raises(InputError, match="unknown problem family or preset 'nope'"):
        registry.get_family("nope")


BAD_PLUGINS = '''
    from harness.model.result import Estimate
    from harness.model.method import Method

    class Good(Method):
        name = "good"
        summary = "a usable plugin next to broken ones"
        def _estimate(self, problem, budget, rng):
            return Estimate(-1.0)

    class NoName(Method):          # Method declares `name` without a value
        summary = "forgot its name"
        def _estimate(self, problem, budget, rng):
            return Estimate(-1.0)

    class Flat(Good):              # the older flat surface: refused, never read as defaults
        name = "flat"
        exact = False

    class NoSummary(Good):
        name = "no-summary"
        summary = ""

    class NoDefault(Good):
        name = "no-default"
        def __init__(self, scale):
            self.scale = scale

    class NotAMethod:
        name = "not-a-method"
        summary = "a plain class"
'''
BAD = {  # entry point -> (target, what the warning says)
    "noname": ("bad_plugins:NoName", "no `name` class attribute"),
    "no-summary": ("bad_plugins:NoSummary", "an empty `summary`"),
    "flat": ("bad_plugins:Flat",
             "`exact = False` is no longer read: write `tags = Tags(exact=False)`"),
    "no-default": ("bad_plugins:NoDefault", "settings without defaults: scale"),
    "not-a-method": ("bad_plugins:NotAMethod", "is not a subclass of harness.model.method.Method"),
    "missing": ("bad_plugins:Missing", "cannot be imported: AttributeError"),
    "unimportable": ("no_such_module:Cls", "cannot be imported: ModuleNotFoundError"),
    "misnamed": ("bad_plugins:Good", "its `name` is 'good', but it is registered as 'misnamed'"),
}


@pytest.fixture
def bad_plugins(install_plugin):
    return install_plugin("bad_plugins", BAD_PLUGINS,
                          methods={"good": "bad_plugins:Good",
                                   **{ep: target for ep, (target, _) in BAD.items()}})


def test_bad_plugins_are_skipped_with_one_warning_each(bad_plugins):
    with pytest.warns(registry.PluginWarning) as caught:
        found = registry.methods()
    assert "good" in found and "rejection-bootstrap" in found
    assert not set(BAD) & set(found)
    messages = [str(w.message) for w in caught]
    for ep, (target, why) in BAD.items():
        mine = [m for m in messages if f"method plugin {ep!r}" in m]
        assert len(mine) == 1, (ep, messages)
        assert why in mine[0] and target in mine[0] and "\n" not in mine[0], mine[0]
    assert "of thirdparty-plugin" in mine[0]   # names the distribution too


@pytest.mark.parametrize("ep", sorted(BAD))
def test_a_bad_plugin_by_name_is_a_clear_error(bad_plugins, ep):
    with pytest.raises(InputError, match=f"method plugin '{ep}'.*{re.escape(BAD[ep][1])}"):
        registry.get_method(ep)


def test_list_and_run_work_with_bad_plugins_installed(bad_plugins):
    """`list` used to exit 1 with AttributeError: type object ... has no attribute 'name'."""
    env = dict(os.environ, PYTHONPATH=str(bad_plugins), OMP_NUM_THREADS="1")
    listed = subprocess.run([sys.executable, "-m", "harness", "list"], capture_output=True,
                            text=True, env=env, timeout=300)
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    assert "  good " in listed.stdout and "  sov " in listed.stdout
    warnings = listed.stderr.strip().splitlines()
    assert len(warnings) == len(BAD), listed.stderr
    assert all(w.startswith("warning: skipped method plugin '") for w in warnings), warnings
    ran = subprocess.run([sys.executable, "-m", "harness", "run", "--problem", "linear1d-p1",
                          "--method", "noname", "--budget", "10"], capture_output=True,
                         text=True, env=env, timeout=300)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1 and "no `name`" in ran.stderr


def test_a_sweep_of_every_method_leaves_bad_plugins_out(bad_plugins, tmp_path):
    from harness.sweep.spec import load_sweep

    path = tmp_path / "every.toml"
    path.write_text('name = "every"\nevery_method = true\nbudgets = [100]\n'
                    'problems = ["linear1d:n_train=10,n_test=2"]\n')
    with pytest.warns(registry.PluginWarning):
        sweep = load_sweep(path)
    names = {m.name for m in sweep.methods}
    assert "good" in names and "sov" in names and not names & set(BAD)
