"""The numeric backend: finite differences behind the common transforms.

Configured like ``dk.backend("numeric", method="richardson")`` (methods: forward,
backward, central with ``order`` 2/4/6/8, complex, richardson; ``step=None`` chooses
the step from the method's error model). The engine is :mod:`diffkit.backends.finite_diff`;
``last`` keeps the latest :class:`~diffkit.backends.finite_diff.FDResult` (step, error
estimate, function evaluations, notes) for teaching; ``stats()`` gives the harness its
evaluations and step.

>>> import diffkit as dk, diffkit.numpy as dnp
>>> rich = dk.backend("numeric", method="richardson")
>>> abs(dk.derivative(dnp.sin, backend=rich)(1.0) - 0.5403023058681398) < 1e-12
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import Interpreter, NotApplicable, new_level
from . import complex_points as cp
from . import finite_diff as fd
from . import Backend


# relative error each method promises at the default step on a smooth function (step h,
# error ~ h + eps/h one-sided, h^2 + eps/h central, eps for the complex step), with room
PROMISES = {"forward": 1e-4, "backward": 1e-4, "central": 1e-5, "richardson": 1e-7,
            "complex": 1e-10}


def _own_level(method: Callable) -> Callable:
    """``method(self, fun, x, ...)`` whose ``fun`` runs inside a level of its own, one no
    value belongs to: as under any other transform, a ``dk.nn`` module there computes
    with its parameters' arrays, not on their tape (whose tensors no difference takes)."""
    @functools.wraps(method)
    def wrapper(self: Any, fun: Callable, *args: Any, **kwargs: Any) -> Any:
        def inside(*a: Any, **k: Any) -> Any:
            with new_level(Interpreter):
                return fun(*a, **k)
        return method(self, inside, *args, **kwargs)
    return wrapper


class NumericBackend(Backend):
    """Finite differences: n+1 or 2n evaluations per gradient, error from truncation vs
    round-off."""

    name = "numeric"
    defaults = {"method": "central", "step": None, "order": 2, "batched": None}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        fd.estimate_derivative(np.sin, 0.5, method=self.options["method"],  # validates both now
                               order=self.options["order"])
        self.last: fd.FDResult | None = None

    def _run(self, engine: Callable, fun: Callable, x: Any, **extra: Any) -> Any:
        o = self.options
        if engine is fd.estimate_hessian:
            self.last = fd.estimate_hessian(fun, x, step=o["step"], batched=o["batched"])
        else:
            self.last = engine(fun, x, method=o["method"], step=o["step"], order=o["order"], **extra)
        return self.last.value

    def tolerance(self, kind: str) -> float:
        """What finite differences promise with the default steps: the truncation and
        round-off balance of each method (a Hessian differences twice)."""
        if kind == "hessian":
            return 1e-3
        return PROMISES[self.options["method"]]

    @_own_level
    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        value, aux, scalar = self.call_on_arrays(fun, x, has_aux)
        if np.iscomplexobj(x):
            return value, aux, self._complex_jacobian(scalar, x)
        return value, aux, self._run(fd.estimate_gradient, scalar, x,
                                     batched=self.options["batched"])

    @_own_level
    def jacobian(self, fun: Callable, x: Any) -> Any:
        if np.iscomplexobj(x):
            return self._complex_jacobian(fun, x)
        return self._run(fd.estimate_jacobian, fun, x, batched=self.options["batched"])

    def _complex_jacobian(self, fun: Callable, x: Any) -> Any:
        """Differences in the real and the imaginary direction of every entry, combined
        as JAX does (:mod:`~diffkit.backends.complex_points`): ``df/dx - i df/dy`` for a
        real f (its gradient), ``df/dx`` for a holomorphic (complex) f."""
        y, A, B = self._directions(fun, x)
        return cp.jacobian(A, B).reshape(y.shape + np.shape(x))

    def _directions(self, fun: Callable, x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(f(x), A, B)``: differences along the real and the imaginary direction."""
        self._real_step_only()
        y = np.asarray(fun(x))
        J = self._run(fd.estimate_jacobian, cp.on_parts(fun), cp.as_parts(x), batched=False)
        return (y, *cp.directions(J, y.shape, np.shape(x)))

    def _real_step_only(self) -> None:
        if self.options["method"] == "complex":
            raise NotApplicable(
                "the complex step needs a real input: it puts its step in the imaginary part, "
                "which a complex input already uses; use central differences "
                "(numeric[method=central]) or AD")

    @_own_level
    def hessian(self, fun: Callable, x: Any) -> Any:
        if np.iscomplexobj(x):  # holomorphic f (the transform sees to it): f'' = d2f/dx2
            self._real_step_only()
            y = np.imag(x)
            re, im = (self._run(fd.estimate_hessian, lambda r, part=part: part(fun(r + 1j * y)),
                                np.real(x))
                      for part in (np.real, np.imag))
            return re + 1j * im
        return self._run(fd.estimate_hessian, fun, x)

    @_own_level
    def derivative(self, fun: Callable, x: Any) -> Any:
        return self._run(fd.estimate_derivative, fun, x)

    @_own_level
    def jvp(self, fun: Callable, x: Any, x_dot: Any) -> tuple[Any, Any]:
        """One derivative along ``x_dot`` (not the whole Jacobian)."""
        y = fun(x)
        if not (np.iscomplexobj(x) or np.iscomplexobj(x_dot) or np.iscomplexobj(y)):
            return y, self._run(fd.estimate_jacobian, lambda t: fun(x + t * x_dot), np.float64(0.0),
                                batched=False)
        self._real_step_only() if np.iscomplexobj(x) else None
        along = self._run(fd.estimate_jacobian, lambda t: cp.as_parts(fun(x + t * x_dot)),
                          np.float64(0.0), batched=False)
        return y, along[0] + 1j * along[1] if np.iscomplexobj(y) else along[0]

    @_own_level
    def vjp(self, fun: Callable, x: Any) -> tuple[Any, Callable[[Any], Any]]:
        """From the whole Jacobian; of a complex input, from the differences along both
        directions of every entry (the transpose of the real-linear JVP)."""
        if not np.iscomplexobj(x):
            return super().vjp(fun, x)
        y, A, B = self._directions(fun, x)
        return y, lambda y_bar: cp.vjp(A, B, y_bar).reshape(np.shape(x))

    def stats(self, fun: Callable, x: Any) -> dict[str, Any]:
        last = self.last
        return {} if last is None else {"fevals": int(last.fevals), "step": last.step}

