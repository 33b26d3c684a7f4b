"""Figures of the "Cost against N" section (harness.report.scaling): set-up CPU, CPU per sample
and |Δ log Z| against N on log–log axes, one line per method, its fitted exponent in the legend
and the fitted line drawn thin through the points."""

from __future__ import annotations

import numpy as np

from harness.report.figures import FigureSpec, _legend, _log_axis, _new, _slug, _yerr
from harness.report.scaling import QUANTITIES, Scaling
from harness.report.style import fmt_budget

import matplotlib.pyplot as plt  # noqa: E402  isort: skip
from matplotlib.lines import Line2D  # noqa: E402  isort: skip

TITLES = {"setup": "Set-up CPU against N", "sample": "CPU per sample against N",
          "error": "Error against N at a fixed budget"}


def _caption(s: Scaling, quantity: str) -> str:
    budget = (f"budget {fmt_budget(s.shared_budget)}" if s.shared_budget is not None
              else "each method's largest budget run at several sizes")
    return {
        "setup": "Set-up (factorisation, compression, reordering, saddle point; paid once per "
                 "problem, outside the estimate's CPU time), mean over the successful runs of "
                 "each size ± 1 SE.",
        "sample": f"Estimate CPU seconds divided by the budget, at {budget}, mean ± 1 SE.",
        "error": f"|log Ẑ − log Z| against {s.error_against} at {budget}, mean ± 1 SE.",
    }[quantity] + " Legend: the least-squares exponent p of y ~ N^p (thin line)."


def against_n(s: Scaling, palette, quantity: str) -> FigureSpec | None:
    """One quantity of QUANTITIES against N for every method; None when nothing is finite."""
    column, name, label = QUANTITIES[quantity]
    fig, (ax,) = _new(1, width_per=6.2, height=4.3)
    handles = []
    for method in s.methods:
        pts = s.points[s.points["method"] == method].sort_values("n_train")
        x, y = pts["n_train"].to_numpy(float), pts[column].to_numpy(float)
        se = pts[f"{column}_se"].to_numpy(float)
        keep = np.isfinite(y) & (y > 0)
        if not keep.any():
            continue
        style = {"color": palette.colour(method), "marker": palette.marker(method)}
        ax.errorbar(x[keep], y[keep], yerr=_yerr(y[keep], se[keep]), markersize=5,
                    linestyle=palette.linestyle(method), linewidth=1.6, capsize=2.5, **style)
        fit = s.fits[method][quantity]
        if np.isfinite(fit.exponent):
            lx = np.log(x[keep])
            c = float(np.mean(np.log(y[keep]) - fit.exponent * lx))
            grid = np.array([x[keep].min(), x[keep].max()])
            ax.plot(grid, np.exp(c) * grid ** fit.exponent, color=style["color"],
                    linewidth=0.8, alpha=0.6, linestyle=":")
        handles.append(Line2D([], [], linestyle=palette.linestyle(method), **style,
                              label=f"{palette.legend_label(method)}: ~N^{fit.text()}"))
    if not handles:
        plt.close(fig)
        return None
    _log_axis(ax, "x")
    _log_axis(ax, "y")
    ax.set_xlabel("N, training points (log scale)")
    ax.set_ylabel(label)
    ax.set_title(f"{name} against N: {s.family}")
    _legend(fig, palette, [], ncol=2, handles=handles)
    return FigureSpec(key=f"scale-{quantity}-{_slug(s.family)}", section=f"Cost against N: "
                      f"{s.family}", title=TITLES[quantity], caption=_caption(s, quantity),
                      figure=fig)


def scale_figures(s: Scaling, palette) -> list[FigureSpec]:
    return [f for f in (against_n(s, palette, q) for q in QUANTITIES) if f is not None]
