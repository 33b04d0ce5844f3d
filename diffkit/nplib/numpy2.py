"""numpy 2's and the array API's spellings (acos, pow, concat, permute_dims, vecdot,
matvec, cumulative_sum ...) and small elementwise functions (copysign, float_power,
heaviside, ldexp), all written with the existing functions, so their derivatives are
those of the compositions.

* ``copysign(x1, x2)``: ``|x1|`` with the sign of ``x2``; derivative ``±sign(x1)`` in
  ``x1`` and 0 in ``x2`` (a sign is piecewise constant), as JAX.
* ``heaviside(x1, x2)``: 0, ``x2`` or 1; derivative 0 in ``x1``, 1 in ``x2`` where x1 == 0.
* ``ldexp(x1, n)``: ``x1 * 2**n``, ``n`` integers (no derivative).

>>> import diffkit as dk
>>> dk.grad(lambda x: cumulative_sum(x, include_initial=True)[-1])(np.array([1.0, 2.0]))
array([1., 1.])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import primitives as _p
from ..core import Box, DiffkitError, ndim, primal, shape
from .base import (arccos, arcsin, arctan, concatenate, getitem, matmul, power, reshape,
                   transpose, where)
from .base import abs as _abs
from .linalg import cross, matrix_transpose, vecdot  # noqa: F401
from .math import arccosh, arcsinh, arctan2, arctanh, conj  # noqa: F401
from .stats import cumprod, cumsum

acos, asin, atan = arccos, arcsin, arctan
acosh, asinh, atanh, atan2 = arccosh, arcsinh, arctanh, arctan2
pow = power  # noqa: A001


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    """The array API's ``concatenate``."""
    return concatenate(arrays, axis=axis)


def permute_dims(x: Any, /, axes: Sequence[int]) -> Any:
    """The array API's ``transpose`` (``axes`` required)."""
    return transpose(x, tuple(axes))


def matvec(x1: Any, x2: Any, /) -> Any:
    """Matrix-vector products of stacks, ``(..., m, n) x (..., n) -> (..., m)`` (numpy 2.2)."""
    return getitem(matmul(x1, reshape(x2, shape(x2) + (1,))), (Ellipsis, 0))


def vecmat(x1: Any, x2: Any, /) -> Any:
    """Vector-matrix products of stacks, ``conj(x1) @ x2``: ``(..., m) x (..., m, n) -> (..., n)``."""
    return getitem(matmul(reshape(conj(x1), shape(x1)[:-1] + (1, shape(x1)[-1])), x2),
                   (Ellipsis, 0, slice(None)))


def _cumulative(run: Any, start: float, x: Any, axis: int | None, include_initial: bool) -> Any:
    if axis is None:
        if ndim(x) > 1:
            raise DiffkitError("cumulative_sum/prod: give axis for an array of more than one "
                               "dimension (numpy 2's rule)")
        axis = 0
    out = run(x, axis)
    if not include_initial:
        return out
    a = axis % ndim(x)
    edge = np.full(shape(x)[:a] + (1,) + shape(x)[a + 1:], start)
    return concatenate([edge, out], axis=a)


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
    """numpy 2's running sum (``include_initial``: a leading 0)."""
    return _cumulative(cumsum, 0.0, x, axis, include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    """numpy 2's running product (``include_initial``: a leading 1); non-zero entries."""
    return _cumulative(cumprod, 1.0, x, axis, include_initial)


def _negative(x: Any) -> Any:
    """Where ``x``'s sign bit is set (-0.0 included), from the primal values."""
    if isinstance(x, Box) and x.batched:
        return x < 0
    return np.signbit(primal(x))


def copysign(x1: Any, x2: Any) -> Any:
    """``|x1|`` with the sign of ``x2``."""
    return where(_negative(x2), -_abs(x1), _abs(x1))


def float_power(x1: Any, x2: Any) -> Any:
    """``x1 ** x2`` in double precision."""
    return power(x1 if isinstance(x1, Box) else np.asarray(x1, dtype=float), x2)


def heaviside(x1: Any, x2: Any) -> Any:
    """0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 where ``x1 > 0``."""
    return where(x1 < 0, 0.0, where(x1 > 0, 1.0, x2))


def ldexp(x1: Any, x2: Any) -> Any:
    """``x1 * 2 ** x2`` with integer ``x2``."""
    n = np.asarray(primal(x2))
    if isinstance(x2, Box) or n.dtype.kind not in "iub":
        raise DiffkitError("ldexp: the exponent must be integers (no derivative); for a real "
                           "exponent write x1 * 2.0 ** x2")
    return x1 * np.ldexp(1.0, n)


def modf(x: Any) -> tuple[Any, Any]:
    """``(x - trunc(x), trunc(x))``: the fractional part has derivative 1, the integral 0."""
    from .math import trunc

    whole = trunc(x)
    return x - whole, whole


def frexp(x: Any) -> tuple[Any, np.ndarray]:
    """``(m, e)`` with ``x = m 2**e``, ``0.5 <= |m| < 1``: ``m`` has derivative ``2**-e``,
    the exponents are integers."""
    _, e = np.frexp(np.asarray(primal(x)))
    return x * np.ldexp(1.0, -e), e


def i0(x: Any) -> Any:
    """The modified Bessel function of order 0 (numpy's ``i0``), SciPy's ``iv(0, x)``."""
    return _p.iv(0.0, x)


__all__ = ["modf", "frexp", "i0", "acos", "asin", "atan", "acosh", "asinh", "atanh", "atan2", "pow", "concat",
           "permute_dims", "matrix_transpose", "vecdot", "matvec", "vecmat", "cross",
           "cumulative_sum", "cumulative_prod", "copysign", "float_power", "heaviside", "ldexp"]
