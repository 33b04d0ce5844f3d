"""The tape of reverse mode: what it records, what it keeps, and the backward sweep.

Running a function on reverse-mode boxes (:class:`~diffkit.interpreters.tensor.Tensor`)
records one :class:`Node` per primitive call: its inputs, its output and its rule (the
Wengert list). :func:`backprop` then visits the nodes newest first (creation order is
a topological order, so no recursion is needed) and pushes the adjoint ``y_bar`` of
each output to its inputs with the primitive's VJP rule. One sweep gives the whole
gradient of a scalar at a small multiple of the cost of f, but the tape keeps the
values the rules read (``Primitive.saves``) until it is released.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import Box, DiffkitError, Interpreter, Primitive, bind, shape
from ..primitives import sum_to, to_input
from ..primitives.complex_rules import refuse_complex

_creation = itertools.count()


class Node:
    """One tape entry: ``out = prim(*inputs, **params)``; ``parents`` are (argnum, Node).

    A leaf node (``prim is None``) stands for an input; ``grad`` holds its accumulated
    gradient (and a non-leaf's, after ``retain_grad``); ``bar`` is the adjoint being summed
    during a backward sweep; ``hooks`` see (and may replace) the summed adjoint.
    """

    __slots__ = ("prim", "params", "inputs", "out", "parents", "seq", "grad", "retain", "bar",
                 "hooks")

    def __init__(self, prim: Primitive | None, params: dict, inputs: Sequence[Any] | None,
                 out: Any, parents: tuple[tuple[int, Node], ...]) -> None:
        self.prim, self.params, self.inputs, self.out = prim, params, inputs, out
        self.parents, self.seq = parents, next(_creation)
        self.grad = self.bar = self.hooks = None
        self.retain = False

    def name(self) -> str:
        """PyTorch-style name of the backward function, e.g. ``MulBackward``."""
        return "".join(w.capitalize() for w in self.prim.name.split("_")) + "Backward"

    def __repr__(self) -> str:
        return f"<{self.name()}>" if self.prim else "<leaf>"


class ReverseInterpreter(Interpreter):
    """Records a node for each primitive applied to the boxes it owns; values of lower
    levels are constants. Results are boxes of the same kind as the ones it owns.

    With ``wengert=True`` it also lists every node in ``nodes`` and keeps every value
    whole (the evaluation trace shows them).
    """

    recording = True  # switched off for the tensors' level by ``no_grad``
    adopt: Callable[[Sequence[Any]], bool] | None = None  # set on the tensors' level by dk.record

    def __init__(self, level: int, wengert: bool = False) -> None:
        super().__init__(level)
        self.nodes: list[Node] | None = [] if wengert else None

    def process(self, prim: Primitive, args: Sequence[Any], params: dict) -> Any:
        if self.adopt is not None and self.adopt(args):  # a record() tape took them over
            return bind(prim, *args, **params)
        inputs, parents, box, boxed = [], [], None, False
        for i, a in enumerate(args):
            if isinstance(a, Box) and a._interp is self:
                box = type(a)
                if a.node is not None:
                    parents.append((i, a.node))
                a = a.value
            boxed = boxed or isinstance(a, Box)
            inputs.append(a)
        if not prim.complex and parents and self.recording:
            refuse_complex(prim, inputs)
        out = bind(prim, *inputs, **params) if boxed else prim.impl(*inputs, **params)
        if not parents or not self.recording:
            return box(self, out, None)
        saved = out
        if type(out) is np.ndarray and out.nbytes >= _BIG and self.nodes is None:
            inputs, saved = kept(prim, [i for i, _ in parents], inputs, out)
        node = Node(prim, params, inputs, saved, tuple(parents))
        if self.nodes is not None:
            self.nodes.append(node)
        return box(self, out, node)


_BIG = 1 << 16  # below 64 kB, keeping an array costs less than hollowing it (measured)


def kept(prim: Primitive, argnums: list[int], inputs: list[Any], out: Any) -> tuple[list, Any]:
    """``(inputs, out)`` as the tape keeps them: arrays that the VJP rules of ``argnums``
    do not read (``Primitive.saves``) are kept as shape and dtype only."""
    keep = prim.kept(tuple(argnums), len(inputs))
    return [v if k else _hollow(v) for v, k in zip(inputs, keep[1:])], \
        out if keep[0] else _hollow(out)


def _hollow(v: Any) -> Any:
    """An array's shape and dtype without its memory (a stride-0 view of one zero)."""
    if type(v) is not np.ndarray:
        return v
    return np.ndarray(v.shape, v.dtype, buffer=np.zeros(1, v.dtype), strides=(0,) * v.ndim)


Observer = Callable[[Any, Any, Any, Any], None]


def backprop(seeds: Sequence[tuple[Node, Any]], retain_graph: bool = False,
             observe: Observer | None = None) -> dict[Node, Any]:
    """Push adjoints from ``seeds`` back through the tape: the reverse sweep.

    Each node is visited after all its uses (newest first, found with a heap keyed on
    creation order), and sends ``vjp_i(y_bar)`` to each parent ``i``. Returns the adjoint
    of every leaf reached and of every node marked ``retain``. Unless ``retain_graph``,
    visited nodes release what they kept. ``observe(node, parent, contribution, total)``
    sees each step (the evaluation trace's reverse sweep). A node with ``params["replay"]``
    (a checkpoint, :mod:`diffkit.transforms.checkpoint`) kept no intermediates: the replay records its
    segment again (newer nodes, so the sweep visits them next) and returns the node that
    takes its adjoint.
    """
    todo = [(-n.seq, n) for n, _ in seeds]
    heapq.heapify(todo)
    queued = {id(n) for n, _ in seeds}
    for node, g in seeds:
        node.bar = g if node.bar is None else node.bar + g
    found, sums = {}, Sums(in_place=observe is None)
    try:
        while todo:
            node = heapq.heappop(todo)[1]
            queued.discard(id(node))  # its uses are all done: nothing pushes it again
            y_bar, node.bar = node.bar, None
            if y_bar is None:
                continue
            for hook in node.hooks or ():  # PyTorch's tensor hooks: see or replace the adjoint
                y_bar = _checked(hook(y_bar), y_bar)
            if node.prim is None or node.retain:
                found[node] = y_bar
            if node.prim is None:
                continue
            if node.params is None:
                raise DiffkitError(
                    "backward through a tape that was already released by an earlier backward "
                    "pass; call backward(retain_graph=True) the first time to go back twice")
            if "replay" in node.params:  # a checkpoint: record its segment again, sweep on
                out = node.params["replay"]()
                if not retain_graph:
                    node.params = None
                if out is not None:
                    out.bar = y_bar if out.bar is None else out.bar + y_bar
                    if id(out) not in queued:
                        queued.add(id(out))
                        heapq.heappush(todo, (-out.seq, out))
                continue
            if type(y_bar) is np.ndarray:
                sums.passed_on(y_bar)
            for i, parent in node.parents:
                x_bar = sums.add(parent, node, i, y_bar)
                if id(parent) not in queued:
                    queued.add(id(parent))
                    heapq.heappush(todo, (-parent.seq, parent))
                if observe is not None:
                    observe(node, parent, x_bar, parent.bar)
            if not retain_graph:
                node.inputs = node.out = node.params = None
    finally:  # (the sweep keeps no visited list: a long tape is freed as it goes)
        for _, node in todo:
            node.bar = None
    return found


def _checked(new: Any, old: Any) -> Any:
    """A hook's result: None keeps the adjoint, else it must keep its shape."""
    if new is None:
        return old
    if shape(new) != shape(old):
        raise DiffkitError(f"a gradient hook returned shape {shape(new)} for a gradient of shape "
                           f"{shape(old)}; return None or an array of the same shape")
    return new


class Hooks(list):
    """A node's hooks; :meth:`handle` gives what ``register_hook`` returns."""

    def handle(self, hook: Callable[[Any], Any]) -> HookHandle:
        self.append(hook)
        return HookHandle(self, hook)


class HookHandle:
    """Returned by ``register_hook``: ``.remove()`` takes the hook off again."""

    def __init__(self, hooks: Hooks, hook: Callable[[Any], Any]) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


class Sums:
    """``parent.bar += vjp_i(y_bar)``, summed in place where that is safe.

    Reverse mode spends its time on large arrays allocating adjoints; a buffer this sweep
    created and nobody else sees (not ``y_bar`` passed through, not a view) can take the
    next contributions in place, and indexing can add its adjoint straight into it
    (``Primitive.vjp_add``). ``in_place=False`` keeps every contribution separate.
    """

    def __init__(self, in_place: bool = True) -> None:
        self.in_place = in_place
        self.private: dict[int, np.ndarray] = {}

    def passed_on(self, buf: Any) -> None:
        """``buf`` may now be seen elsewhere (it is the adjoint being sent back)."""
        self.private.pop(id(buf), None)

    def add(self, parent: Node, node: Node, i: int, y_bar: Any) -> Any:
        """Add node's contribution to ``parent.bar``; returns the contribution (None when
        it went straight into the buffer)."""
        prim, inputs, total = node.prim, node.inputs, parent.bar
        if prim.vjp_add is not None and self._owns(total, y_bar):
            prim.vjp_add(total, y_bar, **node.params)
            return None
        x_bar = prim.vjp[i](y_bar, node.out, *inputs, **node.params)
        if prim.broadcasts and type(x_bar) is not np.float64 and shape(x_bar) != shape(inputs[i]):
            x_bar = sum_to(x_bar, shape(inputs[i]))  # (a scalar adjoint belongs to a scalar)
        if getattr(x_bar, "dtype", None) is not None and x_bar.dtype.kind == "c":
            x_bar = to_input(inputs[i], x_bar)  # (x * 1j: a real x gets a real adjoint)
        parent.bar = self._sum(total, x_bar, fresh=x_bar is not y_bar)
        return x_bar

    def _owns(self, buf: Any, other: Any) -> bool:
        return self.in_place and type(buf) is np.ndarray and id(buf) in self.private \
            and type(other) in (np.ndarray, np.float64) \
            and (other.dtype.kind != "c" or buf.dtype.kind == "c")  # (real buf, complex adjoint)

    def _sum(self, total: Any, x_bar: Any, fresh: bool) -> Any:
        if not self.in_place:
            return x_bar if total is None else total + x_bar
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
