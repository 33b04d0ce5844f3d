"""``dk.jet`` and ``dk.derivatives``: higher derivatives by Taylor mode in one pass.

``jet`` has ``jax.experimental.jet``'s signature and convention: the input curve is
``x(t) = x_0 + x_1 t + x_2 t²/2! + ...`` given as ``primals = (x_0,)`` and
``series = ([x_1, x_2, ...],)`` (derivative coefficients, not divided by k!), and the
output comes back the same way: ``(y_0, [y_1, y_2, ...])`` with ``y_k = dᵏ/dtᵏ f(x(t))``
at t = 0. The propagation itself is :mod:`diffkit.interpreters.taylor`.

>>> import diffkit as dk, diffkit.numpy as dnp
>>> y0, (y1, y2, y3) = dk.jet(dnp.sin, (0.0,), ([1.0, 0.0, 0.0],))
>>> [float(v) for v in (y0, y1, y2, y3)]
[0.0, 1.0, 0.0, -1.0]
>>> [round(float(v), 6) for v in dk.derivatives(lambda x: x ** 4, 4)(2.0)]
[16.0, 32.0, 48.0, 48.0, 24.0]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..checks import as_input
from ..core import Box, DiffkitError, shape
from ..interpreters.taylor import NO_NESTING, propagate
from ..pytree import tree_map


def jet(fun: Callable[..., Any], primals: Sequence[Any], series: Sequence[Sequence[Any]]
        ) -> tuple[Any, Any]:
    """``(fun(*primals), series_out)``: the Taylor expansion of ``fun`` along the curve
    whose derivatives at 0 are ``primals`` and ``series`` (JAX's ``jet`` convention).

    ``series`` holds one sequence per primal, all of the same length K; ``series_out``
    is a list of K arrays (for a tuple or dict output, one such list per leaf).
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise DiffkitError("jet: primals and series must be tuples, one entry per argument of "
                           "fun; write dk.jet(f, (x0,), ([x1, x2, ...],))")
    if not primals or len(primals) != len(series):
        raise DiffkitError(f"jet: {len(primals)} primals but {len(series)} series; give one "
                           "sequence of Taylor terms per primal")
    orders = {len(s) for s in series}
    if len(orders) > 1:
        raise DiffkitError(f"jet: the series have different lengths {sorted(orders)}; give every "
                           "argument the same number of terms")
    K = orders.pop() if orders else 0
    coeffs = []
    for i, (x0, terms) in enumerate(zip(primals, series)):
        x0 = _real(as_input(x0, f"jet: primal {i}"), f"jet: primal {i}")
        if isinstance(x0, Box):
            raise DiffkitError(NO_NESTING)
        terms = [np.broadcast_to(_real(as_input(t, f"jet: series {i}"), f"jet: series {i}"),
                                 shape(x0)) for t in terms]
        coeffs.append(np.stack([x0] + [t / math.factorial(k) for k, t in enumerate(terms, 1)]))
    out = propagate(fun, coeffs)
    primal_out = tree_map(lambda c: c[0], out)
    series_out = tree_map(lambda c: [c[k] * math.factorial(k) for k in range(1, K + 1)], out)
    return primal_out, series_out


def _real(x: Any, where: str) -> Any:
    """Taylor series here are real: a complex one is refused, not cast."""
    if not isinstance(x, Box) and np.iscomplexobj(x):
        raise DiffkitError(f"{where} is complex: Taylor mode (jet, derivatives) takes real "
                           "series; for complex inputs use dk.jvp, dk.grad or "
                           "dk.hessian(..., holomorphic=True)")
    return x


def derivatives(f: Callable[[Any], Any], k: int) -> Callable[[Any], list]:
    """``x -> [f(x), f'(x), ..., f⁽ᵏ⁾(x)]`` for f: R → R, in one Taylor pass (at every
    point of an array x at once when f acts elementwise).

    >>> import diffkit as dk, diffkit.numpy as dnp
    >>> [float(v) for v in dk.derivatives(dnp.exp, 3)(0.0)]
    [1.0, 1.0, 1.0, 1.0]
    """
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
        raise DiffkitError(f"derivatives: the order k must be an integer >= 0, got {k!r}")

    @functools.wraps(f)
    def wrapper(x: Any) -> list:
        x = as_input(x, "derivatives: the argument")
        y0, ys = jet(f, (x,), ([np.ones(shape(x))] + [np.zeros(shape(x))] * (k - 1),) if k else ((),))
        if isinstance(ys, (tuple, dict)) or shape(y0) != shape(x):
            raise DiffkitError(f"derivatives needs f: R -> R (applied elementwise), but f returned "
                               f"shape {shape(y0)} for input shape {shape(x)}; use dk.jet for "
                               "other functions")
        return [y0] + list(ys)

    return wrapper
