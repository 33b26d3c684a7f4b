"""Fixtures of the harness tests: throwaway plugins registered through entry points."""

from __future__ import annotations

import sys
import textwrap

import pytest

from harness.plugins import registry


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
