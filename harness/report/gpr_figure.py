"""The predictive band of a fitted GP regression on one feature (like PRML Figure 6.8)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.core.errors import InputError
from harness.report import style  # noqa: F401  (selects the Agg backend first)
from harness.report.style import fmt, style_context

import matplotlib.pyplot as plt  # noqa: E402  isort: skip
from matplotlib.figure import Figure  # noqa: E402  isort: skip


def draw_gpr(gpr, x_plot=None, truth=None, title: str = "") -> Figure:
    """Data, optional true function, predictive mean and ±2 sd bands of the latent y(x)
    (dark) and of a new observation t(x) (light, + noise) of a fitted GaussianProcessRegressor."""
    X, t = gpr.X_train_, gpr.t_train_
    if X.shape[1] != 1:
        raise InputError("X", f"has {X.shape[1]} features", "the band is drawn for one feature")
    if x_plot is None:
        low, high = X.min(), X.max()
        pad = 0.15 * (high - low) or 1.0
        x_plot = np.linspace(low - pad, high + pad, 300)
    x_plot = np.asarray(x_plot, dtype=float)
    mean, sd = gpr.predict(x_plot[:, None], return_std=True)
    _, sd_obs = gpr.predict(x_plot[:, None], return_std=True, include_noise=True)
    with style_context():
        fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
        ax.fill_between(x_plot, mean - 2 * sd_obs, mean + 2 * sd_obs, color="#f4b6c2",
                        alpha=0.45, lw=0, label="±2 sd, new observation t(x)")
        ax.fill_between(x_plot, mean - 2 * sd, mean + 2 * sd, color="#e377c2", alpha=0.45,
                        lw=0, label="±2 sd, latent y(x)")
        if truth is not None:
            ax.plot(x_plot, truth(x_plot), color="#1f77b4", lw=1.2, label="true function")
        ax.plot(x_plot, mean, color="#d62728", lw=1.6, label="predictive mean")
        ax.scatter(X[:, 0], t, s=18, color="#000000", zorder=3, label=f"data (N={len(t)})")
        params = ", ".join(f"{k}={fmt(v)}" for k, v in gpr.kernel_.params().items())
        ax.set_title(title or f"{gpr.kernel_.name}({params}), noise var {fmt(gpr.noise_)}, "
                     f"ln p(t) = {fmt(gpr.log_evidence_, 5)}")
        ax.set_xlabel("x")
        ax.set_ylabel("t")
        ax.legend(loc="best", frameon=True)
    return fig


def save_figure(fig: Figure, out_dir, stem: str = "gpr") -> dict[str, Path]:
    """Write stem.png and stem.svg into out_dir (created if needed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {fmt_: out / f"{stem}.{fmt_}" for fmt_ in ("png", "svg")}
    with style_context():
        for fmt_, path in paths.items():
            fig.savefig(path, format=fmt_)
    plt.close(fig)
    return paths
