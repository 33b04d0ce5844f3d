"""The ``jax`` backend: JAX's transforms, eager or compiled (``jit=True``).

diffkit.numpy code runs on JAX arrays with ``jax.numpy`` as the array namespace. JAX's
float64 mode is switched on at first use (diffkit computes in float64; in JAX's default
float32 every figure would measure the dtype, not the method). With ``jit=True`` each
(function, derivative kind, input shape) is traced and compiled once, ahead of time;
that compile time is ``stats()['setup_s']``, apart from the per-call time. A compiled function
cannot branch on values (``if x > 0:``): JAX then says so; use ``dnp.where``.

Called on another JAX transform's tracers (an inner derivative inside a function this
backend differentiates, or inside a ``lax`` loop body), a transform nests as JAX's own do:
it is applied to the tracers, not compiled apart, and gives JAX values; the outermost
call compiles the whole program once.

>>> import diffkit as dk, diffkit.numpy as dnp                            # doctest: +SKIP
>>> dk.grad(lambda x: dnp.sum(x ** 2), backend=dk.backend("jax", jit=True))([1.0, 2.0])  # doctest: +SKIP
array([2., 4.])
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from ...checks import check_scalar
from ...core import DiffkitError, namespace, shape
from ...pytree import flatten, structure
from . import PEERS, PeerBackend, on, to_numpy, tree_to_numpy


class JaxBackend(PeerBackend):
    """JAX: ``value_and_grad``, ``jvp``, ``vjp``, ``jacfwd``/``jacrev`` (by shape), ``hessian``."""

    name = "jax"
    requires = PEERS["jax"]
    defaults: ClassVar[dict[str, Any]] = {"jit": False}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._keyed: OrderedDict = OrderedDict()  # by what a wrapper computes, 64 at most
        self._setup_s = 0.0

    def setup(self) -> None:
        self.lib().config.update("jax_enable_x64", True)

    def _build(self, fun: Callable, kind: str, make: Callable[[Callable], Callable],
               *args: Any) -> Callable:
        """``make(g)`` where ``g`` is ``fun`` on JAX arrays; compiled for ``args`` if jit."""
        jax = self.lib()
        g = on(jax.numpy, fun)
        if not self.options["jit"] or self.nested():
            return self._explained(make(g))
        same = getattr(fun, "cache_key", None)  # (a transform's wrapper, new at every call)
        if same is not None:
            per_fun = self._keyed.setdefault(same, {})
            self._keyed.move_to_end(same)
            if len(self._keyed) > 64:
                self._keyed.popitem(last=False)
        else:
            try:
                per_fun = self._compiled.setdefault(fun, {})
            except TypeError:  # not weakly referable: compile without caching
                per_fun = {}
        key = (kind,) + tuple((shape(a), np.result_type(a).str) for a in args)
        if key not in per_fun:
            start = time.perf_counter()
            lowered = self._explained(jax.jit(make(g)).lower)(*args)
            per_fun[key] = (lowered.compile(), time.perf_counter() - start)
        compiled, self._setup_s = per_fun[key]
        return compiled

    def stage(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """With ``jit=True``, ``call(static, *arrays)`` (a whole transformed call whose
        other arguments are arrays) compiled once per ``static`` and array shapes, the
        arrays its inputs: as ``jax.jit`` of the function that calls the transform, not one
        compile per call of a function closing over new arrays."""
        if not self.options["jit"]:
            return call
        jax = self.lib()
        compiled: dict = {}

        def staged(static: tuple, *arrays: Any) -> Any:
            if self.nested():
                return call(static, *arrays)
            leaves, _ = flatten(arrays)
            key = (static, structure(list(arrays)),
                   tuple((shape(v), np.result_type(v).str) for v in leaves))
            if key not in compiled:
                start = time.perf_counter()
                whole = self._explained(jax.jit(on(jax.numpy, lambda a: call(static, *a))).lower)
                compiled[key] = (whole(arrays).compile(), time.perf_counter() - start)
            run, self._setup_s = compiled[key]
            return tree_to_numpy(run(arrays),
                                 lambda v: to_numpy(v) if isinstance(v, jax.Array) else v)

        return staged

    def nested(self) -> bool:
        """Whether this call is inside a function JAX is running (on its arrays): its
        arguments, or the values it closes over, are an enclosing transform's."""
        return namespace() is self.lib().numpy

    def _result(self, v: Any) -> Any:
        """A result as diffkit returns it: numpy, or JAX's own value when nested."""
        return v if self.nested() else to_numpy(v)

    def _explained(self, fn: Callable) -> Callable:
        """``fn`` whose JAX tracing errors become one DiffkitError line saying what to do."""
        errors = self.lib().errors

        def call(*args: Any) -> Any:
            try:
                return fn(*args)
            except errors.ConcretizationTypeError:
                raise DiffkitError(
                    "the jax backend with jit=True cannot compile a function that branches "
                    "on values (if/while on a traced number): write the branch with "
                    "dnp.where, or use jit=False") from None
            except errors.TracerArrayConversionError:
                raise DiffkitError(
                    "the function turns a JAX value into a numpy array (np.asarray, a numpy "
                    "function, or a diffkit.numpy function that needs numpy), which drops its "
                    "derivative; use diffkit.numpy functions on the input") from None
        return call

    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        jax = self.lib()
        vg = self._build(fun, f"grad{has_aux}",
                         lambda g: jax.value_and_grad(g, has_aux=has_aux), self.check(x))
        out, grad = vg(x)
        value, aux = out if has_aux else (out, None)
        check_scalar(value, "grad")
        aux = tree_to_numpy(aux, lambda v: self._result(v) if isinstance(v, jax.Array) else v)
        return self._result(value), aux, self._result(grad)

    def jvp(self, fun: Callable, x: Any, x_dot: Any) -> tuple[Any, Any]:
        jax = self.lib()
        push = self._build(fun, "jvp", lambda g: lambda z, t: jax.jvp(g, (z,), (t,)),
                           self.check(x), x_dot)
        y, y_dot = push(x, x_dot)
        return self._result(y), self._result(y_dot)

    def vjp(self, fun: Callable, x: Any) -> tuple[Any, Callable[[Any], Any]]:
        jax = self.lib()
        y = to_numpy(self._build(fun, "f", lambda g: g, self.check(x))(x))
        pull = self._build(fun, "vjp", lambda g: lambda z, u: jax.vjp(g, z)[1](u)[0],
                           x, np.zeros(shape(y)))
        return y, lambda y_bar: to_numpy(pull(x, np.asarray(y_bar, dtype=float)))

    def jacobian(self, fun: Callable, x: Any) -> Any:
        jax = self.lib()
        n = np.size(x)
        m = np.size(self._explained(jax.eval_shape)(on(jax.numpy, fun), self.check(x)))
        mode = jax.jacfwd if n <= m else jax.jacrev  # a pass per input, or per output
        return to_numpy(self._build(fun, "jacobian", mode, x)(x))

    def hessian(self, fun: Callable, x: Any) -> Any:
        return to_numpy(self._build(fun, "hessian", self.lib().hessian, self.check(x))(x))

    def stats(self, fun: Callable, x: Any) -> dict[str, Any]:
        return {"setup_s": self._setup_s}
