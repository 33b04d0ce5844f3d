"""The symbolic backend: SymPy's exact derivative of the closed form, compiled once per shape
(:mod:`diffkit.interpreters.symbolic`).

At a complex point ``z = x + iy`` the closed form is of the real symbols of ``x`` and ``y``;
its derivatives along both are combined as JAX does (:mod:`.complex_points`). Where SymPy
cannot decide (``sign`` of a complex value, comparing complex values) it is NotApplicable.

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> dk.backend("symbolic").derivative(dnp.sin, np.zeros(2))
array([1., 1.])
>>> complex(dk.grad(lambda z: dnp.abs(z) ** 2, backend="symbolic")(3 + 4j))  # 2 conj(z)
(6-8j)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import NotApplicable, shape
from .. import numpy as dnp
from ..interpreters.symbolic import Derivation, closed_form
from . import Backend
from . import complex_points as cp


PART = {"hessian of Re f": 0, "hessian of Im f": 1}  # at a complex point


class SymbolicBackend(Backend):
    """SymPy: exact derivatives of the closed form, compiled to numpy once per shape."""

    name = "symbolic"
    defaults = {"cse": True, "simplify": False}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.last: Derivation | None = None

    def derivation(self, fun: Callable, x: Any, kind: str) -> Derivation:
        """The cached derivation of ``fun`` for the shape of ``x``; at a complex point, of
        ``fun`` on the real and imaginary parts (:func:`complex_points.on_parts`)."""
        per_fun = self._cache.setdefault(fun, {})
        key = (shape(x), kind, np.iscomplexobj(x))
        if key not in per_fun and np.iscomplexobj(x):  # kind: jacobian, or hessian of Re/Im f
            on_parts = cp.on_parts(fun, dnp)
            traced = on_parts if kind == "jacobian" else (lambda p: on_parts(p)[PART[kind]])
            per_fun[key] = closed_form(traced, cp.as_parts(x), kind.split()[0],
                                       complex_parts=True, **self.options)
        elif key not in per_fun:
            per_fun[key] = closed_form(fun, x, kind, **self.options)
        self.last = per_fun[key]
        return self.last

    def _directions(self, fun: Callable, x: Any) -> tuple[Any, Any, Any]:
        """``(f(x), A, B)`` at a complex ``x``: SymPy's derivatives along the real and the
        imaginary direction of every entry (:mod:`~diffkit.backends.complex_points`)."""
        y = np.asarray(fun(x))
        jac = self.derivation(fun, x, "jacobian")(cp.as_parts(x))[1]
        return (y, *cp.directions(jac, y.shape, np.shape(x)))

    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        if has_aux:
            raise NotApplicable("the symbolic backend does not support has_aux; return only the "
                               "value, or use the reverse backend")
        if np.iscomplexobj(x):
            value, _, fun = self.call_on_arrays(fun, x, False)
            return value, None, self.jacobian(fun, x)
        f, g = self.derivation(fun, x, "grad")(x)
        return f, None, g.reshape(shape(x))

    def jacobian(self, fun: Callable, x: Any) -> Any:
        if np.iscomplexobj(x):
            y, A, B = self._directions(fun, x)
            return cp.jacobian(A, B).reshape(y.shape + np.shape(x))
        return self.derivation(fun, x, "jacobian")(x)[1]

    def jvp(self, fun: Callable, x: Any, x_dot: Any) -> tuple[Any, Any]:
        if not (np.iscomplexobj(x) or np.iscomplexobj(x_dot)):
            return super().jvp(fun, x, x_dot)
        y, A, B = self._directions(fun, np.asarray(x, dtype=complex))
        return y, cp.jvp(A, B, x_dot).reshape(y.shape)

    def vjp(self, fun: Callable, x: Any) -> tuple[Any, Callable[[Any], Any]]:
        if not np.iscomplexobj(x):
            return super().vjp(fun, x)
        y, A, B = self._directions(fun, x)
        return y, lambda y_bar: cp.vjp(A, B, y_bar).reshape(np.shape(x))

    def hessian(self, fun: Callable, x: Any) -> Any:
        if np.iscomplexobj(x):  # holomorphic f (the transform sees to it): f'' = d2f/dx2
            n, parts = np.size(x), cp.as_parts(x)
            re, im = (self.derivation(fun, x, kind)(parts)[1].reshape(2, n, 2, n)[0, :, 0]
                      for kind in PART)
            return (re + 1j * im).reshape(shape(x) + shape(x))
        return self.derivation(fun, x, "hessian")(x)[1]

    def derivative(self, fun: Callable, x: Any) -> Any:
        if np.iscomplexobj(x):  # f'(z) entry by entry: the JVP along ones
            return self.jvp(fun, x, np.ones_like(x))[1]
        return self.derivation(fun, np.float64(0.0), "derivative")(x)[1]

    def value_and_jacobian(self, fun: Callable, x: Any) -> tuple[Any, Any]:
        if np.iscomplexobj(x):
            return fun(x), self.jacobian(fun, x)
        return self.derivation(fun, x, "jacobian")(x)

    def stats(self, fun: Callable, x: Any) -> dict[str, Any]:
        last = self.last
        return {} if last is None else {"setup_s": last.setup_s, **{
            k: last.sizes[k] for k in ("expr_nodes", "expr_dag_nodes")}}

