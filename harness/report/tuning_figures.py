"""Figures of the tuning section (docs/math.md §12): the estimated log Z surface of each method
against the reference, the optimum each found, and the pseudo-marginal chains.

One parameter: log Z ± SE against the parameter (log axis), one line per method, the reference
in black, and the difference from the reference in a second panel. Two or more: one heatmap per
method and one for the reference (the first two parameters; log Z relative to the reference's
best, shared colour scale). Chosen points: a star (grid) or a circle (explore-exploit).
"""

from __future__ import annotations

import math

import numpy as np

from harness.report.figures import FigureSpec, _legend, _log_axis, _new, _slug
from harness.report.tuning import OK, TuneGroup

import matplotlib.pyplot as plt  # noqa: E402  isort: skip
from matplotlib.lines import Line2D  # noqa: E402  isort: skip

REF_COLOUR = "#222222"
CHOSEN_MARKERS = {"grid": "*", "explore-exploit": "o"}
REF_MARK = {"marker": "+", "markersize": 16, "markeredgewidth": 2.2, "color": "#d00000",
            "linestyle": "none"}
SPAN = 15.0          # nats below the best shown by the heatmaps' colour scale
CONTOURS = (-20.0, -10.0, -5.0, -2.0, -1.0)


def _chosen(group: TuneGroup, method: str, strategy: str) -> list[tuple[dict, float]]:
    return [(r["chosen"], float(r["chosen_log_z"])) for r in group.records
            if r["method"] == method and r.get("strategy") == strategy
            and r.get("status") == OK and r.get("chosen") and r.get("chosen_log_z") is not None]


def _marker_handles(group: TuneGroup) -> list[Line2D]:
    strategies = {r.get("strategy") for r in group.records}
    handles = [Line2D([], [], linestyle="none", marker=m, markersize=9, color="#777777",
                      markeredgecolor="black", label=f"chosen ({s})")
               for s, m in CHOSEN_MARKERS.items() if s in strategies]
    if group.ref_optimum:
        handles.append(Line2D([], [], **REF_MARK, label=f"{group.ref_kind} optimum"))
    return handles


def _section(group: TuneGroup) -> str:
    """Not the problem's own name: these figures belong to the tuning section only."""
    return f"{group.problem} (tuning)"


def _ref_label(group: TuneGroup) -> str:
    return "exact log Z" if group.ref_kind == "exact" else "consensus (median of exact methods)"


def surface_1d(group: TuneGroup, palette) -> FigureSpec | None:
    """log Z ± SE against the parameter, and the difference from the reference."""
    has_ref = group.ref_surface is not None
    if not group.surfaces and not has_ref:
        return None
    diff = has_ref and bool(group.surfaces)
    fig, axes = _new(2 if diff else 1, width_per=5.4, height=3.8)
    x, name = group.axes[0], group.names[0]
    ax = axes[0]
    extra = []
    if has_ref:
        (line,) = ax.plot(x, group.ref_surface, color=REF_COLOUR, linewidth=2.4, alpha=0.55,
                          label=_ref_label(group), zorder=1)
        extra.append(line)
    for method, s in sorted(group.surfaces.items()):
        ax.errorbar(x, s.log_z, yerr=np.nan_to_num(s.se), color=palette.colour(method),
                    marker=palette.marker(method), linestyle=palette.linestyle(method),
                    markersize=4, linewidth=1.3, capsize=2, elinewidth=0.9)
        if diff:
            axes[1].errorbar(x, s.log_z - group.ref_surface, yerr=np.nan_to_num(s.se),
                             color=palette.colour(method), marker=palette.marker(method),
                             linestyle=palette.linestyle(method), markersize=4, linewidth=1.3,
                             capsize=2, elinewidth=0.9)
    for method in group.methods:
        for strategy, marker in CHOSEN_MARKERS.items():
            pts = _chosen(group, method, strategy)
            if pts:
                ax.plot([float(c[name]) for c, _ in pts], [lz for _, lz in pts], marker=marker,
                        linestyle="none", markersize=11 if marker == "*" else 8,
                        color=palette.colour(method), markeredgecolor="black", zorder=5)
    if group.ref_optimum:
        ax.plot([group.ref_optimum[name]], [group.ref_optimum_log_z], **REF_MARK, zorder=6)
    for a in axes:
        _log_axis(a, "x")
        a.set_xlabel(f"{name} (log scale)")
        if group.ref_optimum:
            a.axvline(group.ref_optimum[name], color="#d00000", linewidth=0.8, linestyle=":")
    ax.set_ylabel("log Z")
    ax.set_title("Estimated log Z over the grid")
    if diff:
        axes[1].axhline(0.0, color=REF_COLOUR, linewidth=1.0)
        axes[1].set_ylabel(f"log Ẑ − {group.ref_kind} log Z (nats)")
        axes[1].set_title(f"Difference from the {group.ref_kind} surface")
    _legend(fig, palette, sorted(group.surfaces), extra + _marker_handles(group), ncol=4)
    return FigureSpec(
        key=f"tune-surface-{_slug(group.problem)}", section=_section(group),
        title="log Z surface and the optimum found",
        caption=("Grid strategy: mean over replicates ± 1 SE at each grid point, one line per "
                 "method; " + (f"black: the {_ref_label(group)}; " if has_ref else "")
                 + "stars and circles: the point each replicate chose with the grid and the "
                   "explore-exploit strategies (at its chosen log Ẑ); red plus and dotted "
                   f"line: the {group.ref_kind or 'reference'} optimum."),
        figure=fig)


def _edges(axis: np.ndarray) -> np.ndarray:
    """Cell edges of a log-spaced grid (geometric midpoints, extended at both ends)."""
    la = np.log(axis)
    mid = (la[1:] + la[:-1]) / 2
    return np.exp(np.concatenate([[2 * la[0] - mid[0]], mid, [2 * la[-1] - mid[-1]]]))


def _plane(values: np.ndarray) -> np.ndarray:
    """The first two parameters' plane (the best over any further ones)."""
    while values.ndim > 2:
        values = np.nanmax(values, axis=-1)
    return values


def surface_2d(group: TuneGroup, palette) -> FigureSpec | None:
    """One heatmap of log Z (relative to the reference's best) per method and the reference."""
    panels = ([(f"{group.ref_kind} surface", None, group.ref_surface)]
              if group.ref_surface is not None else [])
    panels += [(palette.legend_label(m), m, s.log_z) for m, s in sorted(group.surfaces.items())]
    if not panels:
        return None
    top = (group.ref_optimum_log_z if math.isfinite(group.ref_optimum_log_z)
           else max(float(np.nanmax(v)) for _, _, v in panels if np.isfinite(v).any()))
    ncols = min(len(panels), 3)
    nrows = math.ceil(len(panels) / ncols)
    fig = plt.figure(figsize=(4.4 * ncols + 0.9, 3.7 * nrows + 0.7), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    (xn, yn), (xa, ya) = group.names[:2], group.axes[:2]
    mesh = None
    for ax, (title, method, values) in zip(axes, panels, strict=False):
        rel = _plane(values) - top
        mesh = ax.pcolormesh(_edges(xa), _edges(ya), rel.T, cmap="viridis", vmin=-SPAN, vmax=0,
                             shading="flat")
        if np.isfinite(rel).sum() >= 4 and np.nanmax(rel) > CONTOURS[0]:
            ax.contour(xa, ya, rel.T, levels=list(CONTOURS), colors="white", linewidths=0.7,
                       alpha=0.8, linestyles="solid")
        for strategy, marker in CHOSEN_MARKERS.items():
            for m in ([method] if method else group.methods):
                pts = _chosen(group, m, strategy)
                if pts:
                    ax.plot([c[xn] for c, _ in pts], [c[yn] for c, _ in pts], marker=marker,
                            linestyle="none", markersize=12 if marker == "*" else 8,
                            color=palette.colour(m), markeredgecolor="white", zorder=5)
        if group.ref_optimum:   # a thin cross: a chosen point under it stays visible
            ax.plot([group.ref_optimum[xn]], [group.ref_optimum[yn]], **REF_MARK, zorder=6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_axisbelow(True)
        ax.set_xlabel(f"{xn} (log scale)")
        ax.set_ylabel(f"{yn} (log scale)")
        ax.set_title(title, color=palette.colour(method) if method else REF_COLOUR)
        ax.grid(False, which="both")
    for ax in axes[len(panels):]:
        ax.axis("off")
    fig.colorbar(mesh, ax=axes.tolist(), shrink=0.85, extend="min",
                 label=f"log Z − best {group.ref_kind or 'estimated'} log Z (nats)")
    handles = _marker_handles(group)
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    return FigureSpec(
        key=f"tune-surface-{_slug(group.problem)}", section=_section(group),
        title="log Z surfaces and the optima found",
        caption=("Grid strategy, mean over replicates; colour: log Z minus the best "
                 f"{group.ref_kind or 'estimated'} log Z (white contours at "
                 + ", ".join(f"{c:g}" for c in CONTOURS) + f" nats; darker than −{SPAN:g} is "
                 "clipped). Stars and circles: the point each replicate chose with the grid "
                 "and the explore-exploit strategies; red plus: the "
                 f"{group.ref_kind or 'reference'} optimum."
                 + (" Further parameters are maximised out." if len(group.names) > 2 else "")),
        figure=fig)


def chain_figure(group: TuneGroup, palette) -> FigureSpec | None:
    """Histogram of each method's chain per log-parameter, with the exact posterior (1-D)."""
    chains = {}
    for method in group.methods:
        s = [np.asarray(r["chain"]["samples"], float).reshape(-1, len(group.names))
             for r in group.records if r["method"] == method
             and r.get("strategy") == "pseudo-marginal" and r.get("status") == OK
             and (r.get("chain") or {}).get("samples")]
        if s:
            chains[method] = np.vstack(s)
    if not chains:
        return None
    fig, axes = _new(len(group.names), width_per=7.0 if len(group.names) == 1 else 5.2,
                     height=3.5)
    post = (group.reference or {}).get("posterior")
    extra = []
    for j, (ax, name) in enumerate(zip(axes, group.names, strict=True)):
        lo, hi, _ = group.space[name]
        edges = np.linspace(math.log(lo), math.log(hi), 31)
        for method, samples in sorted(chains.items()):
            density, _ = np.histogram(samples[:, j], bins=edges, density=True)
            ax.stairs(density, np.exp(edges), color=palette.colour(method),
                      linestyle=palette.linestyle(method), linewidth=1.6)
        if post and len(group.names) == 1:
            grid = np.asarray(post["log_grid"], float)
            (line,) = ax.plot(np.exp(grid), np.exp(np.asarray(post["log_density"], float)),
                              color=REF_COLOUR, linewidth=2.2, alpha=0.6, label="exact posterior")
            extra = [line]
        _log_axis(ax, "x")
        ax.set_xlabel(f"{name} (log scale)")
        ax.set_ylabel(f"density of log {name}")
        ax.set_title(f"Posterior of log {name}")
    _legend(fig, palette, sorted(chains), extra, ncol=4)
    return FigureSpec(
        key=f"tune-chain-{_slug(group.problem)}", section=_section(group),
        title="Pseudo-marginal posterior over the hyperparameters",
        caption=("Histogram (density per unit natural-log parameter) of every replicate's chain "
                 "after burn-in, pooled per method; uniform prior on the grid's log box."
                 + (" Black: the exact posterior (exact log Z on a fine grid)." if extra else "")),
        figure=fig)


def group_figures(group: TuneGroup, palette) -> list[FigureSpec]:
    surface = surface_1d if len(group.names) == 1 else surface_2d
    return [f for f in (surface(group, palette), chain_figure(group, palette)) if f is not None]
