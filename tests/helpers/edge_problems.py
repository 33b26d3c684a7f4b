"""Problems at the edges of double precision, shared by the tests of the methods, of the
reliability rules, of the conditioning warning and of sweeps: duplicated inputs with exact
truth, and an ill-conditioned correlation matrix."""

from __future__ import annotations

import numpy as np
from scipy.stats import ortho_group

from harness.core.kernels import make_kernel
from harness.model.problem import Problem, Truth


def ill_conditioned_cov(n: int = 50, seed: int = 0) -> np.ndarray:
    """A correlation matrix with eigenvalues logspace(0, -15, n) before the unit-diagonal
    scaling (a random orthogonal basis): condition ~1e15."""
    Q = ortho_group.rvs(n, random_state=np.random.default_rng(seed))
    S = (Q * np.logspace(0, -15, n)) @ Q.T
    S = 0.5 * (S + S.T)
    s = np.sqrt(np.diag(S))
    R = S / np.outer(s, s)
    np.fill_diagonal(R, 1.0)
    return R


def duplicated_pairs(m: int = 3, beta: float = 1e6):
    """m inputs, each given twice with labels +1 and -1, under an RBF kernel with beta = 1e6
    (K singular: a hard exact problem), with exact truth. The inputs are 100 apart (alpha = 1),
    so K between pairs is exactly 0 and Z is a product of 2 x 2 orthant probabilities of
    correlation -β/(1 + β): Z = q^m, q = arccos(β/(1 + β))/(2π) = arcsin(1/√(2(1 + β)))/π (the
    second form free of cancellation). Every test probability is 1/2: f -> -f swaps each pair's
    labels."""
    X = np.repeat(100.0 * np.arange(m)[:, None], 2, axis=0)
    y = np.tile([1, -1], m)
    log_q = np.log(np.arcsin(1.0 / np.sqrt(2.0 * (1.0 + beta))) / np.pi)
    truth = Truth(m * log_q, np.full(m, 0.5), kind="exact",
                  source="product of 2 x 2 orthant probabilities")
    return Problem.classification("duplicated-pairs", X, y, X[::2],
                                  make_kernel("rbf", alpha=1.0, beta=beta), truth=truth)
