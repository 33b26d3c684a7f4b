"""`python -m harness gpr` (harness/cli/gpr.py) and its band figure (report/gpr_figure.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.cli.main import main
from harness.core.errors import EXIT_BAD_INPUT
from harness.core.gpr import GaussianProcessRegressor, log_evidence
from harness.core.kernels import RBF
from harness.datasets.sine import sine_data

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def test_gpr_command_writes_figure_and_json(tmp_path, capsys):
    out = tmp_path / "gpr"
    assert main(["gpr", "--n", "12", "--noise", "0.2", "--seed", "3", "--restarts", "2",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "log evidence" in printed and str(out / "gpr.json") in printed
    assert (out / "gpr.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (out / "gpr.svg").read_bytes()[:500]
    summary = json.loads((out / "gpr.json").read_text())
    assert summary["data"] == {"source": "sine", "n": 12, "noise_sd": 0.2, "seed": 3,
                               "x_range": [0.0, 0.7], "features": ["x"]}
    assert summary["param_names"] == ["alpha", "beta", "noise"] and len(summary["starts"]) == 3
    assert summary["evaluations"] == sum(s["evaluations"] for s in summary["starts"])
    # the JSON's optimum is the optimum of the same data, and its value is exact
    X, t = sine_data(n=12, noise_sd=0.2, seed=3)
    value, grad = log_evidence(np.array(summary["theta"]), X, t, RBF())
    assert summary["log_evidence"] == pytest.approx(value, abs=1e-12)
    assert np.linalg.norm(grad) < 1e-3
    assert summary["noise_variance"] == pytest.approx(np.exp(summary["theta"][-1]), rel=1e-12)


def test_gpr_command_on_csv(tmp_path, capsys):
    X, t = sine_data(n=15, seed=1)
    one = tmp_path / "one.csv"
    rows = zip(X[:, 0], t, strict=True)
    one.write_text("t,x\n" + "".join(f"{b:.17g},{a:.17g}\n" for a, b in rows))
    assert main(["gpr", "--data", str(one), "--kernel", "prml", "--out", str(tmp_path / "a")]) == 0
    summary = json.loads((tmp_path / "a" / "gpr.json").read_text())
    assert summary["kernel"] == "prml" and summary["data"]["features"] == ["x"]
    assert (tmp_path / "a" / "gpr.png").exists()
    rbf = GaussianProcessRegressor(RBF(), noise=0.1, seed=0).fit(X, t)   # the same model
    assert summary["log_evidence"] == pytest.approx(rbf.log_evidence_, abs=1e-6)
    two = tmp_path / "two.csv"
    two.write_text("x1,x2,t\n0,1,0.5\n1,0,0.1\n0.5,0.5,0.2\n")
    assert main(["gpr", "--data", str(two), "--restarts", "0", "--out", str(tmp_path / "b")]) == 0
    assert "no figure" in capsys.readouterr().out
    assert (tmp_path / "b" / "gpr.json").exists() and not (tmp_path / "b" / "gpr.png").exists()


@pytest.mark.parametrize("kernel", ["matern12", "matern32", "matern52"])
def test_gpr_command_fits_a_matern_kernel(tmp_path, kernel):
    """The Matérn kernels are fitted like the RBF: the JSON's optimum is a stationary point of
    the exact log evidence of the same data under that kernel."""
    from harness.core.kernels import make_kernel

    out = tmp_path / kernel
    assert main(["gpr", "--n", "12", "--seed", "3", "--restarts", "1", "--kernel", kernel,
                 "--out", str(out)]) == 0
    summary = json.loads((out / "gpr.json").read_text())
    assert summary["kernel"] == kernel and summary["param_names"] == ["alpha", "beta", "noise"]
    X, t = sine_data(n=12, noise_sd=0.3, seed=3)          # the command's default noise
    value, grad = log_evidence(np.array(summary["theta"]), X, t, make_kernel(kernel))
    assert summary["log_evidence"] == pytest.approx(value, abs=1e-12)
    assert np.linalg.norm(grad) < 1e-3


@pytest.mark.parametrize("argv,fragment", [
    (["--n", "0"], "--n"),
    (["--seed", "-1"], "--seed"),
    (["--restarts", "x"], "--restarts"),
    (["--noise", "loud"], "--noise"),
    (["--kernel", "matern"], "--kernel"),
    (["--data", "missing.csv"], "--data"),
])
def test_gpr_command_bad_input(tmp_path, capsys, argv, fragment):
    code = main(["gpr", *argv, "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and fragment in err


@pytest.mark.parametrize("content,fragment", [
    ("x,y\n1,2\n", "name the target column t"),
    ("x,t\n1,oops\n", "non-numeric"),
    ("x,t\n1,2\n3\n", "non-numeric"),
    ("x,t\n", "at least one data row"),
    ("x,t\n1,nan\n", "NaN"),
])
def test_gpr_command_bad_csv(tmp_path, capsys, content, fragment):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    assert main(["gpr", "--data", str(path), "--out", str(tmp_path)]) == EXIT_BAD_INPUT
    assert fragment in capsys.readouterr().err


def test_draw_gpr_band_and_errors(tmp_path):
    from harness.core.errors import InputError
    from harness.report.gpr_figure import draw_gpr, save_figure

    X, t = sine_data(n=8, seed=2)
    gpr = GaussianProcessRegressor(RBF(0.1, 1.0), noise=0.01, optimize=False).fit(X, t)
    fig = draw_gpr(gpr)                                    # default x range: the data ± 15 %
    ax = fig.axes[0]
    low, high = ax.get_xlim()
    assert low < X.min() and high > X.max()
    assert len(ax.collections) == 3                        # two bands and the data points
    assert {line.get_label() for line in ax.lines} == {"predictive mean"}
    paths = save_figure(fig, tmp_path / "fig", stem="band")
    assert sorted(p.name for p in paths.values()) == ["band.png", "band.svg"]
    two = GaussianProcessRegressor(RBF(), optimize=False).fit(np.c_[X, X], t)
    with pytest.raises(InputError) as exc:
        draw_gpr(two)
    assert exc.value.field == "X" and "one feature" in str(exc.value)
