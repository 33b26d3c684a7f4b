"""`python -m harness list`: short by default; -v and --json give every method's settings with
its default, its allowed values and one line on what it does (harness.plugins.setting_help)."""

from __future__ import annotations

import json

import pytest

from harness.cli.main import main
from harness.model.constraints import Boolean, Integer, Number, OneOf
from harness.model.method import Method
from harness.plugins.registry import methods
from harness.plugins.setting_help import SHARED, describe_settings


def listed(capsys, *argv) -> str:
    assert main(["list", *argv]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def test_list_is_short_and_names_v_for_the_settings(capsys):
    out = listed(capsys)
    assert out.splitlines()[-1] == ("each method's settings, with its default and what it "
                                    "does: list -v")
    assert "randomisations=" not in out and "points=sobol" not in out
    assert len(out.splitlines()) < 80


def test_list_v_gives_each_setting_its_default_and_one_line(capsys):
    out = listed(capsys, "-v")
    lines = out.splitlines()
    sov = lines.index(next(line for line in lines if line.startswith("  sov ")))
    block = []
    for line in lines[sov + 1:]:
        if not line.startswith("      "):
            break
        block.append(line.strip())
    assert [line.split()[0] for line in block] == [
        "points=sobol", "randomisations=10", "reorder=none", "block_size=0", "chunk_mb=512.0"]
    randomisations = block[1]
    assert "their spread gives the standard errors" in randomisations     # what it does
    assert "an integer >= 0 (0: 10 to 40 by the budget)" in randomisations  # allowed values
    assert "one of univariate, none" in block[2]
    tol = next(line for line in lines if line.strip().startswith("tol=1e-09"))   # ep
    assert "log Z_EP changes by less than this" in tol and "a positive number" in tol
    gpml = next(line for line in lines if line.strip().startswith("gpml_compat=false"))
    assert "true or false" in gpml


def test_list_json_gives_every_setting_default_allowed_values_and_help(capsys):
    data = json.loads(listed(capsys, "--json"))
    listed_methods = {m["name"]: m for m in data["methods"]}
    assert set(listed_methods) == set(methods())
    for name, cls in methods().items():
        settings = listed_methods[name]["settings"]
        assert list(settings) == list(cls.setting_defaults()), name
        for key, setting in settings.items():
            assert setting["default"] == cls.setting_defaults()[key]
            # every built-in setting is described: a new one without a line fails here
            assert setting["help"] and setting["allowed"], (name, key, setting)
            assert "\n" not in setting["help"] + setting["allowed"]
    assert listed_methods["sov"]["settings"]["points"] == {
        "default": "sobol", "allowed": "one of sobol, lattice, random",
        "help": SHARED["points"]}


def test_allowed_values_as_a_phrase():
    assert OneOf("sobol", "lattice").allowed() == "one of sobol, lattice"
    assert OneOf(1, 2).allowed() == "one of 1, 2"
    assert Integer(minimum=0).allowed() == "an integer >= 0"
    assert Number(low=0, low_open=True).allowed() == "a positive number"
    assert Boolean().allowed() == "true or false"
    assert Integer(minimum=2, also=(0,), says="the count must be at least 2 (0: auto)"
                   ).allowed() == "at least 2 (0: auto)"


class _Base(Method):
    name = "base-for-help"
    setting_help = {"points": "the base's points", "depth": "how deep"}

    def __init__(self, points: str = "a", depth: int = 1):
        self.points, self.depth = points, depth

    def _estimate(self, problem, budget, rng):
        raise NotImplementedError


class _Sub(_Base):
    setting_help = {"depth": "the subclass's depth"}


@pytest.mark.parametrize("cls,points,depth", [(_Base, "the base's points", "how deep"),
                                              (_Sub, "the base's points", "the subclass's depth")])
def test_a_subclass_line_wins(cls, points, depth):
    described = describe_settings(cls)
    assert described["points"]["help"] == points and described["depth"]["help"] == depth
    assert described["depth"]["allowed"] == ""   # no constraint declared


def test_a_plugin_gets_no_shared_line():
    class Plain(Method):   # a plugin's own `points` may mean something else: no shared line
        name = "plain"

        def __init__(self, points: str = "x", chunk_mb: float = 1.0):
            self.points, self.chunk_mb = points, chunk_mb

        def _estimate(self, problem, budget, rng):
            raise NotImplementedError

    assert {s["help"] for s in describe_settings(Plain).values()} == {""}


def test_list_names_the_peers_that_are_not_installed_and_the_command(capsys, monkeypatch):
    """Without the `peers` extra the PyMC and GPyTorch methods are not listed as methods, and
    `list` (text and --json) says they exist and how to install them."""
    import sys

    from harness.plugins import registry

    for module in [m for m in sys.modules if m.split(".")[0] in ("pymc", "gpytorch")
                   or m in ("harness.methods.pymc_gp", "harness.methods.gpytorch_vgp")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "pymc", None)       # import pymc: ModuleNotFoundError
    monkeypatch.setitem(sys.modules, "gpytorch", None)
    registry.clear_cache()
    try:
        assert main(["list"]) == 0
        out = capsys.readouterr().out
        assert "pymc-smc" not in out.split("problem families:")[0]
        line = next(x for x in out.splitlines() if x.startswith("not installed"))
        assert all(p in line for p in registry.PEERS) and 'pip install -e ".[peers]"' in line
        assert main(["list", "--json"]) == 0
        missing = json.loads(capsys.readouterr().out)["not_installed"]
        assert {m["name"] for m in missing} == set(registry.PEERS)
        assert all('.[peers]' in m["why"] for m in missing)
    finally:
        monkeypatch.undo()
        registry.clear_cache()
