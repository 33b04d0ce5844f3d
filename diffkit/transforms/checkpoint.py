"""Checkpointing (rematerialization): trade recomputation for the memory of the tape.

Reverse mode keeps what every step's rule reads until the backward sweep: O(n) memory
for n steps. ``checkpoint(f)`` keeps only f's inputs: f runs without recording, and when
the backward sweep reaches it, f is recorded again from those inputs and the sweep goes
on through the fresh nodes (so parameters f reads from outside, as in a PyTorch module,
get their gradients too). ``checkpoint_loop(step, x0, n, snapshots=k)`` applies the idea
to a loop with Griewank's binomial schedule (*revolve*): k stored states, and each step
recomputed at most t times for the least t with C(k + t, t) ≥ n, the fewest recomputations
any schedule with k snapshots can do. Memory: k states plus one step's tape.

Forward mode keeps nothing anyway (the body just runs); under ``vmap`` the batch is
checkpointed as a whole.

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> step = lambda x: x + 0.1 * dnp.sin(x)
>>> g = dk.grad(lambda x: dnp.sum(dk.checkpoint_loop(step, x, 50, snapshots=4)))(np.ones(3))
>>> plain = dk.grad(lambda x: dnp.sum(dk.checkpoint_loop(step, x, 50, snapshots=50)))(np.ones(3))
>>> bool(np.allclose(g, plain, rtol=1e-15, atol=0))
True
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from math import comb
from typing import Any

from ..interpreters.tape import Node, ReverseInterpreter
from ..interpreters.batching import Batched, BatchInterpreter, vmap
from ..core import Box, DiffkitError, Primitive, reenter

_CHECKPOINT = Primitive("checkpoint", lambda *xs: None)
_REVOLVE = Primitive("revolve", lambda *xs: None)


def checkpoint(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` whose intermediates are not kept on the tape but recomputed in the backward
    pass (JAX's ``jax.checkpoint``, PyTorch's ``torch.utils.checkpoint``); f returns one
    array. Nested checkpoints recompute level by level.

    >>> import diffkit as dk, diffkit.numpy as dnp
    >>> dk.grad(dk.checkpoint(lambda x: dnp.sin(x) * x))(0.0)
    np.float64(0.0)
    """
    @functools.wraps(f)
    def wrapper(*args: Any) -> Any:
        top = _top(args)
        if isinstance(top, BatchInterpreter):
            axes = tuple(0 if _owned(a, top) else None for a in args)
            return Batched(top, checkpoint(vmap(f, in_axes=axes))(*_values(args, top)))
        if not (isinstance(top, ReverseInterpreter) and top.recording):
            return f(*args)
        with _recording(top, on=False):
            y = _value(f(*args), top)
        parents = tuple((i, a.node) for i, a in enumerate(args)
                        if _owned(a, top) and a.node is not None)
        box = next(type(a) for a in args if _owned(a, top))

        def replay() -> Node | None:
            with reenter(top), _recording(top):
                return _node(f(*args), top)

        return box(top, y, _add(top, Node(_CHECKPOINT, {"replay": replay}, [], None, parents)))

    return wrapper


def checkpoint_loop(step: Callable[[Any], Any], x0: Any, n: int, snapshots: int = 10) -> Any:
    """``step`` applied ``n`` times to ``x0`` (one array), differentiated with at most
    ``snapshots`` stored states (the binomial schedule, see :func:`schedule`).

    ``snapshots >= n`` keeps every state (the plain tape's recomputation count: none).
    """
    if not isinstance(n, int) or n < 0:
        raise DiffkitError(f"checkpoint_loop: n must be a number of steps >= 0, got {n!r}")
    if not isinstance(snapshots, int) or snapshots < 1:
        raise DiffkitError(f"checkpoint_loop: snapshots must be an int >= 1 (the stored states, "
                           f"the starting one included), got {snapshots!r}")
    top = _top([x0])
    if isinstance(top, BatchInterpreter):
        return Batched(top, checkpoint_loop(vmap(step), x0.value, n, snapshots))
    if not (isinstance(top, ReverseInterpreter) and top.recording):
        for _ in range(n):
            x0 = step(x0)
        return x0
    return _chain(step, top, x0, 0, n, snapshots)


def schedule(steps: int, snapshots: int) -> tuple[int, int]:
    """``(t, right)`` for reversing ``steps`` steps with ``snapshots`` states (the starting
    one included): t, the least number of times a step is recomputed, C(snapshots + t, t)
    >= steps; and how many steps to leave after the next stored state, reversed with one
    state fewer. Splitting there keeps both parts at their own optimum, so the whole
    reversal costs Griewank's minimum of t·steps − C(snapshots + t, t − 1) steps.

    >>> schedule(1000, 10)
    (4, 715)
    """
    t = 0
    while comb(snapshots + t, t) < steps:
        t += 1
    if steps <= 1:
        return t, 0
    left_min = comb(snapshots + t - 2, t - 2) + 1 if t >= 2 else 1  # left part: t - 1 repeats
    return t, max(1, min(comb(snapshots - 1 + t, t), steps - left_min))


def _chain(step: Callable, interp: ReverseInterpreter, x: Any, s: int, e: int, c: int) -> Any:
    """Steps s..e from state ``x`` (a box of ``interp``) as a chain of revolve nodes, each
    holding its starting state, and the last step recorded: the box of state e."""
    while e - s > 1:
        right = schedule(e - s, c)[1] if c > 1 else 1
        m = e - right
        with _recording(interp, on=False):  # (on the plain state: step's own boxes of interp stay quiet)
            y = _values([x], interp)[0]
            for _ in range(m - s):
                y = step(y)
        parents = ((0, x.node),) if _owned(x, interp) and x.node is not None else ()
        replay = functools.partial(_replay, step, interp, x, s, m, c)
        x = type(x)(interp, _value(y, interp),
                    _add(interp, Node(_REVOLVE, {"replay": replay}, [], None, parents)))
        s, c = m, max(c - 1, 1)
    return step(x) if e > s else x


def _replay(step: Callable, interp: ReverseInterpreter, x: Any, s: int, e: int, c: int
            ) -> Node | None:
    with reenter(interp), _recording(interp):
        return _node(_chain(step, interp, x, s, e, c), interp)


# --------------------------------------------------------------------------- helpers


def _top(args: Sequence[Any]) -> Any:
    top = None
    for a in args:
        if isinstance(a, Box) and (top is None or a._interp.level > top.level):
            top = a._interp
    return top


def _owned(a: Any, interp: Any) -> bool:
    return isinstance(a, Box) and a._interp is interp


def _values(args: Sequence[Any], interp: Any) -> list:
    return [a.value if _owned(a, interp) else a for a in args]


def _value(y: Any, interp: Any) -> Any:
    if isinstance(y, (tuple, list, dict)):
        raise DiffkitError("a checkpointed function must return one array; checkpoint the parts "
                           "separately")
    return y.value if _owned(y, interp) else y


def _node(y: Any, interp: Any) -> Node | None:
    return y.node if _owned(y, interp) else None


def _add(interp: ReverseInterpreter, node: Node) -> Node:
    if interp.nodes is not None:
        interp.nodes.append(node)
    return node


@contextlib.contextmanager
def _recording(interp: ReverseInterpreter, on: bool = True) -> Iterator[None]:
    """Run with recording on ``interp``'s level switched ``on`` or off (lower levels go on
    as usual)."""
    saved = interp.recording
    interp.recording = on
    try:
        yield
    finally:
        interp.recording = saved
