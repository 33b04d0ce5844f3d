"""Tensors: reverse mode with PyTorch's autograd interface.

``dk.tensor(data, requires_grad=True)`` makes a leaf on the level beneath every
transform; operations on tensors are recorded on the tape (:mod:`diffkit.backends.tape`);
``loss.backward()`` accumulates d(loss)/d(leaf) into each leaf's ``.grad``, and
:func:`gradients` returns them instead (like ``torch.autograd.grad``). The functional
transforms (``dk.grad``) use the same boxes on a level of their own, so nothing is
stored on their inputs.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..checks import as_input, like_input
from ..core import Box, DiffkitError, primal, shape
from .tape import HookHandle, Hooks, Node, ReverseInterpreter, backprop


class Tensor(Box):
    """A value on a reverse-mode tape, with PyTorch's autograd interface.

    >>> import diffkit as dk
    >>> x = dk.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    array([2., 4.])
    """

    __slots__ = ("node",)

    def __init__(self, interp: ReverseInterpreter, value: Any, node: Node | None) -> None:
        self._interp, self.value, self.node = interp, value, node

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

    def attach_grad(self) -> None:
        """MXNet's spelling of ``requires_grad_()``, with ``.grad`` starting at zeros."""
        self.requires_grad_(True)
        self.node.grad = np.zeros_like(primal(self.value), dtype=self.node.params["dtype"])

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

    def register_hook(self, hook: Callable[[Any], Any]) -> HookHandle:
        """Call ``hook(grad)`` with this tensor's gradient during every backward pass; a
        non-None result replaces the gradient (for a leaf: before it reaches ``.grad``).
        Returns a handle whose ``.remove()`` unregisters it (PyTorch's semantics)."""
        if self.node is None:
            raise DiffkitError("register_hook() on a tensor that does not require grad; create "
                               "it with requires_grad=True")
        if self.node.hooks is None:
            self.node.hooks = Hooks()
        return self.node.hooks.handle(hook)

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


AMBIENT = ReverseInterpreter(0)  # the level of tensors made by dk.tensor, beneath every transform


def tensor(data: Any, requires_grad: bool = False) -> Tensor:
    """A tensor for PyTorch-style autograd (integers become float64)."""
    value = primal(data) if isinstance(data, Tensor) else as_input(data, "tensor data")
    return Tensor(AMBIENT, value, None).requires_grad_(requires_grad)


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Operations on tensors inside this block are not recorded."""
    saved = AMBIENT.recording
    AMBIENT.recording = False
    try:
        yield
    finally:
        AMBIENT.recording = saved


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
