"""log Φ, Φ and Φ⁻¹ of a log-probability, compiled and vectorised (docs/math.md §6b).

`log_ndtr(x)` = log Φ(x), `ndtr(x)` = Φ(x) and `ndtri_exp(y)` = Φ⁻¹(e^y) take arrays of any
shape (and `out=`) and agree with scipy.special's functions of the same names to about 1e-15
over the whole double range (tests/core/test_special.py holds them to 1e-12) at about three
times their speed on one thread (benchmarks/bench_floor.py). No library call is evaluated:
every element runs the same branch-free arithmetic (exp and log by range reduction and
polynomials, the approximations by Horner's rule, the branches as selects), so the compiled
loop runs four or eight elements per instruction.

log Φ(x): with z = |x| / √2 and t = 2 / (2 + z), erfc(z) = t exp(Q(t) − z²), Q a rational
function of t of degree 10 / 10 fitted once (tools/fit_special.py) to absolute error 5e-17.
For x < 0, log Φ(x) = Q − z² − log(2 + z) (no exponential, so nothing underflows); for
x >= 0, log Φ(x) = log1p(−u) with u = Φ(−x) = (t / 2) exp(Q − z²).

Φ⁻¹(e^y): with r = sqrt(−log min(p, 1 − p)), p = e^y, |Φ⁻¹(p)| is an analytic function of
r >= r0 = sqrt(log 2), approximated by (r − r0) P(r − r0) / Q(r − r0) on [r0, 5] and by
P(r − 5) / Q(r − 5) on [5, 27.3] (relative errors 1e-18 and 6e-18 in 50-digit arithmetic).
Below p = 1/2, −log p = −y needs no logarithm; above, −log(1 − p) = −log(−y) − h(y) with h
the series of log(−expm1(y) / −y). Below y = −745 (p not a double) the asymptotic expansion
of log Φ is solved by fixed-point iteration, in a second pass over those elements only.

The compounds the walks use: `draw_above(t, log_u)`, the truncated-normal draw
z = −Φ⁻¹((1 − w) Φ(t)) >= −t together with log Φ(t), in one compiled call; and
`log_ndtr_diff(a, b)` = log(Φ(b) − Φ(a)), from the side where the difference does not cancel.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from harness.core.special_coefficients import (
    FAR_P,
    FAR_Q,
    LOG_ERFCX_P,
    LOG_ERFCX_Q,
    LOG_EXPM1_RATIO,
    NEAR_P,
    NEAR_Q,
)
from harness.core.threads import threads

_KERNEL = {"inline": "always", "fastmath": {"contract"}, "error_model": "numpy", "cache": True}
_LOOP = {"fastmath": {"contract"}, "error_model": "numpy", "cache": True, "nogil": True}
_LN2_HI = 6.93147180369123816490e-01     # ln 2 with its last 32 bits zero, and the rest
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.4426950408889634
_SQRT2 = 1.4142135623730951
_SQRT1_2 = 0.7071067811865476
_TINY = 2.2250738585072014e-308          # the smallest normal double
_EXP_MAX = 709.782712893384              # e^x overflows above
_EXP_MIN = -745.1332191019412            # e^x is 0 below
_LN2 = math.log(2.0)
_R0 = math.sqrt(_LN2)                    # Φ⁻¹: r = sqrt(-log min(p, 1 - p)) at p = 1/2
_R_SPLIT = 5.0                           # the near and far rational functions meet
Y_FAR = -745.0                           # Φ⁻¹ below: the asymptotic expansion (ndtri_exp_far_)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_EXP_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(14))   # |r| <= ln 2 / 2
_EXPM1_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(1, 20))   # |d| <= ln 2
_ATANH_SERIES = tuple(2.0 / (2 * k + 1) for k in range(1, 11))    # 2 atanh(s) - 2s, in s²


@intrinsic
def _bits(typingctx, x):
    """The bits of a double as an int64 (a reinterpretation, no conversion)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _double(typingctx, i):
    """The double whose bits are the int64 i."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """a b + c with one rounding (the hardware's fused multiply-add)."""
    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return types.float64(types.float64, types.float64, types.float64), codegen


@njit(**_KERNEL)
def _half_square(x):
    """x² / 2 as hi + lo, exactly (so that e^(-x²/2) keeps its precision for large |x|)."""
    half = 0.5 * x
    hi = x * half
    lo = _fma(x, half, -hi)
    return hi, (lo if hi < np.inf else 0.0)


def _compiled(name: str, lines: list[str], argument: str):
    """An inlined kernel from straight-line source: the coefficients become literals and no
    loop or tuple index is left, so the caller's loop vectorises."""
    source = f"def {name}({argument}):\n" + "".join(f"    {line}\n" for line in lines)
    namespace: dict = {}
    exec(compile(source, f"<harness.core.special.{name}>", "exec"), namespace)  # noqa: S102
    return njit(**{**_KERNEL, "cache": False})(namespace[name])   # inlined into cached callers


def _horner(name: str, coef) -> object:
    """A kernel for Σ_k coef[k] x^k by Horner's rule."""
    lines = [f"r = {float(coef[-1])!r}"]
    lines += [f"r = r * x + {float(c)!r}" for c in reversed(coef[:-1])]
    return _compiled(name, [*lines, "return r"], "x")


_exp_taylor = _horner("_exp_taylor", _EXP_TAYLOR)
_expm1_taylor = _horner("_expm1_taylor", _EXPM1_TAYLOR)
_log_expm1_ratio = _horner("_log_expm1_ratio", LOG_EXPM1_RATIO)
_atanh_series = _horner("_atanh_series", _ATANH_SERIES)
_log_erfcx_p = _horner("_log_erfcx_p", LOG_ERFCX_P)
_log_erfcx_q = _horner("_log_erfcx_q", LOG_ERFCX_Q)
_near_p = _horner("_near_p", NEAR_P)
_near_q = _horner("_near_q", NEAR_Q)
_far_p = _horner("_far_p", FAR_P)
_far_q = _horner("_far_q", FAR_Q)


@njit(**_KERNEL)
def exp_(x):
    """e^x to about 1 ulp: x = k ln 2 + r, e^r by its Taylor series, 2^k into the exponent."""
    k = math.floor(x * _INV_LN2 + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = _exp_taylor(r)
    k = k if k > -1100.0 else -1100.0       # also NaN: the selects below decide
    k = k if k < 1100.0 else 1100.0
    ki = np.int64(k)
    low = ki < -1000
    v = _double(_bits(p) + ((ki + 200 if low else ki) << 52))
    v = v * (6.223015277861142e-61 if low else 1.0)    # 2^-200: subnormal results only
    v = np.inf if x > _EXP_MAX else v
    v = 0.0 if x < _EXP_MIN else v
    return x if x != x else v


@njit(**_KERNEL)
def _log_scaled(x, shift):
    """log(x) - shift log 2 for a positive normal x, to about 1 ulp: x = 2^e m, m in [√½, √2),
    log m = 2 atanh(f / (2 + f)), f = m - 1 (no check of x)."""
    b = _bits(x)
    e = ((b >> 52) & 0x7FF) - 1023 - shift
    m = _double((b & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)   # in [1, 2)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    log_m = f - s * (f - z * _atanh_series(z))
    ef = float(e)
    return ef * _LN2_HI + (log_m + ef * _LN2_LO)


@njit(**_KERNEL)
def log_(x):
    """log x to about 1 ulp, any double (subnormals scaled by 2^54 first)."""
    low = x < _TINY
    v = _log_scaled(x * 18014398509481984.0 if low else x, 54 if low else 0)
    v = -np.inf if x == 0.0 else v
    v = np.nan if x < 0.0 else v
    v = x if x == np.inf else v
    return x if x != x else v


@njit(**_KERNEL)
def expm1_(d):
    """e^d - 1 for |d| <= ln 2, to about 1 ulp (Taylor series)."""
    return d * _expm1_taylor(d)


@njit(**_KERNEL)
def log1mexp_(d):
    """log(1 - e^d) for d <= 0: log(-expm1(d)) near 0, log1p(-e^d) below -ln 2."""
    near = d > -0.6931471805599453
    u = exp_(d)
    w = 1.0 - u
    arg = -expm1_(d) if near else w
    L = log_(arg)
    far = -u if w == 1.0 else L * (-u) / (w - 1.0)     # log1p(-u), Goldberg's form
    return L if near else far


@njit(**_KERNEL)
def log_ndtr_(x):
    """log Φ(x) (module doc)."""
    z = abs(x) * _SQRT1_2
    t = 2.0 / (2.0 + z)
    hi, lo = _half_square(x)               # z² = x² / 2, exactly
    e = (_log_erfcx_p(t) / _log_erfcx_q(t) - hi) - lo
    neg = x < 0.0
    # Φ(-|x|), needed for x >= 0 only; the other lanes (and the subnormal tail) compute on
    # normal numbers, since one subnormal lane slows a whole vector
    tiny = e < -700.0                      # Φ(-x) < 1e-304: scaled by 2^200 until the end
    u = 0.5 * t * exp_(-1.0 if neg else (e + 138.62943611198907 if tiny else e))
    w = 1.0 - u
    c = (1.0 - w) - u                      # w + c = 1 - u exactly, |c| <= ulp(w) / 2
    L = _log_scaled(2.0 + z if neg else w, 0)          # log(t / 2) = -log(2 + z)
    upper = L + c * (1.0 + u * (1.0 + u))  # log1p(-u) = log w + c / w, 1 / w ~ 1 + u + u²
    upper = -(u * 6.223015277861142e-61) if tiny else upper
    v = e - L if neg else upper
    return x if x != x else v


@njit(**_KERNEL)
def ndtr_(x):
    """Φ(x): (t / 2) e^(Q - z²) below 0, 1 - Φ(-x) above."""
    z = abs(x) * _SQRT1_2
    t = 2.0 / (2.0 + z)
    hi, lo = _half_square(x)
    u = 0.5 * t * exp_((_log_erfcx_p(t) / _log_erfcx_q(t) - hi) - lo)
    v = u if x < 0.0 else 1.0 - u
    return x if x != x else v


@njit(**_KERNEL)
def _far_tail(y):
    """Φ⁻¹(e^y) below y = -745: x = -sqrt(2 (a - log(-x) - log √(2π) + log S(x))), a = -y,
    S(x) = 1 - 1/x² + 3/x⁴ - ..., by fixed-point iteration from x² = 2a - log(4π a) (each
    step gains a factor x² ~ 1500 or more: four steps reach double precision)."""
    a = -y
    x = -_SQRT2 * math.sqrt(a - 0.5 * log_(4.0 * math.pi * a))     # √2 outside: a to 1.8e308
    x = _far_step(a, x)
    x = _far_step(a, x)
    x = _far_step(a, x)
    return _far_step(a, x)


@njit(**_KERNEL)
def _far_step(a, x):
    """One step of _far_tail's iteration."""
    v = 1.0 / (x * x)
    S = 1.0 + v * (-1.0 + v * (3.0 + v * (-15.0 + v * (105.0 + v * (-945.0 + v * 10395.0)))))
    return -_SQRT2 * math.sqrt((a - _HALF_LOG_2PI) - _log_scaled(-x, 0) + _log_scaled(S, 0))


@njit(**_KERNEL)
def ndtri_exp_(y):
    """Φ⁻¹(e^y) (module doc)."""
    upper = y > -_LN2                          # p > 1/2: the tail is 1 - p = -expm1(y)
    yy = y * y
    low = y > -_TINY                           # -y subnormal: scaled by 2^54
    log_ny = _log_scaled(-y * 18014398509481984.0 if low else (-y if upper else 1.0),
                         54 if low else 0)     # y = 0 is set below
    a = -log_ny - (0.5 * y + yy * _log_expm1_ratio(yy)) if upper else -y
    r = math.sqrt(a)                           # a = -log min(p, 1 - p) >= log 2
    near = r <= _R_SPLIT
    u = r - _R0 if near else r - _R_SPLIT
    num = u * _near_p(u) if near else _far_p(u)
    den = _near_q(u) if near else _far_q(u)
    v = num / den
    v = v if upper else -v
    v = np.inf if y == 0.0 else v
    v = np.nan if y > 0.0 else v
    v = -np.inf if y == -np.inf else v
    return y if y != y else v


@njit(**_KERNEL)
def ndtri_exp_far_(y):
    """Φ⁻¹(e^y) for y below -745, where ndtri_exp_ does not reach (scalar: the fix-up of the
    few elements a compiled loop counted there; -inf stays -inf)."""
    return _far_tail(y) if y > -np.inf else y


@njit(**_KERNEL)
def log_ndtr_diff_(a, b):
    """log(Φ(b) − Φ(a)) for a <= b, from the side where the difference does not cancel:
    both below 0, log Φ(b) + log(1 − e^(log Φ(a) − log Φ(b))); both above 0, the same in
    Φ(−a) − Φ(−b); across 0, log1p(−Φ(a) − Φ(−b)); a narrow interval by its midpoint."""
    upper = a > 0.0
    hi = -a if upper else b
    lo = -b if upper else a
    L_hi = log_ndtr_(hi)
    tail_lo = log_ndtr_(lo) - L_hi
    same = L_hi + log1mexp_(tail_lo if tail_lo < 0.0 else 0.0)
    m = exp_(log_ndtr_(a)) + exp_(log_ndtr_(-b))        # Φ(a) + Φ(−b) < 1, across 0
    across = log_(1.0 - m) if m > 0.5 else _log1p(-m)
    v = across if (a <= 0.0 and b >= 0.0) else same
    # a narrow interval: the mass is φ(c) h E, c the midpoint, h the width, E the mean of
    # e^(-cs - s²/2) over s in [-h/2, h/2] (its series to h⁴), where the differences above
    # would cancel
    c = 0.5 * (a + b)
    h = b - a
    c2 = c * c
    hc = h * (abs(c) if abs(c) > 1.0 else 1.0)
    h2 = h * h
    E = 1.0 + h2 * ((c2 - 1.0) / 24.0 + h2 * ((c2 - 6.0) * c2 + 3.0) / 1920.0)
    narrow = -0.5 * c2 - _HALF_LOG_2PI + _log_scaled(h if h > _TINY else 1.0, 0) + _log1p(E - 1.0)
    v = narrow if (hc < 0.026 and h > _TINY) else v
    v = -np.inf if a == b else v
    v = np.nan if a > b else v
    return a + b if (a != a or b != b) else v


@njit(**_KERNEL)
def log1m_(w):
    """log(1 − w) for w <= 1 (above 1/2, 1 − w is exact and the correction is 1)."""
    return _log1p(-w)


@njit(**_KERNEL)
def _log1p(v):
    """log(1 + v) for v >= -1, to about 1 ulp: log(w) v / (w - 1) with w = fl(1 + v)
    (Goldberg's form: the ratio corrects the rounding of w)."""
    w = 1.0 + v
    return v if w == 1.0 else log_(w) * v / (w - 1.0)


# ---- the loops: each kernel over elements [lo, hi) of flat arrays, returning how many
# elements need the far tail of Φ⁻¹; run whole on one thread or in chunks on several ----------
@njit(**_LOOP)
def _log_ndtr_range(x, out, lo, hi):
    x, out = x[lo:hi], out[lo:hi]           # slices: the loop then runs from 0, vectorised
    for i in range(x.size):
        out[i] = log_ndtr_(x[i])
    return 0


@njit(**_LOOP)
def _ndtr_range(x, out, lo, hi):
    x, out = x[lo:hi], out[lo:hi]
    for i in range(x.size):
        out[i] = ndtr_(x[i])
    return 0


@njit(**_LOOP)
def _log1m_range(w, out, lo, hi):
    w, out = w[lo:hi], out[lo:hi]
    for i in range(w.size):
        out[i] = log1m_(w[i])
    return 0


@njit(**_LOOP)
def _ndtri_exp_range(y, out, lo, hi):
    y, out = y[lo:hi], out[lo:hi]
    far = 0
    for i in range(y.size):
        out[i] = ndtri_exp_(y[i])
        far += y[i] < Y_FAR
    return far


@njit(**_LOOP)
def _log_ndtr_diff_range(a, b, out, lo, hi):
    a, b, out = a[lo:hi], b[lo:hi], out[lo:hi]
    for i in range(a.size):
        out[i] = log_ndtr_diff_(a[i], b[i])
    return 0


@njit(**_LOOP)
def _draw_above_range(t, log_u, lp, lo, hi):
    """The truncated-normal draw over a block: lp = log Φ(t), then t <- −Φ⁻¹(e^(log_u + lp)),
    in two loops over the block while it is in cache (one loop that reads and overwrites t
    does not vectorise)."""
    t, log_u, lp = t[lo:hi], log_u[lo:hi], lp[lo:hi]
    for i in range(t.size):
        lp[i] = log_ndtr_(t[i])
    far = 0
    for i in range(t.size):
        a = log_u[i] + lp[i]
        t[i] = -ndtri_exp_(a)
        far += a < Y_FAR
    return far


@njit(**_LOOP)
def _far_pass(y, out, count):
    """out[i] = Φ⁻¹(e^y[i]) where y[i] < -745: gathered, computed as one vector loop,
    scattered back."""
    where = np.empty(count, dtype=np.int64)
    values = np.empty(count)
    k = 0
    for i in range(y.size):
        if y[i] < Y_FAR:
            where[k] = i
            values[k] = y[i]
            k += 1
    for k in range(count):
        values[k] = ndtri_exp_far_(values[k])
    for k in range(count):
        out[where[k]] = values[k]


@njit(**_LOOP)
def _draw_above_far(t, log_u, lp, count):
    """The far tail of the draws whose log_u + log Φ(t) is below -745."""
    a = log_u + lp
    _far_pass(a, t, count)
    for i in range(t.size):
        t[i] = -t[i] if a[i] < Y_FAR else t[i]


_CHUNK = 1 << 12           # elements a thread takes at a time (a few microseconds of work)
_PARALLEL_FROM = 2 * _CHUNK


def _chunked(kernel, arity: int):
    """A parallel driver of a range kernel over `arity` arrays: fixed chunks of _CHUNK
    elements, each run by one thread, so the result does not depend on the thread count.
    Compiled on its first use (only estimates with several threads need it)."""
    from numba import prange

    if arity == 2:
        def drive(a, b):
            n = a.size
            total = 0
            for c in prange((n + _CHUNK - 1) // _CHUNK):
                total += kernel(a, b, c * _CHUNK, min(n, (c + 1) * _CHUNK))
            return total
    else:
        def drive(a, b, d):
            n = a.size
            total = 0
            for c in prange((n + _CHUNK - 1) // _CHUNK):
                total += kernel(a, b, d, c * _CHUNK, min(n, (c + 1) * _CHUNK))
            return total
    return njit(parallel=True, nogil=True, error_model="numpy")(drive)


_PARALLEL: dict = {}


def _run(kernel, arrays) -> int:
    """kernel over all elements of the flat arrays, on threads() threads when they are many."""
    n = arrays[0].size
    if n >= _PARALLEL_FROM and threads() > 1:
        if kernel not in _PARALLEL:
            _PARALLEL[kernel] = _chunked(kernel, len(arrays))
        return _PARALLEL[kernel](*arrays)
    return kernel(*arrays, 0, n)


def _elementwise(kernel, out, *args):
    """Run a range kernel over arrays of any (broadcast) shape, into `out` if given (and the
    far tail of Φ⁻¹ over the elements the kernel counted)."""
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in args))
    shape = arrays[0].shape
    if out is not None and (out.shape != shape or out.dtype != np.float64):
        raise ValueError(f"out must be a float64 array of shape {shape}, "
                         f"not {out.dtype} {out.shape}")
    flat = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
    direct = (out is not None and out.flags.c_contiguous
              and not any(np.shares_memory(out, a) and not _same(out, a) for a in arrays))
    res = out if direct else np.empty(shape)
    far = _run(kernel, [*flat, res.reshape(-1)])
    if far:
        _far_pass(flat[0], res.reshape(-1), far)
    if out is None:
        return res[()] if res.ndim == 0 else res
    if not direct:
        out[...] = res
    return out


def _same(out: np.ndarray, a: np.ndarray) -> bool:
    """Whether a is exactly out's memory, element for element (an elementwise kernel may write
    in place)."""
    return (a.shape == out.shape and a.strides == out.strides
            and a.__array_interface__["data"][0] == out.__array_interface__["data"][0])


def log_ndtr(x, out=None):
    """log Φ(x), elementwise (module doc).

    Parameters
    ----------
    x : array_like
        Any shape; converted to float64.
    out : ndarray, optional
        Where to write the result (float64, x's shape); may be x itself.

    Returns
    -------
    ndarray or float
        log Φ(x), in (-inf, 0].
    """
    return _elementwise(_log_ndtr_range, out, x)


def ndtr(x, out=None):
    """Φ(x) in [0, 1], elementwise, to about 1e-15 relative below 0 (the parameters are
    log_ndtr's)."""
    return _elementwise(_ndtr_range, out, x)


def log1m(w, out=None):
    """log(1 − w), elementwise: what the truncated-normal draw takes from a uniform w (the
    parameters are log_ndtr's)."""
    return _elementwise(_log1m_range, out, w)


def ndtri_exp(y, out=None):
    """Φ⁻¹(e^y), elementwise: the x with log Φ(x) = y (module doc).

    Parameters
    ----------
    y : array_like
        Log-probabilities, any shape; y > 0 gives NaN, y = 0 gives +inf.
    out : ndarray, optional
        Where to write the result (float64, y's shape); may be y itself, except that the
        far tail (y < −745) reads y after the first pass, so in place it goes through a copy.

    Returns
    -------
    ndarray or float
        The quantiles.
    """
    y = np.asarray(y, dtype=np.float64)
    if out is not None and np.shares_memory(out, y):
        out[...] = _elementwise(_ndtri_exp_range, None, y)
        return out
    return _elementwise(_ndtri_exp_range, out, y)


def log_ndtr_diff(a, b, out=None):
    """log(Φ(b) − Φ(a)), elementwise, for a <= b (a > b gives NaN, a = b gives −inf).

    Parameters
    ----------
    a, b : array_like
        Lower and upper limits, broadcast together.
    out : ndarray, optional
        Where to write the result.

    Returns
    -------
    ndarray or float
        The log of the probability that a standard normal falls in [a, b].
    """
    return _elementwise(_log_ndtr_diff_range, out, a, b)


def draw_above(t: np.ndarray, log_u: np.ndarray) -> np.ndarray:
    """Standard normals truncated to z >= −t by inversion, in one compiled call (module doc).

    Parameters
    ----------
    t : ndarray
        1-D float64, C-contiguous; overwritten by the draws z = −Φ⁻¹((1 − w) Φ(t)).
    log_u : ndarray
        log(1 − w) < 0 of the uniforms w, t's shape.

    Returns
    -------
    ndarray
        log Φ(t), the mass of the kept side.
    """
    if not (isinstance(t, np.ndarray) and t.dtype == np.float64 and t.flags.c_contiguous):
        raise ValueError("draw_above: t must be a C-contiguous float64 array (it is "
                         "overwritten by the draws)")
    log_u = np.ascontiguousarray(np.broadcast_to(np.asarray(log_u, dtype=np.float64), t.shape))
    lp = np.empty_like(t)
    flat = [t.reshape(-1), log_u.reshape(-1), lp.reshape(-1)]
    far = _run(_draw_above_range, flat)
    if far:
        _draw_above_far(*flat, far)
    return lp


@functools.cache
def warm() -> None:
    """Load (or compile) the one-thread kernels now, once per process: before a memory
    ceiling, a fork or a timed region (loading them takes about 0.3 s and tens of MB)."""
    x = np.array([-50.0, -1.0, 0.0, 1.0, 50.0])
    log_ndtr(x)
    ndtr(x)
    ndtri_exp(np.array([-1e4, -1.0, -1e-3]))
    log_ndtr_diff(x[:-1], x[1:])
    draw_above(x.copy(), np.full(5, -0.5))
