"""`sweep` filters on the command line (harness.sweep.filters): a sweep from --problem, --method
(--set), --budget and --replicates alone, and the same flags running part of a sweep file,
with the job ids (store keys) of the full file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from store_helpers import one_line

from harness.cli.main import main
from harness.execution.store import ResultStore
from harness.sweep.driver import record_metadata
from harness.sweep.filters import (
    MethodChoice,
    Selection,
    command_line_sweep,
    parse_budget_option,
    restrict,
)
from harness.sweep.plan import plan
from harness.sweep.spec import load_sweep, parse_sweep

ROOT = Path(__file__).resolve().parents[2]
FILE = """\
name = "mine"
seed = 0
replicates = 3
budgets = [200, 2000]
problems = ["onefactor:n=6", "onefactor:n=6,seed=1", "linear1d:n_train=8,n_test=3",
            "DATA"]
[methods.sov]
[methods.rejection-bootstrap]
count = ["soft", "hard"]
[methods.ep]
budgets = [100]
"""


@pytest.fixture
def sweep_file(tmp_path):
    """A sweep file with a CSV problem (standardised by default: its key says so)."""
    data = tmp_path / "d.csv"
    data.write_text("x,y,split\n" + "".join(f"{i / 3:.3f},{1 if i % 2 else -1},"
                                           f"{'test' if i > 7 else 'train'}\n"
                                           for i in range(10)))
    path = tmp_path / "mine.toml"
    path.write_text(FILE.replace("DATA", f"{data}:kernel=rbf,alpha=1,beta=1"))
    return path


def ids(sweep) -> set[str]:
    return {j.job_id for j in plan(sweep)}


def test_budgets_from_lists_and_ranges():
    assert parse_budget_option(["1000,1e4", "1e4"]) == (1000, 10000)
    assert parse_budget_option(["1e3:1e5:3"]) == (1000, 10000, 100000)


def test_a_sweep_from_the_command_line_is_the_file_it_stands_for(tmp_path):
    """Same jobs (ids) as the TOML a user would write; its text is kept; named cli."""
    selection = Selection(("linear1d:n_train=8,n_test=3",),
                          (MethodChoice("sov", {"points": "lattice", "randomisations": "4"}),
                           MethodChoice("rejection-bootstrap", {"count": "hard"}),
                           MethodChoice("rejection-bootstrap")),
                          (100, 1000), 2)
    sweep = command_line_sweep(selection)
    by_hand = parse_sweep(textwrap.dedent("""\
        name = "cli"
        replicates = 2
        budgets = [100, 1000]
        problems = ["linear1d:n_train=8,n_test=3"]
        [methods.sov]
        points = "lattice"
        randomisations = 4
        [[methods.rejection-bootstrap]]
        count = "hard"
        [[methods.rejection-bootstrap]]
        """), "by-hand.toml")
    assert ids(sweep) == ids(by_hand) and len(ids(sweep)) == 3 * 2 * 2
    assert parse_sweep(sweep.text, "again.toml").methods == sweep.methods
    assert sweep.name == "cli" and sweep.store == Path("results/cli.sqlite")


def test_sweep_without_a_file_checks_and_plans(capsys, no_cluster):
    argv = ["sweep", "--problem", "linear1d:n_train=8,n_test=3", "--method", "sov", "--set",
            "points=lattice", "--method", "rejection-bootstrap", "--budget", "1e3:1e4:2",
            "--replicates", "2", "--check"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "sweep cli: 8 jobs (1 problems, 2 methods, 2 budgets, 2 replicates)" in out
    assert "method  sov[points=lattice]  budgets 1000, 10000" in out


@pytest.mark.parametrize("args, words", [
    (["--problem", "onefactor:n=5", "--method", "sovv", "--budget", "100"],
     "--method: unknown method 'sovv' (did you mean 'sov'?"),
    (["--problem", "onefactr:n=5", "--method", "sov", "--budget", "100"],
     "--problem: unknown problem family or preset 'onefactr' (did you mean 'onefactor'?"),
    (["--problem", "onefactor:n=5", "--method", "sov", "--set", "pionts=sobol", "--budget", "1"],
     "--set pionts: is not a setting of method 'sov' (did you mean 'points'?"),
    (["--problem", "onefactor:n=5", "--method", "sov"], "--budget: is needed"),
    (["--problem", "onefactor:n=5", "--method", "sov", "--budget", "0"], "must be >= 1"),
    (["--problem", "onefactor:n=5", "--method", "sov", "--budget", "1:2"], "START:STOP:NUM"),
    (["--set", "points=sobol", "--method", "sov"], "give --method NAME before"),
    (["--problem", "onefactor:n=5", "--method", "sov", "--set", "points=sobol", "--set",
      "points=lattice", "--budget", "10"], "setting 'points' given twice"),
])
def test_bad_filters_are_one_line_errors(args, words, capsys, no_cluster):
    assert main(["sweep", *args, "--check"]) == 2
    assert words in one_line(capsys)


def test_filters_run_the_matching_part_of_a_file_with_its_job_ids(sweep_file):
    full = load_sweep(sweep_file)
    everything = ids(full)
    data = full.problems[-1].spec
    assert "standardize=true" in data   # the key of a standardised file problem

    def part(**selection):
        sweep = restrict(full, Selection(**selection))
        assert ids(sweep) <= everything   # the same ids: the store resumes across both
        return sweep

    # a bare family: both onefactor problems; a spec: one
    assert [p.spec for p in part(problems=("onefactor",)).problems] == [
        "onefactor:n=6", "onefactor:n=6,seed=1"]
    assert len(part(problems=("onefactor:n=6",)).problems) == 1
    # a file problem, with or without its default standardize=true, or its path alone
    head = data.partition(":")[0]
    for text in (f"{head}:kernel=rbf,alpha=1,beta=1", data, head):
        assert [p.spec for p in part(problems=(text,)).problems] == [data]
    # a method name selects every instance; --set and a label select one
    assert [m.label for m in part(methods=(MethodChoice("rejection-bootstrap"),)).methods] == [
        "rejection-bootstrap", "rejection-bootstrap[count=hard]"]
    for choice in (MethodChoice("rejection-bootstrap", {"count": "hard"}),
                   MethodChoice("rejection-bootstrap[count=hard]")):
        assert [m.label for m in part(methods=(choice,)).methods] == [
            "rejection-bootstrap[count=hard]"]
    # budgets: each method keeps those listed; a method with none of them is left out
    sweep = part(budgets=(2000,), replicates=1)
    assert [(m.label, m.budgets) for m in sweep.methods] == [
        ("sov", (2000,)), ("rejection-bootstrap", (2000,)),
        ("rejection-bootstrap[count=hard]", (2000,))]
    assert len(plan(sweep)) == 4 * 3   # 4 problems (ep cannot run on onefactor anyway)
    # everything at once: 1 problem x 1 method x 1 budget x 2 replicates
    sweep = part(problems=("linear1d:n_train=8,n_test=3",), methods=(MethodChoice("sov"),),
                 budgets=(200,), replicates=2)
    assert [(j.label, j.budget, j.replicate) for j in plan(sweep)] == [
        ("sov", 200, 0), ("sov", 200, 1)]


@pytest.mark.parametrize("args, words", [
    (["--problem", "onefactor:n=7"], "--problem: 'onefactor:n=7' is not a problem of"),
    (["--method", "sov", "--set", "points=lattice"],
     "--method: 'sov with --set points=lattice' is not a method of"),
    (["--method", "sovv"], "(did you mean 'sov'?"),
    (["--method", "sov", "--set", "pionts=lattice"], "--set pionts: is not a setting"),
    (["--budget", "300"], "--budget: 300 is not a budget of the selected methods"),
    (["--method", "ep", "--budget", "200"], "(their budgets: 100)"),
])
def test_a_filter_that_selects_nothing_is_refused(args, words, sweep_file, capsys, no_cluster):
    assert main(["sweep", str(sweep_file), *args, "--check"]) == 2
    assert words in one_line(capsys)


def test_sweep_check_with_filters_on_the_default_sweep(capsys, no_cluster):
    """In a folder without sweeps/quick.toml the bundled one is the default (its store and
    report, in the checkout, replaced: a test neither reads nor probes them)."""
    assert main(["sweep", "--budget", "1000", "--replicates", "1", "--check",
                 "--store", "quick.sqlite", "--no-report"]) == 0
    whole = len(plan(load_sweep(ROOT / "sweeps" / "quick.toml")))
    out = capsys.readouterr().out
    n = int(out.split("sweep quick: ")[1].split(" jobs")[0])
    assert 0 < n < whole


def test_the_store_keeps_each_sweeps_job_ids(tmp_path, sweep_file):
    """The job ids a sweep planned are kept by name (harness.analysis.compare reads them): a
    filtered run of the same text adds to them, a changed text replaces them."""
    full = load_sweep(sweep_file)
    jobs = plan(full)
    with ResultStore(tmp_path / "s.sqlite") as db:
        record_metadata(db, restrict(full, Selection(replicates=1)), {}, jobs[:3])
        record_metadata(db, full, {}, jobs[3:5])
        kept = db.metadata()["sweeps"]["mine"]
        assert kept["job_ids"] == sorted(j.job_id for j in jobs[:5]) and kept["jobs"] == 2
        changed = parse_sweep(full.text.replace("seed = 0", "seed = 1"), str(sweep_file))
        record_metadata(db, changed, {}, plan(changed)[:1])
        assert db.metadata()["sweeps"]["mine"]["job_ids"] == [plan(changed)[0].job_id]
