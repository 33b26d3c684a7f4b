"""Methods from a file: `path/to/mine.py:ClassName`, without packaging or an entry point.

The file is read once, hashed (SHA-256 of its bytes) and executed as a module named after the
hash (`harness_plugin_<hash>`), so two versions of a file never share a module and an edited
file is a new method. The class is checked like a registered plugin and made known to
harness.plugins.registry under its *method id*, `ClassName@<hash prefix>`: that id is what a sweep's
job key holds, so editing the file changes the keys of its jobs (they run again) while an
unchanged file reuses the stored results, wherever the file lives.

On a Dask cluster the file's text travels in each job spec (`MethodFile.spec()`, a few KB) and
the worker executes it from there (`load_job_method`): nothing needs to be copied to the
workers, and workers that join later get it with their jobs. The file must therefore be
self-contained: it may import installed packages (numpy, scipy, harness, ...), not sibling
files.
"""

from __future__ import annotations

import hashlib
import linecache
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.errors import InputError
from harness.model.method import Method
from harness.plugins.contract import contract_violations
from harness.plugins.registry import file_method, get_method, register_file_method

SEPARATOR = ":"
HASH_CHARS = 16             # of the SHA-256 hex digest in ids and module names (64 bits)
MODULE_PREFIX = "harness_plugin_"
FORM = "write path/to/file.py:ClassName"



def is_file_ref(text: str) -> bool:
    """Whether a method argument names a file (`something.py:Class`) rather than a method."""
    path, sep, cls = str(text).rpartition(SEPARATOR)
    return bool(sep) and path.endswith(".py")


@dataclass(frozen=True)
class MethodFile:
    """A method class in a Python file: its path, class name and source text."""

    path: str           # as resolved where it was read (messages, tracebacks)
    class_name: str
    source: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()

    @property
    def method_id(self) -> str:
        """The name the registry and job keys know this method by: Class@<hash prefix>."""
        return f"{self.class_name}@{self.sha256[:HASH_CHARS]}"

    def spec(self) -> dict[str, str]:
        """Plain data for a job spec: enough for a worker to load the class."""
        return {"path": self.path, "class": self.class_name, "source": self.source,
                "sha256": self.sha256}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> MethodFile:
        found = cls(spec["path"], spec["class"], spec["source"])
        if spec.get("sha256") not in (None, found.sha256):
            raise ValueError(f"method file {found.path}: source does not match its hash")
        return found

    def load(self, field: str = "method") -> type[Method]:
        """The class (executing the file once per process and hash); registers its id."""
        if (known := file_method(self.method_id)) is not None:
            return known
        module = _module(self, field)
        found = getattr(module, self.class_name, None)
        if found is None:
            classes = sorted(n for n, v in vars(module).items()
                             if isinstance(v, type) and issubclass(v, Method) and v is not Method
                             and v.__module__ == module.__name__)
            raise InputError(field, f"{self.path} has no class {self.class_name!r}",
                             f"classes there: {', '.join(classes)}" if classes else FORM)
        problems = contract_violations(found)
        if problems:
            raise InputError(field, f"{self.path}:{self.class_name} is not a method plugin: "
                             + "; ".join(problems), "see docs/writing-a-method.md")
        register_file_method(self.method_id, found)
        return found


def _module(file: MethodFile, field: str) -> types.ModuleType:
    """Execute the file's source as module harness_plugin_<hash> (once per process)."""
    name = MODULE_PREFIX + file.sha256[:HASH_CHARS]
    if name in sys.modules:
        return sys.modules[name]
    module = types.ModuleType(name)
    module.__file__ = file.path
    # tracebacks show the file's lines even on a worker that does not have the file
    lines = file.source.splitlines(keepends=True)
    linecache.cache[file.path] = (len(file.source), None, lines, file.path)
    sys.modules[name] = module      # before executing: dataclasses and pickling look it up
    try:
        exec(compile(file.source, file.path, "exec"), module.__dict__)  # noqa: S102
    except Exception as exc:  # noqa: BLE001 - whatever the file raises, one clear line
        del sys.modules[name]
        line = _line_of(exc, file.path)
        raise InputError(field, f"{file.path}{line} failed to load: {type(exc).__name__}: "
                         f"{exc}", "fix the file; it may import installed packages only") \
            from None
    return module


def _line_of(exc: BaseException, path: str) -> str:
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f":{exc.lineno}"
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f":{line}" if line else ""


def read_method_file(ref: str, base: str | Path | None = None,
                     field: str = "method") -> MethodFile:
    """Read `path.py:ClassName` (path relative to `base`, default the working directory)."""
    path_text, _, class_name = str(ref).rpartition(SEPARATOR)
    if not path_text.endswith(".py") or not class_name.isidentifier():
        raise InputError(field, f"{ref!r} is not a method file reference", FORM)
    path = Path(path_text).expanduser()
    if base is not None and not path.is_absolute():
        path = Path(base) / path
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(field, f"method file {str(path)!r} does not exist",
                         "give the path of a .py file; in a sweep file, relative to the "
                         "sweep file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(field, f"method file {str(path)!r} cannot be read ({exc})") from None
    return MethodFile(str(path.resolve()), class_name, source)


def resolve_method(ref: str, field: str = "method", base: str | Path | None = None
                   ) -> type[Method]:
    """A method class from a registered name or a `path.py:ClassName` reference."""
    if is_file_ref(ref):
        return read_method_file(ref, base, field).load(field)
    try:
        return get_method(ref)
    except InputError as exc:
        raise InputError(field, str(exc).partition(": ")[2]) from None


def load_job_method(job: dict[str, Any]) -> None:
    """On a worker: load the file method a job spec carries, if any (before get_method)."""
    spec = job.get("method_file")
    if spec:
        MethodFile.from_spec(spec).load(f"method {job.get('method')}")
