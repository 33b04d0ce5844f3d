"""numpy's ``r_`` and ``c_``: concatenation written as indexing, on values being
differentiated too (each piece goes through ``concatenate``).

``r_[a, b, 1:4]`` joins its pieces along the first axis (numbers become 1-element
arrays, a slice the ``arange`` it names); ``c_[a, b]`` joins along the last axis, a 1-d
piece standing as a column. numpy's string directives (``r_['0,2', ...]``) are not taken.

>>> r_[np.array([1.0, 2.0]), 3.0, 4:6].tolist()
[1.0, 2.0, 3.0, 4.0, 5.0]
>>> c_[np.array([1.0, 2.0]), np.array([3.0, 4.0])].tolist()
[[1.0, 3.0], [2.0, 4.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DiffkitError, Box, ndim, shape
from .base import concatenate, reshape


class _Joiner:
    def __init__(self, axis: int, columns: bool) -> None:
        self.axis, self.columns = axis, columns

    def __getitem__(self, items: Any) -> Any:
        items = items if isinstance(items, tuple) else (items,)
        pieces = [self._piece(item) for item in items]
        if not any(isinstance(p, Box) for p in pieces):
            return np.concatenate(pieces, axis=self.axis)
        return concatenate(pieces, axis=self.axis)

    def _piece(self, item: Any) -> Any:
        if isinstance(item, str):
            raise DiffkitError("r_/c_: string directives are not supported; use concatenate")
        if isinstance(item, slice):
            item = np.arange(item.start or 0, item.stop, item.step or 1)
        if not isinstance(item, Box):
            item = np.asarray(item)
        if ndim(item) == 0:
            item = reshape(item, (1,))
        if self.columns and ndim(item) == 1:
            item = reshape(item, (shape(item)[0], 1))
        return item


r_ = _Joiner(0, columns=False)
c_ = _Joiner(-1, columns=True)

__all__ = ["c_", "r_"]
