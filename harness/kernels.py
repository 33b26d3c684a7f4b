"""Covariance functions with the papers' parameterisation (MATH.md §1)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist

from harness.errors import InputError


class Kernel(ABC):
    """k(x, x') evaluated between the rows of two feature matrices."""

    name: str

    @abstractmethod
    def __call__(self, A: np.ndarray, B: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def diag(self, A: np.ndarray) -> np.ndarray:
        """k(x, x) for every row x of A."""

    @abstractmethod
    def params(self) -> dict[str, float]: ...


def _positive(field: str, value) -> float:
    """value as a float, or an InputError naming kernel.<field> (also for non-numbers)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not (np.isfinite(number) and number > 0):
        raise InputError(f"kernel.{field}", f"must be a positive number, got {value!r}")
    return number


@dataclass(frozen=True)
class RBF(Kernel):
    """k(x, x') = beta * exp(-||x - x'||^2 / alpha)   (A.3; NOT exp(-r^2 / (2 l^2)))."""

    alpha: float = 1.0
    beta: float = 1.0
    name = "rbf"

    def __post_init__(self):
        for field in ("alpha", "beta"):
            object.__setattr__(self, field, _positive(field, getattr(self, field)))

    def __call__(self, A, B):
        return self.beta * np.exp(-cdist(A, B, "sqeuclidean") / self.alpha)

    def diag(self, A):
        return np.full(len(A), float(self.beta))

    def params(self):
        return {"alpha": float(self.alpha), "beta": float(self.beta)}


@dataclass(frozen=True)
class Linear(Kernel):
    """k(x, x') = scale * x . x'   (A.65 with scale = 1; rank <= number of features)."""

    scale: float = 1.0
    name = "linear"

    def __post_init__(self):
        object.__setattr__(self, "scale", _positive("scale", self.scale))

    def __call__(self, A, B):
        return self.scale * (A @ B.T)

    def diag(self, A):
        return self.scale * np.einsum("ij,ij->i", A, A)

    def params(self):
        return {"scale": float(self.scale)}


def make_kernel(name: str, **params: float) -> Kernel:
    """Build a kernel from its name and parameters, with a clear error for unknown names."""
    kinds = {"rbf": RBF, "linear": Linear}
    if name not in kinds:
        raise InputError("kernel", f"unknown kernel {name!r}", f"use one of {sorted(kinds)}")
    unknown = sorted(set(params) - set(kinds[name].__dataclass_fields__))
    if unknown:
        raise InputError(f"kernel.{unknown[0]}", f"is not a parameter of the {name} kernel",
                         f"valid: {', '.join(kinds[name].__dataclass_fields__)}")
    return kinds[name](**params)
