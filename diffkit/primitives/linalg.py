"""Matrix product: ``z = x @ y`` on operands of at least two dimensions.

``diffkit.numpy.matmul`` promotes vectors to matrices before calling it, so the rules
need only the matrix case; leading (batch) axes broadcast as in numpy, and the
interpreters sum the adjoint back over them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Primitive, ndim
from .structure import transpose


def _mT(a: Any) -> Any:
    """Swap the last two axes."""
    n = ndim(a)
    return transpose(a, axes=tuple(range(n - 2)) + (n - 1, n - 2))


def _matmul(x: Any, y: Any) -> Any:
    """``x @ y``; a stack against one matrix is done as ONE matrix product (numpy would
    loop over the stack): this is what makes batched forward-mode Jacobians fast."""
    if type(x) is np.ndarray and type(y) is np.ndarray:
        if x.ndim > 2 and y.ndim == 2:
            rows = int(np.prod(x.shape[:-1]))  # (not -1: a zero-size stack has no inferable size)
            return (x.reshape(rows, x.shape[-1]) @ y).reshape(x.shape[:-1] + y.shape[-1:])
        if x.ndim == 2 and y.ndim > 2:
            ys = np.moveaxis(y, -2, 0)  # (k, ..., m)
            out = x @ ys.reshape(ys.shape[0], int(np.prod(ys.shape[1:])))
            return np.moveaxis(out.reshape((x.shape[0],) + ys.shape[1:]), 0, -2)
    return x @ y


matmul = Primitive(
    "matmul", _matmul,
    jvp=(lambda x_dot, z, x, y: matmul(x_dot, y), lambda y_dot, z, x, y: matmul(x, y_dot)),
    vjp=(lambda z_bar, z, x, y: matmul(z_bar, _mT(y)), lambda z_bar, z, x, y: matmul(_mT(x), z_bar)),
    saves=("y", "x"), broadcasts=True,  # symbolic: numpy matmul works on object arrays of expressions
)
