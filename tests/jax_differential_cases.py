"""One or more cases per *function name* of the coverage page (diffkit/nplib/coverage.py),
written once for diffkit and for JAX: ``fn(ns, x)`` with ``ns`` a bundle of namespaces
(``ns.np``, ``ns.linalg``, ``ns.fft``, ``ns.special``, ``ns.slinalg``, ``ns.stats``) and a
sampler of points inside the function's domain (away from kinks, ties and poles).

tests/test_jax_differential.py runs every case whose name both libraries provide.
Elementwise functions get their cases from domain tables; the rest are written out.
Outputs are real (complex FFT outputs are split into real and imaginary parts).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from jax_cases import _distinct_sv as distinct_sv

Sampler = Callable[[np.random.Generator], np.ndarray]
Case = tuple[Callable[[Any, Any], Any], Sampler]


def u(lo: float, hi: float, *shape: int) -> Sampler:
    return lambda r: r.uniform(lo, hi, size=shape)


def away(*shape: int) -> Sampler:
    """Both signs, at least 0.3 from zero."""
    return lambda r: r.choice([-1.0, 1.0], size=shape) * r.uniform(0.3, 2.0, size=shape)


def between(*shape: int) -> Sampler:
    """At least 0.2 from any integer and half-integer (rounding jumps there)."""
    return lambda r: r.integers(-3, 3, size=shape) + r.choice([0.25, 0.75], size=shape) \
        + r.uniform(-0.05, 0.05, size=shape)


def conditioned(n: int) -> Sampler:
    return lambda r: n * np.eye(n) + r.uniform(-0.5, 0.5, size=(n, n))


def with_nans(r: np.random.Generator) -> np.ndarray:
    x = r.standard_normal((3, 4))
    x[0, 1] = x[2, 3] = x[1, 0] = np.nan
    return x


V, M = (5,), (3, 4)
UNIT = u(-0.9, 0.9, *V)
POSITIVE = u(0.3, 3.0, *V)
REAL = u(-2.0, 2.0, *V)

UNARY: dict[str, Sampler] = {
    **dict.fromkeys(["abs", "absolute", "fabs", "sign", "cbrt", "reciprocal"], away(*V)),
    **dict.fromkeys(["arccos", "arcsin", "arctanh", "acos", "asin", "atanh"], UNIT),
    **dict.fromkeys(["arccosh", "acosh"], u(1.2, 3.0, *V)),
    **dict.fromkeys(["log", "log10", "log2", "sqrt"], POSITIVE),
    "log1p": u(-0.5, 2.0, *V), "tan": u(-1.2, 1.2, *V),
    **dict.fromkeys(["ceil", "floor", "rint", "trunc", "round", "around", "fix"], between(*V)),
    **dict.fromkeys(["arcsinh", "arctan", "asinh", "atan", "conj", "conjugate", "cos", "cosh",
                     "deg2rad", "degrees", "exp", "exp2", "expm1", "negative", "rad2deg",
                     "radians", "sin", "sinh", "square", "tanh", "real", "nan_to_num", "copy",
                     "ravel", "atleast_1d", "atleast_2d", "atleast_3d", "flip", "sort",
                     "asarray", "array", "cumsum", "diff", "squeeze", "transpose"], REAL),
    "sinc": away(*V), "angle": away(*V), "imag": REAL,
}
BINARY: dict[str, Sampler] = {  # f(x, y) with x = first half, y = second half of a 10-vector
    **dict.fromkeys(["add", "subtract", "multiply", "maximum", "minimum", "fmax", "fmin",
                     "logaddexp", "logaddexp2", "hypot", "arctan2", "atan2", "copysign"],
                    away(10)),
    **dict.fromkeys(["divide", "true_divide"], away(10)),
    **dict.fromkeys(["power", "pow", "float_power"], u(0.3, 2.0, 10)),
    **dict.fromkeys(["mod", "remainder", "fmod"], u(0.52, 0.58, 10)),
}
REDUCTIONS = ["sum", "prod", "mean", "max", "min", "amax", "amin", "std", "var", "ptp",
              "median", "nansum", "nanprod", "nanmean", "nanmax", "nanmin", "nanstd", "nanvar",
              "nanmedian"]
SPECIAL_UNARY: dict[str, Sampler] = {
    **dict.fromkeys(["erf", "erfc", "expit", "ndtr", "log_ndtr", "erfcx", "i0", "i0e", "i1",
                     "i1e"], REAL),
    **dict.fromkeys(["gammaln", "digamma", "psi", "gamma", "rgamma", "j0", "j1", "y0", "y1",
                     "entr", "spence"], u(0.3, 0.95, *V)),
    "logit": u(0.1, 0.9, *V), "ndtri": u(0.05, 0.95, *V), "erfinv": UNIT,
    "erfcinv": u(0.1, 1.9, *V), "gammasgn": u(-2.9, -2.1, *V),  # Γ < 0 there: −1, flat
}


CASES: dict[str, list[Case]] = {}


def case(name: str, fn: Callable[[Any, Any], Any], sample: Sampler) -> None:
    CASES.setdefault(name, []).append((fn, sample))


for _name, _sample in UNARY.items():
    case(f"numpy.{_name}", lambda ns, x, n=_name: getattr(ns.np, n)(x), _sample)
for _name, _sample in BINARY.items():
    case(f"numpy.{_name}", lambda ns, x, n=_name: getattr(ns.np, n)(x[:5], x[5:]), _sample)
for _name in REDUCTIONS:
    sample = with_nans if _name.startswith("nan") else u(-2, 2, *M)
    case(f"numpy.{_name}", lambda ns, x, n=_name: getattr(ns.np, n)(x), sample)
    case(f"numpy.{_name}", lambda ns, x, n=_name: getattr(ns.np, n)(x, axis=1, keepdims=True), sample)
    case(f"numpy.{_name}", lambda ns, x, n=_name: getattr(ns.np, n)(x, axis=(0, 1)), sample)
for _name, _sample in SPECIAL_UNARY.items():
    case(f"scipy.special.{_name}", lambda ns, x, n=_name: getattr(ns.special, n)(x), _sample)

def _quotient_remainder(qr: Any) -> Any:
    """polydiv's quotient and the remainder's last 2 entries (JAX keeps the remainder's
    leading zeros, numpy drops them)."""
    return qr[0].sum() * 10.0 + qr[1][-2:]


_E = {  # the rest of numpy: name -> [(fn(ns, x), sampler)]
    "divmod": [(lambda ns, x: ns.np.divmod(x, 0.7)[1] + ns.np.divmod(x, 0.7)[0], u(0.52, 0.58, *V))],
    "ldexp": [(lambda ns, x: ns.np.ldexp(x, ns.np.array([1, 2, -1, 0, 3])), REAL)],
    "heaviside": [(lambda ns, x: ns.np.heaviside(x, 0.5) * x + ns.np.heaviside(
        ns.np.array([0.0, 1.0, -1.0, 0.0, 2.0]), x), away(*V))],
    "matmul": [(lambda ns, x: ns.np.matmul(x, x.T), u(-2, 2, *M))],
    "vecdot": [(lambda ns, x: ns.np.vecdot(x, x[::-1]), u(-2, 2, *M))],
    "matvec": [(lambda ns, x: ns.np.matvec(x, x[0]), u(-2, 2, 4, 4))],
    "vecmat": [(lambda ns, x: ns.np.vecmat(x[:, 0], x), u(-2, 2, *M))],
    "append": [(lambda ns, x: ns.np.append(x, x[:1], axis=0), u(-2, 2, *M))],
    "array_split": [(lambda ns, x: ns.np.array_split(x, 3, axis=1)[1], u(-2, 2, *M))],
    "split": [(lambda ns, x: ns.np.split(x, 2, axis=1)[1], u(-2, 2, *M))],
    "hsplit": [(lambda ns, x: ns.np.hsplit(x, [1])[1], u(-2, 2, *M))],
    "vsplit": [(lambda ns, x: ns.np.vsplit(x, [2])[0], u(-2, 2, *M))],
    "dsplit": [(lambda ns, x: ns.np.dsplit(x.reshape(3, 2, 2), 2)[1], u(-2, 2, *M))],
    "average": [(lambda ns, x: ns.np.average(x, axis=1, weights=x[0] * x[0] + 1.0), u(-2, 2, *M))],
    "broadcast_arrays": [(lambda ns, x: ns.np.stack(ns.np.broadcast_arrays(x, x[:, None])), REAL)],
    "broadcast_to": [(lambda ns, x: ns.np.broadcast_to(x, (2, 5)), REAL)],
    "c_": [(lambda ns, x: ns.np.c_[x, x * 2.0], REAL)],
    "r_": [(lambda ns, x: ns.np.r_[x, 0.0, x[:2] * 2.0], REAL)],
    "clip": [(lambda ns, x: ns.np.clip(x, -0.5, 0.7), away(*V))],
    "column_stack": [(lambda ns, x: ns.np.column_stack([x, x * x]), REAL)],
    "concat": [(lambda ns, x: ns.np.concat([x, x * 2.0], axis=1), u(-2, 2, *M))],
    "concatenate": [(lambda ns, x: ns.np.concatenate([x, x[:1]], axis=0), u(-2, 2, *M))],
    "stack": [(lambda ns, x: ns.np.stack([x, x * x], axis=1), u(-2, 2, *M))],
    "hstack": [(lambda ns, x: ns.np.hstack([x, x]), u(-2, 2, *M))],
    "vstack": [(lambda ns, x: ns.np.vstack([x, x[:1]]), u(-2, 2, *M))],
    "dstack": [(lambda ns, x: ns.np.dstack([x, x]), u(-2, 2, *M))],
    "convolve": [(lambda ns, x: ns.np.convolve(x, x[:3] * 2.0, mode="same"), REAL)],
    "correlate": [(lambda ns, x: ns.np.correlate(x, x[:3] * 2.0, mode="full"), REAL)],
    "corrcoef": [(lambda ns, x: ns.np.corrcoef(x), u(-2, 2, *M))],
    "cov": [(lambda ns, x: ns.np.cov(x), u(-2, 2, *M)),
            (lambda ns, x: ns.np.cov(x, x[::-1] ** 2, rowvar=False, ddof=0), u(-2, 2, *M))],
    "cross": [(lambda ns, x: ns.np.cross(x, x[::-1] * 2.0), u(-2, 2, 4, 3)),
              (lambda ns, x: ns.np.cross(x[:, :2], x[::-1]), u(-2, 2, 4, 3))],
    "cumprod": [(lambda ns, x: ns.np.cumprod(x, axis=0), u(0.5, 1.5, *M))],
    "cumsum": [(lambda ns, x: ns.np.cumsum(x, axis=1), u(-2, 2, *M))],
    "cumulative_prod": [(lambda ns, x: ns.np.cumulative_prod(x, axis=0, include_initial=True),
                         u(0.5, 1.5, *M))],
    "cumulative_sum": [(lambda ns, x: ns.np.cumulative_sum(x, axis=1, include_initial=True),
                        u(-2, 2, *M))],
    "diag": [(lambda ns, x: ns.np.diag(x, 1) + ns.np.diag(ns.np.diag(x.reshape(5, 1) @ x.reshape(1, 5)),
                                                          -1)[:6, :6], REAL)],
    "diagonal": [(lambda ns, x: ns.np.diagonal(x, 1), u(-2, 2, *M))],
    "diff": [(lambda ns, x: ns.np.diff(x, n=2, axis=1), u(-2, 2, *M)),
             (lambda ns, x: ns.np.diff(x, prepend=0.5, append=x[-1:]), REAL)],
    "dot": [(lambda ns, x: ns.np.dot(x.reshape(2, 2, 3), x.reshape(2, 3, 2)), u(-2, 2, *M))],
    "einsum": [(lambda ns, x: ns.np.einsum("ij,kj->ik", x, x * 2.0), u(-2, 2, *M))],
    "flip": [(lambda ns, x: ns.np.flip(x, 1), u(-2, 2, *M))],
    "fliplr": [(lambda ns, x: ns.np.fliplr(x), u(-2, 2, *M))],
    "flipud": [(lambda ns, x: ns.np.flipud(x), u(-2, 2, *M))],
    "full": [(lambda ns, x: ns.np.full((2, 3), x[0]), REAL)],
    "full_like": [(lambda ns, x: ns.np.full_like(x, 2.0) * x, REAL)],
    "geomspace": [(lambda ns, x: ns.np.geomspace(x[0], x[1], 5), u(0.5, 3.0, 2))],
    "logspace": [(lambda ns, x: ns.np.logspace(x[0], x[1], 5, base=x[0] + 2.0), u(0.5, 1.5, 2))],
    "linspace": [(lambda ns, x: ns.np.linspace(x[0], x[1], 5), u(-1, 1, 2))],
    "gradient": [(lambda ns, x: ns.np.stack(ns.np.gradient(x, 0.5, np.array([0.0, 0.5, 1.5, 1.7]))),
                  u(-2, 2, *M))],
    "inner": [(lambda ns, x: ns.np.inner(x, x * 2.0), u(-2, 2, *M))],
    "outer": [(lambda ns, x: ns.np.outer(x, x[:3]), REAL)],
    "kron": [(lambda ns, x: ns.np.kron(x, x[:2, :2]), u(-2, 2, *M))],
    "tensordot": [(lambda ns, x: ns.np.tensordot(x, x, axes=([0], [0])), u(-2, 2, *M))],
    "vdot": [(lambda ns, x: ns.np.vdot(x, x[::-1]), u(-2, 2, *M))],
    "interp": [(lambda ns, x: ns.np.interp(x, np.array([-1.0, 0.0, 0.7, 1.5]),
                                           np.array([2.0, -1.0, 0.5, 3.0])), u(-2, 2, 7)),
               (lambda ns, x: ns.np.interp(np.array([-0.5, 0.3, 1.0, 2.0]), ns.np.sort(x), x * x),
                u(-1, 1.5, 5))],
    "matrix_transpose": [(lambda ns, x: ns.np.matrix_transpose(x.reshape(1, 3, 4)), u(-2, 2, *M))],
    "meshgrid": [(lambda ns, x: ns.np.stack(ns.np.meshgrid(x, x[:2] * 2.0, x)), u(-2, 2, 3))],
    "expand_dims": [(lambda ns, x: ns.np.expand_dims(x, (0, -1)), u(-2, 2, *M))],
    "moveaxis": [(lambda ns, x: ns.np.moveaxis(x[None], 0, -1), u(-2, 2, *M))],
    "rollaxis": [(lambda ns, x: ns.np.rollaxis(x[None], 2), u(-2, 2, *M))],
    "swapaxes": [(lambda ns, x: ns.np.swapaxes(x[None], 0, 2), u(-2, 2, *M))],
    "permute_dims": [(lambda ns, x: ns.np.permute_dims(x[None], (2, 0, 1)), u(-2, 2, *M))],
    "nancumprod": [(lambda ns, x: ns.np.nancumprod(x, axis=1), with_nans)],
    "nancumsum": [(lambda ns, x: ns.np.nancumsum(x, axis=1), with_nans)],
    "nanpercentile": [(lambda ns, x: ns.np.nanpercentile(x, np.array([10.0, 50.0, 93.0]), axis=1),
                       with_nans)],
    "nanquantile": [(lambda ns, x: ns.np.nanquantile(x, 0.3, axis=(0, 1)), with_nans)],
    "percentile": [(lambda ns, x: ns.np.percentile(x, 37.0, axis=0), u(-2, 2, *M))],
    "quantile": [(lambda ns, x: ns.np.quantile(x, np.array([0.1, 0.5, 0.93]), axis=1, keepdims=True),
                  u(-2, 2, *M)),
                 (lambda ns, x: ns.np.quantile(np.array([3.0, -1.0, 2.0, 0.5]), x), u(0.05, 0.95, 3))],
    "pad": [(lambda ns, x: ns.np.pad(x, ((1, 0), (2, 1))) + 0.0, u(-2, 2, *M))],
    "partition": [(lambda ns, x: ns.np.partition(x, 2, axis=1)[:, 2], u(-2, 2, *M))],
    "piecewise": [(lambda ns, x: ns.np.piecewise(x, [x < 0, x >= 0], [lambda v: v ** 2, lambda v: v * 3.0]),
                   away(*V))],
    "select": [(lambda ns, x: ns.np.select([x < -0.5, x > 0.5], [x ** 2, x * 3.0], x), away(*V))],
    "polyadd": [(lambda ns, x: ns.np.polyadd(x, x[:2]), REAL)],
    "polysub": [(lambda ns, x: ns.np.polysub(x[:2], x), REAL)],
    "polymul": [(lambda ns, x: ns.np.polymul(x, x[:2]), REAL)],
    "polyder": [(lambda ns, x: ns.np.polyder(x, 2), REAL)],
    "polyint": [(lambda ns, x: ns.np.polyint(x, 2), REAL)],
    "polyval": [(lambda ns, x: ns.np.polyval(x, x * 0.5), REAL)],
    "polyfit": [(lambda ns, x: ns.np.polyfit(x, x * x - x, 2), u(-2, 2, 7))],
    "vander": [(lambda ns, x: ns.np.vander(x, 4), REAL)],
    "repeat": [(lambda ns, x: ns.np.repeat(x, 2, axis=1), u(-2, 2, *M))],
    "reshape": [(lambda ns, x: ns.np.reshape(x, (2, 6)), u(-2, 2, *M))],
    "roll": [(lambda ns, x: ns.np.roll(x, 2, axis=1), u(-2, 2, *M))],
    "rot90": [(lambda ns, x: ns.np.rot90(x), u(-2, 2, *M))],
    "take": [(lambda ns, x: ns.np.take(x, np.array([0, 2, 2]), axis=1), u(-2, 2, *M))],
    "take_along_axis": [(lambda ns, x: ns.np.take_along_axis(x, np.array([[0, 3], [1, 1], [2, 0]]), axis=1),
                         u(-2, 2, *M))],
    "tile": [(lambda ns, x: ns.np.tile(x, (2, 1)), u(-2, 2, *M))],
    "trace": [(lambda ns, x: ns.np.trace(x, offset=1), u(-2, 2, *M))],
    "trapezoid": [(lambda ns, x: ns.np.trapezoid(x, dx=0.3), u(-2, 2, *M)),
                  (lambda ns, x: ns.np.trapezoid(x * x, x), REAL)],
    "tril": [(lambda ns, x: ns.np.tril(x, 1), u(-2, 2, *M))],
    "triu": [(lambda ns, x: ns.np.triu(x, -1), u(-2, 2, *M))],
    "where": [(lambda ns, x: ns.np.where(x > 0, x * x, -x), away(*V))],
    "astype": [(lambda ns, x: ns.np.astype(x, np.float64) * x, REAL)],
    "positive": [(lambda ns, x: ns.np.positive(x) * x, REAL)],
    "diagflat": [(lambda ns, x: ns.np.diagflat(x[:2], 1), REAL)],
    "ediff1d": [(lambda ns, x: ns.np.ediff1d(x, to_end=x[:1] * 2.0, to_begin=np.array([0.5])), REAL)],
    "delete": [(lambda ns, x: ns.np.delete(x, np.array([0, 2]), axis=1), u(-2, 2, *M)),
               (lambda ns, x: ns.np.delete(x, 3), u(-2, 2, *M))],
    "insert": [(lambda ns, x: ns.np.insert(x, np.array([1, 2]), x[0, :2] * 3.0, axis=0), u(-2, 2, 4, 2)),
               (lambda ns, x: ns.np.insert(x, 1, 0.5), REAL)],
    "block": [(lambda ns, x: ns.np.block([[x, x[:, :1]], [x[:1], x[:1, :1] * 2.0]]), u(-2, 2, *M))],
    "resize": [(lambda ns, x: ns.np.resize(x, (4, 4)), REAL)],
    "unstack": [(lambda ns, x: ns.np.unstack(x, axis=1)[2], u(-2, 2, *M))],
    "choose": [(lambda ns, x: ns.np.choose(np.array([0, 1, 2, 1, 0]), [x, x * x, -x]), REAL)],
    "compress": [(lambda ns, x: ns.np.compress(np.array([True, False, True]), x, axis=0), u(-2, 2, *M))],
    "extract": [(lambda ns, x: ns.np.extract(np.arange(5) % 2 == 0, x), REAL)],
    "trim_zeros": [(lambda ns, x: ns.np.trim_zeros(x * np.array([0.0, 1.0, 1.0, 1.0, 0.0])), away(*V))],
    "apply_along_axis": [(lambda ns, x: ns.np.apply_along_axis(lambda v: v[:2] * v[-1], 0, x),
                          u(-2, 2, *M))],
    "apply_over_axes": [(lambda ns, x: ns.np.apply_over_axes(ns.np.sum, x[None], [0, 2]), u(-2, 2, *M))],
    "modf": [(lambda ns, x: ns.np.modf(x)[0] + ns.np.modf(x)[1], between(*V))],
    "frexp": [(lambda ns, x: ns.np.frexp(x)[0], away(*V))],
    "i0": [(lambda ns, x: ns.np.i0(x), REAL)],
    "poly": [(lambda ns, x: ns.np.poly(x), REAL)],
    "polydiv": [(lambda ns, x: _quotient_remainder(ns.np.polydiv(x, x[:3])), away(*V))],
    "roots": [(lambda ns, x: ns.np.sort(ns.np.real(ns.np.roots(ns.np.poly(x)))), u(-2, 2, 4))],
    "unwrap": [(lambda ns, x: ns.np.unwrap(ns.np.cumsum(x * 3.0)), away(8))],
}
for _name, _cases in _E.items():
    CASES.setdefault(f"numpy.{_name}", []).extend(_cases)


def _sym(x: Any) -> Any:
    return 0.5 * (x + x.T)  # (cholesky / eigh read one triangle: differentiate symmetric inputs)


def _spd(ns: Any, x: Any) -> Any:
    return x @ x.T + 3.0 * ns.np.eye(3)


def _eigh(ns: Any, x: Any, eigh: Any) -> Any:
    w, v = eigh(_sym(x) + ns.np.diag(ns.np.array([0.0, 3.0, 6.0])))
    return w + ns.np.abs(v).sum(0)


def _svd(ns: Any, x: Any, svd: Any) -> Any:
    u_, s, vh = svd(x, full_matrices=False)  # (sign-free functions of the factors)
    return (u_ * s ** 3) @ vh + ns.np.abs(u_).sum() * ns.np.abs(vh).sum() + s.sum()


def _qr(ns: Any, x: Any, qr: Any) -> Any:
    q, r = qr(x)
    return ns.np.abs(q) * ns.np.abs(r).sum(0) + q @ r


def _real_eigen(ns: Any, x: Any) -> Any:
    return x @ ns.np.diag(ns.np.array([1.0, 2.5, 4.0])) @ ns.np.linalg.inv(x)  # (real, distinct)


def _eig(ns: Any, x: Any, la: Any) -> Any:
    """Eigenvalues and |eigenvectors| (JAX: complex, and its eigenvector derivative is opt-in)."""
    a = _real_eigen(ns, x)
    if ns.np.__name__.startswith("jax"):
        import jax

        w, v = jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    else:
        w, v = la.eig(a)
    return ns.np.real(w) + ns.np.abs(v).sum(0)


_B = np.array([[1.0, -0.5], [0.3, 2.0], [-1.2, 0.7]])
_B5 = np.array([[1.0, -0.5], [0.3, 2.0], [-1.2, 0.7], [0.4, 0.1], [2.0, -1.0]])
_LINALG = {  # numpy.linalg and scipy.linalg names -> cases (ns.linalg is numpy's, ns.slinalg scipy's)
    "cholesky": [(lambda ns, x, la: la.cholesky(_spd(ns, x)), u(-1, 1, 3, 3))],
    "cond": [(lambda ns, x, la: la.cond(x) + la.cond(x, 1) + la.cond(x, "fro") + la.cond(x, -2),
              conditioned(3))],
    "cross": [(lambda ns, x, la: la.cross(x, x[::-1] * 2.0), u(-2, 2, 4, 3))],
    "det": [(lambda ns, x, la: la.det(x), conditioned(3))],
    "diagonal": [(lambda ns, x, la: la.diagonal(x.reshape(2, 2, 3), offset=1), u(-2, 2, *M))],
    "eigh": [(lambda ns, x, la: _eigh(ns, x, la.eigh), u(-0.5, 0.5, 3, 3))],
    "eig": [(lambda ns, x, la: _eig(ns, x, la), conditioned(3))],
    "eigvals": [(lambda ns, x, la: ns.np.real(la.eigvals(_real_eigen(ns, x))), conditioned(3))],
    "eigvalsh": [(lambda ns, x, la: la.eigvalsh(_sym(x) + ns.np.diag(ns.np.array([0.0, 3.0, 6.0]))),
                  u(-0.5, 0.5, 3, 3))],
    "inv": [(lambda ns, x, la: la.inv(x), conditioned(3))],
    "lstsq": [(lambda ns, x, la: la.lstsq(x, _B5)[0] + la.lstsq(x, _B5)[1].sum()
               + la.lstsq(x, _B5)[3].sum(), distinct_sv(5, 3))],
    "matmul": [(lambda ns, x, la: la.matmul(x, x.T), u(-2, 2, *M))],
    "matrix_norm": [(lambda ns, x, la: la.matrix_norm(x.reshape(1, 3, 4)) + la.matrix_norm(x, ord=1)
                     + la.matrix_norm(x, ord=2) + la.matrix_norm(x, ord="nuc"), distinct_sv(3, 4))],
    "matrix_power": [(lambda ns, x, la: la.matrix_power(x, 3) + la.matrix_power(x, -2), conditioned(3))],
    "matrix_transpose": [(lambda ns, x, la: la.matrix_transpose(x), u(-2, 2, *M))],
    "multi_dot": [(lambda ns, x, la: la.multi_dot([x, x.T, x]), u(-2, 2, *M))],
    "norm": [(lambda ns, x, la: la.norm(x) + la.norm(x, 1) + la.norm(x, -np.inf) + la.norm(x, axis=1).sum()
              + la.norm(x, 2), distinct_sv(3, 4))],
    "outer": [(lambda ns, x, la: la.outer(x, x[:3]), REAL)],
    "pinv": [(lambda ns, x, la: la.pinv(x), u(-2, 2, *M))],
    "slogdet": [(lambda ns, x, la: la.slogdet(x)[1], conditioned(3))],
    "solve": [(lambda ns, x, la: la.solve(x, x.T @ x), conditioned(3))],
    "svd": [(lambda ns, x, la: _svd(ns, x, la.svd), distinct_sv(4, 3))],
    "svdvals": [(lambda ns, x, la: la.svdvals(x), distinct_sv(4, 3))],
    "tensordot": [(lambda ns, x, la: la.tensordot(x, x, axes=([0], [0])), u(-2, 2, *M))],
    "tensorinv": [(lambda ns, x, la: la.tensorinv(x.reshape(2, 3, 2, 3), 2), conditioned(6))],
    "tensorsolve": [(lambda ns, x, la: la.tensorsolve(x.reshape(2, 3, 6), _B.T), conditioned(6))],
    "trace": [(lambda ns, x, la: la.trace(x.reshape(2, 2, 3), offset=1), u(-2, 2, *M))],
    "vecdot": [(lambda ns, x, la: la.vecdot(x, x[::-1]), u(-2, 2, *M))],
    "vector_norm": [(lambda ns, x, la: la.vector_norm(x) + la.vector_norm(x, axis=0, ord=3).sum()
                     + la.vector_norm(x, axis=(0, 1), ord=1), u(-2, 2, *M))],
    # scipy.linalg's own
    "expm": [(lambda ns, x, la: la.expm(x), u(-0.7, 0.7, 3, 3))],
    "expm_frechet": [(lambda ns, x, la: la.expm_frechet(x, x.T * 2.0)[1], u(-0.7, 0.7, 3, 3))],
    "sqrtm": [(lambda ns, x, la: la.sqrtm(_spd(ns, x)), u(-1, 1, 3, 3))],
    "solve_sylvester": [(lambda ns, x, la: la.solve_sylvester(x, x[:2, :2], x.T[:, :2] * 0.5), conditioned(3))],
    "solve_triangular": [(lambda ns, x, la: la.solve_triangular(x, _B, lower=True)
                          + la.solve_triangular(x, _B, trans=1, unit_diagonal=True), conditioned(3))],
}
for _name, _cases in _LINALG.items():
    for _fn, _sample in _cases:
        for _space, _attr in (("numpy.linalg", "linalg"), ("scipy.linalg", "slinalg")):
            case(f"{_space}.{_name}", lambda ns, x, f=_fn, a=_attr: f(ns, x, getattr(ns, a)), _sample)
case("numpy.linalg.qr", lambda ns, x: _qr(ns, x, ns.linalg.qr), distinct_sv(5, 3))
case("scipy.linalg.qr", lambda ns, x: _qr(ns, x, lambda a: ns.slinalg.qr(a, mode="economic")),
     distinct_sv(5, 3))  # (SciPy's default mode is 'full')
case("scipy.linalg.qr", lambda ns, x: _qr(ns, x, ns.slinalg.qr), conditioned(3))


def _split(z: Any) -> Any:
    return z.real + 2.0 * z.imag


_FFT = {
    "fft": lambda ns, x: _split(ns.fft.fft(x, n=8, norm="ortho")),
    "ifft": lambda ns, x: _split(ns.fft.ifft(x * 2.0, n=4)),
    "rfft": lambda ns, x: _split(ns.fft.rfft(x, norm="forward")),
    "irfft": lambda ns, x: ns.fft.irfft(ns.fft.rfft(x) * (1.0 + 0.5j), n=7),
    "fft2": lambda ns, x: _split(ns.fft.fft2(x.reshape(2, 3))),
    "ifft2": lambda ns, x: _split(ns.fft.ifft2(x.reshape(2, 3), s=(3, 3))),
    "rfft2": lambda ns, x: _split(ns.fft.rfft2(x.reshape(2, 3))),
    "irfft2": lambda ns, x: ns.fft.irfft2(ns.fft.rfft2(x.reshape(2, 3)) ** 2, s=(2, 3)),
    "fftn": lambda ns, x: _split(ns.fft.fftn(x.reshape(3, 2), axes=(0,))),
    "ifftn": lambda ns, x: _split(ns.fft.ifftn(x.reshape(3, 2) * (1.0 + 2.0j))),
    "rfftn": lambda ns, x: _split(ns.fft.rfftn(x.reshape(3, 2))),
    "irfftn": lambda ns, x: ns.fft.irfftn(ns.fft.rfftn(x.reshape(3, 2)) * 2.0, s=(3, 2), axes=(0, 1)),
    "fftshift": lambda ns, x: ns.fft.fftshift(x * x),
    "ifftshift": lambda ns, x: ns.fft.ifftshift(x * x),
}
for _name, _fn in _FFT.items():
    case(f"numpy.fft.{_name}", _fn, u(-2, 2, 6))

_SPECIAL = {
    "beta": (lambda s, x: s.beta(x, x[::-1] + 0.5), u(0.3, 3, *V)),
    "betaln": (lambda s, x: s.betaln(x, x[::-1] + 0.5), u(0.3, 3, *V)),
    "betainc": (lambda s, x: s.betainc(2.0, 3.5, x) * s.betainc(0.8, 1.2, x * 0.5), u(0.05, 0.95, *V)),
    "gammainc": (lambda s, x: s.gammainc(2.5, x), u(0.1, 4, *V)),
    "gammaincc": (lambda s, x: s.gammaincc(0.7, x * 2.0), u(0.1, 4, *V)),
    "iv": (lambda s, x: s.iv(1.5, x), u(0.3, 3, *V)),
    "ive": (lambda s, x: s.ive(0.5, x), u(0.3, 3, *V)),
    "jv": (lambda s, x: s.jv(2.0, x), u(0.2, 5, *V)),
    "kl_div": (lambda s, x: s.kl_div(x, 1.5 - x * 0.3), u(0.1, 2, *V)),
    "rel_entr": (lambda s, x: s.rel_entr(x, x * x + 0.5), u(0.1, 2, *V)),
    "xlogy": (lambda s, x: s.xlogy(x, x * x + 0.5), REAL),
    "xlog1py": (lambda s, x: s.xlog1py(x, x * x), REAL),
    "softmax": (lambda s, x: s.softmax(x, axis=0), u(-2, 2, *M)),
    "log_softmax": (lambda s, x: s.log_softmax(x, axis=-1), u(-2, 2, *M)),
    "multigammaln": (lambda s, x: s.multigammaln(x + 2.0, 3), u(0.5, 3, *V)),
    "polygamma": (lambda s, x: s.polygamma(1, x) + s.polygamma(2, x * 2.0), u(0.5, 3, *V)),
    "zeta": (lambda s, x: s.zeta(3.0, x) + s.zeta(2.5, x * x + 1.0), u(0.5, 3, *V)),
    "logsumexp": (lambda s, x: s.logsumexp(x, axis=1, keepdims=True)
                  + s.logsumexp(x, b=np.array([2.0, 0.5, -0.1, 1.0]), axis=1, keepdims=True), u(-2, 2, *M)),
    "yn": (lambda s, x: s.yn(2, x), u(0.5, 5, *V)),
    "yv": (lambda s, x: s.yv(1.5, x), u(0.5, 5, *V)),
    "jn": (lambda s, x: s.jn(3, x), u(0.2, 5, *V)),
}
for _name, (_fn, _sample) in _SPECIAL.items():
    case(f"scipy.special.{_name}", lambda ns, x, f=_fn: f(ns.special, x), _sample)

_STATS = {  # distribution -> its densities (and CDFs) in the point and every parameter
    "norm": (lambda d, x: d.logpdf(x, x * 0.3, 1.0 + x * x) + d.pdf(x, 0.2, 1.5) + d.cdf(x, x * 0.5, 2.0)
             + d.logcdf(x, -0.3, 1.2), u(-2, 2, *V)),
    "t": (lambda d, x: d.logpdf(x, 2.5 + x * x, x * 0.3, 1.2) + d.pdf(x, 4.0), u(-2, 2, *V)),
    "gamma": (lambda d, x: d.logpdf(x, 1.5 + x, 0.1, 1.3) + d.pdf(x, 2.0) + d.cdf(x, 2.5)
              + d.logcdf(x, 1.5), u(0.5, 3, *V)),
    "chi2": (lambda d, x: d.logpdf(x, 2.0 + x) + d.cdf(x, 3.0), u(0.5, 3, *V)),
    "beta": (lambda d, x: d.logpdf(x, 1.0 + x, 2.5 - x) + d.pdf(x, 2.0, 3.0) + d.cdf(x, 1.5, 2.5),
             u(0.1, 0.9, *V)),
    "poisson": (lambda d, x: d.logpmf(np.array([0.0, 1.0, 3.0, 2.0, 5.0]), x) + d.pmf(np.array([1.0, 0, 2, 4, 1]), x),
                u(0.5, 4, *V)),
    "multivariate_normal": (lambda d, x: d.logpdf(x[:3], x[3:6], (x[6:] ** 2 + 1.0) * np.eye(3)), u(-1, 1, 9)),
    "dirichlet": (lambda d, x: d.logpdf(np.array([0.2, 0.3, 0.5]), x * x + 0.5), u(0.3, 2, 3)),
}
for _name, (_fn, _sample) in _STATS.items():
    case(f"scipy.stats.{_name}", lambda ns, x, f=_fn, n=_name: f(getattr(ns.stats, n), x), _sample)

_SCIPY_LINALG = {
    "toeplitz": (lambda la, x: la.toeplitz(x, x[:3] * 2.0) + la.toeplitz(x)[:, :3].sum(), REAL),
    "hankel": (lambda la, x: la.hankel(x, x[:3] * 2.0) + la.hankel(x)[:, :3].sum(), REAL),
    "circulant": (lambda la, x: la.circulant(x), REAL),
    "companion": (lambda la, x: la.companion(x), away(*V)),
    "block_diag": (lambda la, x: la.block_diag(x[:2, :3], x[2:, 1:], x[0]), u(-2, 2, *M)),
    "cho_solve": (lambda la, x: la.cho_solve(la.cho_factor(x @ x.T + 3.0 * np.eye(3)), _B)
                  + la.cho_solve(la.cho_factor(x @ x.T + 3.0 * np.eye(3), lower=True), _B), u(-1, 1, 3, 3)),
    "polar": (lambda la, x: la.polar(x)[0] + la.polar(x)[1], distinct_sv(3, 3)),
}
for _name, (_fn, _sample) in _SCIPY_LINALG.items():
    case(f"scipy.linalg.{_name}", lambda ns, x, f=_fn: f(ns.slinalg, x), _sample)
CASES["scipy.linalg.cho_factor"] = [  # (the factor's other triangle: SciPy's is arbitrary)
    (lambda ns, x: ns.slinalg.cho_solve(ns.slinalg.cho_factor(x @ x.T + 3.0 * np.eye(3)), _B),
     u(-1, 1, 3, 3))]

# Shared names left out, with the reason (a documented convention or a gap of JAX's)
NOT_COMPARED = {
    "scipy.linalg.sqrtm": "JAX has no derivative for sqrtm (its Schur decomposition has none); "
                          "diffkit's is checked against finite differences (tests/test_primitives.py)",
    "scipy.linalg.solve_sylvester": "JAX has no derivative for solve_sylvester (Schur); "
                                    "checked against finite differences (tests/test_primitives.py)",
}
VALUES_ONLY = set(NOT_COMPARED)  # (their values are still compared with JAX's)
