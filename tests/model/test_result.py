"""The Estimate contract (harness/model/result.py): per-point standard errors are checked like the
probabilities they belong to."""

from __future__ import annotations

import numpy as np
import pytest

from harness.model.result import Estimate


def test_per_point_standard_errors_default_to_none_and_pass_the_check():
    est = Estimate(-1.0, np.array([0.2, 0.7]))
    assert est.test_probabilities_se is None
    est.check(2)
    Estimate(-1.0, np.array([0.2, 0.7]), test_probabilities_se=np.array([0.0, 0.01])).check(2)


@pytest.mark.parametrize("se, why", [(np.array([0.01]), "shape"),
                                     (np.array([0.01, -0.1]), "negative"),
                                     (np.array([0.01, np.nan]), "negative")])
def test_bad_per_point_standard_errors_break_the_contract(se, why):
    with pytest.raises(AssertionError, match=why):
        Estimate(-1.0, np.array([0.2, 0.7]), test_probabilities_se=se).check(2)
    with pytest.raises(AssertionError, match="without test probabilities"):
        Estimate(-1.0, None, test_probabilities_se=np.array([0.01, 0.01])).check(2)
