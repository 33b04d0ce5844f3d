"""Code generation: a graph becomes a plain Python/numpy function a person can read.

One line per equation, with the graph's names (``v3 = v1 * v2``, ``x_bar = ...``).
The source contains only names the generator made up: variables, the primitives'
implementations (``sum``, ``getitem`` ...), ``np`` and constants ``c1, c2 ...``, which
are handed over in the namespace dict, never written as text. User text never reaches
the source. The source is registered with :mod:`linecache`, so a traceback through
generated code shows its lines.

A graph of float64 scalars only (a scalar loop, a formula of a few numbers) is written
with plain Python floats and :mod:`math` instead (``v1 = math.sin(x)``): numpy's
per-call overhead on scalars is ~20 times the arithmetic. Where plain floats raise
instead of giving inf or nan (``math.log(0.0)``, ``1.0 / 0.0``, an overflow), the
program runs its numpy version (see :class:`.program.Program`).

>>> import diffkit.numpy as dnp
>>> from diffkit.ir.tracer import trace_graph
>>> src, _ = generate(trace_graph(lambda x, y: dnp.log(x) + x * y, (2.0, 5.0)))
>>> print(src)
def f(x, y):
    v1 = np.log(x)
    v2 = x * y
    v3 = v1 + v2
    return (v3,)
<BLANKLINE>
"""

from __future__ import annotations

import itertools
import linecache
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..primitives.lowering import numpy_call
from . import formulas
from ..ir.graph import Atom, Const, Eqn, Graph, Var

_ids = itertools.count(1)


def is_scalar(graph: Graph) -> bool:
    """Every value of ``graph`` is a float64 scalar (or a boolean one, a mask): it can
    run on plain Python floats and :mod:`math`."""
    f64, b = np.dtype(np.float64), np.dtype(np.bool_)
    return all(v.shape == () and v.dtype == f64 for v in graph.inputs) and all(
        e.out.shape == () and (e.out.dtype == f64 or e.out.dtype == b) for e in graph.eqns)


class Writer:
    """Names for atoms and parameters; constants go to the namespace."""

    def __init__(self, graph: Graph, scalar: bool = False) -> None:
        self.names = graph.names()
        self.ns: dict[str, Any] = {"np": np, "math": math}
        self.consts: dict[int, str] = {}
        self.scalar = scalar

    def atom(self, a: Atom) -> str:
        if isinstance(a, Var):
            return self.names[a]
        if isinstance(a, Const):
            return self.const(a.value)
        return self.literal(a)

    def const(self, value: Any) -> str:
        key = id(value)
        if key not in self.consts:
            self.consts[key] = name = f"c{len(self.consts) + 1}"
            self.ns[name] = value
        return self.consts[key]

    def literal(self, v: Any) -> str:
        """Source for a plain parameter or number; anything else becomes a constant."""
        if v is None or v is Ellipsis or isinstance(v, bool):
            return "..." if v is Ellipsis else repr(v)
        if isinstance(v, (int, np.integer)):
            return repr(int(v))
        if isinstance(v, float) and math.isfinite(v):
            return repr(v)
        if isinstance(v, slice):
            return f"slice({self.literal(v.start)}, {self.literal(v.stop)}, {self.literal(v.step)})"
        if isinstance(v, tuple):
            inner = ", ".join(self.literal(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        return self.const(v)

    def index(self, idx: tuple) -> str:
        """``x[1:, None]``: slices, ints, None and ``...`` as Python writes them."""
        def one(i: Any) -> str:
            if isinstance(i, slice):
                text = ":".join("" if v is None else self.literal(v)
                                for v in (i.start, i.stop, i.step))
                return text[:-1] if text.endswith(":") and i.step is None else text
            return self.literal(i)
        return ", ".join(one(i) for i in idx) if idx else "()"

    def method(self, e: Eqn, args: list[str]) -> str | None:
        """numpy's own spelling of a structural primitive (its entry's ``library``), where
        it is plain numpy."""
        rule = e.prim.library
        shapes = [a.shape if isinstance(a, (Var, Const)) else () for a in e.inputs]
        if rule is None or (rule.when and not rule.when(*shapes)):
            return None
        params = {k: self.index(v) if k == "idx" else self.literal(v) for k, v in e.params.items()}
        return rule.numpy.format(*args, **params)

    def floats(self, e: Eqn, args: list[str]) -> str | None:
        """The line on plain Python floats: the primitive's scalar formula (its entry's
        ``lower``), where it has one."""
        f = formulas.of(e)
        return None if f is None else formulas.python(f, args)

    def expr(self, e: Eqn) -> str:
        args = [self.atom(a) for a in e.inputs]
        plain = self.floats(e, args) if self.scalar else self.method(e, args)
        if plain is not None:
            return plain
        template = numpy_call(e.prim)
        if template is not None and not e.params:
            return template.format(*args, args=", ".join(args))
        self.ns[e.prim.name] = e.prim.impl
        params = [f"{k}={self.literal(v)}" for k, v in e.params.items()]
        return f"{e.prim.name}({', '.join(args + params)})"


def generate(graph: Graph, name: str = "f", inplace: dict[Var, Var] | None = None,
             scalar: bool = False) -> tuple[str, dict[str, Any]]:
    """``(source, namespace)`` of a function taking the graph's inputs, returning a tuple.

    ``inplace`` (from the buffer plan) maps an equation's output to a dead operand whose
    memory it may reuse: the line becomes ``np.sin(v1, out=v1)``. ``scalar`` writes a
    graph of float64 scalars (:func:`is_scalar`) for plain floats and :mod:`math`.
    """
    w = Writer(graph, scalar)
    inplace = inplace or {}
    lines = [f"def {name}({', '.join(w.names[v] for v in graph.inputs)}):"]
    for e in graph.eqns:
        rhs = w.expr(e)
        if e.out in inplace:
            buf = w.names[inplace[e.out]]
            rhs = f"np.{e.prim.ufunc.__name__}({', '.join(w.atom(a) for a in e.inputs)}, out={buf})"
        lines.append(f"    {w.names[e.out]} = {rhs}")
    outs = ", ".join(w.atom(a) for a in graph.outputs)
    lines.append(f"    return ({outs},)")
    return "\n".join(lines) + "\n", w.ns


def compile_source(source: str, ns: dict[str, Any], name: str = "f") -> Callable[..., tuple]:
    """Execute generated source (our own text only) and return the function it defines."""
    filename = f"<diffkit compiled {next(_ids)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)  # noqa: S102 (generated text, see module doc)
    return ns[name]
