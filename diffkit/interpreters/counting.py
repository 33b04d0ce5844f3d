"""Counting the primitives a function applies to its input: its tape (or trace) length.

A reverse tape records one entry per primitive that depends on the input, and a forward
pass pushes one tangent per such primitive: this interpreter counts them without
computing any derivative, so both backends report the same ``tape_ops``.

>>> import diffkit.numpy as dnp
>>> tape_length(lambda x: dnp.sin(x) * x + 1.0, 0.5)
3
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import Box, Interpreter, bind, new_level


class _Counter(Interpreter):
    """Counts the primitive calls a function makes on its input."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.ops = 0

    def process(self, prim: Any, args: Any, params: dict) -> Any:
        self.ops += 1
        return _Counted(self, bind(prim, *(_primal_of(a, self) for a in args), **params))


class _Counted(Box):
    __slots__ = ()


def _primal_of(a: Any, interp: Interpreter) -> Any:
    return a.value if type(a) is _Counted and a._interp is interp else a


def tape_length(f: Callable, x: Any) -> int:
    """Primitive calls that depend on the input: the tape/trace length of ``f`` at ``x``."""
    with new_level(_Counter) as counter:
        f(_Counted(counter, x))
    return counter.ops
