"""gpc-harness: benchmark exact inference methods for Gaussian-process classification.

Binary probit GPC reduces exactly to Gaussian orthant probabilities (docs/math.md §2); the
harness runs method plugins on problems at several Monte Carlo budgets and compares them with
exact ground truth wherever it exists.

From a notebook: `harness.estimate(problem, method, budget)` runs one estimate,
`harness.load_results(store)` reads a sweep's results, `harness.plot_time_error(...)` draws
the report's CPU time-error figure (harness.api). A method plugin needs one import:
`from harness import Estimate, Method, Problem, check_deadline`; a long method shows its
progress with `harness.progress.phase(name, total)` and `harness.progress.advance(n)`.

The package is layered; each layer imports only from those before it (tests/test_layers.py):
core (numerics) -> model -> plugins -> execution -> references -> tuning -> sweep ->
analysis -> report -> cli and api.
"""

from harness.api import estimate, load_results, plot_time_error
from harness.core import progress
from harness.core.deadline import check_deadline
from harness.core.errors import InputError
from harness.core.kernels import RBF, Kernel, Linear
from harness.core.version import __version__
from harness.model.method import Method
from harness.model.problem import Problem, Truth
from harness.model.result import Estimate

__all__ = ["Estimate", "InputError", "Kernel", "Linear", "Method", "Problem", "RBF", "Truth",
           "__version__", "check_deadline", "estimate", "load_results", "plot_time_error",
           "progress"]
