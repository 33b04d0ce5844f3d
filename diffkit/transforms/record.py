"""Tape-scoped recording: TensorFlow's ``GradientTape`` and MXNet's ``autograd.record()``.

Inside ``with dk.record() as tape:`` a tape of its own (a reverse-mode level, see
:mod:`diffkit.interpreters.tape`) records the operations on the values it watches: tensors
that require grad, from their first use in the block (as TensorFlow watches trainable
variables), and whatever is passed to ``tape.watch``. Outside the block nothing is
recorded on it. ``tape.gradient(y, sources)`` sweeps it backwards and *returns* the
gradients; no ``.grad`` is touched. The sweep releases what the tape kept, so a second
call needs ``dk.record(persistent=True)``.

>>> import diffkit as dk
>>> w = dk.tensor([1.0, 2.0], requires_grad=True)
>>> with dk.record() as tape:
...     loss = (w * w).sum()
>>> tape.gradient(loss, w), w.grad
(array([2., 4.]), None)

Arrays are watched by value: use what ``watch`` returns.

>>> with dk.record() as tape:
...     x = tape.watch(3.0)
...     y = x * x * x
>>> float(tape.gradient(y, x))
27.0

MXNet's spelling runs on the same tape: ``y.backward()`` on a recorded value adds into
the ``.grad`` of the tensors it depends on (``x.attach_grad()`` makes such a tensor).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any

import numpy as np

from ..checks import as_input, like_input
from ..core import Box, DiffkitError, Primitive, _levels, bind, new_level, primal, shape
from ..interpreters.tape import Node, ReverseInterpreter, backprop
from ..interpreters.tensor import AMBIENT, Tensor, _own, _seed


class ScopedTape:
    """The tape of one ``with dk.record()`` block; see :func:`record`."""

    def __init__(self, persistent: bool = False) -> None:
        self.persistent = persistent
        self._interp: ReverseInterpreter | None = None
        self._level: Any = None
        self._leaves: dict[int, tuple[Tensor, Node]] = {}  # tensors watched in place
        self._saved: list[tuple[Tensor, Any, Node | None]] = []  # to put back on exit
        self._spent = False

    # -- the block
    def __enter__(self) -> ScopedTape:
        if self._interp is not None:
            raise DiffkitError("this dk.record() tape has already recorded a block; open a new "
                               "one with `with dk.record() as tape:`")
        if _levels:
            raise DiffkitError(
                "dk.record() was opened inside another transform (dk.grad, dk.jvp, dk.record, "
                "...); a recording tape must be the outermost level: open it outside, or use "
                "dk.grad / dk.hessian for derivatives of derivatives")
        self._level = new_level(lambda level: _Recording(level, self._adopt))
        self._interp = self._level.__enter__()
        AMBIENT.adopt = self._adopt
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        AMBIENT.adopt = None
        for t, interp, node in reversed(self._saved):
            t._interp, t.node = interp, node
        self._saved.clear()
        self._level.__exit__(kind, exc, tb)

    @property
    def recording(self) -> bool:
        """True inside the block."""
        return self._interp is not None and self._interp.alive

    def _adopt(self, args: Iterable[Any]) -> bool:
        """Watch the tensors that require grad among ``args`` (asked by both levels)."""
        took = False
        if AMBIENT.recording:  # inside dk.no_grad() nothing new is watched
            for a in args:
                if type(a) is Tensor and a._interp is AMBIENT and a.node is not None \
                        and a.node.prim is None:
                    self._watch_tensor(a)
                    took = True
        return took

    # -- watching
    def watch(self, value: Any) -> Any:
        """Record operations on ``value`` from now on, and return it.

        A tensor is watched in place (the same object records on this tape until the block
        ends); an array or number comes back as a new recorded value, to be used instead
        of the original. A list or generator of them gives a list.
        """
        if not self.recording:
            raise DiffkitError("tape.watch() outside its block: call it inside "
                               "`with dk.record() as tape:`")
        if isinstance(value, (list, tuple)) or hasattr(value, "__next__"):
            return [self.watch(v) for v in value]
        if type(value) is Tensor and value._interp is self._interp:
            return value
        if type(value) is Tensor and value._interp is AMBIENT:
            return self._watch_tensor(value)
        if isinstance(value, Box):
            raise DiffkitError("tape.watch(): this value belongs to another transform; watch "
                               "plain arrays and dk.tensor values")
        leaf = Node(None, {}, None, None, ())
        return Tensor(self._interp, as_input(value, "tape.watch()"), leaf)

    def _watch_tensor(self, t: Tensor) -> Tensor:
        """Move tensor ``t`` onto this tape for the block; a leaf keeps its own node, so
        ``backward()`` on a recorded value still fills its ``.grad`` (MXNet)."""
        self._saved.append((t, t._interp, t.node))
        node = t.node if t.node is not None and t.node.prim is None else \
            Node(None, {"dtype": np.result_type(primal(t.value))}, None, None, ())
        t._interp, t.node = self._interp, node
        self._leaves[id(t)] = (t, node)
        return t

    # -- gradients
    def gradient(self, target: Any, sources: Any, output_gradients: Any = None) -> Any:
        """d(target)/d(source) for each source, returned; ``.grad`` is not touched.

        ``sources`` is one watched value (one gradient back) or a list/tuple/generator
        of them (a list back, in order). A non-scalar target is summed, weighted by
        ``output_gradients`` when given; a list of targets is summed too (TensorFlow), with
        one entry of ``output_gradients`` each. A source the target does not depend on gets
        zeros.
        """
        if self._interp is None:
            raise DiffkitError("tape.gradient() before anything was recorded: compute the "
                               "target inside `with dk.record() as tape:` first")
        if self._spent:
            raise DiffkitError("tape.gradient() was already called on this tape, which then "
                               "released what it recorded; open it with "
                               "dk.record(persistent=True) to call gradient() more than once")
        single = not (isinstance(sources, (list, tuple)) or hasattr(sources, "__next__"))
        srcs = [sources] if single else list(sources)
        nodes = [self._node_of(s, i) for i, s in enumerate(srcs)]
        targets, seeds_given = _targets(target, output_gradients)
        seeds: list[tuple[Node, Any]] = []
        for t, given in zip(targets, seeds_given):
            if isinstance(t, Box) and t._interp is AMBIENT and t.node is not None:
                raise DiffkitError("tape.gradient(): the target was recorded on the tensors' "
                                   "own tape (outside dk.record), not on this one; use "
                                   "target.backward() or dk.gradients(target, inputs)")
            if type(t) is Tensor and t._interp is self._interp and t.node is not None:
                seeds.append((t.node, np.ones(shape(t)) if given is None and shape(t)
                              else _seed(t, given)))
        found: dict[Node, Any] = {}
        if seeds:
            marked = [n for n in nodes if n is not None and n.prim is not None and not n.retain]
            for n in marked:  # an intermediate source: report its adjoint for this sweep
                n.retain = True
            try:
                found = backprop(seeds, retain_graph=self.persistent)
            finally:
                for n in marked:
                    n.retain = False
        self._spent = not self.persistent
        grads = [like_input(_own(primal(found[n]), seeds), primal(s.value)) if n in found
                 else np.zeros_like(primal(s.value if isinstance(s, Box) else s), dtype=float)
                 for s, n in zip(srcs, nodes)]
        return grads[0] if single else grads

    def _node_of(self, source: Any, i: int) -> Node | None:
        """The tape node of a source (None: a tensor this tape never saw)."""
        if type(source) is Tensor and id(source) in self._leaves \
                and self._leaves[id(source)][0] is source:
            return self._leaves[id(source)][1]
        if type(source) is Tensor and source._interp is self._interp:
            return source.node
        if type(source) is Tensor and source._interp is AMBIENT:
            return None
        raise DiffkitError(f"tape.gradient(): source {i} is a {type(source).__name__}, not a "
                           "value this tape watched; for arrays use x = tape.watch(x) and "
                           "pass that x")


def _targets(target: Any, output_gradients: Any) -> tuple[list, list]:
    """The targets of one sweep and the seed given for each (None: ones)."""
    if not isinstance(target, (list, tuple)):
        return [target], [output_gradients]
    given = [None] * len(target) if output_gradients is None else list(output_gradients)
    if len(given) != len(target):
        raise DiffkitError(f"tape.gradient(): {len(target)} targets but {len(given)} "
                           "output_gradients; give one per target (or none)")
    return list(target), given


class _Recording(ReverseInterpreter):
    """The tape's level: it watches tensors that require grad before recording on them."""

    def __init__(self, level: int, adopt: Callable[[Iterable[Any]], bool]) -> None:
        super().__init__(level)
        self._watch_args = adopt

    def process(self, prim: Primitive, args: Sequence[Any], params: dict) -> Any:
        self._watch_args(args)
        return super().process(prim, args, params)

    def closed(self, prim: Primitive, args: Sequence[Any], params: dict) -> Any:
        """After the block a recorded value computes unrecorded (as TensorFlow's)."""
        return bind(prim, *[a.value if isinstance(a, Box) and a._interp is self else a
                            for a in args], **params)


def record(persistent: bool = False) -> ScopedTape:
    """A tape that records inside ``with dk.record() as tape:`` (TensorFlow's
    ``GradientTape``, MXNet's ``autograd.record``); ``persistent=True`` lets
    ``tape.gradient`` run more than once.
    """
    return ScopedTape(persistent)
