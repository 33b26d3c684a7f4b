"""Every dotted name (harness, a dot, a module path) written in the code, the docs or the README
names something that exists: a module, or an attribute of one (a moved or renamed module leaves no
stale pointer behind)."""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOTTED = re.compile(r"(?<![\w/.])harness(?:\.[A-Za-z_]\w*)+")
SUFFIXES = (".py", ".md", ".toml", ".j2", ".sh")


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
        files = [ROOT / f for f in out]
    except (OSError, subprocess.CalledProcessError):   # not a git checkout (an sdist)
        files = [p for p in ROOT.rglob("*") if ".venv" not in p.parts]
    return [f for f in files if f.suffix in SUFFIXES and f.is_file()]


def resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for name in parts[i:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False
        return True
    return False


def test_every_dotted_harness_name_resolves():
    stale = sorted({f"{path.relative_to(ROOT)}: {name}"
                    for path in tracked_files()
                    for name in DOTTED.findall(path.read_text(encoding="utf-8"))
                    if not name.endswith("__main__") and not resolves(name)})
    assert not stale, "names that no longer exist:\n" + "\n".join(stale)


def test_a_stale_name_is_caught():
    assert resolves("harness.execution.runner.run_one")
    assert not resolves("harness" + ".runner.run_one")   # (split: this file is scanned too)
