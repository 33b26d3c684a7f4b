"""Exact Gaussian-process regression (docs/math.md §12; PRML §6.4.2–6.4.3).

t = y(x) + ε with y ~ GP(0, k) and ε ~ N(0, σ²): t ~ N(0, C), C = K + σ² I. Here `noise` is the
noise VARIANCE σ² (PRML's β⁻¹; PRML's β is a precision, unrelated to the RBF kernel's β).
Hyperparameters live in log space: θ = [kernel.log_params()..., log σ²].

The log evidence is closed form, so this is the harness's exact reference for its tuning
machinery (its gradient is checked against finite differences, its optimum against a grid).
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.linalg
import scipy.optimize

from harness.core.errors import InputError
from harness.core.kernels import RBF, Kernel

_LOG_2PI = math.log(2.0 * math.pi)


def as_features(X, field: str = "X") -> np.ndarray:
    """X as a finite float (n, d) array; a 1-D array is n points of one feature."""
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise InputError(field, f"must be a non-empty (n, d) array, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise InputError(field, "contains NaN or infinite values", "remove or impute them")
    return X


def as_targets(t, n: int, field: str = "t") -> np.ndarray:
    """t as a finite float vector of length n."""
    t = np.asarray(t, dtype=float)
    if t.ndim == 2 and t.shape[1] == 1:
        t = t[:, 0]
    if t.shape != (n,):
        raise InputError(field, f"must have shape ({n},) to match X, got {t.shape}")
    if not np.all(np.isfinite(t)):
        raise InputError(field, "contains NaN or infinite values", "remove or impute them")
    return t


def split_theta(theta, kernel: Kernel) -> tuple[Kernel, float]:
    """(kernel with the first len(theta) - 1 log parameters, noise variance exp(theta[-1]))."""
    theta = np.asarray(theta, dtype=float)
    n_params = len(kernel.param_names()) + 1
    if theta.shape != (n_params,) or not np.all(np.isfinite(theta)):
        names = ", ".join([*kernel.param_names(), "noise"])
        raise InputError("theta", f"must be {n_params} finite log parameters ({names}), "
                         f"got {theta.tolist() if theta.ndim == 1 else theta.shape}")
    noise = float(np.exp(theta[-1]))
    if not 0 < noise < np.inf:
        raise InputError("noise", f"log noise {theta[-1]} gives noise variance {noise}",
                         "keep the noise variance in (0, inf)")
    return kernel.with_log_params(theta[:-1]), noise


def factorise(K: np.ndarray, noise: float):
    """cho_factor of C = K + noise·I, or an InputError saying how much jitter C needs."""
    C = K.copy()
    C.flat[:: len(C) + 1] += noise
    try:
        return scipy.linalg.cho_factor(C, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        eig_min = float(scipy.linalg.eigvalsh(C, subset_by_index=[0, 0])[0])
        jitter = max(-eig_min, 0.0) + len(C) * np.finfo(float).eps * float(np.max(np.diag(C)))
        raise InputError("noise", f"K + noise·I is not positive definite (smallest eigenvalue "
                         f"{eig_min:.3g})", f"add jitter >= {jitter:.3g} to the noise variance "
                         f"{noise:.3g}") from None


def log_evidence(theta, X: np.ndarray, t: np.ndarray, kernel: Kernel) -> tuple[float, np.ndarray]:
    """(ln p(t | θ), its gradient in θ) for checked X, t (docs/math.md §12, PRML 6.69–6.70).

    ln p = −½ tᵀa − Σ ln L_ii − (N/2) ln 2π with a = C⁻¹t, C = L Lᵀ; ∂/∂θ_j = ½ tr((a aᵀ −
    C⁻¹) ∂C/∂θ_j), with ∂C/∂log σ² = σ² I (so that term is ½ σ² (aᵀa − tr C⁻¹)). C⁻¹ comes
    from the Cholesky factor (the traces need all of it); value and a use the factor only.
    """
    kernel, noise = split_theta(theta, kernel)
    K, dK = kernel.gradients(X)
    factor = factorise(K, noise)
    a = scipy.linalg.cho_solve(factor, t, check_finite=False)
    W = np.outer(a, a) - scipy.linalg.cho_solve(factor, np.eye(len(t)), check_finite=False)
    value = -0.5 * t @ a - np.sum(np.log(np.diag(factor[0]))) - 0.5 * len(t) * _LOG_2PI
    grad = np.append(0.5 * np.einsum("ij,kij->k", W, dK), 0.5 * noise * np.trace(W))
    return float(value), grad


def log_evidence_grid(thetas, X: np.ndarray, t: np.ndarray, kernel: Kernel,
                      chunk: int = 1024) -> np.ndarray:
    """ln p(t | θ) for every row of thetas (batched Cholesky; −inf where C is not PD)."""
    thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
    out = np.empty(len(thetas))
    n = len(t)
    for start in range(0, len(thetas), chunk):
        block = thetas[start:start + chunk]
        C = np.stack([k(X, X) for k, _ in (split_theta(th, kernel) for th in block)])
        C[:, np.arange(n), np.arange(n)] += np.exp(block[:, -1])[:, None]
        try:
            L = np.linalg.cholesky(C)
        except np.linalg.LinAlgError:   # rare: fall back to one at a time
            out[start:start + len(block)] = [_value_or_minus_inf(th, X, t, kernel) for th in block]
            continue
        z = np.linalg.solve(L, np.broadcast_to(t, (len(block), n))[..., None])[..., 0]
        logdet = np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1)
        out[start:start + len(block)] = -0.5 * np.sum(z**2, axis=1) - logdet - 0.5 * n * _LOG_2PI
    return out


def grid_points(axes) -> np.ndarray:
    """Every combination of the given 1-D axes, one θ per row."""
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))


def grid_maximum(X: np.ndarray, t: np.ndarray, kernel: Kernel, box, coarse: float = 0.5,
                 fine: float = 0.05) -> dict:
    """Brute-force maximum of ln p(t | θ) (the reference for fit()): a grid of step `coarse`
    over box (one (low, high) row per entry of θ, in log space), then a grid of step `fine`
    over ±coarse around its best point. `interior`: the fine maximum is not on its edge."""
    box = np.asarray(box, dtype=float)
    first = grid_points([np.arange(low, high + 1e-9, coarse) for low, high in box])
    first_values = log_evidence_grid(first, X, t, kernel)
    centre = first[np.argmax(first_values)]
    half = round(coarse / fine)
    second = grid_points([c + fine * np.arange(-half, half + 1) for c in centre])
    values = log_evidence_grid(second, X, t, kernel)
    best = second[np.argmax(values)]
    return {"theta": best, "log_evidence": float(values.max()),
            "coarse_log_evidence": float(first_values.max()), "points": len(first) + len(second),
            "interior": bool(np.all(np.abs(best - centre) < coarse - fine / 2))}


def _value_or_minus_inf(theta, X, t, kernel) -> float:
    try:
        return log_evidence(theta, X, t, kernel)[0]
    except InputError:
        return -np.inf


class GaussianProcessRegressor:
    """Exact GP regression with hyperparameters fitted by maximum evidence (scikit-learn style).

    kernel: the covariance function and the first start of the optimiser; noise: the noise
    variance σ² (PRML's β⁻¹) and its first start. fit() maximises ln p(t | θ) over all
    kernel.param_names() and the noise with L-BFGS-B from 1 + n_restarts starts: the given
    values (clipped into the bounds), then n_restarts drawn uniformly in log space within the
    bounds from `seed` (an int or a numpy Generator). bounds: one (low, high) pair in natural
    units for every parameter, or one pair per parameter (kernel.param_names(), then noise).
    optimize=False keeps the given values (PRML's fit without learning).

    After fit: kernel_, noise_, theta_, log_evidence_, evaluations_ (objective evaluations over
    all starts), starts_ (one dict per start), fit_seconds_.
    """

    def __init__(self, kernel: Kernel | None = None, noise: float = 0.1, *, n_restarts: int = 4,
                 bounds=(1e-5, 1e5), optimize: bool = True, seed=0, maxiter: int = 500):
        self.kernel = RBF() if kernel is None else kernel
        self.noise = noise
        self.n_restarts = n_restarts
        self.bounds = bounds
        self.optimize = optimize
        self.seed = seed
        self.maxiter = maxiter

    # ---- fitting --------------------------------------------------------------------------
    def _start(self) -> np.ndarray:
        if not isinstance(self.kernel, Kernel):
            raise InputError("kernel", f"must be a harness Kernel, got {type(self.kernel)}",
                             "use harness.core.kernels.make_kernel")
        noise = self.noise
        if isinstance(noise, bool) or not isinstance(noise, int | float) or not noise > 0 \
                or not math.isfinite(noise):
            raise InputError("noise", f"must be a positive noise variance, got {noise!r}")
        return np.append(self.kernel.log_params(), math.log(noise))

    def _log_bounds(self, n_params: int) -> np.ndarray:
        bounds = np.asarray(self.bounds, dtype=float)
        if bounds.shape == (2,):
            bounds = np.tile(bounds, (n_params, 1))
        names = [*self.kernel.param_names(), "noise"]
        if bounds.shape != (n_params, 2):
            raise InputError("bounds", f"must be one (low, high) pair or {n_params} pairs "
                             f"({', '.join(names)}), got shape {bounds.shape}")
        if not (np.all(np.isfinite(bounds)) and np.all(bounds[:, 0] > 0)
                and np.all(bounds[:, 0] < bounds[:, 1])):
            raise InputError("bounds", f"need finite 0 < low < high, got {bounds.tolist()}")
        return np.log(bounds)

    def _check_settings(self) -> None:
        for field in ("n_restarts", "maxiter"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
                raise InputError(field, f"must be an integer >= 0, got {value!r}")

    def fit(self, X, t) -> GaussianProcessRegressor:
        """Fit the hyperparameters (unless optimize=False) and condition on (X, t)."""
        X = as_features(X)
        t = as_targets(t, len(X))
        theta = self._start()
        self._check_settings()
        began = time.perf_counter()
        self.starts_ = []
        if self.optimize:
            bounds = self._log_bounds(len(theta))
            rng = np.random.default_rng(self.seed)
            starts = [np.clip(theta, bounds[:, 0], bounds[:, 1])]
            starts += [rng.uniform(bounds[:, 0], bounds[:, 1]) for _ in range(self.n_restarts)]
            self.starts_ = [self._run(start, bounds, X, t) for start in starts]
            finite = [s for s in self.starts_ if np.isfinite(s["log_evidence"])]
            if not finite:
                raise InputError("fit", "no start reached a finite log evidence; the first: "
                                 f"{self.starts_[0]['message']}",
                                 "raise the noise's lower bound or check the kernel")
            theta = max(finite, key=lambda s: s["log_evidence"])["theta"]
        self.X_train_, self.t_train_ = X, t
        self.kernel_, self.noise_ = split_theta(theta, self.kernel)
        self.theta_ = np.asarray(theta, dtype=float)
        self.log_evidence_ = log_evidence(self.theta_, X, t, self.kernel)[0]
        self.evaluations_ = sum(s["evaluations"] for s in self.starts_)
        K = self.kernel_(X, X)
        self._factor = factorise(K, self.noise_)
        self._alpha = scipy.linalg.cho_solve(self._factor, t, check_finite=False)
        self.fit_seconds_ = time.perf_counter() - began
        return self

    def _run(self, start: np.ndarray, bounds: np.ndarray, X, t) -> dict:
        """One L-BFGS-B run of −ln p from `start`. A θ where C is not PD counts as ln p = −inf
        (the line search steps back); a run that ends there failed, its message says why."""
        errors: list[str] = []

        def objective(theta):
            try:
                value, grad = log_evidence(theta, X, t, self.kernel)
            except InputError as exc:
                errors.append(str(exc))
                return np.inf, np.zeros_like(theta)
            return -value, -grad

        result = scipy.optimize.minimize(objective, start, jac=True, method="L-BFGS-B",
                                         bounds=bounds, options={"maxiter": self.maxiter})
        ok = bool(np.isfinite(result.fun))
        return {"start": start, "theta": result.x, "log_evidence": float(-result.fun),
                "evaluations": int(result.nfev), "success": ok and bool(result.success),
                "message": str(result.message) if ok else errors[-1]}

    # ---- after fitting --------------------------------------------------------------------
    def _fitted(self) -> None:
        if not hasattr(self, "kernel_"):
            raise InputError("GaussianProcessRegressor", "is not fitted", "call fit(X, t) first")

    def log_evidence(self, theta=None) -> tuple[float, np.ndarray]:
        """(ln p(t | θ), gradient) on the training data; θ defaults to the fitted theta_."""
        self._fitted()
        theta = self.theta_ if theta is None else theta
        return log_evidence(theta, self.X_train_, self.t_train_, self.kernel)

    def predict(self, X, return_std: bool = False, return_var: bool = False,
                include_noise: bool = False):
        """Predictive mean kᵀC⁻¹t (PRML 6.66), and optionally its sd and/or variance.

        The variance is that of the latent y(x), k(x, x) − kᵀC⁻¹k; with include_noise=True it is
        that of a new observation t(x), plus σ² (PRML 6.67's c = k(x, x) + β⁻¹).
        Returns mean, (mean, std), (mean, var) or (mean, std, var).
        """
        self._fitted()
        X = as_features(X)
        if X.shape[1] != self.X_train_.shape[1]:
            raise InputError("X", f"has {X.shape[1]} features, the training data "
                             f"{self.X_train_.shape[1]}")
        Ks = self.kernel_(X, self.X_train_)
        mean = Ks @ self._alpha
        if not (return_std or return_var):
            return mean
        V = scipy.linalg.solve_triangular(self._factor[0], Ks.T, lower=True, check_finite=False)
        var = self.kernel_.diag(X) - np.einsum("ij,ij->j", V, V)
        var = np.maximum(var, 0.0) + (self.noise_ if include_noise else 0.0)
        extra = ([np.sqrt(var)] if return_std else []) + ([var] if return_var else [])
        return (mean, *extra)
