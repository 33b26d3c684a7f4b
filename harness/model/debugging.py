"""Where a method's exception came from, in one line (a job's `reason`).

`exception_reason(exc, type(method))` is e.g. "ValueError: range() arg 3 must not be zero
(mine.py:42 in _estimate)": the exception and the innermost frame of the method's own code:
the files of its class and base classes (up to harness.model.method.Method) and the packages they
belong to, or any file outside the standard library and the installed packages (a helper
module next to the method's file). An exception raised inside numpy is thus located at the
method's line that called numpy. Without such a frame, the innermost frame is named.
`run --raise` gives the whole traceback.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
import traceback
from functools import cache
from types import TracebackType


def exception_reason(exc: BaseException, method_cls: type | None = None) -> str:
    """'<Type>: <message> (<file>:<line> in <function>)'."""
    text = f"{type(exc).__name__}: {exc}"
    if getattr(exc, "located", False):   # the message names the method's code itself
        return text
    frame = _method_frame(exc.__traceback__, method_cls)
    if frame is None:
        return text
    return f"{text} ({os.path.basename(frame.filename)}:{frame.lineno} in {frame.name})"


def _method_frame(tb: TracebackType | None, method_cls: type | None):
    frames = traceback.extract_tb(tb)
    if not frames:
        return None
    roots, libraries = _code_roots(method_cls), _library_roots()
    mine = [f for f in frames
            if _under(f.filename, roots) or not _under(f.filename, libraries)]
    return (mine or frames)[-1]


def _code_roots(method_cls: type | None) -> tuple[str, ...]:
    """Files and package folders of the method's class and its bases below Method."""
    from harness.model.method import Method

    roots: list[str] = []
    for cls in getattr(method_cls, "__mro__", ()):
        if cls is Method or cls is object or not issubclass(cls, Method):
            continue
        module = sys.modules.get(cls.__module__)
        if getattr(module, "__file__", None):
            roots.append(os.path.abspath(module.__file__))
        parts = cls.__module__.split(".")
        for i in range(1, len(parts)):   # the packages holding the module
            package = sys.modules.get(".".join(parts[:i]))
            roots.extend(os.path.abspath(p) + os.sep for p in getattr(package, "__path__", ()))
    return tuple(dict.fromkeys(roots))


@cache
def _library_roots() -> tuple[str, ...]:
    """The standard library and the site-packages folders (folders end with os.sep)."""
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(site.getsitepackages() if hasattr(site, "getsitepackages") else ())
    paths.add(site.getusersitepackages())
    return tuple(os.path.abspath(p) + os.sep for p in paths if p)


def _under(filename: str, roots: tuple[str, ...]) -> bool:
    path = os.path.abspath(filename)
    return any(path == r or (r.endswith(os.sep) and path.startswith(r)) for r in roots)
