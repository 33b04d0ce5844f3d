"""Batching: run a function once on a whole batch of inputs (the interpreter behind vmap).

A :class:`Batched` value holds an array whose *leading* axis is the batch; to the
function it looks like one example (its ``shape`` leaves the batch axis out). Each
primitive is applied to the whole batch at once by its batching rule
(``Primitive.batch``); primitives that act on trailing axes only (elementwise
functions, reductions over negative axes) need none: the default rule aligns
broadcasting operands, or gives unbatched operands the batch axis.

Forward mode uses it for Jacobians: the JVP of every unit direction at once is the JVP
with a batched tangent, so each JVP rule stays the one-line derivative of a textbook;
reverse mode for Jacobians too (a batch of output adjoints). :func:`vmap` is the user's
door to it, with JAX's semantics: ``in_axes`` / ``out_axes`` say which axis of each
argument and result is the batch (moved to and from the front), nested ``vmap`` adds one
batch axis per level, and ``vmap(grad(f))`` gives per-example gradients in one pass.
A comparison of a batched value is a batch of masks (one per example), so
``dnp.where(x > 0, ...)`` chooses per example; a Python ``if`` on it is an error.

>>> import numpy as np, diffkit.numpy as dnp
>>> vmap(lambda v: dnp.sum(v * np.array([1.0, 2.0])))(np.array([[1.0, 1.0], [0.0, 3.0]]))
array([3., 6.])
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from numbers import Number
from typing import Any

import numpy as np

from ..core import Box, DiffkitError, Interpreter, Primitive, bind, ndim, new_level, shape
from ..primitives import broadcast_to, transpose
from ..primitives.structure import align
from ..pytree import flatten


class Batched(Box):
    """A batch of values, one per entry of the leading axis of ``value``."""

    __slots__ = ()
    batched = True

    @property
    def shape(self) -> tuple[int, ...]:
        return shape(self.value)[1:]

    def __bool__(self) -> bool:
        raise DiffkitError(
            "vmap: a Python branch (if, while, bool()) on a value that differs per example "
            "cannot take one path per example; use dnp.where(cond, a, b) instead, or "
            "dk.cond(pred, true_fun, false_fun, *operands) for an if and "
            "dk.while_loop(cond_fun, body_fun, init_val) for a while")

    def __repr__(self) -> str:
        return f"Batched({self.value!r})"


class BatchInterpreter(Interpreter):
    """Applies each primitive to a batch of ``size`` values with its batching rule."""

    def __init__(self, level: int, size: int) -> None:
        super().__init__(level)
        self.size = size

    def process(self, prim: Primitive, args: Any, params: dict) -> Any:
        values, batched = [], []
        for a in args:
            mine = type(a) is Batched and a._interp is self
            values.append(a.value if mine else a)
            batched.append(mine)
        rule = prim.batch or default_rule(prim)
        return Batched(self, rule(values, tuple(batched), self.size, **params))


def default_rule(prim: Primitive) -> Callable[..., Any]:
    """The batching rule of a primitive that acts on trailing axes only."""
    def rule(args: list, batched: tuple[bool, ...], size: int, **params: Any) -> Any:
        if prim.broadcasts:
            args = align(args, batched, size)
        elif not all(batched):  # e.g. concatenate: every operand gets the batch axis
            args = [a if b else broadcast_to(a, shape=(size,) + shape(a))
                    for a, b in zip(args, batched)]
        return bind(prim, *args, **params)
    return rule


def unbatch(out: Any, interp: BatchInterpreter) -> Any:
    """The array of results: the batch axis in front (an unbatched result is repeated)."""
    if type(out) is Batched and out._interp is interp:
        return out.value
    return broadcast_to(out, shape=(interp.size,) + shape(out))


Axes = Any  # an int, None, or a tuple / list / dict of them shaped like the arguments


def vmap(f: Callable[..., Any], in_axes: Axes = 0, out_axes: Axes = 0) -> Callable[..., Any]:
    """``f`` mapped over an axis of its arguments, in one vectorized pass (JAX's ``vmap``).

    ``in_axes``: the mapped axis of every argument (an int), or one entry per positional
    argument (a tuple), each an int, ``None`` (not mapped: the same for every example) or
    a pytree of those shaped like that argument. Keyword arguments are mapped over axis
    0. ``out_axes`` places the batch axis in each result the same way (``None``: a result
    that is the same for every example, returned once).

    >>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
    >>> dk.vmap(lambda w, x: dnp.dot(w, x), in_axes=(None, 1))(np.ones(2), np.eye(2) * 3)
    array([3., 3.])
    """
    if not callable(f):
        raise DiffkitError(f"vmap: f must be a function, got {type(f).__name__}")

    @functools.wraps(f)
    def mapped(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, (tuple, list)) and len(in_axes) != len(args):
            raise DiffkitError(f"vmap: in_axes has {len(in_axes)} entries but the function was "
                               f"called with {len(args)} positional arguments; give one per "
                               "argument (None for an argument that is not mapped)")
        specs = in_axes if isinstance(in_axes, (tuple, list)) else [in_axes] * len(args)
        parts = [(f"argument {i}", a, s) for i, (a, s) in enumerate(zip(args, specs))]
        parts += [(f"keyword argument {k!r}", v, 0) for k, v in kwargs.items()]
        flat = [(where, flatten(a), _axes_like(s, a, f"vmap: in_axes for {where}"))
                for where, a, s in parts]
        size = _batch_size([(w, leaf, ax) for w, (ls, _), axs in flat for leaf, ax in zip(ls, axs)])
        with new_level(lambda level: BatchInterpreter(level, size)) as interp:
            new = [rebuild([_to_front(interp, leaf, ax) for leaf, ax in zip(ls, axs)])
                   for _, (ls, rebuild), axs in flat]
            out = f(*new[:len(args)], **dict(zip(kwargs, new[len(args):])))
            leaves, rebuild = flatten(out)
            axes = _axes_like(out_axes, out, "vmap: out_axes")
            return rebuild([_from_front(interp, leaf, ax, k) for k, (leaf, ax)
                            in enumerate(zip(leaves, axes))])

    return mapped


def _axes_like(spec: Axes, tree: Any, where: str) -> list[int | None]:
    """One axis (or None) per leaf of ``tree``: ``spec`` is a prefix of its structure."""
    if spec is None or isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        return [None if spec is None else int(spec)] * len(flatten(tree)[0])
    leaves = flatten(tree)[0]
    if isinstance(spec, dict) and isinstance(tree, dict) and set(spec) == set(tree):
        return [ax for k in tree for ax in _axes_like(spec[k], tree[k], f"{where}[{k!r}]")]
    if isinstance(spec, (tuple, list)) and isinstance(tree, (tuple, list)) \
            and not (len(leaves) == 1 and leaves[0] is tree) and len(spec) == len(tree):
        return [ax for i, (s, t) in enumerate(zip(spec, tree))
                for ax in _axes_like(s, t, f"{where}[{i}]")]
    raise DiffkitError(f"{where} is {spec!r}, which does not fit a value of type "
                       f"{type(tree).__name__}; give an int, None, or the value's own "
                       "structure (tuple/list/dict) of them")


def _batch_size(leaves: list[tuple[str, Any, int | None]]) -> int:
    """The common length of the mapped axes; checks each axis exists."""
    sizes = []
    for where, leaf, ax in leaves:
        if ax is None or static(leaf):
            continue
        s = shape(leaf) if isinstance(leaf, Box) else np.shape(leaf)
        if not -len(s) <= ax < len(s):
            raise DiffkitError(f"vmap: in_axes={ax} for {where}, which has shape {s} "
                               f"({len(s)} axes): the mapped axis must be one of its axes")
        sizes.append((where, ax, s[ax]))
    if not sizes:
        raise DiffkitError("vmap: in_axes maps no argument (all None); map at least one axis, "
                           "or call the function directly")
    if len({n for _, _, n in sizes}) > 1:
        listed = ", ".join(f"{w} has {n} along axis {ax}" for w, ax, n in sizes)
        raise DiffkitError(f"vmap: the mapped axes have different sizes: {listed}; "
                           "every mapped axis needs the same length")
    return sizes[0][2]


def _moved(x: Any, source: int, dest: int) -> Any:
    """``x`` with axis ``source`` moved to ``dest`` (a transpose, recorded on boxes)."""
    n = ndim(x)
    source, dest = source % n, dest % n
    if source == dest:
        return x
    order = [a for a in range(n) if a != source]
    order.insert(dest, source)
    return transpose(x, axes=tuple(order))


def static(leaf: Any) -> bool:
    """A leaf that is no number or array (e.g. a context object): passed through as it is."""
    return not isinstance(leaf, (Box, np.ndarray, np.generic, Number, list, tuple))


def _to_front(interp: BatchInterpreter, leaf: Any, ax: int | None) -> Any:
    if ax is None or static(leaf):
        return leaf
    if not isinstance(leaf, Box):
        leaf = np.asarray(leaf)
    return Batched(interp, _moved(leaf, ax, 0))


def _from_front(interp: BatchInterpreter, leaf: Any, ax: int | None, k: int) -> Any:
    mine = type(leaf) is Batched and leaf._interp is interp
    if static(leaf):
        return leaf
    if ax is None:
        if mine:
            raise DiffkitError(f"vmap: out_axes is None for result {k}, but it differs per "
                               "example; give it an axis (e.g. 0)")
        return leaf
    out = unbatch(leaf if isinstance(leaf, Box) else np.asarray(leaf), interp)
    if not -ndim(out) <= ax < ndim(out):
        raise DiffkitError(f"vmap: out_axes={ax} for result {k}, which has {ndim(out)} axes "
                           "with the batch axis")
    return _moved(out, 0, ax)


def batched_call(fun: Callable[[Any], Any], xs: Any) -> Any:
    """``fun`` applied to every entry of the leading axis of ``xs``, in one pass (``vmap``
    of a function of one array that returns one array)."""
    return vmap(fun)(xs)

