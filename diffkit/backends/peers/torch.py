"""The ``torch`` backend: PyTorch on the CPU, in float64.

``mode="func"`` (default) uses ``torch.func`` (``grad_and_value``, ``jvp``, ``vjp``,
``jacfwd``/``jacrev`` by shape, ``hessian``); ``mode="backward"`` uses the tape API
(``.backward()``, ``torch.autograd.grad`` and ``torch.autograd.functional``).
diffkit.numpy code runs on tensors with ``array_api_compat.torch`` as the namespace.
Torch tensors do not mix with numpy arrays in Python operators (``ndarray * tensor``
fails), so numpy data must meet the input through diffkit.numpy functions
(``dnp.multiply(a, x)``, ``dnp.matmul(A, x)``), which convert it.

>>> import diffkit as dk, diffkit.numpy as dnp                                # doctest: +SKIP
>>> dk.grad(lambda x: dnp.sum(x ** 2), backend=dk.backend("torch", mode="backward"))([1.0, 2.0])  # doctest: +SKIP
array([2., 4.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from ...checks import check_scalar, split_aux
from ...core import DiffkitError
from . import PEERS, PeerBackend, missing, on, to_numpy, tree_to_numpy

MODES = ("func", "backward")


def numpy_of(t: Any) -> Any:
    """A tensor (or anything else) as numpy."""
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def explained(fn: Callable) -> Callable:
    """``fn`` whose errors from mixing numpy with tensors become one DiffkitError line
    saying what to do (PyTorch's own name neither the cause nor the remedy).

    >>> explained(lambda z: z)(1.0)
    1.0
    """
    def call(z: Any) -> Any:
        try:
            return fn(z)
        except TypeError as exc:
            if "numpy.ndarray" not in str(exc) or "Tensor" not in str(exc):
                raise
            raise DiffkitError(
                f"the torch backend: a numpy array met a tensor in a Python operator ({exc}), "
                "which PyTorch does not allow; write it with diffkit.numpy functions "
                "(dnp.matmul(A, x), dnp.multiply(a, x)), which convert numpy data") from None
        except RuntimeError as exc:
            if "numpy()" not in str(exc):
                raise
            raise DiffkitError(
                "the torch backend: the function turns a tensor into a numpy array (an "
                "operator between a numpy array and a tensor, np.asarray, a numpy function, or "
                "a diffkit.numpy function that needs numpy), which drops its derivative; use "
                "diffkit.numpy functions on the input") from None
    return call


class TorchBackend(PeerBackend):
    """PyTorch: ``torch.func`` transforms or ``.backward()`` on a recorded graph."""

    name = "torch"
    requires = PEERS["torch"]
    defaults: ClassVar[dict[str, Any]] = {"mode": "func"}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.options["mode"] not in MODES:
            raise DiffkitError(f"torch backend: unknown mode {self.options['mode']!r}; "
                               f"use one of {', '.join(MODES)}")

    def setup(self) -> None:
        try:
            import array_api_compat.torch as xp
        except ImportError:
            raise missing(self.name, "array-api-compat", "torch") from None
        self.xp = xp

    def _prepare(self, fun: Callable, x: Any) -> tuple[Any, Callable, Any]:
        torch = self.lib()
        t = torch.from_numpy(np.array(self.check(x), dtype=np.float64))
        return torch, explained(on(self.xp, fun)), t

    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        torch, g, t = self._prepare(fun, x)
        if self.options["mode"] == "func":
            grad, out = torch.func.grad_and_value(g, has_aux=has_aux)(t)
            value, aux = out if has_aux else (out, None)
        else:
            t.requires_grad_(True)
            value, aux = split_aux(g(t)) if has_aux else (g(t), None)
            check_scalar(numpy_of(value), "grad")
            value.backward()
            grad = t.grad
        aux = tree_to_numpy(aux, lambda v: to_numpy(v, numpy_of) if isinstance(v, torch.Tensor) else v)
        return to_numpy(value, numpy_of), aux, to_numpy(grad, numpy_of)

    def jvp(self, fun: Callable, x: Any, x_dot: Any) -> tuple[Any, Any]:
        torch, g, t = self._prepare(fun, x)
        t_dot = torch.from_numpy(np.array(x_dot, dtype=np.float64))
        if self.options["mode"] == "func":
            y, y_dot = torch.func.jvp(g, (t,), (t_dot,))
        else:
            y, y_dot = torch.autograd.functional.jvp(g, t, t_dot)
        return to_numpy(y, numpy_of), to_numpy(y_dot, numpy_of)

    def vjp(self, fun: Callable, x: Any) -> tuple[Any, Callable[[Any], Any]]:
        torch, g, t = self._prepare(fun, x)
        if self.options["mode"] == "func":
            y, pull_t = torch.func.vjp(g, t)

            def pull(u: Any) -> Any:
                return pull_t(torch.as_tensor(np.asarray(u, dtype=np.float64)))[0]
        else:
            t.requires_grad_(True)
            y = g(t)

            def pull(u: Any) -> Any:
                u = torch.as_tensor(np.asarray(u, dtype=np.float64))
                return torch.autograd.grad(y, t, u, retain_graph=True, allow_unused=True)[0] \
                    if y.requires_grad else torch.zeros_like(t)
        return to_numpy(y, numpy_of), lambda u: to_numpy(pull(u), numpy_of)

    def jacobian(self, fun: Callable, x: Any) -> Any:
        torch, g, t = self._prepare(fun, x)
        if self.options["mode"] == "backward":
            return to_numpy(torch.autograd.functional.jacobian(g, t), numpy_of)
        with torch.no_grad():
            m = int(np.size(numpy_of(g(t))))
        jac = torch.func.jacfwd if t.numel() <= m else torch.func.jacrev
        return to_numpy(jac(g)(t), numpy_of)

    def hessian(self, fun: Callable, x: Any) -> Any:
        torch, g, t = self._prepare(fun, x)
        if self.options["mode"] == "backward":
            return to_numpy(torch.autograd.functional.hessian(g, t), numpy_of)
        return to_numpy(torch.func.hessian(g)(t), numpy_of)

    def derivative(self, fun: Callable, x: Any) -> Any:
        return self.jvp(fun, x, np.ones_like(x))[1]
