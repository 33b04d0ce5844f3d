"""Functions decided by the values, one decision per example: argsort, argmax, any ...

Their results are integers or booleans, with no derivative, so forward and reverse mode
only need the plain values under the boxes. Under ``vmap`` those plain values hold the
whole batch (one leading axis per batching level): the decision is taken over the
example's own axes only, and the result is wrapped again in the batching levels' boxes,
so ``a[dnp.argmax(a)]`` indexes each example with its own index (a gather, see
:mod:`diffkit.primitives.gather`).

>>> import numpy as np
>>> per_example(np.array([3.0, 1.0, 2.0]), lambda v, k: np.argsort(v, axis=-1), "argsort")
array([1, 2, 0])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import Box, NotApplicable


def per_example(x: Any, decide: Callable[[np.ndarray, int], Any], what: str) -> Any:
    """``decide(values, k)`` on the plain values of ``x``, whose ``k`` leading axes are
    batch axes (``vmap``); its result (an array, or a tuple of arrays) is batched again."""
    levels, value = [], x
    while isinstance(value, Box) and not value.abstract:
        if value.batched:
            levels.append(value)
        value = value.value
    if isinstance(value, Box):  # a graph traced once for all values has none
        raise NotApplicable(f"{what} depends on the entries' values, which a graph traced "
                            "once for all values does not know; use an eager backend "
                            "(forward, reverse)")
    out = decide(np.asarray(value), len(levels))
    for box in reversed(levels):  # the lowest level's batch axis is the first
        out = tuple(type(box)(box._interp, o) for o in out) if isinstance(out, tuple) \
            else type(box)(box._interp, out)
    return out


def flat_axis(values: np.ndarray, k: int, axis: int | None, n: int) -> tuple[np.ndarray, int]:
    """``values`` (``k`` batch axes, then ``n`` example axes) and the axis to decide along:
    ``axis=None`` flattens each example to one axis."""
    if axis is None:
        return values.reshape(values.shape[:k] + (-1,)), -1
    if not -n <= axis < n:
        raise np.exceptions.AxisError(axis, n)
    return values, axis % n + k
