"""docs/writing-a-method.md: its example method passes the generic checks, its debugging
example prints what it says, its tables cover every class attribute and check; and a plugin
package outside the repository, in a fresh virtual environment with the harness installed from
this checkout, runs harness.plugins.check_suite.check_method from its own tests and
`python -m harness check` (passing, and failing with a readable report when biased)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from harness.execution.timed import run_method
from harness.model.method import Method
from harness.plugins.check_suite import CHECKS, check_method
from harness.plugins.specs import make_problem

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "writing-a-method.md").read_text()
# the deliberately biased variant: the log of the mean weight replaced by the mean log weight
BIAS = ("log_z = logsumexp(log_w) - np.log(budget)", "log_z = np.mean(log_w)")


def doc_example() -> str:
    """The fenced block after the '<!-- example: prior_is.py' marker."""
    after = DOC.split("<!-- example: prior_is.py", 1)[1]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


def load_example(tmp_path, source, module="prior_is_doc"):
    path = tmp_path / f"{module}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(module, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(module, None)
    return mod.PriorIS


def test_the_example_passes_every_check(tmp_path):
    report = check_method(load_example(tmp_path, doc_example()))
    assert {r.check: r.status for r in report.results} == {
        "contract": "passed", "settings": "passed", "bad_budgets": "passed",
        "determinism": "passed", "output": "passed", "split": "skipped",
        "closed_forms": "skipped",
        "accuracy": "passed"}


def test_the_debugging_example_prints_what_the_doc_says(tmp_path):
    documented = re.search(r"status: error: (.*)", DOC).group(1).strip()
    PriorIS = load_example(tmp_path, doc_example(), module="prior_is")
    record = run_method(make_problem("linear1d-p1"), PriorIS(chunk=0), 1000,
                        np.random.default_rng(0))
    assert record["reason"] == documented


def test_the_doc_lists_every_class_attribute_and_check():
    attributes = [a for a in Method.__annotations__ if a != "__slots__"]
    missing = [a for a in attributes if f"| `{a}` |" not in DOC]
    assert not missing, f"docs/writing-a-method.md does not describe {missing}"
    assert not [c for c in CHECKS if f"| `{c}` |" not in DOC]


# ---- a plugin package in a fresh virtual environment -----------------------------------------
PLUGIN_PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "prior-is-plugin"
version = "0.1"
dependencies = ["gpc-harness"]

[tool.setuptools]
py-modules = ["prior_is", "biased_prior_is"]

[project.entry-points."gpc_harness.methods"]
prior-is = "prior_is:PriorIS"
biased-prior-is = "biased_prior_is:PriorIS"
"""
PLUGIN_TEST = """
from harness.plugins.check_suite import check_method
from {module} import PriorIS


def test_generic_checks():
    print(check_method(PriorIS))
"""


def _can_build_without_isolation() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    new_enough = tuple(int(x) for x in setuptools.__version__.split(".")[:2]) >= (70, 1)
    return new_enough or importlib.util.find_spec("wheel") is not None


def _pip_install(python: Path, source: Path) -> None:
    """pip install SOURCE into the venv of `python`: no dependencies (they come from this
    interpreter's environment); without build isolation when this environment can build a
    wheel, else pip fetches only setuptools and wheel for the build."""
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
           str(source)]
    if _can_build_without_isolation():
        cmd.insert(-1, "--no-build-isolation")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory):
    """(python of a fresh venv with the harness and the plugin installed, the plugin folder).

    The venv sees this environment's packages (numpy, scipy, pytest, ...) through .pth lines
    (its site-packages, and the system's that a --system-site-packages venv sees), which do not
    run this environment's own .pth files: an editable install of the harness here stays
    invisible, and the harness is imported from the venv's own installed copy."""
    base = tmp_path_factory.mktemp("plugin")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "venv")],
                   check=True, timeout=300)
    python = base / "venv" / "bin" / "python"
    venv_site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True, check=True)
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], *site.getsitepackages()])
    Path(venv_site.stdout.strip(), "_test_environment.pth").write_text(
        "".join(f"{path}\n" for path in ours))
    harness_src = base / "gpc-harness"        # a copy: building writes into the source tree
    harness_src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, harness_src / name)
    for name in ("harness", "methods", "datasets"):
        shutil.copytree(ROOT / name, harness_src / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    _pip_install(python, harness_src)

    plugin = base / "prior-is-plugin"         # outside the repository, its own tests
    (plugin / "tests").mkdir(parents=True)
    (plugin / "pyproject.toml").write_text(PLUGIN_PYPROJECT)
    source = doc_example()
    assert BIAS[0] in source
    (plugin / "prior_is.py").write_text(source)
    (plugin / "biased_prior_is.py").write_text(
        source.replace(BIAS[0], BIAS[1]).replace('name = "prior-is"', 'name = "biased-prior-is"'))
    for module in ("prior_is", "biased_prior_is"):
        (plugin / "tests" / f"test_{module}.py").write_text(PLUGIN_TEST.format(module=module))
    _pip_install(python, plugin)
    shutil.rmtree(plugin / "build", ignore_errors=True)
    return python, plugin


def _run(python, plugin, *argv):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.run([str(python), *argv], capture_output=True, text=True, cwd=plugin,
                          env=env, timeout=900)


@pytest.mark.slow
def test_a_plugin_package_runs_the_checks_in_a_fresh_venv(plugin_venv):
    python, plugin = plugin_venv
    where = _run(python, plugin, "-c", "import harness, prior_is; print(harness.__file__)")
    assert where.returncode == 0, where.stderr
    assert str(python.parent.parent) in where.stdout, "the harness must be the venv's own copy"
    assert not (Path(where.stdout.strip()).parent.parent / "tests").exists()

    ok = _run(python, plugin, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-s",
              "tests/test_prior_is.py")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "6 passed, 0 failed, 2 skipped" in ok.stdout

    biased = _run(python, plugin, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "tests/test_biased_prior_is.py")
    assert biased.returncode == 1, biased.stdout + biased.stderr
    assert re.search(r"FAILED +accuracy +linear1d \(N = 200, budget 20000, 4 runs\): mean log "
                     r"Z -[\d.]+, exact -[\d.]+: error [\d.]+ > [\d.e-]+", biased.stdout), (
        biased.stdout)

    listed = _run(python, plugin, "-m", "harness", "list")
    assert listed.returncode == 0 and "prior-is" in listed.stdout, listed.stderr
    good = _run(python, plugin, "-m", "harness", "check", "prior-is")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "checks of method 'prior-is' (PriorIS): 6 passed, 0 failed" in good.stdout
    bad = _run(python, plugin, "-m", "harness", "check", "biased-prior-is")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "1 failed" in bad.stdout and "FAILED   accuracy" in bad.stdout
    assert "Traceback" not in bad.stdout + bad.stderr
