"""An equation's scalar formula, from the lowering registry, and its Python spelling.

:mod:`diffkit.primitives.lowering` gives each elementwise primitive a formula over
scalar operations. Here an equation of a graph gets its formula, with its literal
operands as constants (so ``x ** 2`` becomes ``x0 * x0``), and a formula becomes Python
source for plain floats, the tape VM's interpreter and Numba kernels.

>>> import diffkit.numpy as dnp
>>> from diffkit.ir.tracer import trace_graph
>>> (e,) = trace_graph(lambda x: dnp.sigmoid(x), (0.5,)).eqns
>>> python(of(e), ["x"])
'((1.0 if (x >= 0.0) else math.exp((-abs(x)))) / (1.0 + math.exp((-abs(x)))))'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..primitives.lowering import OPS, Lowering, ScalarExpr
from ..ir.graph import Const, Eqn, Var
from . import vector_math

#: functions of a few cycles, which do not make a loop compute-bound; exp, log, log1p and
#: tanh vectorize on the one-thread LLVM route (vector_math.py: ~1-2 ns each), faster than
#: the C library's scalar calls a threaded (Numba) kernel makes on two cores
CHEAP_CALLS = frozenset({"fabs", "floor", "ceil", "rint", "copysign", "sqrt",
                         *vector_math.CALLS})
#: what a call of the C library (``sin``, ``expm1`` ...: one opaque call per element, not
#: vectorized) costs in a kernel, counted in arithmetic operations (see :func:`work`)
CALL_WORK = 8


def constant(a: Any) -> Any:
    """A literal or 0-d constant operand as a plain Python number, or None (an array)."""
    v = a.value if isinstance(a, Const) else a
    if isinstance(v, np.ndarray):
        if v.ndim:
            return None
        v = v[()]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    return None


def of(e: Eqn) -> ScalarExpr | None:
    """The formula of ``e``: argument ``k`` is its ``k``-th operand, a number operand a
    constant; None when its primitive has no lowering or ``e`` has parameters."""
    rule = e.prim.lower
    if not isinstance(rule, Lowering) or e.params:
        return None
    ops = []
    for k, a in enumerate(e.inputs):
        v = None if isinstance(a, Var) else constant(a)
        ops.append(ScalarExpr.arg(k) if v is None else ScalarExpr.const(v))
    return rule.formula(*ops)


def kinds(f: ScalarExpr) -> set[str]:
    """The kinds of scalar operation ``f`` uses (``arith``, ``compare``, ``select``, ``call``)."""
    if f.op in ("arg", "const"):
        return set()
    return {OPS[f.op].kind}.union(*(kinds(a) for a in f.args))


def work(f: ScalarExpr) -> int:
    """What computing ``f`` once costs in a kernel, in arithmetic operations: each distinct
    scalar operation counts one, a call of the C library :data:`CALL_WORK`.

    >>> import diffkit.numpy as dnp
    >>> from diffkit.ir.tracer import trace_graph
    >>> [work(of(e)) for e in trace_graph(lambda x: dnp.sin(x * 2.0) + dnp.exp(x), (0.5,)).eqns]
    [1, 8, 1, 1]
    """
    seen: dict[int, int] = {}
    todo = [f]
    while todo:
        g = todo.pop()
        if id(g) in seen or g.op in ("arg", "const"):
            continue
        seen[id(g)] = CALL_WORK if OPS[g.op].kind == "call" and g.op not in CHEAP_CALLS else 1
        todo += list(g.args)
    return sum(seen.values())


def literal(v: Any) -> str:
    """Python source for a number (``np.inf``, ``np.nan`` for the non-finite)."""
    if isinstance(v, bool):
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if math.isfinite(v):
        return repr(float(v))
    return "np.nan" if math.isnan(v) else ("np.inf" if v > 0 else "-np.inf")


def python(f: ScalarExpr, args: Sequence[str], f64: bool = True) -> str:
    """``f`` as one Python expression, argument ``k`` being the source ``args[k]``; the
    C library's functions as :mod:`math` calls on float64 (``f64``), else numpy's."""
    if f.op == "arg":
        return args[f.value]
    if f.op == "const":
        return literal(f.value)
    op, xs = OPS[f.op], [python(a, args, f64) for a in f.args]
    if op.kind in ("arith", "compare"):
        return f"(-{xs[0]})" if len(xs) == 1 else f"({xs[0]} {op.symbol} {xs[1]})"
    if op.kind == "select":
        return f"({xs[1]} if {xs[0]} else {xs[2]})"
    return f"{op.py if f64 else 'np.' + op.np}({', '.join(xs)})"


__all__ = ["CALL_WORK", "CHEAP_CALLS", "constant", "kinds", "literal", "of", "python", "work"]
