"""The reverse backend: reverse-mode AD on a tape (:mod:`diffkit.interpreters.reverse`).

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> dk.backend("reverse").value_and_grad(lambda x: dnp.sum(x * x), np.ones(2), False)[2]
array([2., 2.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..checks import as_input, check_output_dtype, check_scalar
from ..core import Box, DiffkitError, primal, shape
from ..interpreters.counting import tape_length
from ..interpreters.reverse import pull, rows, run_on_tape, tape_bytes
from ..interpreters.tensor import Tensor
from ..primitives import is_complex
from . import Backend


class ReverseBackend(Backend):
    """Reverse-mode AD on a tape: one backward pass per output."""

    name = "reverse"

    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        _, leaf, y, aux = run_on_tape(fun, x, has_aux, "grad")
        check_scalar(y, "grad")
        value = y.value if type(y) is Tensor else y
        return value, aux, pull(leaf, x, y, np.ones(shape(value), np.result_type(primal(value))), False)

    def vjp(self, fun: Callable, x: Any) -> tuple[Any, Callable[[Any], Any]]:
        _, leaf, y, _ = run_on_tape(fun, x, transform="vjp")
        value = y.value if type(y) is Tensor else y

        def vjp_fn(y_bar: Any) -> Any:
            y_bar = cotangent(y_bar, value)
            if shape(y_bar) != shape(value):
                raise DiffkitError(f"vjp: the cotangent has shape {shape(y_bar)} but the output "
                                   f"has shape {shape(value)}; they must match")
            return pull(leaf, x, y, y_bar, retain_graph=True)

        return value, vjp_fn

    def jvp(self, fun: Callable, x: Any, x_dot: Any) -> tuple[Any, Any]:
        y, vjp_fn = self.vjp(fun, x)  # (J x_dot)_i = <row i of J, x_dot>, a pass per output

        def along(seed: Any) -> Any:  # Re(u J x_dot) = Re sum(vjp(u) x_dot), JAX's pairing
            pair = dnp.sum(vjp_fn(seed) * x_dot)
            return dnp.real(pair) if is_complex(pair) else pair

        if not is_complex(y):
            return y, rows(y, along)
        # a complex output: its real part pairs with e_i, its imaginary part with -i e_i
        return y, rows(y, along) + 1j * rows(y, lambda seed: along(-1j * seed))

    def jacobian(self, fun: Callable, x: Any) -> Any:
        y, vjp_fn = self.vjp(fun, x)
        check_output_dtype(y, "jacrev")
        return rows(y, vjp_fn)

    def derivative(self, fun: Callable, x: Any) -> Any:
        return self.value_and_grad(lambda z: dnp.sum(fun(z)), x, False)[2]  # f is elementwise

    def stats(self, fun: Callable, x: Any) -> dict[str, Any]:
        return {"tape_ops": tape_length(fun, x), "tape_bytes": tape_bytes(fun, x)}


def cotangent(y_bar: Any, y: Any) -> Any:
    """A cotangent for output ``y``: complex only where ``y`` is (a real output's complex
    cotangent would lose its imaginary part silently; JAX refuses it too)."""
    y_bar = y_bar if isinstance(y_bar, Box) else as_input(y_bar, "vjp: the cotangent")
    if is_complex(y_bar) and not is_complex(y):
        raise DiffkitError("vjp: the cotangent is complex but the output is real; give a real "
                           "cotangent (the imaginary part would have nothing to pair with)")
    return y_bar
