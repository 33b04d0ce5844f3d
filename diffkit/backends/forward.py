"""Forward mode: dual numbers.

A :class:`Dual` carries a primal value ``x`` and a tangent ``x_dot`` (the directional
derivative along a seed direction). Each primitive maps ``(x, x_dot)`` to
``(y, y_dot)`` with its JVP rule, so one pass of the program gives f(x) and J(x)·v.
The tangent may carry several directions at once as leading axes (``batch``), which
gives a whole Jacobian in one vectorized pass. Extra memory is O(1) per live value:
nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import Backend
from ..checks import check_output, check_scalar, like_input, split_aux
from ..core import Box, Primitive, Interpreter, bind, ndim, new_level, shape
from ..primitives import broadcast_to, reshape, transpose
from ..pytree import tree_map


class Dual(Box):
    """A value and its tangent(s), owned by one :class:`ForwardInterpreter`."""

    __slots__ = ("primal", "tangent")

    def __init__(self, trace: ForwardInterpreter, primal: Any, tangent: Any) -> None:
        self._interp, self.primal, self.tangent = trace, primal, tangent

    def _value(self) -> Any:
        return self.primal

    def __repr__(self) -> str:
        return f"Dual(primal={self.primal!r}, tangent={self.tangent!r})"


class ForwardInterpreter(Interpreter):
    """Propagates tangents; ``batch`` is the shape of the leading direction axes."""

    def __init__(self, level: int, batch: tuple[int, ...] = ()) -> None:
        super().__init__(level)
        self.batch = batch

    def process(self, prim: Primitive, args: Any, params: dict) -> Any:
        primals, tangents, boxed = [], [], False
        for a in args:
            if type(a) is Dual and a._interp is self:
                a, t = a.primal, a.tangent
            else:
                t = None
            boxed = boxed or isinstance(a, Box)
            primals.append(a)
            tangents.append(t)
        y = bind(prim, *primals, **params) if boxed else prim.impl(*primals, **params)
        if prim.jvp_joint is not None:
            filled = [self.zeros(x) if t is None else t for x, t in zip(primals, tangents)]
            return Dual(self, y, prim.jvp_joint(filled, y, *primals, **params))
        y_dot = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            if self.batch and prim.broadcasts and ndim(primals[i]) < ndim(y):
                t = self.align(t, ndim(y) - ndim(primals[i]))
            c = prim.jvp[i](t, y, *primals, **params)
            y_dot = c if y_dot is None else y_dot + c
        if y_dot is None:
            return y
        if prim.broadcasts and type(y_dot) is not np.float64 \
                and shape(y_dot) != self.batch + shape(y):  # (a scalar tangent is never short)
            y_dot = broadcast_to(y_dot, shape=self.batch + shape(y))
        return Dual(self, y, y_dot)

    def zeros(self, x: Any) -> np.ndarray:
        return np.zeros(self.batch + shape(x), dtype=np.result_type(x))

    def align(self, t: Any, extra: int) -> Any:
        """Insert size-1 axes after the direction axes, so ranks match for broadcasting."""
        nb = len(self.batch)
        return reshape(t, shape=shape(t)[:nb] + (1,) * extra + shape(t)[nb:])


def push_forward(fun: Callable[[Any], Any], x: Any, x_dot: Any, batch: tuple[int, ...] = (),
                 has_aux: bool = False) -> tuple[Any, Any, Any]:
    """Run ``fun`` on a dual number: ``(fun(x), J(x) x_dot, aux)``."""
    with new_level(lambda level: ForwardInterpreter(level, batch)) as trace:
        y = fun(Dual(trace, x, x_dot))
        aux = None
        if has_aux:
            y, aux = split_aux(y)
            aux = tree_map(lambda v: v.primal if isinstance(v, Dual) and v._interp is trace else v,
                           aux)
        if isinstance(y, Dual) and y._interp is trace:
            return y.primal, y.tangent, aux
        check_output(y, "jvp")
        return y, trace.zeros(y), aux


class ForwardBackend(Backend):
    """Forward-mode AD: one pass per input direction, all directions vectorized."""

    name = "forward"

    def jvp(self, fun: Callable, x: Any, x_dot: Any) -> tuple[Any, Any]:
        y, y_dot, _ = push_forward(fun, x, x_dot)
        return y, y_dot

    def _all_directions(self, fun: Callable, x: Any, has_aux: bool = False) -> tuple[Any, Any, Any]:
        """One pass with every unit direction; returns J with shape y.shape + x.shape."""
        n = int(np.prod(shape(x)))
        if n == 1:  # one direction: plain (unbatched) dual numbers are cheaper
            y, jac, aux = push_forward(fun, x, np.ones_like(x), (), has_aux)
            return y, like_input(reshape(jac, shape=shape(y) + shape(x)), x), aux
        seeds = np.eye(n, dtype=np.result_type(x)).reshape((n,) + shape(x))
        y, y_dot, aux = push_forward(fun, x, seeds, (n,), has_aux)
        jac = transpose(y_dot, axes=tuple(range(1, ndim(y_dot))) + (0,)) if ndim(y_dot) > 1 else y_dot
        return y, like_input(reshape(jac, shape=shape(y) + shape(x)), x), aux

    def jacobian(self, fun: Callable, x: Any) -> Any:
        return self._all_directions(fun, x)[1]

    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        y, g, aux = self._all_directions(fun, x, has_aux)
        check_scalar(y, "grad")
        return y, aux, g
