"""Shared fixtures, and the shared helper modules' folder (tests/helpers) put on sys.path.

The test folders mirror the package (tests/core for harness/core, ..., tests/methods for
methods/); each test file is named after the module it tests. A test file imports its helpers
as top-level modules: those of one folder sit beside its tests (pytest puts a test file's
folder on sys.path), those shared by several folders in tests/helpers. Without __init__.py
files, test modules are imported by their file name, so every test file's name is unique
under tests/.

No test writes into the checkout or the user's home: each runs in a folder of its own with HOME
in a temporary folder, and a guard refuses writes into either (tests/helpers/checkout_guard.py;
at the session's end the checkout's result paths are compared with its start).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

from harness.execution.worker import pin_thread_env
from harness.plugins import registry

sys.path.insert(0, str(Path(__file__).with_name("helpers")))

import checkout_guard  # noqa: E402  (tests/helpers, just put on sys.path)

# Fixtures built once per module or session: under pytest-xdist (`-n auto --dist loadgroup` in
# pyproject's addopts) each worker process would build its own copy.
SHARED_SCOPES = ("session", "package", "module")
UNGROUPED = ("sandbox_session",)   # session fixtures every test uses: no reason to group them
CHECKOUT_BEFORE = pytest.StashKey[dict]()
CHECKOUT_SAID = pytest.StashKey[tuple]()
HOME = pytest.StashKey[tuple]()


@pytest.hookimpl(optionalhook=True)   # pytest-xdist's hook
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker per core (pytest-xdist's count) for the suite or a folder, but named
    test files run in this process: two workers' start-up (imports and collection, each) would
    double the CPU time of a short file."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    targets = [Path(arg.split("::")[0]) for arg in config.args]
    return 0 if targets and all(t.is_file() for t in targets) else None


def pytest_configure(config):
    """With pytest-xdist's worker processes, one BLAS/OpenMP thread per worker: the workers
    share the cores instead of oversubscribing them. Set here, in the controller, before the
    workers start, so their libraries read it (as a sweep's Dask workers do). And in every
    process, before the tests are collected, HOME and the XDG folders in a temporary folder."""
    if getattr(config.option, "numprocesses", None):
        pin_thread_env()
    home = tempfile.mkdtemp(prefix="pytest-home-")
    environment = checkout_guard.home_environment(Path(home))
    config.stash[HOME] = (home, {k: os.environ.get(k) for k in environment})
    os.environ.update(environment)


def pytest_unconfigure(config):
    home, before = config.stash.get(HOME, ("", {}))
    for key, value in before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    shutil.rmtree(home, ignore_errors=True)


def _controller(config) -> bool:
    """Whether this process runs the session (not a pytest-xdist worker)."""
    return not hasattr(config, "workerinput")


def pytest_sessionstart(session):
    if _controller(session.config):
        session.config.stash[CHECKOUT_BEFORE] = checkout_guard.watched()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """Fail the session when the checkout's result paths changed by its doing (a file there
    names its temporary folder); list the other changes (checkout_guard's doc)."""
    before = session.config.stash.get(CHECKOUT_BEFORE, None)
    if before is None:
        return
    folder = session.config._tmp_path_factory.getbasetemp()
    changed = checkout_guard.changes(before, checkout_guard.watched())
    ours = [c for c in changed if checkout_guard.traced_to(c, folder)]
    session.config.stash[CHECKOUT_SAID] = (ours, [c for c in changed if c not in ours])
    if ours:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config):
    ours, others = config.stash.get(CHECKOUT_SAID, ((), ()))
    if ours:
        terminalreporter.section("tests wrote into the checkout", red=True)
        terminalreporter.line("\n".join(ours))
    if others:
        terminalreporter.section("the checkout changed during the session (not traced to a test "
                                 "here: another process?)", yellow=True)
        terminalreporter.line("\n".join(others))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Keep the users of a module- or session-scoped fixture on one xdist worker (an
    `xdist_group` per module, or per session fixture), so it is built once, not per worker."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        defs = [d[-1] for d in info.name2fixturedefs.values() if d] if info else []
        # the project's own fixtures (pytest's and plugins' have no baseid: tmp_path_factory)
        shared = [d for d in defs if d.scope in SHARED_SCOPES and d.baseid
                  and d.argname not in UNGROUPED]
        if not shared:
            continue
        widest = min(shared, key=lambda d: SHARED_SCOPES.index(d.scope))
        group = widest.argname if widest.scope == "session" else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session", autouse=True)
def sandbox_session(tmp_path_factory):
    """The session's own fixtures run in a temporary folder, and from here on the guard refuses
    writes into the checkout and the user's home (checkout_guard), the session's temporary
    folders aside (--basetemp may lie in the checkout)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("session-cwd"))
        checkout_guard.GUARD.arm(allowed=[tmp_path_factory.getbasetemp()])
        try:
            yield
        finally:
            checkout_guard.GUARD.disarm()
    refused = checkout_guard.GUARD.take()
    if refused:
        pytest.fail("the session's fixtures wrote outside their folders:\n" + "\n".join(refused),
                    pytrace=False)


@pytest.fixture(autouse=True)
def sandbox(tmp_path, monkeypatch):
    """Every test runs in a folder of its own beside its tmp_path, <tmp_path>-cwd (tmp_path
    stays as the test makes it; pytest's folder names have no "-"): what commands write where
    they run (results/, reports/, results/.last-store) lands there. A write into the checkout
    or the home fails the test (made by it, or by a module's fixture set up or torn down
    around it)."""
    cwd = tmp_path.with_name(f"{tmp_path.name}-cwd")
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    yield cwd
    refused = checkout_guard.GUARD.take()
    if refused:
        pytest.fail("wrote outside its folder (tests/helpers/checkout_guard.py):\n"
                    + "\n".join(refused), pytrace=False)


@pytest.fixture
def one_blas_thread():
    """Run a test with single-threaded BLAS: the machines running the suite are shared and
    small, and threaded BLAS on small matrices only adds contention (use it with
    `pytestmark = pytest.mark.usefixtures("one_blas_thread")`)."""
    with threadpool_limits(1):
        yield


TINY_SWEEP = """\
name = "tiny"
seed = 1
replicates = 2
budgets = [200, 800]
problems = ["linear1d:n_train=8,n_test=3", "gauss2class:n_train=10,n_test=4"]
[methods.sov]
[methods.rejection-bootstrap]
[methods.ep]
"""


def run_tiny_sweep(store, text: str = TINY_SWEEP, references: bool = False):
    """Run a sweep in this process (a threads-only Dask client: no worker processes); without
    `references`, a problem without truth keeps the consensus (`sweep --no-reference`)."""
    import io

    from distributed import Client

    from harness.sweep.driver import run_sweep
    from harness.sweep.spec import parse_sweep

    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address="127.0.0.1:0") as client:   # None still tries 8787
        return run_sweep(parse_sweep(text, "tiny.toml"), store=store, client=client,
                         report=False, out=io.StringIO(), err=io.StringIO(),
                         references=references)


@pytest.fixture
def sweep_runner():
    """run_tiny_sweep: run(store, sweep file text) in this process."""
    return run_tiny_sweep


@pytest.fixture(scope="session")
def sweep_here():
    """run_tiny_sweep(store, text): a sweep run in this process, for tests of other modules."""
    return run_tiny_sweep


@pytest.fixture(scope="session")
def tiny_store(tmp_path_factory):
    """A real results store of a tiny sweep: a problem with exact truth (linear1d) and one
    without (gauss2class: Bayes posterior and consensus), two exact methods and EP."""
    store = tmp_path_factory.mktemp("tiny") / "tiny.sqlite"
    outcome = run_tiny_sweep(store)
    # 2 problems x 2 budgets x (2 replicates of sov and rejection-bootstrap + EP, which is
    # deterministic and so runs once per budget)
    assert outcome.complete and outcome.statuses == {"ok": 20}, outcome
    return store


MY_SOV = '''"""A method plugin in a file (harness.plugins.method_files)."""
from harness.methods.sov import Sov


class MySov(Sov):
    name = "my-sov"
    summary = "SOV under another name (a method from a file)"


class NotAMethod:
    name = "x"
'''


@pytest.fixture
def method_file():
    """write(folder, text=MY_SOV, name="mine.py") -> the path of a method file (class MySov)."""
    def write(folder, text: str = MY_SOV, name: str = "mine.py"):
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_text(text)
        return path

    write.source = MY_SOV
    return write


@pytest.fixture
def install_plugin(tmp_path, monkeypatch):
    """install_plugin(module, source, methods={ep: "module:Attr"}, problems={...}) writes a
    module and a fake installed distribution registering its entry points (on sys.path for
    this test, and for subprocesses given PYTHONPATH=<the returned folder>)."""
    modules = []

    def install(module: str, source: str, methods=None, problems=None, dist="thirdparty-plugin"):
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
        info = tmp_path / f"{dist.replace('-', '_')}-1.0.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        groups = {registry.METHOD_GROUP: methods or {}, registry.PROBLEM_GROUP: problems or {}}
        with open(info / "entry_points.txt", "a") as f:
            for group, eps in groups.items():
                if eps:
                    f.write(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
        modules.append(module)
        registry.clear_cache()
        return tmp_path

    monkeypatch.syspath_prepend(str(tmp_path))
    yield install
    registry.clear_cache()
    for module in modules:
        sys.modules.pop(module, None)


@pytest.fixture
def no_cluster(monkeypatch):
    """Any attempt to start or reach a cluster (i.e. to run a job) fails the test."""
    from harness.execution import cluster

    def refuse(*args, **kwargs):
        raise AssertionError("a cluster was started: jobs would run")

    monkeypatch.setattr(cluster, "connect", refuse)
