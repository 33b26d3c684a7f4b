"""What a method returns: plain numbers, checked for numerical honesty (`Estimate`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

# ok: an answer; unreliable: an answer (numbers kept, checked like ok) that the method's own
# diagnostics call degenerate (harness.model.reliability), with the reason; failed: no answer.
STATUSES = ("ok", "unreliable", "failed")
ANSWERED = ("ok", "unreliable")   # statuses that carry the method's numbers


@dataclass(frozen=True)
class Estimate:
    """One method's answer on one problem at one budget.

    log_marginal_likelihood is None when the method does not estimate it (and -inf is never
    a valid answer: a degenerate run is `Estimate.failed(...)` with a reason).
    test_probabilities has one entry in [0, 1] per test point (empty for orthant problems),
    or is None when the method does not predict. test_probabilities_se holds their standard
    errors, one >= 0 per test point, when the method estimates them (None otherwise).
    An approximation (Tags.exact False) that can estimate how far its estimand is from the
    model's exact quantity states it apart from the Monte Carlo error: approximation_error, a
    standard-error-like scale of its log Z's approximation error in nats, and
    test_approximation_error, one per test point (None: not estimated; docs/math.md §14).
    """

    log_marginal_likelihood: float | None
    test_probabilities: np.ndarray | None = None
    log_marginal_likelihood_se: float | None = None
    status: str = "ok"
    reason: str = ""
    diagnostics: Mapping[str, float | int | str] = field(default_factory=dict)
    test_probabilities_se: np.ndarray | None = None
    approximation_error: float | None = None
    test_approximation_error: np.ndarray | None = None

    @classmethod
    def failed(cls, reason: str, **diagnostics) -> Estimate:
        return cls(None, None, status="failed", reason=reason, diagnostics=diagnostics)

    def check(self, n_test: int) -> None:
        """Raise AssertionError if an estimate breaks the output contract (a bug)."""
        if self.status not in STATUSES:
            raise AssertionError(f"unknown status {self.status!r}")
        if self.status != "ok" and not self.reason:
            raise AssertionError(f"an estimate with status {self.status!r} must say why")
        if self.status == "failed":
            return
        if self.log_marginal_likelihood is not None:
            lz = self.log_marginal_likelihood
            if not np.isfinite(lz) or lz > 1e-9:
                raise AssertionError(f"log marginal likelihood {lz!r} is not a log-probability")
        if self.test_probabilities is not None:
            p = np.asarray(self.test_probabilities)
            if p.shape != (n_test,):
                raise AssertionError(f"test probabilities have shape {p.shape}, want ({n_test},)")
            if not np.all((p >= 0) & (p <= 1)):
                raise AssertionError("test probabilities outside [0, 1] or NaN")
        if self.test_probabilities_se is not None:
            if self.test_probabilities is None:
                raise AssertionError("standard errors without test probabilities")
            se = np.asarray(self.test_probabilities_se)
            if se.shape != (n_test,):
                raise AssertionError(f"test probability SEs have shape {se.shape}, "
                                     f"want ({n_test},)")
            if not np.all(se >= 0):
                raise AssertionError("test probability SEs negative or NaN")
        if self.approximation_error is not None and not (
                np.isfinite(self.approximation_error) and self.approximation_error >= 0):
            raise AssertionError(f"approximation error {self.approximation_error!r} is not "
                                 "finite and >= 0")
        if self.test_approximation_error is not None:
            err = np.asarray(self.test_approximation_error)
            if self.test_probabilities is None or err.shape != (n_test,):
                raise AssertionError(f"test approximation errors have shape {err.shape}, want "
                                     f"({n_test},) beside the test probabilities")
            if not np.all(np.isfinite(err) & (err >= 0)):
                raise AssertionError("test approximation errors negative, infinite or NaN")


class ContractViolation(AssertionError):
    """A method's answer breaks the Estimate contract; the message names the method's code that
    returned it, so harness.model.debugging adds no frame of the harness's own (`located`)."""

    located = True


def checked(result, n_test: int, returned_by) -> Estimate:
    """`result` after Estimate.check(n_test); an answer that is not an Estimate or breaks the
    contract (a NaN log Z, probabilities outside [0, 1], ...) raises ContractViolation naming
    `returned_by` (the method's function that returned it: its file, line and name)."""
    if not isinstance(result, Estimate):
        problem = f"{type(result).__name__} instead of an Estimate"
    else:
        try:
            result.check(n_test)
            return result
        except AssertionError as exc:
            problem = str(exc)
    code = getattr(returned_by, "__code__", None)
    where = (f"{os.path.basename(code.co_filename)}:{code.co_firstlineno} in "
             f"{returned_by.__qualname__}" if code is not None else repr(returned_by))
    raise ContractViolation(f"{problem} (returned by {where})")
