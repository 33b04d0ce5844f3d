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

from collections.abc import Callable, Sequence
from typing import Any

from .autodiff import linearize, seed
from ..interpreters.tracer import input_names, trace
from .program import Program, build


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
        g = trace(fun, xs, names=names)
        outs, pull = linearize(g, list(xs))
        return (outs[0], *pull(seed(g)))

    return build(value_and_adjoints, tuple(args), names=names, floats=False,
                 reuse_buffers=reuse_buffers)

