"""The generic suite every registered method must pass: harness.plugins.check_suite's checks, one
test per method and check (settings, input validation, determinism, output contract, closed
forms at N <= 3 and accuracy against the exact oracles at N = 200 with tolerances derived from
the method's own spread). The checks themselves are tested in tests/plugins/test_check_suite.py.
"""

from __future__ import annotations

from harness.plugins.check_suite import parametrize_with_checks
from harness.plugins.registry import methods


@parametrize_with_checks(list(methods().values()))
def test_generic(method, check):
    check(method)
