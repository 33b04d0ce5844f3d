"""Forward mode: dual numbers.

A :class:`Dual` carries a primal value ``x`` and a tangent ``x_dot`` (the directional
derivative along a seed direction). Each primitive maps ``(x, x_dot)`` to
``(y, y_dot)`` with its JVP rule, so one pass of the program gives f(x) and J(x)·v.
A whole Jacobian is the JVP of every unit direction at once: the tangent is then a
batch of directions (:mod:`diffkit.interpreters.batching`), one vectorized pass. Extra memory is
O(1) per live value: nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .batching import Batched, BatchInterpreter, unbatch
from ..checks import check_output, like_input, split_aux
from ..core import Box, Interpreter, Primitive, bind, new_level, shape
from ..primitives import broadcast_to, reshape, transpose
from ..primitives.complex_rules import refuse_complex
from ..pytree import tree_map


class Dual(Box):
    """A value and its tangent, owned by one :class:`ForwardInterpreter`."""

    __slots__ = ("tangent",)

    def __init__(self, interp: ForwardInterpreter, value: Any, tangent: Any) -> None:
        self._interp, self.value, self.tangent = interp, value, tangent

    def __repr__(self) -> str:
        return f"Dual(value={self.value!r}, tangent={self.tangent!r})"


class ForwardInterpreter(Interpreter):
    """Propagates tangents with the JVP rules; lower-level values are constants.

    ``observe(prim, args, result)`` sees every step (the evaluation trace's rows).
    """

    def __init__(self, level: int, observe: Callable[[Primitive, Any, Dual], None] | None = None
                 ) -> None:
        super().__init__(level)
        self.observe = observe

    def process(self, prim: Primitive, args: Any, params: dict) -> Any:
        xs, x_dots, boxed = [], [], False
        for a in args:
            if type(a) is Dual and a._interp is self:
                a, x_dot = a.value, a.tangent
            else:
                x_dot = None
            boxed = boxed or isinstance(a, Box)
            xs.append(a)
            x_dots.append(x_dot)
        if not prim.complex:
            refuse_complex(prim, xs)
        if prim.jvp_pair is not None:
            y, y_dot = prim.jvp_pair([zeros(x) if t is None else t for x, t in zip(xs, x_dots)],
                                     *xs, **params)
            return self._out(prim, args, Dual(self, y, y_dot))
        y = bind(prim, *xs, **params) if boxed else prim.impl(*xs, **params)
        if prim.jvp_joint is not None:
            y_dot = prim.jvp_joint([zeros(x) if t is None else t for x, t in zip(xs, x_dots)],
                                   y, *xs, **params)
        else:
            y_dot = None
            for i, x_dot in enumerate(x_dots):
                if x_dot is not None:
                    term = prim.jvp[i](x_dot, y, *xs, **params)
                    y_dot = term if y_dot is None else y_dot + term
            if prim.broadcasts and type(y) is not np.float64 and shape(y_dot) != shape(y):
                y_dot = broadcast_to(y_dot, shape=shape(y))  # a broadcast input's tangent
        return self._out(prim, args, Dual(self, y, y_dot))

    def _out(self, prim: Primitive, args: Any, out: Dual) -> Dual:
        if self.observe is not None:
            self.observe(prim, args, out)
        return out


def zeros(x: Any) -> np.ndarray:
    """The zero tangent of ``x``."""
    return np.zeros(shape(x), dtype=np.result_type(x))


def push_forward(fun: Callable[[Any], Any], x: Any, x_dot: Any, has_aux: bool = False,
                 transform: str = "jvp") -> tuple[Any, Any, Any]:
    """Run ``fun`` on a dual number: ``(fun(x), J(x) x_dot, aux)``; ``transform`` names the
    caller in an error about the output."""
    with new_level(ForwardInterpreter) as interp:
        y = fun(Dual(interp, x, x_dot))
        aux = None
        if has_aux:
            y, aux = split_aux(y)
            aux = tree_map(lambda v: v.value if type(v) is Dual and v._interp is interp else v, aux)
        if type(y) is Dual and y._interp is interp:
            return y.value, y.tangent, aux
        check_output(y, transform)
        return y, zeros(y), aux


def jacobian_forward(fun: Callable[[Any], Any], x: Any, has_aux: bool = False,
                     transform: str = "jacobian") -> tuple[Any, Any, Any]:
    """``(f(x), J(x), aux)`` in one forward pass over every unit direction at once.

    J has shape ``f(x).shape + x.shape``.
    """
    n = int(np.prod(shape(x)))
    if n == 1:  # one direction: plain dual numbers are cheaper than a batch of one
        y, y_dot, aux = push_forward(fun, x, np.ones(shape(x), dtype=np.result_type(x)), has_aux,
                                     transform)
        return y, like_input(reshape(y_dot, shape=shape(y) + shape(x)), x), aux
    seeds = np.eye(n, dtype=np.result_type(x)).reshape((n,) + shape(x))
    with new_level(lambda level: BatchInterpreter(level, n)) as directions:
        y, y_dot, aux = push_forward(fun, x, Batched(directions, seeds), has_aux, transform)
        y_dots = unbatch(y_dot, directions)  # (n, *y.shape): one row per direction
    k = len(shape(y_dots))
    jac = transpose(y_dots, axes=tuple(range(1, k)) + (0,)) if k > 1 else y_dots
    return y, like_input(reshape(jac, shape=shape(y) + shape(x)), x), aux
