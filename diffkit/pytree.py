"""Nested lists, tuples and dicts of arrays ("pytrees", as in JAX).

Gradients come back in the structure of the argument: a dict of parameters gives a
dict of gradients, a tuple a tuple. Backends see one flat vector when there is more than
one leaf. As in JAX and autograd, every list and tuple is structure, never an array: a
list of floats is a list of scalar leaves (``dk.grad(f)([1.0, 2.0])`` returns a list of two
gradients, and ``f`` receives a list); pass ``np.array([1.0, 2.0])`` for a vector.
``None`` is an empty subtree, as in JAX: it has no leaves and comes back as ``None``
(``dk.grad(f)({"w": 3.0, "b": None})`` gives ``{"w": ..., "b": None}``).

>>> leaves, rebuild = flatten({"w": [1.0, (2.0, 3.0)], "b": 4.0})
>>> leaves, rebuild([10, 20, 30, 40])
([1.0, 2.0, 3.0, 4.0], {'w': [10, (20, 30)], 'b': 40})
>>> leaves, rebuild = flatten({"w": 1.0, "b": None})
>>> leaves, rebuild([10])
([1.0], {'w': 10, 'b': None})
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import numpy as dnp
from .core import primal, shape

Tree = Any


def flatten(tree: Tree) -> tuple[list[Any], Callable[[list[Any]], Tree]]:
    """Leaves in order, and the function that rebuilds the structure from new leaves
    (``None`` is a node without children: no leaves, rebuilt as ``None``)."""
    if tree is None:
        return [], _none
    if isinstance(tree, (list, tuple)):
        parts = [flatten(t) for t in tree]
        kind = type(tree)
    elif isinstance(tree, dict):
        keys = list(tree)
        parts = [flatten(tree[k]) for k in keys]
    else:
        return [tree], lambda leaves: leaves[0]
    sizes = [len(p[0]) for p in parts]
    leaves = [leaf for p in parts for leaf in p[0]]

    def rebuild(new: list[Any]) -> Tree:
        out, i = [], 0
        for (_, build), n in zip(parts, sizes):
            out.append(build(new[i:i + n]))
            i += n
        if isinstance(tree, dict):
            return dict(zip(keys, out))
        return kind(out) if kind in (list, tuple) else kind(*out)  # namedtuples too

    return leaves, rebuild


def leaves(tree: Tree) -> list[Any]:
    """The leaves of ``tree`` in :func:`flatten`'s order, without the function that
    rebuilds it (a check made at every call of a transformed function).

    >>> leaves(({"w": 1.0, "b": None}, [2.0, (3.0,)]))
    [1.0, 2.0, 3.0]
    """
    if isinstance(tree, (list, tuple)):
        return [leaf for t in tree for leaf in leaves(t)]
    if isinstance(tree, dict):
        return [leaf for t in tree.values() for leaf in leaves(t)]
    return [] if tree is None else [tree]


def _none(leaves: list[Any]) -> None:
    return None


def structure(tree: Tree) -> str:
    """The tree's containers with ``*`` for each leaf, as text (a cache key's part):
    ``{'w': *, 'b': None}`` and ``{'w': None, 'b': *}`` differ."""
    return repr(tree_map(lambda _: _LEAF, tree))


class _Leaf:
    def __repr__(self) -> str:
        return "*"


_LEAF = _Leaf()


def tree_map(fn: Callable[[Any], Any], tree: Tree) -> Tree:
    leaves, rebuild = flatten(tree)
    return rebuild([fn(leaf) for leaf in leaves])


def ravel(leaves: list[Any]) -> tuple[Any, Callable[[Any], list[Any]]]:
    """One flat vector from several arrays, and the function that splits it back.

    Real leaves beside complex ones come back real (the real part of their stretch of a
    complex ``z``), so a function sees each argument in its own dtype.
    """
    if len(leaves) == 1:
        return leaves[0], lambda z: [z]
    shapes = [shape(x) for x in leaves]
    sizes = [int(np.prod(s)) for s in shapes]
    z = dnp.concatenate([dnp.reshape(x, (-1,)) for x in leaves])
    kinds = [np.result_type(primal(x)).kind for x in leaves]
    mixed = "c" in kinds and len(set(kinds)) > 1

    def unravel(z: Any) -> list[Any]:
        out, i = [], 0
        for s, n, kind in zip(shapes, sizes, kinds):
            part = dnp.reshape(z[..., i:i + n], z.shape[:-1] + s)
            out.append(dnp.real(part) if mixed and kind != "c" else part)
            i += n
        return out

    return z, unravel
