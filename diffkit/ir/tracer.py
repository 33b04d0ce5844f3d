"""The graph tracer: an interpreter of the primitive table that records, not computes.

Tracing runs the user's function ONCE on *abstract* values (:class:`GraphTracer`): each
knows its shape and dtype but has no number. Every primitive call becomes one equation of
the compiler's IR (:mod:`diffkit.ir.graph`). Replaying a graph (:func:`evaluate`) runs
its equations through ``bind`` again, at any level: on arrays, duals, tapes or another graph.

Because nothing has a value, ``if x > 0:`` cannot be decided while tracing: ``x > 0``
records a comparison (a boolean mask, usable in ``dnp.where`` and ``dk.cond``), and asking
for its truth raises one line naming the user's line and the fixes: ``dk.cond`` (or
``dk.fori_loop`` for a ``while``), ``dnp.where``, a static argument, or an eager backend.
A branch is never silently frozen.

>>> import diffkit.numpy as dnp
>>> g = trace_graph(lambda x: dnp.sin(x) * 2.0, (np.zeros(3),))
>>> len(g), g.eqns[0].prim.name
(2, 'sin')
"""

from __future__ import annotations

import contextlib
import inspect
import keyword
import linecache
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .graph import Atom, Const, Eqn, Graph, Var
from ..core import (CONTRACTION, ELEMENTWISE, Box, DiffkitError, Interpreter, NotApplicable,
                    Primitive, bind, levels, new_level, primal)
from ..pytree import flatten
from ..primitives.compare import COMPARISONS, select, without_derivatives
from ..primitives.elementwise import where

_DIFFKIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PRIMITIVES = os.path.join(_DIFFKIT, "primitives")
_NUMPY = os.path.dirname(os.path.abspath(np.__file__))
_CATALOG = os.path.join(_DIFFKIT, "bench", "catalog.py")  # functions written as a user would


# --------------------------------------------------------------------------- tracing


class GraphTracer(Box):
    """An abstract value of the graph being traced: shape and dtype, no number."""

    __slots__ = ()
    abstract = True  # primal() stops here: there is no number underneath

    @property
    def var(self) -> Var:
        return self.value

    def detach(self) -> GraphTracer:
        return self  # a graph being traced differentiates nothing itself

    @property
    def shape(self) -> tuple[int, ...]:
        return self.var.shape

    @property
    def dtype(self) -> np.dtype:
        return self.var.dtype

    def __repr__(self) -> str:
        return f"GraphTracer({self.var.type()})"

    # comparisons are equations (masks); their truth is not known while tracing
    def __gt__(self, other: Any) -> Any:
        return bind(COMPARISONS[np.greater], self, other)

    def __ge__(self, other: Any) -> Any:
        return bind(COMPARISONS[np.greater_equal], self, other)

    def __lt__(self, other: Any) -> Any:
        return bind(COMPARISONS[np.less], self, other)

    def __le__(self, other: Any) -> Any:
        return bind(COMPARISONS[np.less_equal], self, other)

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return bind(COMPARISONS[np.equal], self, other)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return bind(COMPARISONS[np.not_equal], self, other)

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise value_error("the truth value")

    def __float__(self) -> float:
        raise value_error("float()")

    def __int__(self) -> int:
        raise value_error("int()")

    def __index__(self) -> int:
        raise value_error("an index")

    def item(self) -> float:
        raise value_error(".item()")

    def tolist(self) -> list:
        raise value_error(".tolist()")

    def any(self, *a: Any, **k: Any) -> Any:
        raise value_error(".any()")

    def all(self, *a: Any, **k: Any) -> Any:
        raise value_error(".all()")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise value_error("a conversion to a plain numpy array")

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if ufunc in COMPARISONS and method == "__call__" and not kwargs:
            return bind(COMPARISONS[ufunc], *inputs)
        if ufunc in (np.isfinite, np.isnan, np.isinf):
            raise value_error(f"numpy.{ufunc.__name__}")
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        name = func.__name__
        if name in ("shape", "ndim", "size", "result_type", "zeros_like", "ones_like",
                    "empty_like", "full_like"):
            return func(*(_hollow(a) if isinstance(a, GraphTracer) else a for a in args),
                        **kwargs)
        if name == "where" and len(args) == 3:
            from .. import numpy as dnp

            return dnp.where(*args)
        if name in ("allclose", "isclose", "array_equal"):
            raise value_error(f"numpy.{name}")
        return super().__array_function__(func, types, args, kwargs)


def _hollow(a: Any) -> Any:
    """An array with the tracer's shape and dtype, backed by one element (no memory)."""
    return np.broadcast_to(np.ones((), a.dtype), a.shape)


class GraphInterpreter(Interpreter):
    """Records one equation per primitive call on its tracers."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.inputs: list[Var] = []
        self.eqns: list[Eqn] = []
        self.count = 0
        self.captured: list[Box] = []
        self._capture_vars: dict[int, Var] = {}  # id of a captured box -> its input
        self._snapshots: dict[int, tuple[np.ndarray, Const]] = {}  # id -> (array, its copy)

    def new_var(self, shape: tuple[int, ...], dtype: Any, name: str | None = None) -> Var:
        self.count += 1
        return Var(self.count, tuple(shape), np.dtype(dtype), name)

    def new_input(self, shape: tuple[int, ...], dtype: Any, name: str) -> GraphTracer:
        var = self.new_var(shape, dtype, name)
        self.inputs.append(var)
        return GraphTracer(self, var)

    def fill(self, value: float, shape: tuple[int, ...], dtype: Any) -> GraphTracer:
        """An array of ``shape`` whose entries all equal ``value``, as an equation
        (``broadcast_to(value)``): a seed or a zero adjoint stays one number in the graph,
        never an array built while tracing."""
        from ..primitives import broadcast_to

        dtype = np.dtype(dtype)
        c = float(value) if dtype == np.float64 else Const(np.asarray(value, dtype))
        return self.process(broadcast_to, (c,), {"shape": tuple(shape)})

    def atom(self, a: Any) -> Atom:
        """A graph operand: our tracer's variable, a literal number, or a constant."""
        if isinstance(a, GraphTracer) and a._interp is self:
            return a.var
        if isinstance(a, Box):
            if a._interp.alive and a._interp.level < self.level:
                return self.capture(a)
            raise DiffkitError(
                "the function uses a value traced by a transform that has ended (kept from "
                "an earlier call); pass it as an argument instead")
        if isinstance(a, (bool, int, float, complex)) or isinstance(a, Const):
            return a
        if isinstance(a, np.ndarray):  # a snapshot: later in-place changes must not leak in
            if not a.flags.writeable:
                return Const(a)
            seen = self._snapshots.get(id(a))  # one constant per array and content
            if seen is None or not np.array_equal(a, seen[1].value,
                                                  equal_nan=a.dtype.kind in "fc"):
                seen = self._snapshots[id(a)] = (a, Const(a.copy()))
            return seen[1]
        if isinstance(a, np.generic):
            return Const(a)
        raise DiffkitError(f"cannot put a {type(a).__name__} into a graph: primitives take "
                           "numbers and arrays")

    def capture(self, a: Box) -> Var:
        """The input standing for ``a``, a value of an outer transform the function closes
        over (JAX's closure conversion): the graph takes it as one more input, and a replay
        of the graph reads ``a`` there, so the outer transform sees every operation on it."""
        var = self._capture_vars.get(id(a))
        if var is None:
            var = self.new_var(a.shape, a.dtype, f"closure{len(self.captured)}")
            self.inputs.append(var)
            self.captured.append(a)
            self._capture_vars[id(a)] = var
        return var

    def process(self, prim: Primitive, args: Sequence[Any], params: dict) -> Any:
        if params and any(isinstance(v, Box) for v in params.values()):
            if prim is where and isinstance(params["cond"], GraphTracer):
                return self.process(select, (params["cond"], *args), {})  # a traced mask
            raise NotApplicable(f"n/a: {prim.name} got a traced value as a parameter; "
                               "the compiled backend cannot record it; use an eager backend")
        ins = tuple([a.value if type(a) is GraphTracer and a._interp is self else self.atom(a)
                     for a in args])
        shape, dtype = abstract_eval(prim, ins, params)
        out = self.new_var(shape, dtype)
        self.eqns.append(Eqn(prim, ins, out, dict(params)))
        return GraphTracer(self, out)

    @contextlib.contextmanager
    def reading_through(self, wrap: Callable[[GraphTracer], GraphTracer]) -> Iterator[None]:
        """The equations recorded inside read each float value recorded before through
        ``wrap`` (applied once per value, ahead of them): ``dk.cond`` gates what a branch
        reads, the values it closes over as well as its operands, with the branch's mask."""
        mark, known = len(self.eqns), self.count
        yield
        inner = self.eqns[mark:]
        del self.eqns[mark:]
        through: dict[Var, Atom] = {}

        def read(a: Atom) -> Atom:
            if type(a) is not Var or a.n > known or a.dtype.kind not in "fc":
                return a
            if a not in through:
                through[a] = wrap(GraphTracer(self, a)).var
            return through[a]

        for e in inner:
            e.inputs = tuple(read(a) for a in e.inputs)
        self.eqns += inner

    def copy(self, e: Eqn, args: Sequence[Any]) -> GraphTracer:
        """Record ``e`` again on operands of this trace with the types ``e`` was traced
        at (a graph replayed into the trace it came from: no shapes to work out)."""
        ins = tuple([a.value if type(a) is GraphTracer else self.atom(a) for a in args])
        out = self.new_var(e.out.shape, e.out.dtype)
        self.eqns.append(Eqn(e.prim, ins, out, e.params))
        return GraphTracer(self, out)


_TYPES: dict[tuple, tuple] = {}  # (primitive, operand types) -> elementwise result type


def abstract_eval(prim: Primitive, ins: Sequence[Atom], params: dict) -> tuple[tuple, np.dtype]:
    """Shape and dtype of ``prim``'s output, without computing it."""
    if prim.abstract is not None:
        return prim.abstract(*ins, **params)
    if prim.kind == ELEMENTWISE and not params:
        key = (prim, *[(a.shape, a.dtype) if type(a) is Var or type(a) is Const else type(a)
                       for a in ins])
        known = _TYPES.get(key)
        if known is None:
            with np.errstate(all="ignore"):
                dtype = np.result_type(prim.impl(*(
                    np.ones((), a.dtype) if isinstance(a, (Var, Const)) else a for a in ins)))
            shapes = [a.shape if isinstance(a, (Var, Const)) else () for a in ins]
            known = _TYPES[key] = np.broadcast_shapes(*shapes), dtype
        return known
    shapes = [a.shape if isinstance(a, (Var, Const)) else () for a in ins]
    if "shape" in params:  # reshape, broadcast_to, scatter_add: the shape is a parameter
        x = ins[0]
        return tuple(params["shape"]), (x.dtype if isinstance(x, (Var, Const))
                                        else np.result_type(x))
    samples = [np.ones((), a.dtype) if isinstance(a, (Var, Const)) else a for a in ins]
    with np.errstate(all="ignore"):
        if prim.kind == ELEMENTWISE:
            extra = [np.shape(v) for v in params.values() if isinstance(v, np.ndarray)]
            small = {k: (v.reshape(-1)[:1].reshape(()) if isinstance(v, np.ndarray) else v)
                     for k, v in params.items()}
            return np.broadcast_shapes(*shapes, *extra), np.result_type(prim.impl(*samples, **small))
        if prim.kind == CONTRACTION and prim.broadcasts:  # matmul: batch axes broadcast
            (a, b) = shapes
            batch = np.broadcast_shapes(a[:-2], b[:-2])
            return batch + (a[-2], b[-1]), np.result_type(prim.impl(
                *(np.ones((1, 1), np.result_type(s)) for s in samples)))
        hollow = [_stand_in(s, shp) if isinstance(a, (Var, Const)) else a
                  for a, s, shp in zip(ins, samples, shapes)]
        out = prim.impl(*hollow, **params)
    return np.shape(out), np.result_type(out)


def _stand_in(sample: np.ndarray, shp: tuple[int, ...]) -> np.ndarray:
    """A stand-in value of shape ``shp``: ones, or identity matrices when the trailing
    axes are square (linear algebra needs an invertible, positive definite stand-in)."""
    if len(shp) >= 2 and shp[-1] == shp[-2]:
        return np.broadcast_to(np.eye(shp[-1], dtype=sample.dtype), shp)
    return np.broadcast_to(sample, shp)


# --------------------------------------------------------------------------- errors


def value_error(what: str) -> NotApplicable:
    """The one-line error for asking a traced value for a number, naming the user's line
    (or the derivative rule that asked): the compiled way has no answer for this function."""
    frame, rule = sys._getframe(1), None
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path.startswith(_PRIMITIVES) and rule is None:
            rule = f"{frame.f_code.co_name} ({os.path.relpath(path, os.path.dirname(_DIFFKIT))}" \
                   f":{frame.f_lineno})"
        if path == _CATALOG or not (path.startswith(_DIFFKIT) or path.startswith(_NUMPY)
                                    or path.startswith("<")):
            break
        frame = frame.f_back
    if rule is not None:
        return NotApplicable(f"n/a: the derivative rule helper {rule} reads concrete values, "
                            "which a graph traced once for all values does not have; use an "
                            "eager backend (forward, reverse)")
    where, code = "", ""
    if frame is not None:
        code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        where = f" at {os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}" + (
            f" ({code})" if code else "")
    if code.startswith("while"):
        fix = ("write a loop of a fixed count as dk.fori_loop(lower, upper, body_fun, "
               "init_val) (dk.while_loop(cond_fun, body_fun, init_val), which stops on a value, "
               "runs on the eager backends)")
    else:
        fix = ("write an if as dk.cond(pred, true_fun, false_fun, *operands) (dk.switch for "
               "more branches) or elementwise as dnp.where(cond, a, b)")
    return NotApplicable(
        f"{what} of a traced array is needed{where}, but the compiled backend traces the "
        f"function once for all values, so it cannot branch on them: {fix}, make the deciding "
        "argument static (static_argnums), or use an eager backend (forward, reverse)")


# --------------------------------------------------------------------------- entry points


def input_names(fun: Callable, n: int, given: Sequence[str] | None = None) -> list[str]:
    """``given`` names, else the function's parameter names, else x0, x1, ... (names the
    generated code could confuse with its own, like ``v1``, fall back to x0, x1 ...)."""
    try:
        params = list(given) if given is not None else [
            p.name for p in inspect.signature(fun).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = params[:n] + [f"x{i}" for i in range(len(params), n)]
    ok = all(s.isidentifier() and not keyword.iskeyword(s) and s not in ("np", "f")
             and not (s[0] in "vc" and s[1:].isdigit()) for s in names)
    return names if ok and len(set(names)) == n else [f"x{i}" for i in range(n)]


def trace_graph(fun: Callable, args: Sequence[Any], static_argnums: Sequence[int] = (),
          names: Sequence[str] | None = None) -> Graph:
    """The graph of ``fun(*args)``: every non-static argument (a pytree of arrays) is an
    abstract input with its shape and dtype; static ones are baked in."""
    from ..checks import as_input

    static = {i % len(args) for i in static_argnums} if args else set()
    dynamic = [i for i in range(len(args)) if i not in static]
    names = list(names) if names is not None else input_names(fun, len(args))
    with new_level(GraphInterpreter) as interp:
        call = list(args)
        for i in dynamic:
            leaves, rebuild = flatten(args[i])
            suffix = (lambda k: str(k)) if len(leaves) > 1 else (lambda k: "")
            call[i] = rebuild([interp.new_input(np.shape(v), np.result_type(v), names[i] + suffix(k))
                               for k, v in enumerate(v if isinstance(v, Box) else as_input(v, f"argument {i}")
                                                for v in leaves)])
        out = fun(*call)
        leaves, rebuild = flatten(out)
        outputs = [_output(interp, v) for v in leaves]
    return Graph(interp.inputs, interp.eqns, outputs, rebuild, interp.captured)


def trace_types(fun: Callable, types: Sequence[tuple[tuple[int, ...], Any]],
                names: Sequence[str]) -> Graph:
    """The graph of ``fun`` on abstract inputs of exactly these shapes and dtypes (integers
    stay integers: a loop's counter, an index), named ``names``; the values of outer
    transforms it reads become its last inputs (``Graph.captured``)."""
    with new_level(GraphInterpreter) as interp:
        out = fun(*[interp.new_input(s, d, n) for (s, d), n in zip(types, names)])
        leaves, rebuild = flatten(out)
        outputs = [_output(interp, v) for v in leaves]
    return Graph(interp.inputs, interp.eqns, outputs, rebuild, interp.captured)


def tracing() -> bool:
    """A graph is being traced at some level (``compiled``, ``dk.jit``)."""
    return any(isinstance(t, GraphInterpreter) and t.alive for t in levels())


def _output(interp: GraphInterpreter, v: Any) -> Atom:
    if isinstance(v, GraphTracer) and v._interp is interp:
        return v.var
    if isinstance(v, Box) or isinstance(v, (bool, int, float, np.ndarray, np.generic)):
        return interp.atom(v)
    raise DiffkitError(f"the function must return numbers or arrays (or a tuple/list/dict of "
                       f"them), but it returned a {type(v).__name__}; return arrays only")


def evaluate(graph: Graph, inputs: Sequence[Any]) -> list[Any]:
    """Run the graph's equations through ``bind`` (so at any level: on arrays, duals,
    tapes or another graph being traced)."""
    env = replay(graph, inputs)
    return [read(env, a) for a in graph.outputs]


def replay(graph: Graph, inputs: Sequence[Any]) -> dict[Var, Any]:
    """Every value of the graph on ``inputs``, by variable. On inputs that are all tracers
    of one graph being traced, with the graph's own types, equations are copied over."""
    if graph.captured and len(inputs) == len(graph.inputs) - len(graph.captured):
        inputs = [*inputs, *graph.captured]  # (the values the function closes over)
    env: dict[Var, Any] = dict(zip(graph.inputs, inputs))
    first = inputs[0] if inputs else None
    same = isinstance(first, GraphTracer) and first._interp.alive and all(
        type(x) is GraphTracer and x._interp is first._interp and x.var.shape == v.shape
        and x.var.dtype == v.dtype for x, v in zip(inputs, graph.inputs))
    for e in graph.eqns:
        args = [env[a] if type(a) is Var else read(env, a) for a in e.inputs]
        env[e.out] = first._interp.copy(e, args) if same else apply(e, args)
    return env


def apply(e: Eqn, args: list[Any]) -> Any:
    """One equation on actual operands; a comparison looks at values only (its derivative
    is zero, and a mask carries no tangent), one per example under ``vmap``."""
    if not e.prim.jvp and e.prim.jvp_joint is None and e.prim.jvp_pair is None:
        args = [primal(a) if isinstance(a, Box) and a.expression else without_derivatives(a)
                for a in args]
    return bind(e.prim, *args, **e.params)


def read(env: dict[Var, Any], a: Atom) -> Any:
    if isinstance(a, Var):
        return env[a]
    return a.value if isinstance(a, Const) else a
