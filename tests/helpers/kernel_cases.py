"""Every kernel form with parameters away from 1, and three 2-D inputs: what a peer's own
kernel (PyMC's, GPyTorch's) is checked against (tests/methods/test_peers_*.py)."""

import numpy as np

from harness.core.kernels import PRML, RBF, Linear, Matern12, Matern32, Matern52

KERNELS = [RBF(0.3, 2.0), Matern12(0.2, 1.5), Matern32(0.4, 0.7), Matern52(0.5, 1.2),
           Linear(0.8), PRML(1.5, 4.0, 0.3, 0.2)]
X = np.array([[0.1, 0.4], [0.35, -0.2], [0.9, 0.5]])


def kernel_name(kernel) -> str:
    return kernel.name
