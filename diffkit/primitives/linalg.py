"""Matrix product: ``z = x @ y`` on operands of at least two dimensions.

``diffkit.numpy.matmul`` promotes vectors to matrices before calling it, so the rules
need only the matrix case; leading (batch) axes broadcast as in numpy, and the
interpreters sum the adjoint back over them.
"""

from __future__ import annotations

import operator
from typing import Any

from ..core import Primitive, ndim
from .structure import transpose


def _mT(a: Any) -> Any:
    """Swap the last two axes."""
    n = ndim(a)
    return transpose(a, axes=tuple(range(n - 2)) + (n - 1, n - 2))


matmul = Primitive(
    "matmul", operator.matmul,
    jvp=(lambda x_dot, z, x, y: matmul(x_dot, y), lambda y_dot, z, x, y: matmul(x, y_dot)),
    vjp=(lambda z_bar, z, x, y: matmul(z_bar, _mT(y)), lambda z_bar, z, x, y: matmul(_mT(x), z_bar)),
    broadcasts=True,  # symbolic: numpy matmul works on object arrays of expressions
)
