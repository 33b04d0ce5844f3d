"""The ``compiled`` backend: every transform as a generated program, built once per shape.

A transform here is a *graph-to-graph* step. ``f`` is traced to its graph; the derived
function (the gradient, a JVP, a Hessian ...) is written as an interpretation of that
graph — the reverse sweep of :mod:`.autodiff`, or the eager forward interpreter run on
abstract values — and traced again, so the result is one graph holding forward and
adjoint equations. It is then optimized and generated as numpy code, cached per
(kind, function, shape, dtype). Called inside another transform (on boxed values) the
backend computes with the eager interpreters instead: same numbers, and nesting works.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import Backend
from ..checks import as_input, check_scalar
from ..core import Box, DiffkitError, shape
from .forward import ForwardBackend
from ..interpreters.reverse import rows
from .reverse import ReverseBackend
from ..compiler.autodiff import linearize, seed
from ..ir.graph import Graph
from ..ir.tracer import evaluate, trace_graph
from ..compiler.jit import Jit
from ..compiler.program import Program, ProgramCache, build, signature

_FORWARD, _REVERSE = ForwardBackend(), ReverseBackend()


class CompiledBackend(Backend):
    """Static graph: trace once, differentiate the graph, optimize, generate numpy code."""

    name = "compiled"
    defaults = {"fuse": True, "parallel": False}  # fuse: fused kernels (see compiler.fusion)
    CACHE = 64  # programs kept per backend object

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.programs = ProgramCache(self.CACHE)
        self.graphs = ProgramCache(self.CACHE)
        self.last: Program | None = None

    def _graph(self, fun: Callable, x: Any) -> Graph:
        """``fun``'s graph at ``x``'s shape and dtype, traced once per function and
        signature: every program derived from ``fun`` (its value, gradient, VJP, Jacobian,
        Hessian) replays this graph instead of calling ``fun`` again."""
        same = getattr(fun, "cache_key", None) or fun
        return self.graphs.get((same, signature(x)),
                               lambda: trace_graph(fun, (x,), names=["x"]))

    def stats(self, fun: Callable, x: Any) -> dict[str, Any]:
        """Figures of the program built or used last (setup time, equation counts)."""
        return self.last.stats() if self.last is not None else {}

    def _run(self, kind: str, fun: Callable, derived: Callable, *args: Any) -> Any:
        # (a transform's wrapper of f, new in every call, names what it computes as its
        # cache_key: argnums tuples and undifferentiated numbers do not retrace)
        same = getattr(fun, "cache_key", None) or fun
        key = (kind, same, *(signature(a) for a in args))
        names = ["x", "u"][:len(args)]
        prog = self.programs.get(key, lambda: build(derived, args, names=names,
                                                    fuse=bool(self.options["fuse"]),
                                                    parallel=bool(self.options["parallel"])))
        self.last = prog
        return prog(*args)

    def stage(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """``dk.jit(call, static_argnums=0)`` with this backend's options: traced (the
        transform inside it too) once per static values and shapes."""
        return Jit(call, static_argnums=0, fuse=bool(self.options["fuse"]),
                   parallel=bool(self.options["parallel"]))

    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        if isinstance(x, Box):
            return _REVERSE.value_and_grad(fun, x, has_aux)

        def value_and_grad(z: Any) -> tuple:  # (traced once: the graph is found only then)
            g = self._graph(fun, x)
            outs, pull = linearize(g, [z])
            value, aux = g.rebuild(outs) if has_aux else (g.rebuild(outs), None)
            check_scalar(value, "grad")
            grad = pull(seed(g))[0]
            return (value, aux, grad) if has_aux else (value, grad)

        out = self._run(("vg", has_aux), fun, value_and_grad, x)
        return tuple(out) if has_aux else (out[0], None, out[1])

    def jvp(self, fun: Callable, x: Any, x_dot: Any) -> tuple[Any, Any]:
        if isinstance(x, Box) or isinstance(x_dot, Box):
            return _FORWARD.jvp(fun, x, x_dot)
        return tuple(self._run("jvp", fun, lambda z, t: _FORWARD.jvp(fun, z, t), x, x_dot))

    def vjp(self, fun: Callable, x: Any) -> tuple[Any, Callable[[Any], Any]]:
        if isinstance(x, Box):
            return _REVERSE.vjp(fun, x)
        g = self._graph(fun, x)
        y = self._run("f", fun, lambda z: g.rebuild(evaluate(g, [z])), x)

        def pull(z: Any, u: Any) -> Any:
            return linearize(g, [z])[1]([u])[0]

        def vjp_fn(u: Any) -> Any:
            u = as_input(u, "vjp: the cotangent")
            if isinstance(u, Box):
                return _REVERSE.vjp(fun, x)[1](u)
            if shape(u) != shape(y):
                raise DiffkitError(f"vjp: the cotangent has shape {shape(u)} but the output "
                                   f"has shape {shape(y)}; they must match")
            return self._run("vjp", fun, pull, x, u)

        return y, vjp_fn

    def jacobian(self, fun: Callable, x: Any) -> Any:
        if isinstance(x, Box):
            return _FORWARD.jacobian(fun, x)

        g = self._graph(fun, x)

        def jacobian(z: Any) -> Any:
            if int(np.prod(shape(z))) <= int(np.prod(np.shape(evaluate(g, [z])[0]))):
                return _FORWARD.jacobian(lambda w: evaluate(g, [w])[0], z)
            outs, pull = linearize(g, [z])
            return rows(outs[0], lambda u: pull([u])[0])

        return self._run("jacobian", fun, jacobian, x)

    def hessian(self, fun: Callable, x: Any) -> Any:
        if isinstance(x, Box):
            return _FORWARD.jacobian(lambda z: _REVERSE.value_and_grad(fun, z, False)[2], x)

        g = self._graph(fun, x)

        def hessian(z: Any) -> Any:
            def gradient(w: Any) -> Any:
                outs, pull = linearize(g, [w])
                check_scalar(outs[0], "hessian")
                return pull(seed(g))[0]

            return _FORWARD.jacobian(gradient, z)  # forward over the reverse graph

        return self._run("hessian", fun, hessian, x)
