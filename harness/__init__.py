"""gpc-harness: benchmark exact inference methods for Gaussian-process classification.

Binary probit GPC reduces exactly to Gaussian orthant probabilities (MATH.md §2); the harness
runs method plugins on problems at several Monte Carlo budgets and compares them with exact
ground truth wherever it exists.

From a notebook: `harness.estimate(problem, method, budget)` runs one estimate,
`harness.load_results(store)` reads a sweep's results, `harness.plot_time_error(...)` draws
the report's CPU time-error figure (harness.api).
"""

from harness import estimate  # a module that holds Estimate and is callable (harness.api)
from harness.api import load_results, plot_time_error
from harness.errors import InputError
from harness.estimate import Estimate
from harness.kernels import RBF, Kernel, Linear
from harness.method import Method
from harness.problem import Problem, Truth

__version__ = "0.1.0"

__all__ = ["Estimate", "InputError", "Kernel", "Linear", "Method", "Problem", "RBF", "Truth",
           "estimate", "load_results", "plot_time_error"]
