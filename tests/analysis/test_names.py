"""A problem found by the spec a user writes (harness.analysis.names) and the notebook's figure: one
CSV under two kernels is two problems; `plot_time_error(table,
"data.csv:kernel=rbf,alpha=2,beta=1")` finds its problem; `metric="mae"` without a truth says why;
the saved figure keeps its whole legend."""

from __future__ import annotations

import numpy as np
import pytest

import harness
from harness.analysis.names import find_problem
from harness.core.errors import InputError
from harness.plugins.specs import make_problem

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def write_csv(folder, name="data.csv", n=12):
    rng = np.random.default_rng(4)
    y = np.where(np.arange(n) % 2, 1, -1)
    x = rng.normal(size=(n, 2)) + y[:, None]
    split = ["train"] * (n - 4) + ["test"] * 4
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("x1,x2,y,split\n" + "".join(
        f"{a:.4f},{b:.4f},{c},{s}\n" for (a, b), c, s in zip(x, y, split, strict=True)))
    return path


def test_one_csv_under_two_kernels_is_two_problems(tmp_path):
    path = write_csv(tmp_path)
    a = make_problem(f"{path}:kernel=rbf,alpha=2,beta=1")
    b = make_problem(f"{path}:kernel=rbf,alpha=3,beta=1")
    assert a.name == f"{path}:alpha=2,beta=1,kernel=rbf (standardised)"
    assert a.name != b.name
    assert make_problem(str(path)).name == f"{path} (standardised)"   # no options: as before


def test_a_spec_as_written_finds_the_stored_name(tmp_path, monkeypatch):
    here, there = write_csv(tmp_path / "here"), write_csv(tmp_path / "there")
    names = [f"{here}:alpha=2,beta=1,kernel=rbf (standardised)",
             f"{here}:alpha=3,beta=1,kernel=rbf (standardised)",
             f"{here}:alpha=2,beta=1,kernel=rbf",
             "gauss2class:n_test=4,n_train=10"]
    monkeypatch.chdir(tmp_path / "here")
    assert find_problem("data.csv:kernel=rbf,alpha=2,beta=1", names) == names[0]
    assert find_problem("data.csv:kernel=rbf,alpha=2,beta=1,standardize=false", names) == names[2]
    assert find_problem("gauss2class:n_train=10,n_test=4", names) == names[3]
    assert find_problem("data.csv:kernel=rbf,alpha=5,beta=1", names) is None
    monkeypatch.chdir(tmp_path)   # another folder: the one stored file of that name
    assert find_problem("data.csv:alpha=3,kernel=rbf,beta=1", names) == names[1]
    both = [*names, f"{there}:alpha=3,beta=1,kernel=rbf (standardised)"]
    assert find_problem("data.csv:alpha=3,kernel=rbf,beta=1", both) is None   # which one?


def test_plot_time_error_finds_a_csv_problem_by_its_spec(tmp_path, monkeypatch, sweep_runner):
    import matplotlib.pyplot as plt

    path = write_csv(tmp_path)
    store = tmp_path / "csv.sqlite"
    outcome = sweep_runner(store, f"""name = "csv"
budgets = [200, 400]
problems = ["{path}:kernel=rbf,alpha=2,beta=1", "{path}:kernel=rbf,alpha=3,beta=1"]
[methods.sov]
""")
    assert outcome.complete, outcome
    table = harness.load_results(store)
    assert table["problem"].nunique() == 2
    monkeypatch.chdir(tmp_path)
    fig = harness.plot_time_error(table, "data.csv:kernel=rbf,alpha=2,beta=1", "mae_med")
    (ax,) = [a for a in fig.axes if a.get_title()]
    assert ax.get_title().startswith(f"{path}:alpha=2,beta=1,kernel=rbf (standardised)")
    plt.close(fig)
    with pytest.raises(InputError, match="'mae' is measured against the problem's truth, which "
                                         ".* has not .*metrics there: .*mae_med"):
        harness.plot_time_error(table, "data.csv:kernel=rbf,alpha=2,beta=1", "mae")


def test_the_legend_fits_the_saved_figure():
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from harness.report.figures import _legend, _new
    from harness.report.style import Palette

    labels = [f"rejection-bootstrap[count=hard,block_size={i}]" for i in range(13)]
    palette = Palette(labels, set())
    fig, (ax,) = _new(1, width_per=5.6)
    ax.plot([1, 2], [1, 2])
    _legend(fig, palette, labels, extra=[Line2D([], [], label="reference precision")])
    fig.canvas.draw()
    box = fig.axes[-1].get_legend().get_window_extent()
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1, (box, fig.bbox)
    plt.close(fig)
