"""Branches with JAX's names and meaning: ``cond`` and ``switch`` (loops: :mod:`.loops`).

A Python ``if`` already runs on the eager backends (forward, reverse, Taylor): their boxes
carry plain values, so the branch taken is the one recorded. It cannot run where a
predicate has no single value: under ``vmap`` it has one per example, in a graph being
traced (``backend="compiled"``, ``dk.jit``) none yet, on the symbolic backend it is a
formula. ``dk.cond(pred, true_fun, false_fun, *operands)`` means the same everywhere:

* a predicate with one value: that branch alone runs, as ``if pred:`` would;
* one per example, none yet, or a formula: every branch runs and a select chooses (per
  example under ``vmap``, as JAX turns ``cond`` into ``select`` there; a SymPy
  ``Piecewise`` on the symbolic backend).

When every branch runs, the one not taken may compute inf or NaN (√ of a negative
number), and its derivative must not reach the gradient as ``0 · NaN``. So each branch
reads its operands through ``gate(mask, x)`` (:mod:`diffkit.primitives.compare`): ``x``
itself, whose derivative passes only where the branch's mask holds — a select, never a
product. In a graph being traced, every value a branch reads from outside goes through
the gate, the ones it closes over as well as its operands.

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> f = lambda x: dk.cond(x > 0, dnp.sqrt, lambda x: -x, x)
>>> float(dk.grad(f)(4.0)), float(dk.grad(f, backend="compiled")(-1.0))
(0.25, -1.0)
>>> dk.vmap(dk.grad(f))(np.array([4.0, -1.0]))   # per example: both branches, selected
array([ 0.25, -1.  ])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..core import Box, DiffkitError, primal, shape
from ..ir.tracer import GraphTracer
from ..primitives.compare import gate
from ..pytree import Tree, flatten, structure, tree_map

#: what a predicate, an index or a loop bound is (:func:`kind_of`)
ONE, PER_EXAMPLE, TRACED, FORMULA = "one value", "one per example", "traced", "a formula"


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any],
         *operands: Any) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)`` (``jax.lax.cond``).

    ``pred`` is a scalar (a bool, or a number: nonzero is true); the operands and the
    result may be trees. Where ``pred`` has one value, that branch alone runs; under
    ``vmap`` (a predicate per example), in a traced graph and on the symbolic backend both
    run, must return the same structure, shapes and dtypes, and a select chooses, sending
    no derivative into the branch not taken.

    >>> import diffkit as dk, diffkit.numpy as dnp
    >>> relu = lambda x: dk.cond(x > 0, lambda x: x, lambda x: 0.0 * x, x)
    >>> float(relu(3.0)), float(dk.grad(relu)(3.0)), float(dk.grad(relu)(-3.0))
    (3.0, 1.0, 0.0)
    """
    need_functions("dk.cond", {"true_fun": true_fun, "false_fun": false_fun})
    need_scalar("dk.cond: pred", pred, "for a choice per entry use dnp.where(mask, a, b)")
    if kind_of(pred) == ONE:
        return (true_fun if primal(pred) else false_fun)(*operands)
    if not isinstance(pred, Box):  # a relation (symbolic): a Piecewise, nothing to gate
        masks = [pred, None]
    else:
        truth = pred if not pred.expression and np.dtype(pred.dtype) == bool else pred != 0
        masks = [truth, truth == 0]
    return choose("dk.cond", masks, [true_fun, false_fun], ["true_fun", "false_fun"], operands)


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """``branches[index](*operands)``, the index clamped to ``0 … len(branches) − 1``
    (``jax.lax.switch``): an integer scalar, one per example under ``vmap`` (then every
    branch runs and a select chooses, as in :func:`cond`).

    >>> import diffkit as dk
    >>> steps = [lambda x: x, lambda x: 2.0 * x, lambda x: x * x]
    >>> [float(dk.switch(i, steps, 3.0)) for i in (-1, 1, 2, 7)]
    [3.0, 6.0, 9.0, 9.0]
    """
    branches = list(branches)
    if not branches:
        raise DiffkitError("dk.switch: branches is empty; give at least one function")
    need_functions("dk.switch", {f"branches[{k}]": b for k, b in enumerate(branches)})
    need_scalar("dk.switch: index", index, "give one integer")
    need_integer("dk.switch: index", index)
    n = len(branches)
    if n == 1 or kind_of(index) == ONE:
        return branches[min(max(int(primal(index)), 0), n - 1)](*operands)
    masks = [index <= 0, *[index == k for k in range(1, n - 1)], index >= n - 1]
    return choose("dk.switch", masks, branches, [f"branches[{k}]" for k in range(n)], operands)


# --------------------------------------------------------------------------- every branch


def choose(what: str, masks: list[Any], branches: Sequence[Callable[..., Any]],
           names: list[str], operands: tuple) -> Any:
    """Run every branch, each reading through the gate of its mask, and select: the
    result is branch k's where mask k holds (the masks exclude each other)."""
    graph = masks[0]._interp if type(masks[0]) is GraphTracer else None
    outs = []
    for mask, fun in zip(masks, branches):
        args = gated(mask, operands, graph)
        with np.errstate(all="ignore"):  # (where a branch is not taken, it may divide by 0)
            if graph is None:
                outs.append(fun(*args))
                continue
            with graph.reading_through(lambda v, m=mask: gate(m, v)):  # closed over, too
                outs.append(fun(*args))
    first = TreeType.of(outs[0])
    for name, out in zip(names[1:], outs[1:]):
        first.check(what, f"{name}'s output", out, f"{names[0]}'s output",
                    "every branch must return the same structure, shapes and dtypes")
    chosen = flatten(outs[-1])[0]
    for mask, out in zip(masks[-2::-1], outs[-2::-1]):
        chosen = [dnp.where(mask, a, b) for a, b in zip(flatten(out)[0], chosen)]
    return flatten(outs[0])[1](chosen)


def gated(mask: Any, tree: Tree, graph: Any = None) -> Tree:
    """``tree`` whose float boxes are seen through ``gate(mask, ·)``: derivatives pass
    only where ``mask`` holds. Values of ``graph`` are left to its own gating."""
    if not isinstance(mask, Box):  # a formula's condition: SymPy differentiates Piecewise
        return tree

    def one(v: Any) -> Any:
        if not isinstance(v, Box) or v.expression or np.dtype(v.dtype).kind not in "fc":
            return v
        return v if type(v) is GraphTracer and v._interp is graph else gate(mask, v)

    return tree_map(one, tree)


# --------------------------------------------------------------------------- checks


def kind_of(x: Any) -> str:
    """What a predicate (index, bound) is: :data:`ONE` value under any derivative boxes,
    :data:`PER_EXAMPLE` (``vmap``), :data:`TRACED` (a graph being traced, at any depth)
    or :data:`FORMULA` (the symbolic backend)."""
    found = ONE
    while isinstance(x, Box):
        if x.abstract:
            return TRACED
        if x.expression:
            return FORMULA
        if x.batched:
            found = PER_EXAMPLE
        x = x.value
    return FORMULA if type(x).__module__.startswith("sympy") else found


@dataclass(frozen=True)
class TreeType:
    """A tree's structure and each leaf's place, shape and dtype (None: a Python number,
    which matches any dtype, as JAX's weakly typed scalars do; or a formula): what a carry
    keeps from step to step and what the branches of a cond share."""

    structure: str
    leaves: tuple[tuple[str, tuple[int, ...], np.dtype | None], ...]

    @classmethod
    def of(cls, tree: Tree) -> TreeType:
        return cls(structure(tree), tuple((p, *type_of(v)) for p, v in
                                          zip(paths(tree), flatten(tree)[0])))

    def check(self, what: str, got_name: str, got: Tree, ref_name: str, fix: str) -> None:
        """One line naming the first difference of ``got`` from this type."""
        s_got = structure(got)
        if s_got != self.structure:
            raise DiffkitError(f"{what}: {got_name} has the structure {s_got} but {ref_name} "
                               f"has {self.structure}; {fix}")
        for (path, sb, db), v in zip(self.leaves, flatten(got)[0]):
            sa, da = type_of(v)
            if sa != sb or da is not None and db is not None and da != db:
                raise DiffkitError(
                    f"{what}: {got_name}{path} is {spelled(sa, da)} but {ref_name}{path} is "
                    f"{spelled(sb, db)} (the {'shapes' if sa != sb else 'dtypes'} differ); {fix}")


def paths(tree: Tree, at: str = "") -> list[str]:
    """Each leaf's place in ``tree`` (``[1]['w']``), in the order of ``flatten``."""
    if tree is None:
        return []
    if isinstance(tree, (list, tuple)):
        return [p for i, t in enumerate(tree) for p in paths(t, f"{at}[{i}]")]
    if isinstance(tree, dict):
        return [p for k, t in tree.items() for p in paths(t, f"{at}[{k!r}]")]
    return [at]


def type_of(x: Any) -> tuple[tuple[int, ...], np.dtype | None]:
    """Shape and dtype (None: a Python number, or a formula)."""
    if isinstance(x, (bool, int, float, complex)):
        return (), None
    if isinstance(x, Box):
        return tuple(x.shape), None if x.expression else np.dtype(x.dtype)
    if not isinstance(x, (np.ndarray, np.generic)) and hasattr(x, "dtype"):  # a peer's array
        return tuple(x.shape), np.dtype(str(x.dtype).removeprefix("torch."))
    a = np.asarray(x)
    return a.shape, None if a.dtype == object else a.dtype


def spelled(s: tuple[int, ...], d: np.dtype | None) -> str:
    """``float64[3]`` (a type as JAX writes it), ``a number`` for a Python number."""
    if d is None:
        return "a number" if s == () else f"an array of shape {s}"
    return f"{d.name}[{','.join(map(str, s))}]"


def need_scalar(what: str, x: Any, fix: str) -> None:
    if shape(x) != ():
        raise DiffkitError(f"{what} must be a scalar, got shape {shape(x)}; {fix}")


def need_integer(what: str, x: Any) -> None:
    if kind_of(x) == FORMULA:
        return
    d = np.dtype(x.dtype) if isinstance(x, Box) else np.asarray(x).dtype
    if d.kind not in "iub":
        raise DiffkitError(f"{what} must be an integer, got {spelled(shape(x), d)}")


def need_functions(what: str, named: dict[str, Any]) -> None:
    for name, fun in named.items():
        if not callable(fun):
            raise DiffkitError(f"{what}: {name} must be a function, got {type(fun).__name__}")
