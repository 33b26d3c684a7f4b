"""Covariance functions with the papers' parameterisation (docs/math.md §1).

Every kernel also exposes its hyperparameters in log space (log_params / with_log_params) and
the matrix derivatives ∂K/∂log θ_j (gradients), for evidence gradients (docs/math.md §12).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace

import numpy as np
from scipy.spatial.distance import cdist

from harness.core.errors import InputError


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

    @abstractmethod
    def gradients(self, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(K, dK): K = k(A, A) and dK[j] = ∂K/∂log θ_j, shape (len(param_names()), n, n)."""

    def param_names(self) -> tuple[str, ...]:
        """The tuned hyperparameters, in the order of log_params() and gradients()."""
        return tuple(self.params())

    def log_params(self) -> np.ndarray:
        """log θ_j for every name in param_names()."""
        values = self.params()
        return np.log([values[name] for name in self.param_names()])

    def with_log_params(self, theta) -> Kernel:
        """A copy with θ_j = exp(theta[j]) for every name in param_names()."""
        names = self.param_names()
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (len(names),):
            raise InputError("kernel.log_params", f"needs shape ({len(names)},) for "
                             f"{', '.join(names) or 'no parameters'}, got {theta.shape}")
        with np.errstate(over="ignore"):
            return replace(self, **dict(zip(names, np.exp(theta).tolist(), strict=True)))


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
        K = cdist(A, B, "sqeuclidean")   # in place from here: one len(A) x len(B) array
        K /= -self.alpha
        np.exp(K, out=K)
        K *= self.beta
        return K

    def diag(self, A):
        return np.full(len(A), float(self.beta))

    def params(self):
        return {"alpha": float(self.alpha), "beta": float(self.beta)}

    def gradients(self, A):
        """∂K/∂log α = K r²/α, ∂K/∂log β = K."""
        r2 = cdist(A, A, "sqeuclidean")
        K = self.beta * np.exp(-r2 / self.alpha)
        return K, np.stack([K * (r2 / self.alpha), K])


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

    def gradients(self, A):
        """∂K/∂log scale = K."""
        K = self(A, A)
        return K, K[None]


@dataclass(frozen=True)
class PRML(Kernel):
    """k(x, x') = θ0 exp(−θ1/2 ‖x − x'‖²) + θ2 + θ3 x·x'   (PRML eq. 6.63).

    θ0, θ1 > 0; θ2, θ3 >= 0, and a θ2 or θ3 of zero is held at zero: it is then not among
    param_names(), log_params() or gradients() (its log would be −∞).
    """

    theta0: float = 1.0
    theta1: float = 1.0
    theta2: float = 0.0
    theta3: float = 0.0
    name = "prml"

    def __post_init__(self):
        for field in ("theta0", "theta1"):
            object.__setattr__(self, field, _positive(field, getattr(self, field)))
        for field in ("theta2", "theta3"):
            value = getattr(self, field)
            zero = not isinstance(value, bool | str) and value is not None and value == 0
            object.__setattr__(self, field, 0.0 if zero else _positive(field, value))

    def _terms(self, A, B):
        """θ_j ∂k/∂θ_j for j = 0..3; k(A, B) is the sum of terms 0, 2 and 3."""
        r2 = cdist(A, B, "sqeuclidean")
        rbf = self.theta0 * np.exp(-0.5 * self.theta1 * r2)
        return rbf, rbf * (-0.5 * self.theta1 * r2), np.full_like(r2, self.theta2), \
            self.theta3 * (A @ B.T)

    def __call__(self, A, B):
        rbf, _, bias, linear = self._terms(A, B)
        return rbf + bias + linear

    def diag(self, A):
        return self.theta0 + self.theta2 + self.theta3 * np.einsum("ij,ij->i", A, A)

    def params(self):
        return {f"theta{j}": float(getattr(self, f"theta{j}")) for j in range(4)}

    def param_names(self):
        return tuple(name for name, value in self.params().items() if value > 0)

    def gradients(self, A):
        """∂K/∂log θ_j = θ_j ∂K/∂θ_j: the terms of _terms, for the tuned θ_j."""
        terms = self._terms(A, A)
        K = terms[0] + terms[2] + terms[3]
        tuned = [int(name[-1]) for name in self.param_names()]
        return K, np.stack([terms[j] for j in tuned])


@dataclass(frozen=True)
class Matern(Kernel):
    """k(x, x') = beta * M_nu(r / alpha), r = ||x - x'||: the Matérn family (docs/math.md §1).

    Here alpha is a length scale (r / alpha, not squared as in the RBF's alpha) and beta the
    variance. A subclass gives the half-integer order through `_shape(t)`, which returns
    (M(t), -t M'(t)): the second is ∂k/∂log alpha divided by beta, since
    ∂/∂log alpha M(r / alpha) = -t M'(t) at t = r / alpha.
    """

    alpha: float = 1.0
    beta: float = 1.0

    def __post_init__(self):
        for field in ("alpha", "beta"):
            object.__setattr__(self, field, _positive(field, getattr(self, field)))

    @staticmethod
    @abstractmethod
    def _shape(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(M(t), -t M'(t)) elementwise for t >= 0."""

    def __call__(self, A, B):
        t = cdist(A, B, "euclidean")
        t /= self.alpha
        K = self._shape(t)[0]
        K *= self.beta
        return K

    def diag(self, A):
        return np.full(len(A), float(self.beta))   # M(0) = 1

    def params(self):
        return {"alpha": float(self.alpha), "beta": float(self.beta)}

    def gradients(self, A):
        """∂K/∂log alpha = beta (-t M'(t)), ∂K/∂log beta = K, t = r / alpha."""
        t = cdist(A, A, "euclidean") / self.alpha
        M, dM = self._shape(t)
        K = self.beta * M
        return K, np.stack([self.beta * dM, K])


@dataclass(frozen=True)
class Matern12(Matern):
    """Matérn-1/2 (exponential, Ornstein–Uhlenbeck): M(t) = e^{-t}; -t M'(t) = t e^{-t}."""

    name = "matern12"

    @staticmethod
    def _shape(t):
        e = np.exp(-t)
        return e, t * e


_SQRT3, _SQRT5 = np.sqrt(3.0), np.sqrt(5.0)


@dataclass(frozen=True)
class Matern32(Matern):
    """Matérn-3/2: M(t) = (1 + √3 t) e^{-√3 t}; -t M'(t) = 3 t² e^{-√3 t}."""

    name = "matern32"

    @staticmethod
    def _shape(t):
        e = np.exp(-_SQRT3 * t)
        return (1.0 + _SQRT3 * t) * e, 3.0 * t * t * e


@dataclass(frozen=True)
class Matern52(Matern):
    """Matérn-5/2: M(t) = (1 + √5 t + 5t²/3) e^{-√5 t}; -t M'(t) = (5/3) t² (1 + √5 t) e^{-√5 t}."""

    name = "matern52"

    @staticmethod
    def _shape(t):
        e = np.exp(-_SQRT5 * t)
        t2 = (5.0 / 3.0) * t * t
        return (1.0 + _SQRT5 * t + t2) * e, t2 * (1.0 + _SQRT5 * t) * e


KERNELS: dict[str, type[Kernel]] = {"rbf": RBF, "linear": Linear, "prml": PRML,
                                    "matern12": Matern12, "matern32": Matern32,
                                    "matern52": Matern52}
# the kernels with a length scale alpha and a variance beta (families that take both)
STATIONARY = ("rbf", "matern12", "matern32", "matern52")


def make_kernel(name: str, **params: float) -> Kernel:
    """Build a kernel from its name and parameters, with a clear error for unknown names."""
    kinds = KERNELS
    if name not in kinds:
        raise InputError("kernel", f"unknown kernel {name!r}", f"use one of {sorted(kinds)}")
    unknown = sorted(set(params) - set(kinds[name].__dataclass_fields__))
    if unknown:
        raise InputError(f"kernel.{unknown[0]}", f"is not a parameter of the {name} kernel",
                         f"valid: {', '.join(kinds[name].__dataclass_fields__)}")
    return kinds[name](**params)
