"""The core: primitives, boxes, levels and `bind`.

A *primitive* is one differentiable operation (``sin``, ``mul``, ``sum`` ...), defined
once with its numpy implementation and its derivative rules (see ``diffkit.primitives``).
Differentiation runs the user's ordinary Python function on *boxed* values: a dual
number in forward mode, a tape entry in reverse mode. Every primitive call goes through
:func:`bind`, which hands it to the *trace* that owns the highest-level box among the
arguments; with no box at all it simply runs numpy.

Each transform (``grad``, ``jvp`` ...) opens a new level on a stack. Boxes of a lower
level are constants to a higher one, which keeps the perturbations of nested
derivatives apart (no "perturbation confusion"); a box used after its transform has
finished is an error, not a silent wrong answer.
"""

from __future__ import annotations

import contextlib
import dis
import inspect
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np


class DiffkitError(ValueError):
    """A mistake in how diffkit was called; the message says what to do instead."""


# --------------------------------------------------------------------------- primitives


@dataclass(eq=False, repr=False)
class Primitive:
    """One operation with everything needed to differentiate it.

    ``jvp[i](x_dot, y, *args, **params)`` is the tangent of the output contributed by
    argument ``i`` (``y`` is the output); ``vjp[i](y_bar, y, *args, **params)`` is the
    adjoint flowing back to argument ``i``. ``jvp_joint`` replaces the per-argument jvp
    for linear n-ary primitives (it receives all tangents, zeros filled in).
    ``broadcasts`` marks primitives whose output broadcasts its inputs (elementwise
    arithmetic, matmul's batch axes): the interpreters align shapes for those.
    ``sympy(sp, *args, **params)`` translates to a sympy expression (symbolic backend).
    ``array_api`` names the array-API function (default: ``name``), or is
    ``array_api(xp, *args, **params)``: how to compute with another array library (JAX, torch).
    ``vjp_add(buf, y_bar, **params)`` may add a one-argument primitive's adjoint straight
    into a gradient buffer (indexing: ``buf[idx] += y_bar``) instead of building it whole.

    >>> from diffkit.primitives import sin
    >>> float(sin(0.0))
    0.0
    """

    name: str
    impl: Callable[..., Any]
    jvp: Sequence[Callable[..., Any]] = ()
    vjp: Sequence[Callable[..., Any]] = ()
    jvp_joint: Callable[..., Any] | None = None
    sympy: Callable[..., Any] | None = None
    broadcasts: bool = False
    ufunc: np.ufunc | None = None
    array_api: str | Callable[..., Any] | None = None
    vjp_add: Callable[..., None] | None = None
    _saves: dict = field(default_factory=dict, init=False)

    def __call__(self, *args: Any, **params: Any) -> Any:
        return bind(self, *args, **params)

    def portable(self, xp: Any, *args: Any, **params: Any) -> Any:
        """Apply with the array namespace ``xp`` of another library (see :func:`using`)."""
        args = tuple(xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
        if callable(self.array_api):
            return self.array_api(xp, *args, **params)
        return getattr(xp, self.array_api or self.name)(*args, **params)

    def saves(self, argnums: tuple[int, ...], nargs: int) -> tuple[bool, ...]:
        """Which of ``(y, *args)`` the VJP rules of ``argnums`` read: what a tape keeps."""
        key = (argnums, nargs)
        if key not in self._saves:
            keep = [False] * (nargs + 1)
            for i in argnums:
                rule = self.vjp[i]
                fn = rule.func if isinstance(rule, partial) else rule
                code = fn.__code__
                names = code.co_varnames[code.co_argcount - nargs - 1:code.co_argcount]
                used = reads(rule)
                if code.co_flags & inspect.CO_VARARGS:  # n-ary rule: keep everything
                    keep = [True] * (nargs + 1)
                for k, name in enumerate(names):
                    keep[k] = keep[k] or name in used
            self._saves[key] = tuple(keep)
        return self._saves[key]

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


def reads(fn: Callable[..., Any]) -> frozenset[str]:
    """The parameter names a rule's body reads (a rule may say so in ``fn.reads``)."""
    if hasattr(fn, "reads"):
        return fn.reads
    fn = fn.func if isinstance(fn, partial) else fn
    names: set[str] = set()
    for ins in dis.get_instructions(fn):
        if ins.opname.startswith("LOAD_FAST") or ins.opname in ("LOAD_DEREF", "LOAD_CLOSURE"):
            names.update(ins.argval if isinstance(ins.argval, tuple) else (ins.argval,))
    return frozenset(names)


@dataclass(frozen=True)
class Each:
    """The same rule for every argument of an n-ary primitive; the rule gets the index."""

    rule: Callable[..., Any]

    def __getitem__(self, i: int) -> Callable[..., Any]:
        return partial(self.rule, i)


# --------------------------------------------------------------------------- levels


class Interpreter:
    """An interpreter at one nesting level. Subclasses implement :meth:`process`."""

    def __init__(self, level: int) -> None:
        self.level = level
        self.alive = True

    def process(self, prim: Primitive, args: Sequence[Any], params: dict) -> Any:
        raise NotImplementedError


_levels: list[Interpreter] = []


@contextlib.contextmanager
def new_level(make: Callable[[int], Interpreter]) -> Iterator[Interpreter]:
    """Open a transform's level; it ends (and its boxes die) however the block exits."""
    trace = make(len(_levels) + 1)
    _levels.append(trace)
    try:
        yield trace
    finally:
        _levels.pop()
        trace.alive = False


_namespace: list[Any] = [None]  # an array-API namespace while running on a peer's arrays


@contextlib.contextmanager
def using(xp: Any) -> Iterator[None]:
    """Compute the primitives with the array library ``xp`` (e.g. ``jax.numpy``) inside.

    This lets catalog and user functions written with ``diffkit.numpy`` run on another
    library's arrays, so that library can differentiate them with its own machinery.
    """
    saved = _namespace[0]
    _namespace[0] = xp
    try:
        yield
    finally:
        _namespace[0] = saved


def bind(prim: Primitive, *args: Any, **params: Any) -> Any:
    """Apply ``prim``: numpy on plain values, else the top-level box's interpreter."""
    top = None
    for a in args:
        if isinstance(a, Box):
            t = a._interp
            if top is None or t.level > top.level:
                top = t
    if top is None:
        xp = _namespace[0]
        return prim.impl(*args, **params) if xp is None else prim.portable(xp, *args, **params)
    if not top.alive:
        raise DiffkitError(
            f"a traced value escaped its transform and was used in {prim.name}(): "
            "return values out of the differentiated function instead of storing them "
            "(e.g. use has_aux=True)"
        )
    return top.process(prim, args, params)


# --------------------------------------------------------------------------- boxes


def primal(x: Any) -> Any:
    """The plain numpy value under any number of boxes."""
    while isinstance(x, Box):
        x = x._value()
    return x


def shape(x: Any) -> tuple[int, ...]:
    return x.shape if isinstance(x, (Box, np.ndarray, np.generic)) else np.shape(x)


def ndim(x: Any) -> int:
    return len(shape(x))


class Box:
    """A value being differentiated; behaves like a numpy array of its primal.

    Operators and methods call the primitives, so ``x * y`` on a box records or
    propagates exactly like ``dnp.multiply(x, y)``. Comparisons look at the primal
    value, so ``if x > 0:`` branches as in plain Python.
    """

    __slots__ = ("_interp",)
    __array_priority__ = 100.0

    def _value(self) -> Any:
        raise NotImplementedError

    # shape and dtype of the primal
    @property
    def shape(self) -> tuple[int, ...]:
        return shape(self._value())

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def dtype(self) -> np.dtype:
        return np.result_type(primal(self))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d value")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    # comparisons branch on primal values
    def __lt__(self, other: Any) -> Any:
        return primal(self) < primal(other)

    def __le__(self, other: Any) -> Any:
        return primal(self) <= primal(other)

    def __gt__(self, other: Any) -> Any:
        return primal(self) > primal(other)

    def __ge__(self, other: Any) -> Any:
        return primal(self) >= primal(other)

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return primal(self) == primal(other)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return primal(self) != primal(other)

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        return bool(primal(self))

    def __float__(self) -> float:
        raise TypeError(
            "float() of a value being differentiated would drop its derivative: use "
            "diffkit.numpy functions (dnp.sin, not math.sin), or .item() to take the "
            "plain number on purpose"
        )

    def item(self) -> float:
        """The plain Python number (the derivative is not tracked through it)."""
        return primal(self).item()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(
            "this numpy call would convert a value being differentiated to a plain "
            "array and drop its derivative: use the diffkit.numpy function instead "
            "(import diffkit.numpy as dnp), e.g. dnp.stack instead of np.array"
        )

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        from . import numpy as dnp

        return dnp._dispatch_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        from . import numpy as dnp

        return dnp._dispatch_function(func, args, kwargs)


def _install_operators() -> None:
    """Give :class:`Box` the arithmetic operators and array methods, via the primitives."""
    from . import numpy as dnp
    from . import primitives as p

    def binary(prim: Primitive) -> tuple[Callable, Callable]:
        return (lambda self, o: bind(prim, self, o)), (lambda self, o: bind(prim, o, self))

    for name, prim in [("add", p.add), ("sub", p.sub), ("mul", p.mul), ("truediv", p.div),
                       ("pow", p.power)]:
        fwd, rev = binary(prim)
        setattr(Box, f"__{name}__", fwd)
        setattr(Box, f"__r{name}__", rev)
    Box.__matmul__ = lambda self, o: dnp.matmul(self, o)
    Box.__rmatmul__ = lambda self, o: dnp.matmul(o, self)
    Box.__neg__ = lambda self: bind(p.neg, self)
    Box.__pos__ = lambda self: self
    Box.__abs__ = lambda self: bind(p.abs, self)
    Box.__getitem__ = lambda self, idx: dnp.getitem(self, idx)
    Box.T = property(lambda self: dnp.transpose(self))
    for name in ["sum", "mean", "prod", "max", "min", "dot"]:
        setattr(Box, name, getattr(dnp, name))
    # numpy's method forms: x.reshape(2, 3) as well as x.reshape((2, 3)); x.transpose(1, 0)
    Box.reshape = lambda self, *s: dnp.reshape(self, s[0] if len(s) == 1 else s)
    Box.transpose = lambda self, *a: dnp.transpose(self, (a[0] if len(a) == 1 else a) or None)
