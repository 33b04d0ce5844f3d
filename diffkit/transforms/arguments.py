"""How a transform takes a call apart: the differentiated arguments (``argnums``, pytrees,
ints turned to floats) as one flat array ``z`` for the backend, and the output's tree, so
results come back in the caller's structure.

>>> import numpy as np
>>> a = Args("grad", ((1.0, 2.0), 3), 0)
>>> a.z, a.unpack(np.array([10.0, 20.0]))
(array([1., 2.]), (np.float64(10.0), np.float64(20.0)))
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..checks import as_input
from ..core import Box, DiffkitError, shape
from ..primitives import is_complex
from ..pytree import flatten, ravel, structure, tree_map

Argnums = int | Sequence[int]


def _first(leaves: list[Any]) -> Any:
    return leaves[0]


def _listed(z: Any) -> list[Any]:
    return [z]


class Args:
    """The differentiated arguments of one call, as one array ``z`` and back."""

    def __init__(self, transform: str, args: tuple, argnums: Argnums) -> None:
        self.single = isinstance(argnums, (int, np.integer))
        nums = (argnums,) if self.single else tuple(argnums)
        for i in nums:
            if not isinstance(i, (int, np.integer)) or not -len(args) <= i < len(args):
                raise DiffkitError(f"{transform}: argnums={argnums!r} is out of range: the "
                                   f"function was called with {len(args)} positional "
                                   f"argument{'s' if len(args) != 1 else ''}")
        self.args, self.nums = list(args), [int(i) % len(args) for i in nums]
        if len(set(self.nums)) != len(self.nums):
            raise DiffkitError(f"{transform}: argnums={argnums!r} names an argument twice; "
                               "name each argument once")
        only = args[self.nums[0]]
        if len(self.nums) == 1 and type(only) is np.ndarray and only.ndim and \
                only.dtype.kind in "fc":  # one array, the common call: as below, at once
            self.whole, self.leaves, self.rebuilds = True, [only], [(1, _first)]
            self.z, self.unravel = only, _listed
            return
        self.rebuilds, leaves = [], []
        first = flatten(args[self.nums[0]])[0]
        self.whole = len(self.nums) == 1 and len(first) == 1 and first[0] is args[self.nums[0]]
        for i in self.nums:
            ls, rebuild = flatten(args[i])
            leaves += [as_input(v, f"{transform}: argument {i}") for v in ls]
            self.rebuilds.append((len(ls), rebuild))
        self.leaves = leaves
        # (no leaves at all, as in f({}): an empty vector, and empty results, as JAX)
        self.z, self.unravel = ravel(leaves) if leaves else (np.zeros(0), lambda z: [])

    def call(self, f: Callable, kwargs: dict) -> Callable[[Any], Any]:
        """``f`` as a function of ``z`` alone (``f`` itself when it takes just ``z``, so
        backends can cache per function)."""
        if len(self.args) == 1 and not kwargs and self.whole:
            return f

        def fun(z: Any) -> Any:
            args = list(self.args)
            for i, part in zip(self.nums, self._split(self.unravel(z))):
                args[i] = part
            return f(*args, **kwargs)
        fun.cache_key = self._cache_key(f, kwargs)  # type: ignore[attr-defined]
        return fun

    def _cache_key(self, f: Callable, kwargs: dict) -> Any:
        """What ``fun`` computes, besides ``z``, as a hashable key (None when an argument
        that is not differentiated is an array or an object): a backend that builds a
        program per function (compiled) reuses it from one call to the next."""
        rest = tuple(a for i, a in enumerate(self.args) if i not in self.nums) \
            + tuple(sorted(kwargs.items()))
        if not _immutable(rest):
            return None
        parts = [self.args[i] for i in self.nums]
        return (f, tuple(self.nums), len(self.args), structure(parts),
                tuple((shape(v), np.result_type(v).str) for v in self.leaves),
                repr(tree_map(type, rest)), rest)

    def _split(self, leaves: list[Any]) -> list[Any]:
        parts, k = [], 0
        for n, rebuild in self.rebuilds:
            parts.append(rebuild(leaves[k:k + n]))
            k += n
        return parts

    def unpack(self, g: Any) -> Any:
        """A result with the shape of ``z`` (or ``out + z``) back in the arguments' shapes."""
        return self._structure(self.unravel(g) if len(self.leaves) != 1 else [g])

    def unpack_square(self, h: Any) -> Any:
        """A result with the shape ``z + z`` (a Hessian) in the arguments' structure, twice
        nested as JAX does: entry [i][j] is the block of leaves i and j."""
        if len(self.leaves) == 1:
            return self._structure([self._structure([h])])
        shapes = [shape(x) for x in self.leaves]
        ends = np.cumsum([math.prod(s) for s in shapes])
        spans = [(int(e) - math.prod(s), int(e), s) for e, s in zip(ends, shapes)]
        h = np.asarray(h)
        return self._structure([self._structure([h[a:b, c:d].reshape(si + sj)
                                                 for c, d, sj in spans]) for a, b, si in spans])

    def _structure(self, leaves: list[Any]) -> Any:
        parts = self._split([v[()] if type(v) is np.ndarray and v.ndim == 0 else v for v in leaves])
        return parts[0] if self.single else tuple(parts)


class Outputs:
    """``f`` with a pytree output (a tuple or dict of arrays) seen as one flat vector.

    Backends differentiate functions with one array out; this wrapper gives them that,
    and remembers the structure (per input shapes) to rebuild results. A function that
    returns one array passes through untouched. One wrapper per ``f`` (kept while ``f``
    lives), so backends that cache per function (symbolic) still find their cache.
    """

    def __init__(self, f: Callable) -> None:
        self.f = weakref.ref(f) if _weakly_held(f) else (lambda: f)
        self.trees: dict[tuple, tuple[Callable, list[tuple[int, ...]], Any] | None] = {}
        self.real_leaves: dict[tuple, list[bool]] = {}  # (real leaves come back real)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.f()(*args, **kwargs)
        leaves, rebuild = flatten(out)
        key = shapes_of(args, kwargs)
        if len(leaves) == 1 and leaves[0] is out:
            self.trees[key] = None
            return out
        self.trees[key] = (rebuild, [shape(v) for v in leaves], rebuild(list(range(len(leaves)))))
        self.real_leaves[key] = [not is_complex(v) for v in leaves]
        if not leaves:  # (None, {}, (): an empty tree, as JAX; its derivatives are empty too)
            return np.zeros(0)
        return ravel([dnp.reshape(v, (-1,)) for v in leaves])[0]

    def unpack(self, args: tuple, kwargs: dict, r: Any, trailing: Any = None) -> Any:
        """A result whose leading axis runs over the flat output, in the output's structure
        (``trailing(block)`` maps each block, e.g. into the arguments' structure)."""
        key = shapes_of(args, kwargs)
        tree = self.trees.get(key)
        if tree is None:
            return r if trailing is None else trailing(r)
        rebuild, shapes, _ = tree
        # a value or tangent (no trailing): a real leaf beside complex ones comes back real
        reals = self.real_leaves[key] if trailing is None and is_complex(r) else [False] * len(shapes)
        blocks, start = [], 0
        for s, make_real in zip(shapes, reals):
            n = math.prod(s)
            block = np.reshape(r[start:start + n], s + np.shape(r[start:start + n])[1:])
            blocks.append(dnp.real(block) if make_real else
                          block if trailing is None else trailing(block))
            start += n
        return rebuild(blocks)

    def ravel(self, args: tuple, kwargs: dict, y_bar: Any) -> Any:
        """A cotangent (or tangent) given in the output's structure, as one flat vector."""
        tree = self.trees.get(shapes_of(args, kwargs))
        if tree is None:
            return y_bar
        _, shapes, like = tree
        leaves = leaves_like(y_bar, like)
        if leaves is None or [shape(v) for v in leaves] != shapes:
            raise DiffkitError("vjp: the cotangent must have the structure and shapes of the "
                               f"output (leaf shapes {shapes}); give one array per output")
        if not leaves:
            return np.zeros(0)
        # (through dnp: a cotangent that is itself being differentiated keeps its derivative)
        return dnp.concatenate([dnp.reshape(v if isinstance(v, Box) else as_input(
            v, "vjp: the cotangent"), (-1,)) for v in leaves])


def leaves_like(tree: Any, like: Any) -> list[Any] | None:
    """The leaves of ``tree`` in the order of ``like`` (same containers, dict keys matched by
    name; a tuple of numbers is structure here), or None where the structures differ.
    A ``None`` in ``like`` (an empty subtree of the output) wants ``None``: no leaves."""
    if like is None:
        return [] if tree is None else None
    if isinstance(like, dict):
        if not isinstance(tree, dict) or set(tree) != set(like):
            return None
        parts = [leaves_like(tree[k], like[k]) for k in like]
    elif isinstance(like, (list, tuple)):
        if not isinstance(tree, (list, tuple)) or len(tree) != len(like):
            return None
        parts = [leaves_like(t, k) for t, k in zip(tree, like)]
    else:
        return [tree]
    return None if any(p is None for p in parts) else [v for p in parts for v in p]


def _immutable(v: Any) -> bool:
    """A number, string or None, or a tuple of them: safe to key a cached program by."""
    if isinstance(v, tuple):
        return all(_immutable(x) for x in v)
    return v is None or isinstance(v, (bool, int, float, complex, str, np.generic))


_OUTPUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def outputs_of(f: Callable) -> Outputs:
    """The one :class:`Outputs` wrapper of ``f``."""
    if not _weakly_held(f):
        return Outputs(f)
    if f not in _OUTPUTS:
        _OUTPUTS[f] = Outputs(f)
    return _OUTPUTS[f]


def _weakly_held(f: Any) -> bool:
    try:
        weakref.ref(f)
    except TypeError:  # (builtins, ufuncs)
        return False
    return True


def shapes_of(args: tuple, kwargs: dict) -> tuple:
    return tuple(shape(v) for a in (*args, *kwargs.values()) for v in flatten(a)[0])
