"""The ``autograd`` backend: HIPS autograd (reverse mode on boxed numpy arrays).

diffkit.numpy code runs on autograd's ``ArrayBox`` values through a small namespace over
``autograd.numpy`` that adds the array-API names the primitive table uses (``asin``,
``pow``, ``concat``, ``permute_dims`` ...).

>>> import diffkit as dk, diffkit.numpy as dnp                     # doctest: +SKIP
>>> dk.grad(lambda x: dnp.sum(dnp.sin(x)), backend="autograd")([0.0])  # doctest: +SKIP
array([1.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...checks import check_scalar, split_aux
from . import PEERS, PeerBackend, on, to_numpy, tree_to_numpy

RENAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "pow": "power",
           "concat": "concatenate", "permute_dims": "transpose"}


class Namespace:
    """``autograd.numpy`` under array-API names; numpy constants need no conversion."""

    def __init__(self, anp: Any) -> None:
        self._anp = anp

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._anp, RENAMES.get(name, name))
        setattr(self, name, fn)  # resolved once
        return fn

    @staticmethod
    def asarray(a: Any) -> Any:
        return a


class AutogradBackend(PeerBackend):
    """autograd: reverse mode (``grad``, ``jacobian`` row by row), forward ``make_jvp``."""

    name = "autograd"
    requires = PEERS["autograd"]

    def setup(self) -> None:
        import autograd.numpy as anp

        self.xp = Namespace(anp)

    def _run(self, fun: Callable) -> Callable:
        self.lib()
        return on(self.xp, fun)

    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        from autograd import value_and_grad
        from autograd.tracer import getval

        g, kept = self._run(fun), {}

        def scalar(z: Any) -> Any:
            out = g(z)
            if has_aux:
                out, kept["aux"] = split_aux(out)
            check_scalar(getval(out), "grad")
            return out

        value, grad = value_and_grad(scalar)(self.check(x))
        aux = tree_to_numpy(kept["aux"], getval) if has_aux else None
        return to_numpy(value), aux, to_numpy(grad)

    def jvp(self, fun: Callable, x: Any, x_dot: Any) -> tuple[Any, Any]:
        from autograd import make_jvp

        y, y_dot = make_jvp(self._run(fun))(self.check(x))(x_dot)
        return to_numpy(y), to_numpy(y_dot)

    def vjp(self, fun: Callable, x: Any) -> tuple[Any, Callable[[Any], Any]]:
        from autograd import make_vjp

        pull, y = make_vjp(self._run(fun))(self.check(x))
        return to_numpy(y), lambda y_bar: to_numpy(pull(y_bar))

    def jacobian(self, fun: Callable, x: Any) -> Any:
        from autograd import jacobian

        return to_numpy(jacobian(self._run(fun))(self.check(x)))

    def hessian(self, fun: Callable, x: Any) -> Any:
        from autograd import hessian

        return to_numpy(hessian(self._run(fun))(self.check(x)))

    def derivative(self, fun: Callable, x: Any) -> Any:
        from autograd import elementwise_grad

        return to_numpy(elementwise_grad(self._run(fun))(self.check(x)))
