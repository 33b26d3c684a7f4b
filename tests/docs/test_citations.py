"""Every citation of the documentation resolves inside the repository.

The code, README, sweep files and report templates cite docs/math.md by section number
(`docs/math.md §6`, `§3a–b`, `§5, §6`) and docs/design.md by section title
(`docs/design.md "Large problems"`). These tests check, over every tracked text file:

- no citation of the private notes is left (their names are built below from pieces, so that
  this file does not cite them itself);
- every cited math section exists as a numbered heading of docs/math.md (`## 6. ...`,
  `### 3a. ...`), each number of a range included;
- every cited design section exists as a heading of docs/design.md;
- every relative Markdown link of README.md and docs/*.md points at an existing file (and, for
  a Markdown target with an anchor, at an existing heading, by GitHub's slug rules);
- every `tests/....py` path named in README.md and docs/*.md exists, and every repository path
  named in docs/math.md and docs/design.md exists.

Pure text checks: nothing of the harness is imported.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
MATH_DOC = "docs/math.md"
DESIGN_DOC = "docs/design.md"
TEXT_SUFFIXES = (".py", ".md", ".j2", ".toml", ".sh", ".txt", ".html")
SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "build", "dist", ".tox", "node_modules",
             ".pytest_cache", ".ruff_cache", ".hypothesis", "results", "reports"}

# The private notes' names, assembled so that this file never matches them.
_M, _D = "MA" + "TH", "DES" + "IGN"
FORBIDDEN = (_M + ".md", _M + " §", _D + ".md", _D + ' "')

_SEC = r"\d+[a-z]?"
_RANGE = rf"({_SEC})(?:[–-]({_SEC}|[a-z])(?!\w|\.\d))?"
MATH_CITE = re.compile(re.escape(MATH_DOC) + rf"\s*§{_RANGE}((?:\s*(?:,|;|and)\s*§{_SEC}"
                       rf"(?:[–-](?:{_SEC}|[a-z])(?!\w|\.\d))?)*)")
FOLLOW_ON = re.compile(rf"§{_RANGE}")
DESIGN_CITE = re.compile(re.escape(DESIGN_DOC) + r'\s+"([^"\n]+)"')
NUMBERED_HEADING = re.compile(r"^#{1,6}\s+(\d+[a-z]?)\.\s", re.M)
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
TESTS_PATH = re.compile(r"(?<![\w/.-])(tests/[\w./-]*?\.py)(?![\w])")
REPO_PATH = re.compile(r"(?<![\w/.-])((?:harness|methods|datasets|benchmarks|sweeps|tests|docs)"
                       r"(?:/[\w*-]+)+(?:\.\w+)?)(?!\w)")
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)


# ---- helpers (checked on their own below) --------------------------------------------------
def repo_files(root: Path = ROOT) -> list[str]:
    """Tracked files (`git ls-files`), or every file under root when git is unavailable."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True,
                             check=True, timeout=60).stdout.decode()
        files = [p for p in out.split("\0") if p]
        if files:
            return files
    except (OSError, subprocess.SubprocessError):
        pass
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        files += [Path(folder, n).relative_to(root).as_posix() for n in names]
    return sorted(files)


def text_files(root: Path = ROOT) -> dict[str, str]:
    """{path: text} of the repository's text files that exist in the work tree."""
    texts = {}
    for rel in repo_files(root):
        path = root / rel
        if rel.endswith(TEXT_SUFFIXES) and path.is_file():
            try:
                texts[rel] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
    return texts


def expand(start: str, end: str | None) -> list[str]:
    """Section numbers of a cited range: ('3a', 'b') -> 3a 3b; ('5', '7') -> 5 6 7;
    ('3a', '3c') -> 3a 3b 3c; ('6', None) -> 6."""
    if not end:
        return [start]
    n0, l0 = re.fullmatch(r"(\d+)([a-z]?)", start).groups()
    if end.isalpha():
        n1, l1 = n0, end
    else:
        n1, l1 = re.fullmatch(r"(\d+)([a-z]?)", end).groups()
    if n0 == n1 and l0 and l1:
        return [f"{n0}{chr(c)}" for c in range(ord(l0), ord(l1) + 1)]
    if not l0 and not l1:
        return [str(n) for n in range(int(n0), int(n1) + 1)]
    return [start, f"{n1}{l1}"]   # mixed forms: the two ends


def math_citations(text: str) -> list[list[str]]:
    """The section numbers of each docs/math.md citation in text (a list per citation)."""
    cited = []
    for m in MATH_CITE.finditer(text):
        numbers = expand(m.group(1), m.group(2))
        for f in FOLLOW_ON.finditer(m.group(3) or ""):
            numbers += expand(f.group(1), f.group(2))
        cited.append(numbers)
    return cited


def without_code_blocks(markdown: str) -> str:
    """The text with fenced code blocks blanked (their line breaks kept, so line numbers hold)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), markdown)


def headings(markdown: str) -> list[str]:
    """Heading texts of a Markdown document (fenced code blocks ignored)."""
    return [m.group(1).strip().rstrip("#").strip()
            for m in re.finditer(r"^#{1,6}[ \t]+(.+)$", without_code_blocks(markdown), re.M)]


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)      # a link: keep its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every anchor of a document, with GitHub's -1, -2 suffixes for repeated headings."""
    seen: dict[str, int] = {}
    out = set()
    for h in headings(markdown):
        slug = github_slug(h)
        if slug in seen:
            seen[slug] += 1
            out.add(f"{slug}-{seen[slug]}")
        else:
            seen[slug] = 0
            out.add(slug)
    return out


def math_sections(root: Path = ROOT) -> set[str]:
    return set(NUMBERED_HEADING.findall(without_code_blocks(
        (root / MATH_DOC).read_text(encoding="utf-8"))))


def markdown_docs(root: Path = ROOT) -> list[str]:
    docs = sorted(p.relative_to(root).as_posix() for p in (root / "docs").glob("*.md"))
    return ["README.md", *docs] if (root / "README.md").is_file() else docs


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


# ---- the helpers themselves -----------------------------------------------------------------
@pytest.mark.parametrize("start, end, expected", [
    ("6", None, ["6"]), ("3a", "b", ["3a", "3b"]), ("3b", "c", ["3b", "3c"]),
    ("1", "2", ["1", "2"]), ("5", "7", ["5", "6", "7"]), ("10", "11", ["10", "11"]),
    ("3a", "3c", ["3a", "3b", "3c"]),
])
def test_expand_ranges(start, end, expected):
    assert expand(start, end) == expected


def test_citation_parsing():
    d = MATH_DOC
    text = (f"({d} §3a–b) {d} §5, §6 and {d} §11's; {d} §4: {d} §10–11 ({d} §5–7) "
            f"{d} §3b–c, §12 ({d} §12, PRML §6.4) {d} §1-2.")
    assert math_citations(text) == [["3a", "3b"], ["5", "6"], ["11"], ["4"], ["10", "11"],
                                    ["5", "6", "7"], ["3b", "3c", "12"], ["12"], ["1", "2"]]


def test_slugs():
    assert github_slug("5. Rejection–bootstrap sampler") == "5-rejectionbootstrap-sampler"
    assert github_slug("Reference values") == "reference-values"
    assert github_slug("From a notebook (Python API)") == "from-a-notebook-python-api"
    assert github_slug("3a. One-factor `R`") == "3a-one-factor-r"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


def test_forbidden_strings_are_not_in_this_file():
    text = Path(__file__).read_text(encoding="utf-8")
    assert not [s for s in FORBIDDEN if s in text]


# ---- the repository -------------------------------------------------------------------------
def test_no_citation_of_the_private_notes():
    problems = []
    for rel, text in text_files().items():
        if rel in (MATH_DOC, DESIGN_DOC, THIS):
            continue
        for s in FORBIDDEN:
            for m in re.finditer(re.escape(s), text):
                problems.append(f"{rel}:{line_of(text, m.start())}: {s!r}")
    assert not problems, (f"{len(problems)} citations of files that are not in the repository "
                          f"(cite {MATH_DOC} / {DESIGN_DOC} instead):\n" + "\n".join(problems))


def test_math_citations_resolve():
    sections = math_sections()
    assert sections, f"{MATH_DOC} has no numbered headings ('## 6. Title')"
    problems, count = [], 0
    for rel, text in text_files().items():
        for m in MATH_CITE.finditer(text):
            count += 1
            numbers = math_citations(m.group(0))[0]
            missing = [n for n in numbers if n not in sections]
            if missing:
                problems.append(f"{rel}:{line_of(text, m.start())}: {m.group(0)!r}: "
                                f"no section {', '.join(missing)}")
    assert not problems, (f"citations of missing sections of {MATH_DOC} (it has "
                          f"{', '.join(sorted(sections, key=_order))}):\n" + "\n".join(problems))


def _order(section: str):
    n, letter = re.fullmatch(r"(\d+)([a-z]?)", section).groups()
    return int(n), letter


def test_design_citations_resolve():
    titles = set(headings((ROOT / DESIGN_DOC).read_text(encoding="utf-8")))
    problems = []
    for rel, text in text_files().items():
        for m in DESIGN_CITE.finditer(text):
            if m.group(1) not in titles:
                problems.append(f"{rel}:{line_of(text, m.start())}: {m.group(0)!r}")
    assert not problems, (f"citations of missing sections of {DESIGN_DOC} (headings: "
                          f"{sorted(titles)}):\n" + "\n".join(problems))


def test_markdown_links_resolve():
    problems = []
    for rel in markdown_docs():
        text = without_code_blocks((ROOT / rel).read_text(encoding="utf-8"))
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
                continue                                        # http:, mailto:, ...
            path, _, anchor = target.partition("#")
            dest = (ROOT / rel).parent / path if path else ROOT / rel
            where = f"{rel}:{line_of(text, m.start())}: ({target})"
            if not dest.exists():
                problems.append(f"{where}: no file {dest.relative_to(ROOT).as_posix()}"
                                if dest.resolve().is_relative_to(ROOT) else f"{where}: no file")
                continue
            if anchor and dest.suffix == ".md" and anchor not in anchors(
                    dest.read_text(encoding="utf-8")):
                problems.append(f"{where}: no heading with anchor #{anchor}")
    assert not problems, "broken relative links:\n" + "\n".join(problems)


def test_test_paths_named_in_docs_exist():
    problems = []
    for rel in markdown_docs():
        text = (ROOT / rel).read_text(encoding="utf-8")
        for m in TESTS_PATH.finditer(text):
            if not (ROOT / m.group(1)).is_file():
                problems.append(f"{rel}:{line_of(text, m.start())}: {m.group(1)}")
    assert not problems, "test files named in the docs that do not exist:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", [MATH_DOC, DESIGN_DOC])
def test_paths_named_in_math_and_design_exist(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    problems = []
    for m in REPO_PATH.finditer(text):
        name = m.group(1)
        found = list(ROOT.glob(name)) if "*" in name else (ROOT / name).exists()
        if not found:
            problems.append(f"{doc}:{line_of(text, m.start())}: {name}")
    assert not problems, "paths named that do not exist:\n" + "\n".join(problems)
