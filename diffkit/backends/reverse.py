"""Reverse mode: a tape of nodes, walked backwards with adjoints.

Running the function on :class:`Tensor` values records one :class:`Node` per primitive
call (its inputs, output and rule): the Wengert list. ``backward`` then visits the nodes
in reverse creation order (a topological order, no recursion) and pushes the adjoint
``y_bar`` of each output to its inputs with the primitive's VJP rule. One backward pass
gives the whole gradient of a scalar, at a small constant multiple of the cost of f,
but the tape keeps every intermediate alive until it is released.

The same machinery serves both styles:

* functional (JAX/MindSpore): ``dk.grad(f)`` opens a new level, runs ``f`` and returns
  gradients; nothing is stored on the inputs.
* tensors (PyTorch): ``dk.tensor(..., requires_grad=True)``, ``loss.backward()``
  accumulates into ``.grad``; this lives on level 0, beneath every transform.
"""

from __future__ import annotations

import contextlib
import copy
import heapq
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from . import Backend
from ..checks import as_input, check_output, check_scalar, like_input, split_aux
from ..core import Box, DiffkitError, Primitive, Interpreter, bind, new_level, primal, shape
from ..primitives import sum_to
from ..pytree import tree_map

_seq = itertools.count()


class Node:
    """One tape entry: ``out = prim(*inputs, **params)``; ``parents`` are (argnum, Node).

    A leaf node (``prim is None``) stands for an input; ``grad`` holds its accumulated
    gradient (and a non-leaf's, after ``retain_grad``).
    """

    __slots__ = ("prim", "params", "inputs", "out", "parents", "seq", "grad", "retain", "bar")

    def __init__(self, prim: Primitive | None, params: dict, inputs: Sequence[Any] | None,
                 out: Any, parents: tuple[tuple[int, Node], ...]) -> None:
        self.prim, self.params, self.inputs, self.out = prim, params, inputs, out
        self.parents, self.seq = parents, next(_seq)
        self.grad = self.bar = None
        self.retain = False

    def name(self) -> str:
        """PyTorch-style name of the backward function, e.g. ``MulBackward``."""
        return "".join(w.capitalize() for w in self.prim.name.split("_")) + "Backward"

    def __repr__(self) -> str:
        return f"<{self.name()}>" if self.prim else "<leaf>"


class ReverseInterpreter(Interpreter):
    """Records nodes for the values it owns; lower-level values are constants."""

    def process(self, prim: Primitive, args: Sequence[Any], params: dict) -> Any:
        inputs, parents, boxed = [], [], False
        for i, a in enumerate(args):
            if type(a) is Tensor and a._interp is self:
                a, node = a.value, a.node
                if node is not None:
                    parents.append((i, node))
            boxed = boxed or isinstance(a, Box)
            inputs.append(a)
        out = bind(prim, *inputs, **params) if boxed else prim.impl(*inputs, **params)
        if not parents or (self is AMBIENT and not _grad_enabled[0]):
            return Tensor(self, out, None)
        saved = out
        if type(out) is np.ndarray and out.nbytes >= _BIG:  # keep only what the rules read
            keep = prim.saves(tuple(i for i, _ in parents), len(inputs))
            saved = out if keep[0] else _hollow(out)
            inputs = [v if k else _hollow(v) for v, k in zip(inputs, keep[1:])]
        return Tensor(self, out, Node(prim, params, inputs, saved, tuple(parents)))


_BIG = 1 << 16  # below 64 kB, keeping an array costs less than hollowing it (measured)


def _hollow(v: Any) -> Any:
    """An array's shape and dtype without its memory (a stride-0 view of one zero)."""
    if type(v) is not np.ndarray:
        return v
    return np.ndarray(v.shape, v.dtype, buffer=np.zeros(1, v.dtype), strides=(0,) * v.ndim)


def backprop(seeds: Sequence[tuple[Node, Any]], retain_graph: bool = False) -> dict[Node, Any]:
    """Push adjoints from ``seeds`` back through the tape.

    Nodes are visited newest first (creation order is a topological order), each after
    all its uses have been processed; a heap keyed on creation order finds them, so deep
    tapes need no recursion. Returns the adjoint of every leaf reached and of every node
    marked ``retain``. Unless ``retain_graph``, each visited node's saved values are
    released.
    """
    heap = [(-n.seq, n) for n, _ in seeds]
    heapq.heapify(heap)
    queued = {id(n) for n, _ in seeds}
    for node, g in seeds:
        node.bar = g if node.bar is None else node.bar + g
    found, acc, visited = {}, _Accumulator(), []
    try:
        while heap:
            node = heapq.heappop(heap)[1]
            visited.append(node)
            y_bar = node.bar
            if y_bar is None:
                continue
            if node.prim is None or node.retain:
                found[node] = y_bar
            if node.prim is None:
                continue
            if node.params is None:
                raise DiffkitError(
                    "backward through a tape that was already released by an earlier backward "
                    "pass; call backward(retain_graph=True) the first time to go back twice")
            node.bar = None  # free adjoints as soon as they are used: memory stays warm
            if type(y_bar) is np.ndarray:
                acc.release(y_bar)
            prim, inputs = node.prim, node.inputs
            for i, parent in node.parents:
                if prim.vjp_add is not None and acc.owns(parent.bar, y_bar):
                    prim.vjp_add(parent.bar, y_bar, **node.params)
                    continue
                x_bar = prim.vjp[i](y_bar, node.out, *inputs, **node.params)
                if prim.broadcasts and type(x_bar) is not np.float64 \
                        and shape(x_bar) != shape(inputs[i]):  # a scalar needs no summing
                    x_bar = sum_to(x_bar, shape(inputs[i]))
                parent.bar = acc.add(parent.bar, x_bar, fresh=x_bar is not y_bar)
                if id(parent) not in queued:
                    queued.add(id(parent))
                    heapq.heappush(heap, (-parent.seq, parent))
            if not retain_graph:
                node.inputs = node.out = node.params = None
    finally:
        for node in visited + [n for _, n in heap]:
            node.bar = None
    return found


class _Accumulator:
    """Sums adjoints, in place into buffers that this pass created and nobody else sees.

    Reusing such a buffer spares a fresh allocation for every extra use of a variable,
    which is where reverse mode spends its time on large arrays. A rule's result is
    private when it is a new array owning its memory (not ``y_bar`` passed through, not
    a view); a sum this pass computed is private too.
    """

    def __init__(self) -> None:
        self.private: dict[int, np.ndarray] = {}

    def owns(self, buf: Any, other: Any) -> bool:
        """``buf`` is a private buffer that plain ``other`` values can be added into."""
        return type(buf) is np.ndarray and id(buf) in self.private and type(other) in (
            np.ndarray, np.float64)

    def release(self, buf: Any) -> None:
        """``buf`` may now be seen elsewhere (it is being passed on)."""
        self.private.pop(id(buf), None)

    def add(self, total: Any, x_bar: Any, fresh: bool) -> Any:
        if total is None:
            if fresh and type(x_bar) is np.ndarray and x_bar.base is None:
                self.private[id(x_bar)] = x_bar
            return x_bar
        if type(total) is np.ndarray and type(x_bar) is np.ndarray \
                and total.shape == x_bar.shape and total.dtype == x_bar.dtype:
            if id(total) in self.private:
                return np.add(total, x_bar, out=total)
            if fresh and x_bar.base is None:
                self.private[id(x_bar)] = x_bar
                return np.add(x_bar, total, out=x_bar)
        out = total + x_bar
        if type(out) is np.ndarray:
            self.private[id(out)] = out
        return out


# --------------------------------------------------------------------------- tensors


class Tensor(Box):
    """A value on a reverse-mode tape, with PyTorch's autograd interface.

    >>> import diffkit as dk
    >>> x = dk.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    array([2., 4.])
    """

    __slots__ = ("value", "node")

    def __init__(self, trace: ReverseInterpreter, value: Any, node: Node | None) -> None:
        self._interp, self.value, self.node = trace, value, node

    def _value(self) -> Any:
        return self.value

    @property
    def requires_grad(self) -> bool:
        return self.node is not None

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if not self.is_leaf:
            raise DiffkitError("requires_grad can only be changed on leaf tensors; "
                               "use .detach() to cut a tensor from its graph")
        dtype = np.result_type(primal(self.value))  # a leaf's .grad keeps its dtype
        self.node = Node(None, {"dtype": dtype}, None, None, ()) if flag else None

    def requires_grad_(self, flag: bool = True) -> Tensor:
        self.requires_grad = flag
        return self

    @property
    def is_leaf(self) -> bool:
        return self.node is None or self.node.prim is None

    @property
    def grad_fn(self) -> Node | None:
        return None if self.is_leaf else self.node

    @property
    def grad(self) -> Any:
        """Accumulated gradient (leaves, or after ``retain_grad()``); None before backward."""
        return None if self.node is None else self.node.grad

    @grad.setter
    def grad(self, value: Any) -> None:
        if self.node is None:
            raise DiffkitError("this tensor does not require grad, so it has no .grad")
        self.node.grad = value

    @property
    def data(self) -> Any:
        """The plain array, outside the graph (writing it does not record anything)."""
        return self.value

    @data.setter
    def data(self, value: Any) -> None:
        self.value = value

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` after ``backward``."""
        if self.node is None:
            raise DiffkitError("retain_grad() on a tensor that does not require grad")
        self.node.retain = True

    def detach(self) -> Tensor:
        """The same value, cut from the graph (no gradient flows through it)."""
        return Tensor(self._interp, self.value, None)

    def __deepcopy__(self, memo: dict) -> Tensor:
        """A copy on the same tape level: a leaf stays a leaf (with a copy of its .grad)."""
        if not self.is_leaf:
            raise DiffkitError("only leaf tensors can be deep-copied; use .detach() first")
        out = Tensor(self._interp, copy.deepcopy(self.value, memo), None)
        if self.node is not None:
            out.requires_grad_(True)
            out.node.grad = copy.deepcopy(self.node.grad, memo)
        return out

    def numpy(self) -> np.ndarray:
        return np.asarray(primal(self.value))

    def backward(self, gradient: Any = None, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

        A non-scalar tensor needs ``gradient`` (same shape): the result is then the
        gradient of ``sum(gradient * self)``.
        """
        for node, g in backprop([(self._root(), _seed(self, gradient))], retain_graph).items():
            if isinstance(g, np.ndarray):  # its own copy; a leaf's in the leaf's dtype
                g = np.array(g, dtype=node.params.get("dtype") if node.prim is None else g.dtype)
            node.grad = g if node.grad is None else node.grad + g

    def _root(self) -> Node:
        if self.node is None:
            raise DiffkitError("this tensor does not require grad and has no grad_fn: create "
                               "the inputs with dk.tensor(..., requires_grad=True)")
        return self.node

    def __repr__(self) -> str:
        body = np.array2string(np.asarray(primal(self.value)), separator=", ", prefix="tensor(")
        extra = (f", grad_fn=<{self.node.name()}>" if self.grad_fn is not None
                 else ", requires_grad=True" if self.requires_grad else "")
        return f"tensor({body}{extra})"


def _seed(y: Tensor, gradient: Any) -> Any:
    if gradient is None:
        if np.size(primal(y.value)) != 1:
            raise DiffkitError(
                f"backward() on a tensor of shape {y.shape} needs gradient= of that shape "
                "(the weights of a weighted sum); only scalars get the implicit 1")
        return np.ones_like(primal(y.value))
    gradient = primal(gradient) if isinstance(gradient, Tensor) else gradient
    if shape(gradient) != y.shape:
        raise DiffkitError(f"gradient has shape {shape(gradient)} but the tensor has shape "
                           f"{y.shape}; they must match")
    return gradient


AMBIENT = ReverseInterpreter(0)
_grad_enabled = [True]


def tensor(data: Any, requires_grad: bool = False) -> Tensor:
    """A tensor for PyTorch-style autograd (integers become float64)."""
    value = primal(data) if isinstance(data, Tensor) else as_input(data, "tensor data")
    return Tensor(AMBIENT, value, None).requires_grad_(requires_grad)


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Operations on tensors inside this block are not recorded."""
    saved = _grad_enabled[0]
    _grad_enabled[0] = False
    try:
        yield
    finally:
        _grad_enabled[0] = saved


def gradients(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
              grad_outputs: Any = None, retain_graph: bool = False) -> tuple[Any, ...]:
    """Gradients of ``outputs`` w.r.t. ``inputs``, returned, not accumulated in ``.grad``.

    Like ``torch.autograd.grad``; an input the outputs do not depend on gets zeros.
    """
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    gos = [grad_outputs] * len(outs) if not isinstance(grad_outputs, (list, tuple)) else grad_outputs
    for x in ins:
        if x.node is None:
            raise DiffkitError("gradients(): an input does not require grad; create it with "
                               "requires_grad=True")
    seeds = [(y._root(), _seed(y, g)) for y, g in zip(outs, gos)]
    marked = [x.node for x in ins if not x.node.retain]
    for node in marked:  # report non-leaf inputs too, for this pass only
        node.retain = True
    try:
        found = backprop(seeds, retain_graph)
    finally:
        for node in marked:
            node.retain = False
    return tuple(like_input(_own(found[x.node], seeds), x.value) if x.node in found
                 else np.zeros_like(primal(x.value)) for x in ins)


def _own(g: Any, seeds: list) -> Any:
    """``g``, copied if it is one of the caller's seed arrays passed straight through."""
    return g.copy() if any(g is s for _, s in seeds) else g


# --------------------------------------------------------------------------- backend


def record(fun: Callable[[Any], Any], x: Any, has_aux: bool = False
           ) -> tuple[Any, Node, Tensor | Any, Any]:
    """Run ``fun`` on a fresh tape; returns ``(trace, input leaf, output, aux)``."""
    with new_level(ReverseInterpreter) as trace:
        leaf = Node(None, {}, None, None, ())
        y = fun(Tensor(trace, x, leaf))
        aux = None
        if has_aux:
            y, aux = split_aux(y)
            aux = tree_map(lambda v: v.value if type(v) is Tensor and v._interp is trace else v, aux)
        if not (type(y) is Tensor and y._interp is trace):
            check_output(y, "this transform")
    return trace, leaf, y, aux


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
        return value, aux, _pull(leaf, x, y, np.ones_like(primal(value)), False)

    def vjp(self, fun: Callable, x: Any) -> tuple[Any, Callable[[Any], Any]]:
        _, leaf, y, _ = record(fun, x)
        value = y.value if type(y) is Tensor else y

        def vjp_fn(y_bar: Any) -> Any:
            y_bar = as_input(y_bar, "vjp: the cotangent")
            if shape(y_bar) != shape(value):
                raise DiffkitError(f"vjp: the cotangent has shape {shape(y_bar)} but the output "
                                   f"has shape {shape(value)}; they must match")
            return _pull(leaf, x, y, y_bar, retain_graph=True)

        return value, vjp_fn

    def jvp(self, fun: Callable, x: Any, x_dot: Any) -> tuple[Any, Any]:
        from .. import numpy as dnp

        y, vjp_fn = self.vjp(fun, x)  # (J x_dot)_i = (row i of J) · x_dot, a pass per output
        return y, _rows(y, lambda seed: dnp.sum(vjp_fn(seed) * x_dot))

    def jacobian(self, fun: Callable, x: Any) -> Any:
        y, vjp_fn = self.vjp(fun, x)
        return _rows(y, vjp_fn)

    def derivative(self, fun: Callable, x: Any) -> Any:
        from .. import numpy as dnp

        return self.value_and_grad(lambda z: dnp.sum(fun(z)), x, False)[2]  # f is elementwise


def _rows(y: Any, pull: Callable[[Any], Any]) -> Any:
    """``pull(e_i)`` for every unit output direction, stacked in the shape of ``y``."""
    from .. import numpy as dnp

    m = int(np.size(primal(y)))
    seeds = np.eye(m, dtype=np.result_type(primal(y))).reshape((m,) + shape(y))
    rows = [pull(seeds[i]) for i in range(m)]
    return dnp.reshape(dnp.stack(rows), shape(y) + shape(rows[0]))
