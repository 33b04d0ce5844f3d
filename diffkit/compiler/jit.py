"""``dk.jit``: compiled evaluation, cached per shapes, dtypes and static arguments.

>>> import diffkit as dk, diffkit.numpy as dnp
>>> f = dk.jit(lambda x: dnp.sum(dnp.sin(x) ** 2))
>>> float(f(np.zeros(3))), float(f(np.ones(3)) - 3 * np.sin(1.0) ** 2) == 0.0
(0.0, True)
>>> f.cache_info()
CacheInfo(hits=1, misses=1, currsize=1)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..checks import as_input
from ..core import Box, DiffkitError
from ..ir.tracer import evaluate, input_names, trace_graph
from ..pytree import flatten, structure, tree_map
from ..ir.graph import Graph
from .program import CacheInfo, Program, ProgramCache, build, signature


class Jit:
    """``fun`` traced once per signature, run as generated numpy code."""

    def __init__(self, fun: Callable, static_argnums: int | Sequence[int] = (),
                 fuse: bool = True, parallel: bool = False) -> None:
        self.fun = fun
        self.fuse, self.parallel = bool(fuse), bool(parallel)
        self.static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self.programs = ProgramCache()
        functools.update_wrapper(self, fun)

    def _signature(self, args: tuple) -> tuple[Any, list[Any], tuple]:
        """(cache key, dynamic leaves, args with converted leaves)."""
        if not self.static and all(type(a) is np.ndarray and a.ndim and a.dtype.kind == "f"
                                   for a in args):
            # float arrays, the common call: the key the general path below would make
            return tuple(("None", ((a.shape, a.dtype.str),)) for a in args), list(args), args
        fast = _arrays_key(args, self.static)
        if fast is not None:
            return fast[0], fast[1], args
        for i in self.static:
            if not -len(args) <= i < len(args):
                raise DiffkitError(f"jit: static_argnums={self.static!r} is out of range for "
                                   f"{len(args)} argument(s)")
        static = {i % len(args) for i in self.static}
        key, leaves, call = [], [], list(args)
        for i, a in enumerate(args):
            if i in static:
                try:
                    hash(a)
                except TypeError:
                    raise DiffkitError(f"jit: static argument {i} must be hashable (a number, "
                                       f"string or tuple), got {type(a).__name__}") from None
                key.append(("static", a))
                continue
            ls, rebuild = flatten(a)
            ls = [as_input(v, f"jit: argument {i}") for v in ls]
            call[i] = rebuild(ls)
            leaves += ls
            key.append((structure(a), tuple(signature(v) for v in ls)))
        return tuple(key), leaves, tuple(call)

    def program(self, *args: Any) -> Program:
        """The compiled program for these arguments' signature (built on first use)."""
        key, _, call = self._signature(args)
        return self._program(key, call)

    def _program(self, key: Any, call: tuple) -> Program:
        return self.programs.get(key, lambda: build(
            self.fun, call, self.static, input_names(self.fun, len(call)), fuse=self.fuse,
            parallel=self.parallel))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise DiffkitError("jit: pass arguments positionally (keyword arguments are not "
                               "part of the traced signature)")
        key, leaves, call = self._signature(args)
        if call is args:  # arrays only (the fast keys): a cached program, or a new one
            prog = self.programs.hit(key)
            if prog is not None:
                return prog(*leaves)
        elif any(isinstance(v, Box) for v in leaves):
            return self._inline(key, leaves, call)
        return self._program(key, call)(*leaves)

    def _inline(self, key: Any, leaves: list[Any], call: tuple) -> Any:
        """Inside another transform (grad, vmap, a graph being traced): the program's
        optimized graph is run on the boxed values, equation by equation through ``bind``,
        so the outer transform differentiates, batches or records that graph (traced once
        per signature, as a call on arrays), not f's Python again."""
        hollow = iter([np.broadcast_to(np.zeros((), v.dtype), v.shape) if isinstance(v, Box)
                       else v for v in leaves])
        static = {i % len(call) for i in self.static}
        stand_in = tuple(a if i in static else tree_map(lambda _: next(hollow), a)
                         for i, a in enumerate(call))
        graph = self._program(key, stand_in).graph
        return graph.rebuild(evaluate(graph, leaves))

    def cache_info(self) -> CacheInfo:
        return self.programs.info()

    def setup_s(self) -> float:
        """Seconds spent tracing, optimizing and compiling the programs cached now."""
        return sum(p.setup_s for p in self.programs.programs.values())

    def cache_clear(self) -> None:
        self.programs.clear()


def _arrays_key(args: tuple, static: tuple[int, ...]) -> tuple[Any, list[Any]] | None:
    """(cache key, leaves) when every dynamic argument is a float array or a tuple/list
    of them, as a training step's parameters are (the key tags each level, so it never
    equals the general path's); None otherwise. Each leaf is already what
    :func:`as_input` would make of it, so the call is not rebuilt. (Every call of a jitted
    function makes this key: it is written for speed, a few hundred nanoseconds a leaf.)"""
    fixed = {i % len(args) for i in static if -len(args) <= i < len(args)}
    if len(fixed) != len(static):
        return None
    leaves: list[Any] = []
    key: list[Any] = []
    for i, a in enumerate(args):
        if i in fixed:
            key.append(("static", a))
        elif not _key_into(a, key, leaves):
            return None
    out = tuple(key)
    try:
        hash(out)
    except TypeError:  # an unhashable static value
        return None
    return out, leaves


def _key_into(a: Any, key: list[Any], leaves: list[Any]) -> bool:
    """Append ``a``'s part of the key (a float array's shape and dtype; a tuple or list
    as its kind, its items and an end mark) and its leaves; False for anything else
    (numbers, dicts, boxes)."""
    kind = type(a)
    if kind is np.ndarray:
        if a.dtype.kind != "f":
            return False
        leaves.append(a[()] if a.ndim == 0 else a)  # a 0-d array as as_input's scalar
        key.append((a.shape, a.dtype))
        return True
    if kind is tuple or kind is list:
        key.append(kind is list)
        if not all(_key_into(v, key, leaves) for v in a):
            return False
        key.append(None)
        return True
    return False


def jit(fun: Callable, static_argnums: int | Sequence[int] = (), fuse: bool = True,
        parallel: bool = False) -> Jit:
    """Compile ``fun``: trace it once per argument shapes/dtypes (and static values) to a
    graph, optimize it, and run it compiled from then on. By default (``fuse=True``) chains
    of elementwise operations run as one fused kernel each (LLVM IR or Numba) and a
    program of scalars on the tape VM (``pip install diffkit[jit]``; without Numba it says
    so once and runs the numpy code); ``fuse=False`` runs the generated numpy program, one
    call per equation. ``parallel=True`` lets the fused loops that gain use all cores:
    those estimated to take 200 µs or more on one (:func:`.kernel_threads.threads_share`),
    shared by parts of their first axis."""
    return Jit(fun, static_argnums, fuse, parallel)


def make_graph(fun: Callable, static_argnums: int | Sequence[int] = ()) -> Callable[..., Graph]:
    """``make_graph(f)(*args)``: the traced graph of ``f`` at these arguments (unoptimized).

    >>> import diffkit as dk, diffkit.numpy as dnp
    >>> print(dk.make_graph(lambda x: dnp.exp(x) + 1.0)(0.5))
    graph (x: f64[]) -> f64[]
      v1: f64[] = exp(x)
      v2: f64[] = add(v1, 1.0)
      return v2
    """
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def wrapper(*args: Any) -> Graph:
        return trace_graph(fun, args, static, input_names(fun, len(args)))

    return wrapper
