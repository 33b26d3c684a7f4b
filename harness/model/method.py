"""The method plugin interface (scikit-learn conventions: settings in the constructor,
one method does the work, results in plain attributes of the returned Estimate)."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from harness.core.errors import InputError
from harness.model.constraints import Constraint
from harness.model.footprint import MemoryEstimate, dense
from harness.model.problem import Problem
from harness.model.result import Estimate, checked
from harness.model.settings import check_budget, check_known, coerce_setting
from harness.model.tags import CheckSettings, Tags


class Method(ABC):
    """Base class of every inference method.

    Subclasses declare their settings as keyword arguments of __init__ with defaults, store them
    unchanged as attributes of the same name (`__init__` only assigns: the allowed values are
    declared in `constraints`, harness.model.constraints, and what each does, in one line for
    `list -v`, in `setting_help`), and implement `_estimate`. What the class can do is one
    `tags = Tags(...)` and how the generic checks run it one `checks = CheckSettings(...)`
    (harness.model.tags), each naming only what differs. A long `prepare` or `_estimate` shows
    its progress with harness.core.progress (`phase`, `advance`; also `harness.progress`):
    methods on the shared Cholesky walk report theirs already.
    """

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    budget_unit: ClassVar[str] = "samples"        # what the budget counts
    tags: ClassVar[Tags] = Tags()                 # what it can do (harness.model.tags)
    checks: ClassVar[CheckSettings] = CheckSettings()   # how harness.plugins.check_suite runs it
    constraints: ClassVar[Mapping[str, Constraint]] = {}   # setting -> its allowed values
    setting_help: ClassVar[Mapping[str, str]] = {}   # setting -> what it does, one line (list -v)

    # ---- settings -----------------------------------------------------------------------
    @classmethod
    def setting_defaults(cls) -> dict[str, Any]:
        sig = inspect.signature(cls.__init__)
        return {
            p.name: p.default
            for p in sig.parameters.values()
            if p.name != "self" and p.default is not inspect.Parameter.empty
        }

    @classmethod
    def setting_lines(cls) -> dict[str, str]:
        """What each setting does, in one line: the `setting_help` of the class and of its
        bases (a subclass's line wins), for the settings `list -v` shows."""
        lines: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            lines.update(vars(klass).get("setting_help", {}))
        return lines

    def get_settings(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.setting_defaults()}

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> Method:
        """Build from user settings (strings are coerced to the type of the default) and check
        them against the class's constraints."""
        defaults = cls.setting_defaults()
        check_known(settings, defaults, f"method {cls.name}", "setting", "method")
        method = cls(**{key: coerce_setting(f"method {cls.name}: setting {key!r}", value,
                                            defaults[key])
                        for key, value in settings.items()})
        method.check_settings()
        return method

    def check_settings(self) -> None:
        """Raise InputError, naming the method and the setting, for the first setting whose
        value its class's `constraints` (harness.model.constraints) do not allow."""
        for key, constraint in type(self).constraints.items():
            problem = constraint.problem(getattr(self, key))
            if problem is not None:
                raise InputError(f"method {self.name}: setting {key!r}", problem, constraint.fix)

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
        if problem.is_orthant and not self.tags.handles_orthant:
            return Estimate.failed(
                f"{self.name} needs a GPC problem (training data and a kernel): a pure orthant "
                "problem has no latent function to sample")
        return checked(self._estimate(problem, int(budget), rng), problem.n_test,
                       type(self)._estimate)

    def _check_call(self, problem: Problem, budget: int, rng: np.random.Generator) -> None:
        """The checks of the settings, the budget and the rng shared by estimate and
        estimate_part."""
        self.check_settings()
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

    def unbiased_z(self) -> bool:
        """Whether this instance's Ẑ (not log Ẑ) is unbiased for Z: the class's
        `tags.unbiased_z`; a method whose settings decide it overrides this."""
        return self.tags.unbiased_z

    def check_job(self, budget: int, n_train: int) -> None:
        """Raise InputError if these settings cannot run this budget on n_train points.

        For checks that need the budget or the problem size (e.g. a burn-in longer than the
        budget); called by estimate(), and meant to be called when a sweep is planned so that
        bad settings are refused before any job runs. Default: no check.
        """

    @abstractmethod
    def _estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        """The estimator itself; `budget` is a positive int."""

