"""The teaching view: a function's forward-and-adjoint program as generated source.

>>> import diffkit.numpy as dnp
>>> prog = adjoint_program(lambda x1, x2: dnp.log(x1) + x1 * x2 - dnp.sin(x2), (2.0, 5.0))
>>> print(prog.source)  # doctest: +NORMALIZE_WHITESPACE
def f(x1, x2):
    v1 = np.log(x1)
    v2 = x1 * x2
    v3 = v1 + v2
    v4 = np.sin(x2)
    v5 = v3 - v4
    v6 = np.cos(x2)
    v7 = -v6
    x2_bar = v7 + x1
    v8 = 1.0 / x1
    x1_bar = x2 + v8
    return (v5, x1_bar, x2_bar,)
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import primitives as P
from ..core import ELEMENTWISE, Primitive
from ..primitives.lowering import OPS, Lowering, numpy_call
from . import formulas, vector_math
from .autodiff import linearize, seed
from .fusion import INDEX_MAPS
from ..ir.tracer import input_names, trace_graph
from ..ir.graph import Eqn, Graph, Var
from .program import Program, build
from .scalar_vm import encode


def adjoint_program(fun: Callable, args: Sequence[Any], names: Sequence[str] | None = None,
                    reuse_buffers: bool = False) -> Program:
    """The optimized program computing ``(f(*args), ∂f/∂arg_1, ...)`` of scalar ``f``:
    the forward sweep, then the adjoint sweep, one line per equation. ``names`` name
    the arguments (default: ``f``'s parameter names). Written with numpy even for
    scalars (``np.log(x1)``), as the rest of the docs show code; each equation into its
    own array unless ``reuse_buffers`` (the buffer plan the compiled backend runs, with
    ``out=``)."""
    names = input_names(fun, len(args), names)

    def value_and_adjoints(*xs: Any) -> tuple:
        g = trace_graph(fun, xs, names=names)
        outs, pull = linearize(g, list(xs))
        return (outs[0], *pull(seed(g)))

    return build(value_and_adjoints, tuple(args), names=names, floats=False,
                 reuse_buffers=reuse_buffers)



def compiled_rules(prim: Primitive, arity: int) -> list[str]:
    """How ``prim`` (on ``arity`` operands ``x0, x1 ...``) runs on each of the compiler's
    targets, read from its entry (what ``diffkit rules NAME`` prints).

    >>> from diffkit.primitives import sigmoid
    >>> print("\\n".join(compiled_rules(sigmoid, 1)[:3]))
    scalar formula: div(select(greater_equal(x0, 0.0), 1.0, exp(neg(fabs(x0)))), add(1.0, exp(neg(fabs(x0)))))
    numpy (unfused program): sigmoid(x0), its implementation
    fused kernel, LLVM route (float64): inline arithmetic, calls @dk_exp, @llvm.fabs.f64
    """
    args = [f"x{k}" for k in range(arity)]
    template = numpy_call(prim)
    numpy = (template.format(*args, args=", ".join(args)) if template else
             f"{prim.name}({', '.join(args)}), its implementation")
    if prim.library is not None:  # parameters by name: np.reshape(x0, shape)
        spelled = string.Formatter().vformat(prim.library.numpy, args, _Named())
        numpy = spelled + (", where its operands' shapes allow (else its implementation)"
                           if prim.library.when else "")
    head = f"numpy (unfused program and between kernels): {numpy}"
    if prim in INDEX_MAPS:
        return [head, "in fused kernels: an index map inside the loop (a view: no new value) "
                "where its index is basic slices and integers; elsewhere a library call"]
    if prim is P.sum:
        return [head, "in fused kernels: a full sum is an accumulator of the loop computing "
                "its operand; a partial sum is a library call"]
    rule = prim.lower
    if not isinstance(rule, Lowering):
        why = "not elementwise" if prim.kind != ELEMENTWISE else rule or "no lowering yet"
        return [head, f"not in fused kernels nor on the tape VM: {why}"]
    f64 = np.dtype(np.float64)
    ins = [Var(k, (), f64, a) for k, a in enumerate(args)]
    out = Var(arity, (), f64)
    e = Eqn(prim, tuple(ins), out)
    f = formulas.of(e)
    ops = [OPS[g.op] for g in _nodes(f) if g.op in OPS]
    calls = sorted({vector_math.CALLS.get(op.c) or op.llvm or op.c for op in ops
                    if op.kind == "call"})  # (dk_exp ...: IR of vector_math.py, vectorizes)
    llvm = ", ".join((["inline arithmetic"] if any(op.kind != "call" for op in ops) else [])
                     + ([f"calls {', '.join('@' + c for c in calls)}"] if calls else []))
    tape = encode(Graph(ins, [e], [out]))
    bound = (f"within {rule.ulps} ulps of numpy's value" + (
        f" (of {rule.at_least} where the value is smaller)" if rule.at_least else "") +
        ": numpy (its SIMD routines) or the kernel (vector_math.py) computes a function "
        "it calls with a vectorized routine")
    return [f"scalar formula: {f}", f"numpy (unfused program): {numpy}",
            f"fused kernel, LLVM route (float64): {llvm}",
            f"fused kernel, Numba route (float32, integers): {formulas.python(f, args, False)}",
            f"plain floats (and Numba on float64): {formulas.python(f, args)}",
            "tape VM rows:", *("  " + line for line in tape.listing().splitlines()),
            f"fused against unfused: {bound if rule.ulps else 'bit for bit'}"]


class _Named(dict):
    """Parameters shown by their names in a numpy template."""

    def __missing__(self, key: str) -> str:
        return key


def _nodes(f: Any) -> list[Any]:
    """Every node of a scalar expression tree."""
    return [f, *(n for a in f.args for n in _nodes(a))]
