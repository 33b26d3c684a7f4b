"""End to end: a small real run -> `python -m harness report` -> HTML in headless Chromium, PDF
through pdftoppm, page one (the verdict) included. Skipped (with the reason) only when
chromium / pdftoppm are absent."""

from __future__ import annotations

import re
import shutil
import subprocess
from html import unescape

import numpy as np
import pytest
from matplotlib.backends.backend_pdf import PdfPages
from store_helpers import real_store

from harness.cli.main import main
from harness.execution.store import ResultStore
from harness.plugins.registry import get_method
from harness.report.pdf import PAGE
from harness.report.style import Palette

SPECS = ("linear1d:n_train=40,n_test=10",                         # with a kernel: laplace runs
         "onefactor:n=30,dmin=0.95,dmax=0.999,random_signs=true")  # a long spec, a readable title
BUDGETS = (1000, 2000)   # 10 populations of >= 100 particles: ok (200 were unreliable)
REPLICATES = 3


def page_fill(fig) -> float:
    """The share of a page's height its content reaches down to (from the top edge)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [a.get_window_extent(renderer) for a in fig.texts + fig.axes]
    lowest = min(b.y0 for b in boxes) if boxes else fig.bbox.height
    return 1 - lowest / fig.bbox.height


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    methods = [get_method("rejection-bootstrap")(count=c) for c in ("soft", "hard")]
    store_path = real_store(
        root / "small.sqlite", SPECS, [*methods, get_method("laplace")()], BUDGETS, REPLICATES,
        metadata={"environment": {"python": "3.x", "blas": [{"num_threads": 1}]},
                  "sweep_file": '[sweep]\nname = "small"\nsee = "<script>x</script>"\n',
                  "sweep_name": "small"},
        skip=lambda problem, method: method.label() == "laplace" and problem.kernel is None)
    with ResultStore(store_path) as store:
        last = store.records()[-1]
        failed = {**last, "job_id": "lost-1", "status": "timeout", "log_marginal_likelihood": None,
                  "test_probabilities": None, "reason": "CPU time limit 1 s exceeded"}
        for k in ("abs_log_error", "mape_percent", "mae"):
            failed.pop(k, None)
        store.add_record(failed)
    out = root / "out"
    pages = []   # (width, height, fill) of every PDF page, in order
    files = {}   # id of the PdfPages -> its pages, in order (the summary's first)
    save = PdfPages.savefig

    def spy(self, figure=None, **kwargs):
        pages.append((*figure.get_size_inches(), page_fill(figure)))
        files.setdefault(id(self), []).append(pages[-1])
        return save(self, figure, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(PdfPages, "savefig", spy)
        assert main(["report", "--store", str(store_path), "--out", str(out)]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    return {"root": root, "out": out, "html": html, "methods": [m.label() for m in methods],
            "pages": pages, "files": list(files.values())}


def test_html_is_self_contained(report):
    html = report["html"]
    assert "<script" not in html.lower().replace("&lt;script&gt;", "")   # the sweep text escaped
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html, re.I)
    assert "<link" not in html.lower() and "@import" not in html and "url(" not in html
    figures = re.findall(r'<img src="data:image/svg\+xml;base64,', html)
    assert len(figures) == 7   # per problem time-error, error-budget, cost; calibration of the SEs
    for needle in ("Failed jobs", "CPU time limit 1 s exceeded", "Environment",
                   "Which exact method reaches each target cheapest, in detail",
                   "Error against CPU time", "Calibration of the standard errors"):
        assert needle in html


def test_written_files(report):
    out = report["out"]
    for name in ("report.html", "report.pdf", "report-appendix.pdf", "cells.csv", "jobs.csv"):
        assert (out / name).stat().st_size > 500, name
    assert (out / "report.pdf").read_bytes().startswith(b"%PDF")
    assert "timeout" in (out / "jobs.csv").read_text()


def test_pdf_has_no_near_empty_pages(report):
    """Short tables share pages: in the appendix every page but the last is filled at least to
    half its height, and the summary is page one (the verdict), one page of text (the
    calibration) and figures (pages of their own, sized to the figure)."""
    summary, appendix = report["files"]
    for i, (_, _, fill) in enumerate(appendix[:-1], 1):
        assert fill >= 0.5, f"appendix page {i} of {len(appendix)} is filled to {fill:.0%}"
    text = [(round(w, 2), round(h, 2)) == PAGE for w, h, _ in summary]
    assert text[:2] == [True, True] and text == sorted(text, reverse=True)   # then figures
    assert len(text) - sum(text) == 3       # the calibration's and one per problem
    assert sum((round(w, 2), round(h, 2)) == PAGE for w, h, _ in appendix) >= 2   # A4 text
    for name, pages in (("report.pdf", summary), ("report-appendix.pdf", appendix)):
        data = (report["out"] / name).read_bytes()
        assert len(re.findall(rb"/Type\s*/Page\b", data)) == len(pages)


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("headless browser test needs chromium (apt-get install chromium)")


def _run_chromium(exe, tmp, *args):
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-extensions", "--enable-logging=stderr", "--v=0",
           f"--user-data-dir={tmp}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def opened(html_path, tmp_path):
    """A copy of the report with every <details> open (the figures are collapsed under the
    verdict page), as a file:// URL."""
    copy = tmp_path / "opened.html"
    copy.write_text(html_path.read_text(encoding="utf-8").replace("<details", "<details open"),
                    encoding="utf-8")
    return copy.as_uri()


def test_html_renders_in_headless_chromium(report, tmp_path):
    exe = _chromium()
    url = opened(report["out"] / "report.html", tmp_path)
    shot = tmp_path / "page.png"
    res = _run_chromium(exe, tmp_path / "profile", f"--screenshot={shot}",
                        "--window-size=1200,3000", url)
    assert shot.is_file() and shot.stat().st_size > 20_000, res.stderr[-2000:]
    console = [ln for ln in res.stderr.splitlines()
               if "CONSOLE" in ln or "Uncaught" in ln or "Failed to load resource" in ln
               or "ERR_" in ln and "file://" in ln]
    assert not console, console

    from PIL import Image

    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.shape[:2] == (3000, 1200)
    assert img.std() > 10                                       # not a blank page
    # the figures drew: many pixels in each method's palette colour (not just the swatches)
    palette = Palette(report["methods"])
    for method in report["methods"]:
        rgb = np.array([int(palette.colour(method)[i:i + 2], 16) for i in (1, 3, 5)])
        near = (np.abs(img - rgb).sum(axis=2) < 40).sum()
        assert near > 1500, (method, near)

    dom = _run_chromium(exe, tmp_path / "profile2", "--dump-dom", url).stdout
    assert dom.count('src="data:image/svg+xml;base64,') == 7
    assert "Failed jobs" in dom


def test_pdf_first_page_renders(report, tmp_path):
    if not shutil.which("pdftoppm"):
        pytest.skip("PDF check needs pdftoppm (apt-get install poppler-utils)")
    res = subprocess.run(["pdftoppm", "-png", "-r", "40", "-f", "1", "-l", "1",
                          str(report["out"] / "report.pdf"), str(tmp_path / "page")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    pages = list(tmp_path.glob("page*.png"))
    assert len(pages) == 1 and pages[0].stat().st_size > 3_000
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(report["out"] / "report.pdf")],
                              capture_output=True, text=True).stdout
        n_pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
        assert 5 <= n_pages <= 6     # verdict, calibration, its figure, one figure per problem


# ---- page one: the verdict ------------------------------------------------------------------
def test_html_opens_with_the_verdict_and_collapses_the_rest(report):
    """The summary first (verdict, leaderboard, calibration, one figure per problem), then the
    appendix in collapsed parts, its PDF linked."""
    html = report["html"]
    front, rest = html.split('<h2 id="details">', 1)
    for needle in ("Verdict: the cheapest", "Leaderboard across problems",
                   "Error bars to believe", "Calibration of the standard errors",
                   "one-factor, N = 30, hard (|d| ∈ [0.95, 0.999], random signs)"):
        assert needle in front, needle
    assert "<details" not in front
    assert front.count("<figure") == 3      # the calibration's and one per problem
    assert rest.count("<figure") == 4       # the problems' further figures
    assert '<a href="report-appendix.pdf">' in html
    parts = re.findall(r'<details class="part" id="([^"]+)">', rest)
    assert parts[0] == "summary" and "failures" in parts and "environment" in parts
    assert "laplace (approx.)" in front     # an approximation is marked where it wins
    assert re.search(r"<summary>one-factor, N = 30, hard \(.*\) <small>onefactor:dmax=0\.999",
                     html)
    assert "onefactor:<wbr>dmax=0.999,<wbr>dmin=0.95," in html   # a long spec wraps


MEASURE = """<script>
addEventListener("load", () => {
  const wide = [...document.querySelectorAll("table")].filter(
    t => t.getBoundingClientRect().right > document.documentElement.clientWidth + 1
      || t.parentElement.scrollWidth > t.parentElement.clientWidth + 1);
  document.body.setAttribute("data-overflow", wide.map(t => t.id || "environment").join(" "));
});
</script></body>"""


def test_tables_fit_1400_pixels_in_headless_chromium(report, tmp_path):
    """The best-method table's columns were once cut off at 1,400 px (unbreakable specs,
    headers that never wrap). Every table of the report, all parts open, fits without
    scrolling."""
    exe = _chromium()
    opened(report["out"] / "report.html", tmp_path)
    page = tmp_path / "measure.html"
    page.write_text((tmp_path / "opened.html").read_text(encoding="utf-8")
                    .replace("</body>", MEASURE), encoding="utf-8")
    dom = _run_chromium(exe, tmp_path / "profile", "--window-size=1400,1000",
                        "--virtual-time-budget=5000", "--dump-dom", page.as_uri()).stdout
    assert 'data-overflow=""' in dom, re.search(r'data-overflow="[^"]*"', dom)


def test_page_one_in_headless_chromium_shows_the_methods_colours(report, tmp_path):
    from PIL import Image

    exe = _chromium()
    shot = tmp_path / "one.png"
    _run_chromium(exe, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1400,900",
                  (report["out"] / "report.html").as_uri())
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    palette = Palette(report["methods"])
    for method in report["methods"]:      # a swatch (11 x 11 px) in the leaderboard at least
        rgb = np.array([int(palette.colour(method)[i:i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(img - rgb).sum(axis=2) < 30).sum() >= 100, method


def _pdf_text(path, first, last):
    if not shutil.which("pdftotext"):
        pytest.skip("PDF text check needs pdftotext (apt-get install poppler-utils)")
    return subprocess.run(["pdftotext", "-f", str(first), "-l", str(last), "-layout", str(path),
                           "-"], capture_output=True, text=True, timeout=60).stdout


def test_pdf_page_one_is_the_verdict_and_the_appendix_follows(report, tmp_path):
    pdf = report["out"] / "report.pdf"
    one, two = _pdf_text(pdf, 1, 1), _pdf_text(pdf, 2, 3)
    for needle in ("Verdict: the cheapest", "Leaderboard across problems",
                   "one-factor, N = 30, hard"):
        assert needle in re.sub(r"\s+", " ", one), needle
    assert "report-appendix.pdf" in re.sub(r"\s+", " ", two)     # the summary names it
    appendix = _pdf_text(report["out"] / "report-appendix.pdf", 1, 1)
    assert appendix.lstrip().startswith("Appendix: GPC benchmark report")
    if shutil.which("pdftoppm"):
        res = subprocess.run(["pdftoppm", "-png", "-r", "50", "-f", "1", "-l", "1", str(pdf),
                              str(tmp_path / "p")], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and list(tmp_path.glob("p*.png"))


def test_every_dash_is_explained(report):
    """A table with a '—' cell says under it what '—' means there."""
    html = report["html"]
    tables = re.findall(r'(<table id="[^"]*">.*?</table></div>\n(?:<div class="caption">.*?'
                        r'</div>)?)', html, re.S)
    assert len(tables) >= 5
    dashed = [t for t in tables if re.search(r">—(</td>| <small)", t)]
    for t in dashed:
        assert "'—': " in unescape(t), t[:200]
