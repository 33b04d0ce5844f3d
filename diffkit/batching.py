"""Batching: run a function once on a whole batch of inputs (the interpreter behind vmap).

A :class:`Batched` value holds an array whose *leading* axis is the batch; to the
function it looks like one example (its ``shape`` leaves the batch axis out). Each
primitive is applied to the whole batch at once by its batching rule
(``Primitive.batch``); primitives that act on trailing axes only (elementwise
functions, reductions over negative axes) need none: the default rule aligns
broadcasting operands, or gives unbatched operands the batch axis.

Forward mode uses it for Jacobians: the JVP of every unit direction at once is the JVP
with a batched tangent, so each JVP rule stays the one-line derivative of a textbook.

>>> import numpy as np, diffkit.numpy as dnp
>>> from diffkit.batching import batched_call
>>> batched_call(lambda v: dnp.sum(v * np.array([1.0, 2.0])), np.array([[1.0, 1.0], [0.0, 3.0]]))
array([3., 6.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .core import Box, DiffkitError, Interpreter, Primitive, bind, ndim, new_level, shape
from .primitives import broadcast_to
from .primitives.structure import align


class Batched(Box):
    """A batch of values, one per entry of the leading axis of ``value``."""

    __slots__ = ()

    @property
    def shape(self) -> tuple[int, ...]:
        return shape(self.value)[1:]

    def __repr__(self) -> str:
        return f"Batched({self.value!r})"


class BatchInterpreter(Interpreter):
    """Applies each primitive to a batch of ``size`` values with its batching rule."""

    def __init__(self, level: int, size: int) -> None:
        super().__init__(level)
        self.size = size

    def process(self, prim: Primitive, args: Any, params: dict) -> Any:
        values, batched = [], []
        for a in args:
            mine = type(a) is Batched and a._interp is self
            values.append(a.value if mine else a)
            batched.append(mine)
        rule = prim.batch or default_rule(prim)
        return Batched(self, rule(values, tuple(batched), self.size, **params))


def default_rule(prim: Primitive) -> Callable[..., Any]:
    """The batching rule of a primitive that acts on trailing axes only."""
    def rule(args: list, batched: tuple[bool, ...], size: int, **params: Any) -> Any:
        if prim.broadcasts:
            args = align(args, batched, size)
        elif not all(batched):  # e.g. concatenate: every operand gets the batch axis
            args = [a if b else broadcast_to(a, shape=(size,) + shape(a))
                    for a, b in zip(args, batched)]
        return bind(prim, *args, **params)
    return rule


def unbatch(out: Any, interp: BatchInterpreter) -> Any:
    """The array of results: the batch axis in front (an unbatched result is repeated)."""
    if type(out) is Batched and out._interp is interp:
        return out.value
    return broadcast_to(out, shape=(interp.size,) + shape(out))


def batched_call(fun: Callable[[Any], Any], xs: Any) -> Any:
    """``fun`` applied to every entry of the leading axis of ``xs``, in one pass.

    ``fun`` must return one array (what ``vmap`` with ``in_axes=0, out_axes=0`` does for
    a function of one argument).
    """
    if ndim(xs) == 0:
        raise DiffkitError("batching needs an array with a leading batch axis, got a scalar")
    with new_level(lambda level: BatchInterpreter(level, shape(xs)[0])) as interp:
        return unbatch(fun(Batched(interp, xs)), interp)

