"""The symbolic backend: SymPy's exact derivative of the closed form, compiled once per shape
(:mod:`diffkit.interpreters.symbolic`).

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> dk.backend("symbolic").derivative(dnp.sin, np.zeros(2))
array([1., 1.])
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import NotApplicable, shape
from ..interpreters.symbolic import Derivation, closed_form
from . import Backend


class SymbolicBackend(Backend):
    """SymPy: exact derivatives of the closed form, compiled to numpy once per shape."""

    name = "symbolic"
    defaults = {"cse": True, "simplify": False}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.last: Derivation | None = None

    def derivation(self, fun: Callable, x: Any, kind: str) -> Derivation:
        """The cached derivation of ``fun`` for the shape of ``x``."""
        _real_point(x)
        per_fun = self._cache.setdefault(fun, {})
        key = (shape(x), kind)
        if key not in per_fun:
            per_fun[key] = closed_form(fun, x, kind, **self.options)
        self.last = per_fun[key]
        return self.last

    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        if has_aux:
            raise NotApplicable("the symbolic backend does not support has_aux; return only the "
                               "value, or use the reverse backend")
        f, g = self.derivation(fun, x, "grad")(x)
        return f, None, g.reshape(shape(x))

    def jacobian(self, fun: Callable, x: Any) -> Any:
        return self.derivation(fun, x, "jacobian")(x)[1]

    def hessian(self, fun: Callable, x: Any) -> Any:
        return self.derivation(fun, x, "hessian")(x)[1]

    def derivative(self, fun: Callable, x: Any) -> Any:
        _real_point(x)
        return self.derivation(fun, np.float64(0.0), "derivative")(x)[1]

    def value_and_jacobian(self, fun: Callable, x: Any) -> tuple[Any, Any]:
        return self.derivation(fun, x, "jacobian")(x)

    def stats(self, fun: Callable, x: Any) -> dict[str, Any]:
        last = self.last
        return {} if last is None else {"setup_s": last.setup_s, **{
            k: last.sizes[k] for k in ("expr_nodes", "expr_dag_nodes")}}


def _real_point(x: Any) -> None:
    """The closed form is built over real symbols: a complex point is not applicable (SymPy
    cannot decide re, im and conjugate of a formula it does not know to be real)."""
    if np.iscomplexobj(x):
        raise NotApplicable("the symbolic backend differentiates formulas of real symbols; a "
                            "complex input has no closed form here: use forward, reverse, "
                            "compiled or numeric[method=central]")
