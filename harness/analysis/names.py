"""A problem of a store found by the spec a user writes (harness.plot_time_error).

Stored problems carry their names (Problem.name): a file problem is 'PATH[:k=v,...]
[ (standardised)]' with the absolute path a sweep resolved and the options sorted
(harness.datasets.files.file_problem_name). A user writes the spec as they ran it:
'iris.csv:kernel=rbf,alpha=2,beta=1'. The two are the same problem when the options agree
(in any order; a file is standardised unless it says standardize=false) and the file is the
same one: the same path once resolved, or else the one stored file of that name.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from harness.core.errors import InputError


def _parts(text: str, stored: bool) -> tuple[str, dict[str, str], bool] | None:
    """(head, options without standardize, standardised) of a spec or a stored name."""
    from harness.datasets.files import STANDARDISED
    from harness.plugins.specs import names_file, split_spec

    standardised = stored and text.endswith(STANDARDISED)
    try:
        head, options = split_spec(text.removesuffix(STANDARDISED) if standardised else text)
    except InputError:
        return None
    flag = options.pop("standardize", None)
    if not stored:
        standardised = names_file(head) and str(flag).strip().lower() != "false"
    return head, options, standardised


def find_problem(query: str, names: Iterable[str]) -> str | None:
    """The name in `names` that `query` (a name, or a spec as the user wrote it) means, or
    None (none, or several files of that name in different folders)."""
    names = list(names)
    if query in names:
        return query
    want = _parts(query, stored=False)
    if want is None:
        return None
    same = [(n, p) for n in names
            if (p := _parts(n, stored=True)) is not None and p[1:] == want[1:]]
    exact = [n for n, p in same if p[0] == want[0]
             or Path(p[0]).expanduser().resolve() == Path(want[0]).expanduser().resolve()]
    if exact:
        return exact[0]
    by_name = [n for n, p in same if Path(p[0]).name == Path(want[0]).name]
    return by_name[0] if len(by_name) == 1 else None
