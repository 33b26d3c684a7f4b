"""The method plugin interface (scikit-learn conventions: settings in the constructor,
one method does the work, results in plain attributes of the returned Estimate)."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from harness.core.errors import InputError
from harness.model.footprint import MemoryEstimate, dense
from harness.model.problem import Problem
from harness.model.result import Estimate
from harness.model.settings import check_budget, coerce_setting


class Method(ABC):
    """Base class of every inference method.

    Subclasses declare their settings as keyword arguments of __init__ with defaults, store
    them unchanged as attributes of the same name, and implement `_estimate`.
    """

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    exact: ClassVar[bool] = True            # False for EP, Laplace, variational
    budget_unit: ClassVar[str] = "samples"  # what the budget counts
    estimates_log_z: ClassVar[bool] = True
    predicts: ClassVar[bool] = True
    stochastic: ClassVar[bool] = True       # False: the same answer for every seed
    test_budget: ClassVar[int | None] = 5000  # budget of the generic accuracy checks (N ~ 200);
    #                                         None: deprecated opt-out, use skip_checks
    smoke_budget: ClassVar[int] = 500       # budget of the quick generic checks (N = 30)
    skip_checks: ClassVar[Mapping[str, str]] = {}  # check name -> why this method skips it
    #                                         (harness.plugins.checks; the report prints the reason)
    handles_orthant: ClassVar[bool] = True  # False: needs data and a kernel (latent-space methods)
    unbiased_z: ClassVar[bool] = False      # True: Ẑ (not log Ẑ) is unbiased for Z with every
    #                                         setting (pseudo-marginal MCMC, docs/math.md §12)

    # ---- settings -----------------------------------------------------------------------
    @classmethod
    def setting_defaults(cls) -> dict[str, Any]:
        sig = inspect.signature(cls.__init__)
        return {
            p.name: p.default
            for p in sig.parameters.values()
            if p.name != "self" and p.default is not inspect.Parameter.empty
        }

    def get_settings(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.setting_defaults()}

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> Method:
        """Build from user settings (strings are coerced to the type of the default)."""
        defaults = cls.setting_defaults()
        kwargs = {}
        for key, value in settings.items():
            if key not in defaults:
                raise InputError(
                    f"method {cls.name}: setting {key!r}",
                    "is not a setting of this method",
                    f"valid settings: {', '.join(sorted(defaults)) or 'none'}",
                )
            kwargs[key] = coerce_setting(f"method {cls.name}: setting {key!r}", value,
                                         defaults[key])
        return cls(**kwargs)

    def label(self) -> str:
        """Instance name, e.g. 'rejection-bootstrap[count=hard]' (settings that differ)."""
        changed = {k: v for k, v in self.get_settings().items()
                   if v != self.setting_defaults()[k]}
        if not changed:
            return self.name
        return f"{self.name}[{','.join(f'{k}={v}' for k, v in sorted(changed.items()))}]"

    # ---- memory -------------------------------------------------------------------------
    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """Peak memory of one job before it runs (harness.model.footprint), from the sizes alone.

        Default, a conservative bound for a method that does not say: it holds dense R and its
        factor L (2 x 8 N² bytes) and the test rows (8 N n_test), and the estimate allocates
        up to four N x N work matrices plus two sample arrays of budget x (N + n_test) doubles,
        capped at 1 GiB (a method that keeps more samples must override this). The problem's
        own representation is added by harness.model.footprint.job_memory.
        """
        return MemoryEstimate(
            held={"dense R": dense(n_train), "dense factor L": dense(n_train),
                  "test rows": dense(n_train, n_test)},
            work={"work matrices (assumed 4 x N x N)": 4 * dense(n_train),
                  "samples (assumed, at most 1 GiB)": min(2 * dense(budget, n_train + n_test),
                                                          2**30)})

    # ---- work ---------------------------------------------------------------------------
    def prepare(self, problem: Problem) -> None:
        """One-time work kept out of the timed region (e.g. JIT compilation). Default: none.

        Per-problem quantities (K, the Cholesky factor, ...) are cached on the Problem itself.
        """

    def estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        """Estimate log Z and the test probabilities of `problem` with `budget` units of work."""
        self._check_call(problem, budget, rng)
        if problem.is_orthant and not self.handles_orthant:
            return Estimate.failed(
                f"{self.name} needs a GPC problem (training data and a kernel): a pure orthant "
                "problem has no latent function to sample")
        result = self._estimate(problem, int(budget), rng)
        result.check(problem.n_test)
        return result

    def _check_call(self, problem: Problem, budget: int, rng: np.random.Generator) -> None:
        """The checks of a budget and rng shared by estimate and estimate_part."""
        if isinstance(budget, bool) or not isinstance(budget, int | np.integer):
            raise InputError("budget", f"must be a positive integer, got {budget!r}")
        check_budget("budget", int(budget))
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator")
        self.check_job(int(budget), problem.n_train)

    def needs_dense(self, n_train: int) -> bool:
        """Whether this instance reads the problem's dense K, R or Cholesky factor at this N.

        True by default (the runner then builds them in the timed set-up, Problem.warm, and
        harness.model.footprint.job_memory counts the K that builds for a GPC problem); a method
        that works from the representation (`problem.cov`: tiles, products, the diagonal)
        overrides it.
        """
        return True

    def z_unbiased(self) -> bool:
        """Whether this instance's Ẑ is unbiased for Z (override when settings decide it)."""
        return self.unbiased_z

    def check_job(self, budget: int, n_train: int) -> None:
        """Raise InputError if these settings cannot run this budget on n_train points.

        For checks that need the budget or the problem size (e.g. a burn-in longer than the
        budget); called by estimate(), and meant to be called when a sweep is planned so that
        bad settings are refused before any job runs. Default: no check.
        """

    @abstractmethod
    def _estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        """The estimator itself; `budget` is a positive int."""


# ---- the contract, checked when a plugin is loaded (harness.plugins.registry) --------------------
_FLAGS = ("exact", "estimates_log_z", "predicts", "stochastic", "handles_orthant", "unbiased_z")


def contract_violations(cls: Any, name: str | None = None) -> list[str]:
    """What `cls` lacks to be a method plugin registered as `name` (empty list: nothing).

    Checks what can be seen without running it: a concrete Method subclass, its class
    attributes (docs/writing-a-method.md), and settings that are keyword arguments with
    defaults (so that `cls()` and `from_settings` work).
    """
    if not (isinstance(cls, type) and issubclass(cls, Method)):
        return [f"{cls!r} is not a subclass of harness.model.method.Method"]
    found: list[str] = []
    own = getattr(cls, "name", None)
    if not isinstance(own, str) or not own:
        found.append("no `name` class attribute (a non-empty string)")
    elif name is not None and own != name:
        found.append(f"its `name` is {own!r}, but it is registered as {name!r}")
    for attr in ("summary", "budget_unit"):
        value = getattr(cls, attr, None)
        if not isinstance(value, str) or not value.strip():
            found.append(f"an empty `{attr}` (one line saying what it "
                         f"{'is' if attr == 'summary' else 'counts'})")
    for attr in _FLAGS:
        if not isinstance(getattr(cls, attr, None), bool):
            found.append(f"`{attr}` is {getattr(cls, attr, None)!r}, not True or False")
    for attr, allow_none in (("smoke_budget", False), ("test_budget", True)):
        value = getattr(cls, attr, None)
        if not (value is None and allow_none) and not _positive_int(value):
            found.append(f"`{attr}` is {value!r}, not a positive integer")
    skips = getattr(cls, "skip_checks", None)
    if not isinstance(skips, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in skips.items()):
        found.append("`skip_checks` must map check names to non-empty reasons")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        found.append(f"abstract methods not implemented: {missing}")
    found.extend(_settings_violations(cls))
    return found


def _positive_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value > 0


def _settings_violations(cls: type) -> list[str]:
    """Settings are named keyword arguments of __init__, each with a default."""
    if cls.__init__ is object.__init__:
        return []  # no settings
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):  # pragma: no cover - a builtin __init__
        return []
    found = []
    no_default = [p.name for p in params if p.default is inspect.Parameter.empty
                  and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if no_default:
        found.append(f"settings without defaults: {', '.join(no_default)} (every argument of "
                     "__init__ is a setting and needs a default)")
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        found.append("__init__ takes *args or **kwargs: list each setting as a keyword "
                     "argument with a default")
    return found

