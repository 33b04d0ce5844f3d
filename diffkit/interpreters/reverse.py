"""Reverse mode: record the function on a tape, then sweep it backwards with adjoints.

The tape and its sweep are in :mod:`diffkit.interpreters.tape`, the boxes (with PyTorch's
``.backward()`` interface) in :mod:`diffkit.interpreters.tensor`. This module is the
functional side (JAX/MindSpore style): :func:`run_on_tape` opens a new level, runs ``f``
on a fresh tape, and :func:`pull` sweeps it back; nothing is stored on the inputs. One backward pass
per output: a gradient costs a small multiple of f, whatever the number of inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import numpy as dnp
from .batching import vmap
from ..checks import check_output, like_input, split_aux
from ..core import new_level, primal, shape
from ..pytree import tree_map
from .tape import Node, ReverseInterpreter, backprop
from .tensor import Tensor


def run_on_tape(fun: Callable[[Any], Any], x: Any, has_aux: bool = False,
                transform: str = "this transform") -> tuple[Any, Node, Tensor | Any, Any]:
    """Run ``fun`` on a fresh tape; returns ``(interpreter, input leaf, output, aux)``;
    ``transform`` names the caller in an error about the output."""
    with new_level(ReverseInterpreter) as interp:
        leaf = Node(None, {}, None, None, ())
        y = fun(Tensor(interp, x, leaf))
        aux = None
        if has_aux:
            y, aux = split_aux(y)
            aux = tree_map(lambda v: v.value if type(v) is Tensor and v._interp is interp else v,
                           aux)
        if not (type(y) is Tensor and y._interp is interp):
            check_output(y, transform)
    return interp, leaf, y, aux


def pull(leaf: Node, x: Any, y: Any, y_bar: Any, retain_graph: bool) -> Any:
    """The adjoint of the input for output adjoint ``y_bar``."""
    if not (type(y) is Tensor and y.node is not None):
        return np.zeros(shape(x), dtype=np.result_type(primal(x)))
    g = backprop([(y.node, y_bar)], retain_graph).get(leaf)
    if g is None:
        return np.zeros(shape(x), dtype=np.result_type(primal(x)))
    return like_input(g.copy() if g is y_bar else g, x)


def tape_bytes(fun: Callable, x: Any) -> int:
    """Bytes of the arrays a tape of ``fun`` at ``x`` keeps for the backward pass."""
    _, _, y, _ = run_on_tape(fun, x)
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


def rows(y: Any, pull_back: Callable[[Any], Any]) -> Any:
    """``pull_back(e_i)`` for every unit output direction, stacked in the shape of ``y``: one
    backward sweep with a batch of adjoints (``vmap`` over the VJP)."""
    m = int(np.prod(shape(y)))
    seeds = np.eye(m, dtype=np.result_type(primal(y))).reshape((m,) + shape(y))
    if m == 0:  # a zero-size output: an empty Jacobian
        return np.zeros(shape(y) + shape(pull_back(np.zeros(shape(y), np.result_type(primal(y))))))
    stacked = pull_back(seeds[0])[None] if m == 1 else vmap(pull_back)(seeds)
    return dnp.reshape(stacked, shape(y) + shape(stacked)[1:])
