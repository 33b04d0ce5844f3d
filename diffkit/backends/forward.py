"""The forward backend: forward-mode AD by dual numbers (:mod:`diffkit.interpreters.forward`).

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> dk.backend("forward").jacobian(dnp.sin, np.zeros(2))
array([[1., 0.],
       [0., 1.]])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import numpy as dnp
from ..checks import check_scalar
from ..interpreters.counting import tape_length
from ..interpreters.forward import jacobian_forward, push_forward
from ..primitives import is_complex
from . import Backend


class ForwardBackend(Backend):
    """Forward-mode AD: one pass per input direction, all directions vectorized."""

    name = "forward"

    def jvp(self, fun: Callable, x: Any, x_dot: Any) -> tuple[Any, Any]:
        y, y_dot, _ = push_forward(fun, x, x_dot)
        return y, y_dot

    def jacobian(self, fun: Callable, x: Any) -> Any:
        return jacobian_forward(fun, x)[1]

    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        if not is_complex(x):
            y, g, aux = jacobian_forward(fun, x, has_aux, "grad")
            check_scalar(y, "grad")
            return y, aux, g
        # a complex input has two real directions per entry, e_k and i e_k; JAX's gradient
        # (the VJP of the cotangent 1) is Re(df/dx) - i Re(df/dy), which is f'(z) for a
        # holomorphic f and df/dx - i df/dy for a real one
        parts = dnp.stack([dnp.real(x), dnp.imag(x)])
        y, g, aux = jacobian_forward(lambda p: fun(p[0] + 1j * p[1]), parts, has_aux, "grad")
        check_scalar(y, "grad")
        return y, aux, dnp.real(g[0]) - 1j * dnp.real(g[1])

    def stats(self, fun: Callable, x: Any) -> dict[str, Any]:
        return {"tape_ops": tape_length(fun, x)}
