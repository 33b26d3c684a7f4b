"""An `.npz` GPC problem with a Matérn kernel runs with every registered method in a sweep,
and its report is written (the Matérn kernels work everywhere a kernel is named)."""

from __future__ import annotations

import io

import numpy as np
import pytest

from harness.plugins.registry import PEERS, methods

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def test_a_matern12_npz_file_runs_with_every_method_and_reports(tmp_path):
    from distributed import Client

    from harness.report import build_report
    from harness.sweep.driver import run_sweep
    from harness.sweep.spec import parse_sweep

    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0, 1, 14))[:, None]
    y = np.where(np.sin(6 * x[:, 0]) + 0.3 * rng.standard_normal(14) > 0, 1, -1)
    np.savez(tmp_path / "m12.npz", X_train=x[:11], y_train=y[:11], X_test=x[11:],
             kernel="matern12", alpha=0.3, beta=1.0)
    text = f"""
name = "matern"
seed = 3
budgets = [60]
every_method = true
problems = ["{tmp_path / 'm12.npz'}"]
[output]
store = "{tmp_path / 'matern.sqlite'}"
"""
    sweep = parse_sweep(text, str(tmp_path / "matern.toml"))
    assert {m.name for m in sweep.methods} == set(methods()) - set(PEERS)   # peers: by name
    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=None) as client:
        outcome = run_sweep(sweep, client=client, report=False, out=io.StringIO(),
                            err=io.StringIO())
    assert outcome.complete and set(outcome.statuses) <= {"ok", "unreliable"}, outcome
    paths = build_report(tmp_path / "matern.sqlite", tmp_path / "report", pdf_file=False)
    html = paths["html"].read_text(encoding="utf-8")
    assert "matern12" in html.lower() or "matérn" in html.lower()
