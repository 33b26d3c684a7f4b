"""One look for every figure: the Agg backend, a fixed colour and marker per method label,
number formats."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg", force=True)  # headless, no display, same output everywhere

import seaborn as sns  # noqa: E402

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]

# Eight colours of Okabe & Ito's colour-blind-safe palette (its yellow, too pale on white,
# replaced by Paul Tol's wine): any two differ by ΔE >= 17 for normal, deuteranopic and
# protanopic vision alike (harness.report.colours.distance), each visible on white.
COLOURS = {"blue": "#0072b2", "sky": "#56b4e9", "green": "#009e73", "vermillion": "#d55e00",
           "orange": "#e69f00", "purple": "#cc79a7", "wine": "#882255", "black": "#000000"}

# Sixteen and more series cannot all have colours a colour-blind reader tells apart, so a
# series is a colour *and* a marker: no two methods share both. The registered methods have
# fixed pairs (a sibling approximation takes its exact method's colour with another marker,
# and is drawn dashed); a setting variant ("sir[proposal=tilted]") takes its method's colour
# and the first marker free with it; any other label the first free pair of the least-used
# colour (Palette).
KNOWN = {
    "sov": ("blue", "o"), "vecchia-sov": ("blue", "^"),
    "sov-tlr": ("sky", "s"), "emcee": ("sky", "h"),
    "sir": ("green", "D"), "vecchia-sir": ("green", "v"),
    "minimax-tilting": ("vermillion", "v"), "vecchia-tilting": ("vermillion", "s"),
    "rejection-bootstrap": ("orange", "P"), "rejection-bootstrap[count=hard]": ("orange", "X"),
    "ep": ("orange", "o"),
    "ess": ("purple", "<"), "vb-meanfield": ("purple", "D"),
    "scipy-genz": ("wine", "^"),
    "hmc": ("black", ">"), "laplace": ("black", "s"),
    # the optional peers (harness.plugins.registry.PEERS)
    "pymc-nuts": ("sky", "<"), "pymc-smc": ("wine", "o"), "gpytorch-vgp": ("purple", "s"),
}
KNOWN = {m: (COLOURS[c], marker) for m, (c, marker) in KNOWN.items()}

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


def _pairs(labels: list[str]) -> dict[str, tuple[str, str]]:
    """(colour, marker) per label: KNOWN's, a variant its method's colour with the first marker
    free with it, any other label the first free pair of the least-used colour."""
    out = {m: KNOWN[m] for m in labels if m in KNOWN}
    taken = set(KNOWN.values())
    for label in (m for m in labels if m not in KNOWN):
        base = KNOWN.get(label.split("[", 1)[0])
        used = {c: sum(p[0] == c for p in taken) for c in COLOURS.values()}
        order = ([base[0]] if base else []) + sorted(COLOURS.values(), key=lambda c: used[c])
        pair = next(((c, m) for c in order for m in MARKERS if (c, m) not in taken),
                    (order[0], MARKERS[0]))     # more labels than pairs: repeat
        out[label] = pair
        taken.add(pair)
    return out


class Palette:
    """Colour, marker and line style per method label, fixed for the whole report.

    Each label has a (colour, marker) pair no other label of the report has (`_pairs`: the
    registered methods' fixed KNOWN pairs, the others in sorted order), so series stay apart
    by colour and marker together; approximate methods are drawn dashed. Every figure and
    swatch uses this one mapping.
    """

    def __init__(self, labels, approximate=()):
        self.labels = sorted(set(labels))
        pairs = _pairs(self.labels)
        self._colour = {m: c for m, (c, _) in pairs.items()}
        self._marker = {m: marker for m, (_, marker) in pairs.items()}
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
