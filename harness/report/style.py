"""One look for every figure: the Agg backend, a fixed colour per method label, number formats."""

from __future__ import annotations

import hashlib
import math

import matplotlib

matplotlib.use("Agg", force=True)  # headless, no display, same output everywhere

import seaborn as sns  # noqa: E402

from harness.report import colours  # noqa: E402

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]

# Fixed colours for the registered methods, from the colour-blind-safe palettes of Okabe & Ito
# and of Paul Tol: any two differ by ΔE >= 13 for normal, deuteranopic and protanopic vision
# alike (harness.report.colours.distance), and each is visible on white (contrast >= 2). The
# approximations are also drawn dashed, and every method has its own marker. Any other label (a
# plugin, a setting variant) gets colours.distinct: the colour farthest from these and from
# the others already given.
KNOWN = {
    "rejection-bootstrap": "#cc3311",
    "rejection-bootstrap[count=hard]": "#ddaa33",
    "sov": "#0077bb",
    "sov-tlr": "#33bbee",
    "scipy-genz": "#8c564b",
    "sir": "#009e73",
    "minimax-tilting": "#332288",
    "ess": "#cc79a7",
    "hmc": "#999933",
    "emcee": "#000000",
    "ep": "#882255",
    "laplace": "#228833",
    "vb-meanfield": "#a578ff",
    "vecchia-sov": "#0000ff",
    "vecchia-tilting": "#007777",
    "vecchia-sir": "#772200",
}

RC = {
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "font.size": 9.5,
    "axes.titlesize": 10.5,
    "axes.labelsize": 9.5,
    "legend.fontsize": 8.5,
    "svg.fonttype": "path",      # the text is drawn, so no font is needed to view it
    "svg.hashsalt": "gpc-harness",  # reproducible SVG ids
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _slot(label: str, n: int) -> int:
    return int(hashlib.sha256(label.encode()).hexdigest()[:8], 16) % n


def _assign(labels: list[str], tiers: list[list[str]]) -> dict[str, str]:
    """Each label takes its hashed slot in the first tier, or the next free one after it;
    when a tier is used up, the next tier; when all are, values repeat."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for label in labels:
        for tier in tiers:
            start = _slot(label, len(tier))
            free = [tier[(start + k) % len(tier)] for k in range(len(tier))
                    if tier[(start + k) % len(tier)] not in taken]
            if free:
                out[label] = free[0]
                break
        else:
            out[label] = tiers[0][_slot(label, len(tiers[0]))]
        taken.add(out[label])
    return out


class Palette:
    """Colour, marker and line style per method label, fixed for the whole report.

    Registered methods have their fixed colours (KNOWN); the other labels, in sorted order,
    take colours.distinct colours, so no two methods share a colour and a plugin never takes a
    registered method's. Every figure and swatch uses this one mapping; approximate methods
    are drawn dashed.
    """

    def __init__(self, labels, approximate=()):
        self.labels = sorted(set(labels))
        others = [m for m in self.labels if m not in KNOWN]
        self._colour = {**{m: KNOWN[m] for m in self.labels if m in KNOWN},
                        **dict(zip(others, colours.distinct(KNOWN.values(), len(others)),
                                   strict=True))}
        self._marker = _assign([m + "/marker" for m in self.labels], [MARKERS])
        self._marker = {m: self._marker[m + "/marker"] for m in self.labels}
        self.approximate = set(approximate)

    def colour(self, label: str) -> str:
        return self._colour.get(label, "#555555")

    def marker(self, label: str) -> str:
        return self._marker.get(label, "o")

    def linestyle(self, label: str) -> str:
        return "--" if label in self.approximate else "-"

    def legend_label(self, label: str) -> str:
        return f"{label} (approx.)" if label in self.approximate else label

    def items(self):
        return [(m, self.colour(m)) for m in self.labels]


def fmt(value, digits: int = 3) -> str:
    """A number with `digits` significant digits ('—' for missing)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    value = float(value)
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e5:
        decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
        return f"{value:.{decimals}f}"
    return f"{value:.{digits - 1}e}"


def fmt_se(mean, se, digits: int = 3) -> str:
    """'mean (se)', the paper's style; the SE with two significant digits."""
    text = fmt(mean, digits)
    if text == "—" or se is None or not math.isfinite(float(se)):
        return text
    return f"{text} ({fmt(se, 2)})"


def fmt_budget(budget) -> str:
    """1000 -> '1e3', 30000 -> '3e4', 1500 -> '1500'."""
    b = int(budget)
    if b >= 1000:
        e = math.floor(math.log10(b))
        m = b / 10 ** e
        if m == int(m):
            return f"{int(m)}e{e}"
    return str(b)


def style_context():
    """The report's matplotlib style (seaborn 'whitegrid' + RC), for drawing and saving."""
    import contextlib

    import matplotlib.pyplot as plt

    stack = contextlib.ExitStack()
    stack.enter_context(plt.style.context(sns.axes_style("whitegrid")))
    stack.enter_context(matplotlib.rc_context(RC))
    return stack
