"""A toy method that splits (tests of harness.execution.parts): plain Monte Carlo of the orthant
probability Z = P(v >= 0), v = L z ~ N(0, R), whose part statistics are sums.

Ẑ = hits / samples; the test probabilities are the ratio estimator over the hits,
P(y*_j = 1 | y) ≈ Σ_hits Φ((z W)_j / s_j) / hits (docs/math.md §4's shared Cholesky walk, here
without weights). Parts are independent sample sets: their hits and test sums add exactly.
Loaded as a method file (harness.plugins.method_files), so Dask workers get it with the part specs.
"""

import time

import numpy as np
from scipy.special import ndtr

from harness.model.method import Method
from harness.model.result import Estimate
from harness.model.splitting import SplitsEstimates, split_evenly
from harness.model.tags import Tags


class ToyOrthantMC(SplitsEstimates, Method):
    name = "toy-orthant-mc"
    summary = "plain Monte Carlo of the orthant probability, split into parts (tests only)"
    tags = Tags(unbiased_z=True)
    budget_unit = "samples"

    def __init__(self, fail_part_budget: int = 0, delay: float = 0.0):
        self.fail_part_budget = fail_part_budget   # a part of this budget raises (tests)
        self.delay = delay                         # seconds each part sleeps (kill tests)

    def split_budget(self, budget, parts):
        return split_evenly(budget, parts)

    def _estimate_part(self, problem, budget, rng):
        if budget == self.fail_part_budget:
            raise RuntimeError("planted failure")
        time.sleep(self.delay)
        z = rng.standard_normal((budget, problem.n_train))
        hit = np.all(z @ problem.chol.T >= 0.0, axis=1)
        tests = ndtr(z[hit] @ problem.test_rows / problem.test_sd).sum(axis=0)
        return {"budget": int(budget), "hits": int(hit.sum()), "test_sums": tests.tolist()}

    def _combine_parts(self, problem, parts):
        n = sum(p["budget"] for p in parts)
        hits = sum(p["hits"] for p in parts)
        if hits == 0:
            return Estimate.failed("no sample in the orthant")
        sums = np.sum([p["test_sums"] for p in parts], axis=0) if problem.n_test else []
        p_hat = hits / n
        return Estimate(float(np.log(p_hat)), np.asarray(sums, float).reshape(-1) / hits,
                        float(np.sqrt((1 - p_hat) / hits)), diagnostics={"hits": hits})
