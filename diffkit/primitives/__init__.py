"""The primitive table: every differentiable operation diffkit knows, each defined once.

``table()`` lists them by name; each entry holds the numpy implementation, the JVP and
VJP rules and the sympy translation (see :class:`diffkit.core.Primitive`).
"""

from __future__ import annotations

from ..core import Primitive
from .elementwise import (abs, add, arccos, arcsin, arctan, cos, cosh, div, exp, log,  # noqa: A004
                          log1p, maximum, minimum, mul, neg, power, sigmoid, sign, sin, sinh,
                          sqrt, sub, tan, tanh, where)
from .linalg import matmul
from .reductions import logsumexp, max, min, prod, sum  # noqa: A004
from .structure import broadcast_to, concatenate, getitem, reshape, scatter_add, sum_to, transpose


def table() -> dict[str, Primitive]:
    """All primitives by name."""
    return {v.name: v for v in globals().values() if isinstance(v, Primitive)}


__all__ = [name for name, v in list(globals().items()) if isinstance(v, Primitive)] + [
    "sum_to", "table"]
