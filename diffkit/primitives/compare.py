"""Comparisons and select: the primitives that let a traced graph branch on values.

An eager backend compares plain numbers (``if x > 0:`` just runs). A graph traced once
for all values cannot: there ``x > 0`` must itself be an equation, giving a boolean
*mask*, and ``dnp.where(mask, a, b)`` becomes ``select(mask, a, b)``. Comparisons have
a zero derivative and select passes the adjoint to the chosen side only, so they are
not in the differentiable :func:`~diffkit.primitives.table`: no interpreter ever
differentiates a mask (a boolean value carries no tangent and receives no adjoint).
``gate(mask, x)`` is ``x`` whose derivative passes only where the mask holds: the branches
of ``dk.cond`` read their operands through it when every branch runs and a select chooses.

The same holds under ``vmap``: a comparison of a batched value is a batch of masks, one
per example (:func:`mask`), never the whole batch's values seen as one example.

>>> import numpy as np
>>> select(greater(np.array([1.0, -1.0]), 0.0), 2.0, 3.0).tolist()
[2.0, 3.0]
>>> gate(np.array([True, False]), np.array([5.0, 6.0])).tolist()   # its value: x itself
[5.0, 6.0]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..core import Box, DiffkitError, Primitive, bind, primal
from . import lowering as low
from . import patterns, series


def _comparison(name: str, ufunc: np.ufunc) -> Primitive:
    return Primitive(name, ufunc, broadcasts=True, ufunc=ufunc, lower=low.infix(name))


greater = _comparison("greater", np.greater)
greater_equal = _comparison("greater_equal", np.greater_equal)
less = _comparison("less", np.less)
less_equal = _comparison("less_equal", np.less_equal)
equal = _comparison("equal", np.equal)
not_equal = _comparison("not_equal", np.not_equal)

COMPARISONS = {np.greater: greater, np.greater_equal: greater_equal, np.less: less,
               np.less_equal: less_equal, np.equal: equal, np.not_equal: not_equal}
_OPERATORS = {np.greater: operator.gt, np.greater_equal: operator.ge, np.less: operator.lt,
              np.less_equal: operator.le, np.equal: operator.eq, np.not_equal: operator.ne}


def _select(cond: Any, x: Any, y: Any) -> Any:
    return np.where(cond, x, y)


select = Primitive(
    "select", _select,
    jvp=(None, lambda x_dot, z, c, x, y: select(c, x_dot, 0.0),
         lambda y_dot, z, c, x, y: select(c, 0.0, y_dot)),
    vjp=(None, lambda z_bar, z, c, x, y: select(c, z_bar, 0.0),
         lambda z_bar, z, c, x, y: select(c, 0.0, z_bar)),
    broadcasts=True, array_api="where", linear=True,
    lower=low.Lowering(lambda c, a, b: low.apply("select", c, a, b), "np.where({0}, {1}, {2})"),
    sparsity=patterns.select,
    taylor=series.linear(fixed=(0,)),
    complex=True,
)


def _gate(cond: Any, x: Any) -> Any:
    return np.where(cond, x, x)  # (a fresh array, never x itself: programs reuse buffers)


#: ``x`` itself, whose derivative passes only where the mask ``c`` holds (a select, never a
#: product: a NaN where ``c`` fails stays there). ``dk.cond`` under ``vmap`` or the compiled
#: backend computes every branch and selects; what a branch reads goes through the gate of
#: its own mask, so a branch not taken (sqrt of a negative number) sends no NaN back.
gate = Primitive(
    "gate", _gate,
    jvp=(None, lambda x_dot, y, c, x: select(c, x_dot, 0.0)),
    vjp=(None, lambda y_bar, y, c, x: select(c, y_bar, 0.0)),
    saves=("", "c"), broadcasts=True, linear=True,
    array_api=lambda xp, c, x: xp.where(c, x, x),
    lower=low.Lowering(lambda c, x: low.apply("select", c, x, x), "np.where({0}, {1}, {1})"),
    sympy=lambda sp, c, x: x,
    taylor=series.linear(fixed=(0,)),
    complex=True,
)


def _stopped_series(prim: Primitive, xs: list, params: dict) -> np.ndarray:
    """Taylor mode: the value, and 0 at every higher order."""
    value = series.term(xs[0], 0)
    return series.stack([value] + [np.zeros_like(value)] * series.order(xs))


#: ``x``'s value, a constant to every derivative: ``dk.stop_gradient`` in a graph being
#: traced, which is differentiated after tracing (eager boxes are simply looked through).
stopped = Primitive(
    "stop_gradient", lambda x: np.array(x, copy=True),  # (fresh: programs reuse buffers)
    jvp=(lambda x_dot, y, x: select(np.False_, x_dot, 0.0),),
    vjp=(lambda y_bar, y, x: select(np.False_, y_bar, 0.0),),
    saves=("",), broadcasts=True, array_api=lambda xp, x: x, zero_derivative=True,
    lower=low.Lowering(lambda x: x, "np.array({0})"), taylor=_stopped_series,
)


def mask(ufunc: np.ufunc, x: Any, y: Any) -> Any:
    """``ufunc(x, y)`` on values: a plain boolean array, or, when a batched value takes
    part, a batched mask (one per example, see :mod:`diffkit.interpreters.batching`).

    Derivative boxes are looked through (a mask has no derivative); batching boxes are
    kept, so the comparison runs through their batching rules.

    >>> mask(np.greater, np.array([1.0, -1.0]), 0.0).tolist()
    [True, False]
    """
    if any(isinstance(v, Box) and v.expression for v in (x, y)):  # formulas compare as such
        return _OPERATORS[ufunc](primal(x), primal(y))
    a, b = without_derivatives(x), without_derivatives(y)
    if isinstance(a, Box) or isinstance(b, Box):
        return bind(COMPARISONS[ufunc], a, b)
    return _OPERATORS[ufunc](a, b)  # (another library's arrays compare as they do)


def without_derivatives(x: Any) -> Any:
    """``x`` with only its batching boxes left (Dual and Tensor boxes are looked through):
    its value, one per example under ``vmap``, as a constant to every derivative."""
    if not isinstance(x, Box):
        return x
    if x.abstract:  # a graph being traced: differentiated later, so the cut is an equation
        return bind(stopped, x)
    if x.expression:
        raise DiffkitError("stop_gradient is n/a on the symbolic backend: a closed form has no "
                           "constant copy of a variable; use the forward or reverse backend")
    inner = without_derivatives(x.value)
    return type(x)(x._interp, inner) if x.batched else inner
