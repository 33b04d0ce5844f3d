"""The forward backend: forward-mode AD by dual numbers (:mod:`diffkit.interpreters.forward`).

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> dk.backend("forward").jacobian(dnp.sin, np.zeros(2))
array([[1., 0.],
       [0., 1.]])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..checks import check_scalar
from ..interpreters.counting import tape_length
from ..interpreters.forward import jacobian_forward, push_forward
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
        y, g, aux = jacobian_forward(fun, x, has_aux, "grad")
        check_scalar(y, "grad")
        return y, aux, g

    def stats(self, fun: Callable, x: Any) -> dict[str, Any]:
        return {"tape_ops": tape_length(fun, x)}
