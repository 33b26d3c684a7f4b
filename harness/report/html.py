"""One self-contained HTML file: inline CSS, figures as base64 SVG data URIs, no scripts,
no fonts, no CDN — it opens from disk, offline, in any browser."""

from __future__ import annotations

import base64
import re
from importlib.resources import files

import jinja2
from markupsafe import Markup, escape

from harness.report import dashes
from harness.report.figures import FigureSpec
from harness.report.tables import Table

TEMPLATE = "report.html.j2"   # package data next to this module


def anchor(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(text)).strip("-") or "x"


def _env() -> jinja2.Environment:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["anchor"] = anchor
    env.filters["breakable"] = breakable
    env.filters["legend"] = dashes.legend
    return env


BREAK_AFTER = re.compile(r"([,:;/\]\)])(?=\S)")


def breakable(text: str) -> Markup:
    """The text escaped, with a line-break opportunity (<wbr>) after each comma, colon, '/' or
    closing bracket followed by more text: a long spec wraps at its parameters
    instead of running into the next column."""
    return Markup(BREAK_AFTER.sub(r"\1<wbr>", str(escape(text))))


def figure_context(spec: FigureSpec, svg: bytes) -> dict:
    return {"key": spec.key, "title": spec.title, "caption": spec.caption,
            "section": spec.section, "data": base64.b64encode(svg).decode("ascii")}


def render(context: dict) -> str:
    text = files("harness.report").joinpath(TEMPLATE).read_text(encoding="utf-8")
    return _env().from_string(text).render(**context)


__all__ = ["Table", "anchor", "figure_context", "render", "TEMPLATE"]
