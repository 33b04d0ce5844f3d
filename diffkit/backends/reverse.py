"""Reverse mode: record the function on a tape, then sweep it backwards with adjoints.

The tape and its sweep are in :mod:`diffkit.backends.tape`, the boxes (with PyTorch's
``.backward()`` interface) in :mod:`diffkit.backends.tensor`. This module is the
functional side (JAX/MindSpore style): ``dk.grad(f)`` opens a new level, runs ``f`` on a
fresh tape and returns gradients; nothing is stored on the inputs. One backward pass
per output: a gradient costs a small multiple of f, whatever the number of inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..batching import vmap
from ..checks import as_input, check_output, check_scalar, like_input, split_aux
from ..core import DiffkitError, new_level, primal, shape
from ..primitives import is_complex
from ..pytree import tree_map
from . import Backend
from .counting import tape_length
from .tape import Node, ReverseInterpreter, backprop
from .tensor import Tensor


def record(fun: Callable[[Any], Any], x: Any, has_aux: bool = False
           ) -> tuple[Any, Node, Tensor | Any, Any]:
    """Run ``fun`` on a fresh tape; returns ``(interpreter, input leaf, output, aux)``."""
    with new_level(ReverseInterpreter) as interp:
        leaf = Node(None, {}, None, None, ())
        y = fun(Tensor(interp, x, leaf))
        aux = None
        if has_aux:
            y, aux = split_aux(y)
            aux = tree_map(lambda v: v.value if type(v) is Tensor and v._interp is interp else v,
                           aux)
        if not (type(y) is Tensor and y._interp is interp):
            check_output(y, "this transform")
    return interp, leaf, y, aux


def _pull(leaf: Node, x: Any, y: Any, y_bar: Any, retain_graph: bool) -> Any:
    """The adjoint of the input for output adjoint ``y_bar``."""
    if not (type(y) is Tensor and y.node is not None):
        return np.zeros(shape(x), dtype=np.result_type(primal(x)))
    g = backprop([(y.node, y_bar)], retain_graph).get(leaf)
    if g is None:
        return np.zeros(shape(x), dtype=np.result_type(primal(x)))
    return like_input(g.copy() if g is y_bar else g, x)


class ReverseBackend(Backend):
    """Reverse-mode AD on a tape: one backward pass per output."""

    name = "reverse"

    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        _, leaf, y, aux = record(fun, x, has_aux)
        check_scalar(y, "grad")
        value = y.value if type(y) is Tensor else y
        return value, aux, _pull(leaf, x, y, np.ones(shape(value), np.result_type(primal(value))), False)

    def vjp(self, fun: Callable, x: Any) -> tuple[Any, Callable[[Any], Any]]:
        _, leaf, y, _ = record(fun, x)
        value = y.value if type(y) is Tensor else y

        def vjp_fn(y_bar: Any) -> Any:
            if not (is_complex(y_bar) and is_complex(value)):  # (an FFT's output: complex)
                y_bar = as_input(y_bar, "vjp: the cotangent")
            if shape(y_bar) != shape(value):
                raise DiffkitError(f"vjp: the cotangent has shape {shape(y_bar)} but the output "
                                   f"has shape {shape(value)}; they must match")
            return _pull(leaf, x, y, y_bar, retain_graph=True)

        return value, vjp_fn

    def jvp(self, fun: Callable, x: Any, x_dot: Any) -> tuple[Any, Any]:
        y, vjp_fn = self.vjp(fun, x)  # (J x_dot)_i = (row i of J) · x_dot, a pass per output
        return y, _rows(_real_output(y, "jvp"), lambda seed: dnp.sum(vjp_fn(seed) * x_dot))

    def jacobian(self, fun: Callable, x: Any) -> Any:
        y, vjp_fn = self.vjp(fun, x)
        return _rows(_real_output(y, "jacobian"), vjp_fn)

    def derivative(self, fun: Callable, x: Any) -> Any:
        return self.value_and_grad(lambda z: dnp.sum(fun(z)), x, False)[2]  # f is elementwise

    def stats(self, fun: Callable, x: Any) -> dict[str, Any]:
        return {"tape_ops": tape_length(fun, x), "tape_bytes": tape_bytes(fun, x)}


def _real_output(y: Any, transform: str) -> Any:
    """Rows of a Jacobian by reverse mode need a real output (as jax.jacrev)."""
    if is_complex(y):
        raise DiffkitError(f"reverse-mode {transform} needs a real output, but the function returns "
                           "complex values; use backend='forward' (complex tangents, as jax.jacfwd), "
                           "dk.vjp, or take dnp.real / dnp.imag of the output")
    return y


def tape_bytes(fun: Callable, x: Any) -> int:
    """Bytes of the arrays a tape of ``fun`` at ``x`` keeps for the backward pass."""
    _, _, y, _ = record(fun, x)
    total, seen, stack = 0, set(), [getattr(y, "node", None)]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for v in (node.out, *(node.inputs or ())):
            if isinstance(v, np.ndarray) and v.strides and all(v.strides):  # not a hollow view
                total += v.nbytes
        stack.extend(p for _, p in node.parents)
    return total


def _rows(y: Any, pull: Callable[[Any], Any]) -> Any:
    """``pull(e_i)`` for every unit output direction, stacked in the shape of ``y``: one
    backward sweep with a batch of adjoints (``vmap`` over the VJP)."""
    m = int(np.prod(shape(y)))
    seeds = np.eye(m, dtype=np.result_type(primal(y))).reshape((m,) + shape(y))
    if m == 0:  # a zero-size output: an empty Jacobian
        return np.zeros(shape(y) + shape(pull(np.zeros(shape(y), np.result_type(primal(y))))))
    rows = pull(seeds[0])[None] if m == 1 else vmap(pull)(seeds)
    return dnp.reshape(rows, shape(y) + shape(rows)[1:])
