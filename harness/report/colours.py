"""How far apart two colours look, to people with normal colour vision and with the two common
colour-vision deficiencies (the check that the report's palette, harness.report.style, stays
apart for every reader).

A colour's appearance is its CIELAB coordinates (sRGB → linear RGB → XYZ under D65 → L*a*b*);
the difference between two colours is the CIE76 distance ΔE = |Lab₁ − Lab₂|. Deuteranopia and
protanopia are simulated by Machado, Oliveira & Fernandes (2009)'s matrices at severity 1,
applied to linear RGB. `distance` is the smallest ΔE over the three views: two colours with a
large `distance` stay apart for a colour-blind reader too.
"""

from __future__ import annotations

import numpy as np

_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375],
                 [0.2126729, 0.7151522, 0.0721750],
                 [0.0193339, 0.1191920, 0.9503041]])
_WHITE = np.array([0.95047, 1.0, 1.08883])            # D65
VIEWS = {   # linear-RGB transforms: normal vision, and Machado et al. (2009) at severity 1
    "normal": np.eye(3),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
}
MIN_CONTRAST = 2.0          # against white: every method colour is visible as a line


def linear_rgb(colour: str) -> np.ndarray:
    """'#rrggbb' → linear RGB in [0, 1] (the sRGB transfer function undone)."""
    c = np.array([int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(rgb: np.ndarray) -> np.ndarray:
    """Linear RGB (..., 3) → CIELAB (..., 3)."""
    t = (rgb @ _XYZ.T) / _WHITE
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]),
                     200 * (f[..., 1] - f[..., 2])], axis=-1)


def appearance(colours) -> np.ndarray:
    """CIELAB of each colour in every view: shape (colours, views, 3)."""
    rgb = np.array([linear_rgb(c) for c in colours]).reshape(-1, 3)
    return np.stack([_lab(np.clip(rgb @ m.T, 0, 1)) for m in VIEWS.values()], axis=1)


def distance(a: str, b: str) -> float:
    """The smallest CIE76 ΔE between a and b over normal, deuteranopic and protanopic vision."""
    lab = appearance([a, b])
    return float(np.min(np.linalg.norm(lab[0] - lab[1], axis=-1)))


def contrast(colour: str) -> float:
    """WCAG contrast ratio of the colour against white (1 to 21)."""
    y = float(linear_rgb(colour) @ _XYZ[1])
    return 1.05 / (y + 0.05)
