"""The method plugin contract (harness.plugins.contract): here, its rules on `setting_help`."""

from __future__ import annotations

import pytest

from harness.methods.sov import Sov
from harness.plugins.contract import contract_violations
from harness.plugins.registry import methods


class Mine(Sov):
    name = "mine"


@pytest.mark.parametrize("lines, said", [
    ({"points": "which points"}, None),
    ({"pionts": "which points"}, "`setting_help` names 'pionts', which is not a setting"),
    ({"points": "two\nlines"}, "`setting_help['points']` is 'two\\nlines', not one line"),
    ({"points": " "}, "`setting_help['points']` is ' ', not one line of text"),
    ("points: which", "`setting_help` is 'points: which', not a mapping"),
])
def test_setting_help_names_settings_with_one_line_each(lines, said, monkeypatch):
    monkeypatch.setattr(Mine, "setting_help", lines, raising=False)
    found = contract_violations(Mine)
    if said is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(said), found


def test_every_built_in_method_keeps_the_contract():
    assert {name: contract_violations(cls, name) for name, cls in methods().items()} == \
        {name: [] for name in methods()}
