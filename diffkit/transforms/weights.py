"""Gradients with respect to a model's parameters where they live (MindSpore's ``weights=``).

A model reads its parameters (``dk.tensor`` leaves) from its own attributes, so
``dk.value_and_grad(forward_fn, grad_position=None, weights=model.parameters())``
cannot pass them in as arguments. Instead, for the length of one call, each parameter
*stands in* for the value the transform differentiates: it forwards every operation to
that value through a thin interpreter one half-level above the transform's own, and gets
its array back afterwards. Any backend works (the values may be tape boxes, dual numbers
or plain arrays), and nothing is written to ``.grad``.

>>> import numpy as np, diffkit as dk
>>> w = dk.tensor([1.0, 2.0], requires_grad=True)
>>> loss, (g,) = dk.value_and_grad(lambda x: (w * w * x).sum(), None, [w])(3.0)
>>> float(loss), g, w.grad
(15.0, array([ 6., 12.]), None)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..interpreters.tensor import AMBIENT, Tensor
from ..core import Box, DiffkitError, Interpreter, Primitive, _levels, bind


class Position0(int):
    """Argument 0 as a default, told apart from an explicit ``0`` (so a call that gives
    both ``argnums`` and ``grad_position`` can be refused)."""


FIRST = Position0(0)


def positions(argnums: Any, grad_position: Any, weights: Any) -> Any:
    """The differentiated argument positions (an int, a tuple, or None for none)."""
    if argnums is not FIRST and grad_position is not FIRST:
        raise DiffkitError("value_and_grad: argnums= (JAX's name) and grad_position= "
                           "(MindSpore's) say the same thing; give only one of them")
    pos = argnums if grad_position is FIRST else grad_position
    if pos is None and weights is None:
        raise DiffkitError("value_and_grad: nothing to differentiate; grad_position=None "
                           "needs weights= (e.g. weights=model.parameters())")
    return pos


class Weights:
    """The parameters of one ``value_and_grad(..., weights=...)``, differentiated as
    extra arguments after the caller's."""

    def __init__(self, weights: Any, pos: Any) -> None:
        self.ws, self.single, self.pos = as_weights(weights), isinstance(weights, Box), pos
        self.before = () if pos is None else (pos,) if isinstance(pos, (int, np.integer)) \
            else tuple(pos)

    def wrap(self, f: Callable) -> Callable:
        """``f`` taking the parameters' values as extra trailing arguments."""
        n = len(self.ws)

        def fun(*args: Any, **kwargs: Any) -> Any:
            with standing_in(self.ws, args[-n:]):
                return f(*args[:-n], **kwargs)
        return fun

    def extend(self, args: tuple) -> tuple[tuple, tuple[int, ...]]:
        """The call's arguments with the parameters' arrays after them, and the
        positions to differentiate."""
        return args + tuple(w.value for w in self.ws), self.positions(len(args))

    def positions(self, n: int) -> tuple[int, ...]:
        """The differentiated positions of a call with ``n`` arguments, the parameters'
        values after them."""
        if not all(isinstance(i, (int, np.integer)) and -n <= i < n for i in self.before):
            raise DiffkitError(f"grad: grad_position={self.pos!r} is out of range: the "
                               f"function was called with {n} positional argument(s)")
        return tuple(int(i) % n for i in self.before) + tuple(range(n, n + len(self.ws)))

    def split(self, value: Any, g: tuple) -> tuple[Any, Any]:
        """``(value, grads)`` as the caller asked: the parameters' gradients as a tuple in
        their order, after the arguments' (``(arg_grads, weight_grads)``) if any."""
        k = len(self.before)
        g_w = tuple(constant(v) for v in g[k:])
        g_w = g_w[0] if self.single else g_w
        if self.pos is None:
            return constant(value), g_w
        return constant(value), (g[0] if isinstance(self.pos, (int, np.integer)) else g[:k], g_w)


def as_weights(weights: Any) -> list[Tensor]:
    """The parameters named by ``weights`` (one tensor or an iterable), checked."""
    ws = [weights] if isinstance(weights, Box) else list(weights)
    seen: set[int] = set()
    for i, w in enumerate(ws):
        if not (type(w) is Tensor and w._interp is AMBIENT and w.is_leaf and w.requires_grad):
            if type(w) is Tensor and w.is_leaf and w.requires_grad:
                raise DiffkitError(f"value_and_grad: weights[{i}] is in use by a dk.record() "
                                   "block or another transform; call value_and_grad outside it")
            what = "a tensor that does not require grad" if type(w) is Tensor and \
                w.is_leaf and not w.requires_grad else f"a {type(w).__name__}"
            raise DiffkitError(
                f"value_and_grad: weights[{i}] is {what}, not a parameter; weights= takes a "
                "model's parameters (model.parameters(), dk.tensor(..., requires_grad=True)); "
                "pass other values as arguments and differentiate them with grad_position")
        if id(w) in seen:
            raise DiffkitError(f"value_and_grad: weights[{i}] names a parameter twice; name "
                               "each parameter once")
        seen.add(id(w))
    return ws


def constant(g: Any) -> Any:
    """``g`` without the wrapping of the tensors' level, which non-weight parameters (held
    constant) leave on what they touch."""
    while type(g) is Tensor and g._interp is AMBIENT and g.node is None:
        g = g.value
    return g


class _StandIn(Interpreter):
    """Replaces the parameters it owns by the values they stand for, then binds again."""

    def process(self, prim: Primitive, args: Sequence[Any], params: dict) -> Any:
        return bind(prim, *[a.value if isinstance(a, Box) and a._interp is self else a
                            for a in args], **params)


@contextlib.contextmanager
def standing_in(weights: list[Tensor], values: Sequence[Any]) -> Iterator[None]:
    """Inside, each of ``weights`` computes as the matching value; other tensors are
    constants (the tensors' own tape does not record)."""
    top = _levels[-1].level if _levels else 0
    stand_in = _StandIn(top + 0.5)  # above the transform whose values these are
    saved = [(w._interp, w.value, w.node) for w in weights]
    recording, AMBIENT.recording = AMBIENT.recording, False
    try:
        for w, v in zip(weights, values):
            w._interp, w.value, w.node = stand_in, v, None
        yield
    finally:
        for w, (interp, value, node) in zip(weights, saved):
            w._interp, w.value, w.node = interp, value, node
        AMBIENT.recording = recording
        stand_in.alive = False
