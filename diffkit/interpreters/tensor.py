"""Tensors: reverse mode with PyTorch's autograd interface.

``dk.tensor(data, requires_grad=True)`` makes a leaf (a copy of ``data``, as
``torch.tensor``; ``dk.as_tensor`` and ``dk.from_numpy`` share the numpy array's memory
instead) on the level beneath every transform; operations on tensors are recorded on the tape (:mod:`diffkit.interpreters.tape`);
``loss.backward()`` accumulates d(loss)/d(leaf) into each leaf's ``.grad``, and
:func:`gradients` returns them instead (like ``torch.autograd.grad``). The functional
transforms (``dk.grad``) use the same boxes on a level of their own, so nothing is
stored on their inputs.

As in PyTorch: ``.grad`` accumulates in place (an older reference to it sees the sum) and
``w.grad.zero_()`` zeroes it; ``w -= lr * w.grad`` inside ``with dk.no_grad():`` updates
the leaf in place (it stays a leaf that requires grad; a numpy array it shares memory
with sees the update), and outside ``no_grad`` it is an error. An in-place operator that
is recorded (a non-leaf, or a tensor being differentiated by a transform) gives a new
tensor bound to the same name, as ``w = w - v`` would: other references keep the old one.

>>> import diffkit as dk
>>> w = dk.tensor([1.0, 2.0], requires_grad=True)
>>> (w * w).sum().backward()
>>> with dk.no_grad():
...     w -= 0.25 * w.grad
>>> w, w.is_leaf
(tensor([0.5, 1. ], requires_grad=True), True)
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import operator
from collections.abc import Callable

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
        """Accumulated gradient (leaves, or after ``retain_grad()``); None before backward.
        A numpy array (a :class:`Grad` view of the stored one, with ``zero_()``)."""
        g = None if self.node is None else self.node.grad
        return g.view(Grad) if type(g) is np.ndarray else g

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
            # its own array (0-d for a scalar, so zero_() works); a leaf's in the leaf's dtype
            g = np.array(g, dtype=node.params.get("dtype") if node.prim is None else None)
            held = node.grad
            if type(held) is np.ndarray and held.shape == g.shape and held.flags.writeable:
                held += g  # in place, as PyTorch: older references to .grad see the sum
            else:
                node.grad = g if held is None else held + g

    def _in_place(self, op: Callable[[Any, Any], Any], other: Any) -> Tensor:
        """``self op= other`` with PyTorch's rules (see the module docstring)."""
        recording = self._interp is not AMBIENT or AMBIENT.recording
        if recording and self.requires_grad and self.is_leaf:
            raise DiffkitError(
                "a leaf tensor that requires grad is being used in an in-place operation (as "
                "PyTorch says); update parameters inside `with dk.no_grad():`")
        if recording and (not self.is_leaf or isinstance(other, Tensor) and other.requires_grad):
            return op(self, other)  # recorded: a new tensor in the graph
        new = op(primal(self.value), primal(other))
        if np.shape(new) != self.shape:
            raise DiffkitError(f"in-place operation: the result has shape {np.shape(new)}, but "
                               f"the tensor has shape {self.shape}")
        if isinstance(self.value, np.ndarray) and self.value.flags.writeable:
            self.value[...] = new  # (arrays shared through as_tensor / from_numpy see it)
        else:
            self.value = np.asarray(new, dtype=np.result_type(self.value))[()]
        return self

    def __iadd__(self, other: Any) -> Tensor:
        return self._in_place(operator.add, other)

    def __isub__(self, other: Any) -> Tensor:
        return self._in_place(operator.sub, other)

    def __imul__(self, other: Any) -> Tensor:
        return self._in_place(operator.mul, other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self._in_place(operator.truediv, other)

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


class Grad(np.ndarray):
    """A tensor's ``.grad``: a numpy array with PyTorch's in-place ``zero_()``.

    >>> g = np.array([1.0, 2.0]).view(Grad)
    >>> g.zero_()
    array([0., 0.])
    """

    def zero_(self) -> Grad:
        """Set every entry to 0, in place (the tensor's stored gradient too)."""
        self[...] = 0
        return self

    def __array_wrap__(self, arr: np.ndarray, context: Any = None,
                       return_scalar: bool = False) -> Any:
        arr = arr.view(np.ndarray)  # arithmetic on a .grad gives plain arrays
        return arr[()] if return_scalar else arr

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))


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
    """A tensor for PyTorch-style autograd holding a copy of ``data`` (integers become
    float64), as ``torch.tensor``; :func:`as_tensor` shares a numpy array's memory."""
    value = primal(data) if isinstance(data, Tensor) else as_input(data, "tensor data")
    value = np.array(value) if isinstance(value, np.ndarray) else value
    return Tensor(AMBIENT, value, None).requires_grad_(requires_grad)


def as_tensor(data: Any) -> Tensor:
    """``data`` as a tensor without copying, as ``torch.as_tensor``: a tensor is returned as
    it is, a float numpy array of one or more dimensions is shared (in-place updates of
    either are seen by both); other data (lists, ints, 0-d arrays) is converted: a copy.

    >>> a = np.zeros(2)
    >>> t = as_tensor(a)
    >>> with no_grad():
    ...     t += 1.0
    >>> a
    array([1., 1.])
    """
    if isinstance(data, Tensor):
        return data
    return Tensor(AMBIENT, as_input(data, "as_tensor data"), None)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing the memory of a float numpy array, as ``torch.from_numpy`` (a 0-d
    array becomes a scalar: a copy)."""
    if not isinstance(array, np.ndarray) or array.dtype.kind != "f":
        what = f"an array of {array.dtype}" if isinstance(array, np.ndarray) else type(array).__name__
        raise DiffkitError(f"from_numpy needs a float numpy array (it shares its memory), got "
                           f"{what}; use dk.tensor(data), which converts (a copy)")
    return as_tensor(array)


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
