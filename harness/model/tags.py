"""What a method plugin declares about itself, grouped (in the spirit of scikit-learn's tags).

A method class states what it can do in one `tags = Tags(...)` and how the generic checks
(harness.plugins.check_suite) run it in one `checks = CheckSettings(...)`, each naming only what
differs from the defaults:

    class Mine(Method):
        tags = Tags(exact=False, stochastic=False, handles_orthant=False)
        checks = CheckSettings(test_budget=100)

Both are frozen: a subclass changes one field with `dataclasses.replace(Base.tags, ...)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class Tags:
    """What a method can do, as the harness sees it (class defaults for every instance).

    exact: it converges to the exact answer as the budget grows (False: an approximation
        such as EP, Laplace or a variational bound; the report labels it so, and the accuracy
        check does not run).
    estimates_log_z: it returns log Z (False: predictions only, e.g. a plain posterior sampler).
    predicts: it returns the test probabilities.
    stochastic: its answer depends on the random stream (False: the same answer for every
        seed, so a sweep runs one replicate).
    handles_orthant: it runs on a pure orthant problem (False: it needs training data and a
        kernel, i.e. a latent function to sample).
    unbiased_z: Ẑ itself (not log Ẑ) is unbiased for Z with every setting (pseudo-marginal MCMC
        and the reference runs need it, docs/math.md §12); a method whose settings decide it
        overrides Method.unbiased_z, the one question asked of an instance.
    closer_with: of an approximation, the settings that bring its estimand closer to the exact
        quantity (a Vecchia method's m and ordering); empty when none does (EP, Laplace, VB:
        the approximation is the method). `run` names them when an answer is off.
    """

    exact: bool = True
    estimates_log_z: bool = True
    predicts: bool = True
    stochastic: bool = True
    handles_orthant: bool = True
    unbiased_z: bool = False
    closer_with: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckSettings:
    """How the generic checks (harness.plugins.check_suite) run a method.

    test_budget: the budget of the `accuracy` check (N = 200), in the method's budget units.
    smoke_budget: the budget of the quick checks (`determinism`, `output`, `split`; N = 30).
    skip: check name -> why this method skips it (the report prints the reason); the
        `contract` check cannot be skipped.
    """

    test_budget: int = 5000
    smoke_budget: int = 500
    skip: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:   # frozen all the way down: the mapping is read-only
        if isinstance(self.skip, Mapping):   # (anything else is refused by the contract check)
            object.__setattr__(self, "skip", MappingProxyType(dict(self.skip)))
