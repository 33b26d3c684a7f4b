"""One look for every figure: the Agg backend, a fixed colour per method label, number formats."""

from __future__ import annotations

import hashlib
import math

import matplotlib

matplotlib.use("Agg", force=True)  # headless, no display, same output everywhere

import matplotlib.colors as mcolors  # noqa: E402
import seaborn as sns  # noqa: E402

# seaborn's colour-blind palette without its grey (the precision band is grey), its pale
# yellow and pink (hard to see on white) and its light blue (close to its blue); then the
# light blue and tab20 for long method lists
_CB = [mcolors.to_hex(c) for c in sns.color_palette("colorblind", 10)]
_BASE = [c for c in _CB if c not in ("#949494", "#ece133", "#fbafe4", "#56b4e9")]
_EXTRA = ["#56b4e9"] + [c for c in (mcolors.to_hex(c) for c in matplotlib.colormaps["tab20"].colors)
                        if c not in _BASE and c not in ("#7f7f7f", "#c7c7c7")]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]

# Fixed, well separated colours for the built-in methods (tab10 and darker tab20b/c shades
# for the approximations, which are also drawn dashed); other labels get hashed ones.
KNOWN = {
    "rejection-bootstrap": "#d62728",
    "rejection-bootstrap[count=hard]": "#ff7f0e",
    "sov": "#1f77b4",
    "sov-tlr": "#17becf",
    "scipy-genz": "#8c564b",
    "sir": "#2ca02c",
    "minimax-tilting": "#9467bd",
    "ess": "#e377c2",
    "hmc": "#bcbd22",
    "emcee": "#000000",
    "ep": "#393b79",
    "laplace": "#637939",
    "vb-meanfield": "#843c39",
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
    when a tier is used up, the next tier; when all are, colours repeat."""
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

    The built-in methods have fixed colours (KNOWN); any other label has a preferred colour
    keyed by a hash of the label, so a method keeps its colour from one report to the next;
    labels are placed in sorted order and a label whose colour is taken moves to the next free
    one, so no two methods share a colour. Every figure
    and the HTML swatches use this one mapping; approximate methods are drawn dashed.
    """

    def __init__(self, labels, approximate=()):
        self.labels = sorted(set(labels))
        known = {m: KNOWN[m] for m in self.labels if m in KNOWN}
        free = [[c for c in tier if c not in known.values()] for tier in (_BASE, _EXTRA)]
        self._colour = {**_assign([m for m in self.labels if m not in known], free), **known}
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
