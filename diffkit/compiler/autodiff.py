"""Reverse mode as a graph-to-graph transformation: the graph is the tape.

:func:`linearize` replays a function's graph (each equation through ``bind``) and
returns a *pullback*: a backward walk over the same equations, newest first, pushing
each adjoint ``y_bar`` to the inputs with the primitive's VJP rule from the table.
Run while a graph is being traced, both sweeps are recorded as equations: the result
is the adjoint program, source transformation in the Tapenade sense. Run on duals or
tapes, the same walk is differentiated again (Hessians are forward over this).

Masks and other non-float (non-complex) values carry no adjoint; constants receive none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import Box, shape
from ..primitives import real, sum_to
from ..primitives.complex_rules import refuse_complex
from ..ir.graph import Const, Graph, Var
from ..ir.tracer import GraphTracer, read, replay


def linearize(graph: Graph, inputs: Sequence[Any]) -> tuple[list[Any], Callable]:
    """``(outputs, pullback)``; ``pullback(out_bars)`` (None for an output without
    adjoint) gives the adjoints of the inputs, zeros where nothing flows back."""
    env = replay(graph, inputs)
    outs = [read(env, a) for a in graph.outputs]

    def pullback(out_bars: Sequence[Any]) -> list[Any]:
        bars: dict[Var, Any] = {}
        for a, b in zip(graph.outputs, out_bars):
            if b is not None and isinstance(a, Var):
                b = _symbolic(b, env[a])
                bars[a] = b if a not in bars else bars[a] + b
        for e in reversed(graph.eqns):
            y_bar = bars.pop(e.out, None)
            if y_bar is None:
                continue
            _name(y_bar, env[e.out])
            args = [read(env, a) for a in e.inputs]
            if not e.prim.complex:
                refuse_complex(e.prim, [a for a in e.inputs if isinstance(a, Var)])
            for i, a in enumerate(e.inputs):
                if not isinstance(a, Var) or a.dtype.kind not in "fc":
                    continue
                x_bar = e.prim.vjp[i](y_bar, env[e.out], *args, **e.params)
                if e.prim.broadcasts and shape(x_bar) != a.shape:
                    x_bar = sum_to(x_bar, a.shape)
                if a.dtype.kind == "f" and np.dtype(getattr(x_bar, "dtype", float)).kind == "c":
                    x_bar = real(x_bar)  # (x * 1j: a real x gets a real adjoint)
                bars[a] = x_bar if a not in bars else bars[a] + x_bar
        grads = []
        for v, x in zip(graph.inputs, inputs):
            g = bars.get(v)
            if g is None:
                g = _symbolic(np.zeros((), v.dtype), x, v.shape)
            _name(g, x)
            grads.append(g)
        return grads

    return outs, pullback


def _symbolic(bar: Any, like: Any, shape: tuple[int, ...] | None = None) -> Any:
    """A number ``bar`` (a seed, a zero adjoint) as an equation of the graph ``like`` is
    traced in, spread to ``shape``: what the sweep computes from it is recorded, so the
    passes see one number, not an array built at setup (10^6 ones for Rosenbrock's seed).
    Outside a trace, ``bar`` itself (spread to ``shape``)."""
    shape = np.shape(bar) if shape is None else shape
    if isinstance(like, GraphTracer) and not isinstance(bar, Box) and np.ndim(bar) == 0:
        return like._interp.fill(np.asarray(bar).item(), shape, np.result_type(bar))
    return bar if np.shape(bar) == shape else np.zeros(shape, np.result_type(bar)) + bar


def _name(bar: Any, primal: Any) -> None:
    """Label ``bar`` as the adjoint of ``primal`` in the graph being traced (``v3_bar``)."""
    if isinstance(bar, GraphTracer) and isinstance(primal, GraphTracer) \
            and bar._interp is primal._interp and bar.var.adjoint_of is None \
            and bar.var is not primal.var:
        bar.var.adjoint_of = primal.var


def seed(graph: Graph) -> list[Any]:
    """Output adjoints for the gradient of the first output (a scalar): 1, others none."""
    first = graph.outputs[0]
    one = np.ones((), first.dtype if isinstance(first, (Var, Const)) else np.float64)
    return [one] + [None] * (len(graph.outputs) - 1)
