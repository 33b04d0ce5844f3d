"""Comparisons and select: the primitives that let a traced graph branch on values.

An eager backend compares plain numbers (``if x > 0:`` just runs). A graph traced once
for all values cannot: there ``x > 0`` must itself be an equation, giving a boolean
*mask*, and ``dnp.where(mask, a, b)`` becomes ``select(mask, a, b)``. Comparisons have
a zero derivative and select passes the adjoint to the chosen side only, so they are
not in the differentiable :func:`~diffkit.primitives.table`: no interpreter ever
differentiates a mask (a boolean value carries no tangent and receives no adjoint).

>>> import numpy as np
>>> select(greater(np.array([1.0, -1.0]), 0.0), 2.0, 3.0).tolist()
[2.0, 3.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Primitive


def _comparison(name: str, ufunc: np.ufunc, symbol: str) -> Primitive:
    prim = Primitive(name, ufunc, broadcasts=True, ufunc=ufunc)
    prim.symbol = symbol  # how generated code writes it: v3 = v1 > v2
    return prim


greater = _comparison("greater", np.greater, ">")
greater_equal = _comparison("greater_equal", np.greater_equal, ">=")
less = _comparison("less", np.less, "<")
less_equal = _comparison("less_equal", np.less_equal, "<=")
equal = _comparison("equal", np.equal, "==")
not_equal = _comparison("not_equal", np.not_equal, "!=")

COMPARISONS = {np.greater: greater, np.greater_equal: greater_equal, np.less: less,
               np.less_equal: less_equal, np.equal: equal, np.not_equal: not_equal}


def _select(cond: Any, x: Any, y: Any) -> Any:
    return np.where(cond, x, y)


select = Primitive(
    "select", _select,
    jvp=(None, lambda x_dot, z, c, x, y: select(c, x_dot, 0.0),
         lambda y_dot, z, c, x, y: select(c, 0.0, y_dot)),
    vjp=(None, lambda z_bar, z, c, x, y: select(c, z_bar, 0.0),
         lambda z_bar, z, c, x, y: select(c, 0.0, z_bar)),
    broadcasts=True, array_api="where",
)
