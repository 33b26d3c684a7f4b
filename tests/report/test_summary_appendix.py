"""The report of a quick-sweep-sized store (five problems, sixteen methods, hand-made records):
a summary PDF of at most 16 pages and the rest in an appendix file, one results table per
problem, the paper's tables as a few compact ones, progress while it is written, and long specs
wrapped within their column in the PDF's tables."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from matplotlib.backends.backend_pdf import PdfPages
from store_helpers import TRUE_LZ, make_store, record, summary

from harness.core.progress import listening
from harness.report import pdf_tables
from harness.report.build import build_report
from harness.report.style import KNOWN
from harness.report.tables import Cell, Table

APPROX = ("laplace", "ep", "vb-meanfield", "vecchia-sov", "vecchia-sir", "vecchia-tilting")
PROBLEMS = [("of:n=30,seed=0", "of", 30), ("of:n=30,seed=1", "of", 30),
            ("of:n=60,seed=0", "of", 60),
            ("lin:beta=9.0,d=2,n_test=20,n_train=60,random_signs=True", "lin", 60),
            ("other", "other", 40)]


class Recorder:
    """A harness.core.progress sink that keeps (phase, total, units advanced)."""

    def __init__(self):
        self.phases, self.open = [], []

    def begin(self, name, total):
        self.open.append([name, total, 0.0])
        self.phases.append(self.open[-1])

    def advance(self, amount):
        self.open[-1][2] += amount

    def end(self, name):
        self.open.pop()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("quick")
    rng = np.random.default_rng(0)
    recs = []
    for problem, _, n in PROBLEMS:
        for m in sorted(KNOWN):
            for b in (100, 1000):
                for rep in range(2):
                    err = rng.normal(0, 1 / np.sqrt(b))
                    recs.append(record(f"{problem}-{m}-{b}-{rep}", problem, m, b, rep,
                                       log_z=TRUE_LZ + err, probs=[0.25 + err / 10, 0.75],
                                       exact=m not in APPROX, cpu=b * 1e-4 * (1 + rep), n_train=n))
    problems = [summary(p, family=f, n_train=n) for p, f, n in PROBLEMS]
    store = root / "quick.sqlite"
    make_store(store, recs, problems)
    sink, pages = Recorder(), {}
    save = PdfPages.savefig

    def spy(self, figure=None, **kwargs):
        pages.setdefault(id(self), []).append(figure)
        return save(self, figure, **kwargs)

    with pytest.MonkeyPatch.context() as mp, listening(sink):
        mp.setattr(PdfPages, "savefig", spy)
        paths = build_report(store, root / "out")
    return {"paths": paths, "sink": sink, "pages": list(pages.values()),
            "html": paths["html"].read_text(encoding="utf-8")}


def test_summary_pdf_is_short_and_the_rest_is_in_the_appendix(built):
    """The quick sweep's PDF had 63 pages. Now: page one, the calibration's text, its figure
    and one figure per problem; the appendix file beside it holds the rest."""
    summary_pages, appendix_pages = built["pages"]
    assert len(summary_pages) <= 16
    assert len(summary_pages) <= 2 + 1 + 1 + len(PROBLEMS)
    assert built["paths"]["appendix_pdf"].name == "report-appendix.pdf"
    assert built["paths"]["appendix_pdf"].stat().st_size > 10_000
    assert len(appendix_pages) > len(summary_pages)


def test_one_results_table_per_problem_and_compact_paper_tables(built):
    html = built["html"]
    for problem, _, _ in PROBLEMS:
        assert html.count(f'<table id="results-{re.sub(r"[^A-Za-z0-9_-]+", "-", problem)}') == 1
    assert "Set-up and estimate CPU time" not in html and ">All results<" not in html
    # the paper's tables: one per family (of: 3 problems) and one per error measure
    assert len(re.findall(r"<h3>MAPE of log Z \(%\) by N × budget", html)) == 1
    assert len(re.findall(r"<h3>[^<]* by problem × budget</h3>", html)) == 2
    assert "CPU s per run, set-up incl." in html


def test_progress_is_reported_section_by_section(built):
    """Building the report took about 60 s without a word: every phase with a total is
    advanced to its total (figures drawn, rendered, both PDFs written)."""
    phases = {name: (total, done) for name, total, done in built["sink"].phases}
    for name in ("drawing the figures", "rendering the figures", "writing report.pdf",
                 "writing report-appendix.pdf"):
        total, done = phases[name]
        assert total and done == total, (name, total, done)
    assert phases["drawing the figures"][0] == len(PROBLEMS) + 3
    n = phases["rendering the figures"][0]
    assert f"figure 1 of {n}" in phases and f"problem 5 of {len(PROBLEMS)}" in phases  # which


def test_long_spec_is_wrapped_within_its_column_in_the_pdf():
    """A long spec ran into the next column: it wraps after its commas, every line inside its
    cell."""
    spec = PROBLEMS[3][0]
    table = Table("t", "t", ["problem", "a", "b"],
                  [[Cell(spec), Cell("1.23 (0.1)", "num"), Cell("x " * 30)]] * 3)
    lay = pdf_tables.layout(table, 4.0)
    assert lay is not None
    lines = lay.body[0][0].split("\n")
    assert len(lines) > 1 and all(ln.endswith(",") for ln in lines[:-1])
    assert "".join(lines) == spec
    for j in range(3):                       # every line fits its column's width
        for cell in lay.body[0][j].split("\n"):
            assert pdf_tables.text_width(cell) * lay.size / 72 <= lay.widths[j], (j, cell)


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_report_of_a_sweep_shows_its_progress(tmp_path, monkeypatch):
    """The sweep wrote its report (about 60 s) without a word: the writer the sweep command
    hands down draws the same bars as `report` on stderr."""
    from argparse import Namespace

    from harness.cli.sweep import sweep_writer

    recs = [record(f"{m}-{b}", "p1", m, b, log_z=TRUE_LZ + 1 / b, probs=[0.3, 0.7])
            for m in ("sov", "sir") for b in (100, 1000)]
    store = tmp_path / "s.sqlite"
    make_store(store, recs, [summary("p1")])
    err, out = Terminal(), io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    files = sweep_writer(Namespace(verbosity=1))(store, tmp_path / "out", out)
    assert set(files) >= {"html", "pdf", "appendix_pdf"}
    shown = err.getvalue()
    for name in ("reading the store", "rendering the figures", "writing report.pdf",
                 "writing report-appendix.pdf"):
        assert name in shown, name
    assert "report: " in out.getvalue()
