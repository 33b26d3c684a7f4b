"""`run --help` and `sweep --help` list the options of a problem file (harness.cli.args
.add_file_help), so none of them is a silent default."""

from __future__ import annotations

import pytest

from harness.cli.main import main
from harness.datasets.files import FILE_OPTIONS


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_help_lists_every_file_option(capsys, command):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())   # argparse wraps the paragraph
    section = out.split("problem files (.csv, .npz) and their options:")[1]
    for option in sorted(FILE_OPTIONS):
        assert f"{option} (" in section, option
    assert "'split' column of train/test" in section
    assert "for rbf a squared length scale" in section
