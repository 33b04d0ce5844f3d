"""The core: primitives, boxes, levels and `bind`.

A *primitive* is one differentiable operation (``sin``, ``mul``, ``sum`` ...), defined
once with its numpy implementation and its derivative rules (see ``diffkit.primitives``).
Differentiation runs the user's ordinary Python function on *boxed* values: a dual
number in forward mode, a tape entry in reverse mode. Every primitive call goes through
:func:`bind`, which hands it to the *interpreter* that owns the highest-level box among
the arguments; with no box at all it simply runs numpy.

Each transform (``grad``, ``jvp`` ...) opens a new level on a stack. Boxes of a lower
level are constants to a higher one, which keeps the perturbations of nested
derivatives apart (no "perturbation confusion"); a box used after its transform has
finished is an error, not a silent wrong answer.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np


class DiffkitError(ValueError):
    """A mistake in how diffkit was called; the message says what to do instead."""


class NotApplicable(DiffkitError):
    """This way of differentiating has no answer here (no closed form, not complex-safe ...)."""


# --------------------------------------------------------------------------- primitives

#: what a primitive does to its operands' entries (``Primitive.kind``)
ELEMENTWISE, VIEW, REDUCTION, CONTRACTION, STRUCTURAL = (
    "elementwise", "view", "reduction", "contraction", "structural")
KINDS = (ELEMENTWISE, VIEW, REDUCTION, CONTRACTION, STRUCTURAL)


@dataclass(eq=False, repr=False)
class Primitive:
    """One operation with everything needed to differentiate it.

    ``jvp[i](x_dot, y, *args, **params)`` is the tangent of the output contributed by
    argument ``i`` (``y`` is the output); ``vjp[i](y_bar, y, *args, **params)`` is the
    adjoint flowing back to argument ``i``. ``jvp_joint`` replaces the per-argument jvp
    for linear n-ary primitives (it receives all tangents, zeros filled in).
    ``jvp_pair(x_dots, *args, **params)`` gives ``(y, y_dot)`` at once, in place of both
    the evaluation and ``jvp_joint`` in forward mode: for a primitive whose tangent
    computes its value anyway (a loop's JVP runs the loop's own steps), so that forward
    mode does not run it twice.
    ``saves[i]`` names what ``vjp[i]`` reads, in that rule's own parameter names
    (``"y"``, ``"x z"``, ``""`` for nothing but shapes): what a reverse-mode tape keeps.
    Undeclared (``None``) means everything.
    ``batch(args, batched, size, **params)`` applies the primitive to arguments of which
    those marked in ``batched`` carry an extra leading axis of length ``size`` (the
    batching rule, see :mod:`diffkit.interpreters.batching`); the default suits primitives that act on
    trailing axes only.
    ``broadcasts`` marks primitives whose output broadcasts its inputs (elementwise
    arithmetic, matmul's batch axes): the interpreters align shapes for those.
    ``sympy(sp, *args, **params)`` translates to a sympy expression (symbolic backend).
    ``array_api`` names the array-API function (default: ``name``), or is
    ``array_api(xp, *args, **params)``: how to compute with another array library.
    ``vjp_add(buf, y_bar, **params)`` may add a one-argument primitive's adjoint straight
    into a gradient buffer (indexing: ``buf[idx] += y_bar``) instead of building it whole.
    ``complex`` marks rules that are right for complex values too (JAX's convention, see
    :mod:`diffkit.primitives.complex_rules`); the interpreters refuse to differentiate a
    complex value through any other primitive.

    What the interpreters and the compiler know of an operation is here too, so that no
    module outside :mod:`diffkit.primitives` asks a primitive its name:

    * ``kind`` — one word of :data:`KINDS`: ``elementwise`` (the default where
      ``broadcasts``), ``view`` (each output entry is one input entry, no arithmetic:
      reshape, transpose, getitem, broadcast_to), ``reduction`` (entries summed or
      compared along axes), ``contraction`` (matmul, einsum: sums of products, batch axes
      broadcast), ``structural`` (the default otherwise: the rest);
    * ``linear`` — linear in its differentiated arguments (Taylor mode applies it to each
      coefficient; a fill through a linear view stays a fill);
    * ``zero_derivative`` — piecewise constant (sign, floor …): no dependence to propagate;
    * ``lower`` — an elementwise primitive's scalar formula for fused kernels
      (:class:`~diffkit.primitives.lowering.Lowering`), or the reason it has none (text);
    * ``library`` — how generated numpy code spells a non-elementwise primitive
      (:class:`~diffkit.primitives.lowering.LibraryCall`), else its implementation is called;
    * ``taylor`` — its Taylor-mode rule (:mod:`diffkit.primitives.series`); by default
      coefficient by coefficient when ``linear``, else from the JVP rule;
    * ``sparsity`` — its Jacobian-pattern rule (:mod:`diffkit.primitives.patterns`); by
      default from ``kind``;
    * ``abstract`` — ``abstract(*operands, **params)``: the output's shape and dtype, for a
      primitive whose implementation a graph tracer must not run on stand-ins to learn
      them (a loop); by default the tracer runs it.

    >>> from diffkit.primitives import sin
    >>> float(sin(0.0))
    0.0
    """

    name: str
    impl: Callable[..., Any]
    jvp: Sequence[Callable[..., Any]] = ()
    vjp: Sequence[Callable[..., Any]] = ()
    jvp_joint: Callable[..., Any] | None = None
    jvp_pair: Callable[..., Any] | None = None
    saves: Sequence[str] | None = None
    batch: Callable[..., Any] | None = None
    sympy: Callable[..., Any] | None = None
    broadcasts: bool = False
    ufunc: np.ufunc | None = None
    array_api: str | Callable[..., Any] | None = None
    vjp_add: Callable[..., None] | None = None
    complex: bool = False
    kind: str = ""
    linear: bool = False
    zero_derivative: bool = False
    lower: Any = None
    library: Any = None
    taylor: Callable[..., Any] | None = None
    sparsity: Callable[..., Any] | None = None
    abstract: Callable[..., tuple[tuple[int, ...], np.dtype]] | None = None
    _kept: dict = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if not self.kind:
            self.kind = ELEMENTWISE if self.broadcasts else STRUCTURAL
        if self.kind not in KINDS:
            raise ValueError(f"primitive {self.name}: kind {self.kind!r} is none of {KINDS}")

    def __call__(self, *args: Any, **params: Any) -> Any:
        return bind(self, *args, **params)

    def portable(self, xp: Any, *args: Any, **params: Any) -> Any:
        """Apply with the array namespace ``xp`` of another library (see :func:`using`)."""
        args = tuple(xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
        if callable(self.array_api):
            return self.array_api(xp, *args, **params)
        return getattr(xp, self.array_api or self.name)(*args, **params)

    def kept(self, argnums: tuple[int, ...], nargs: int) -> tuple[bool, ...]:
        """Which of ``(y, *args)`` the VJP rules of ``argnums`` read (from ``saves``)."""
        key = (argnums, nargs)
        if key not in self._kept:
            if self.saves is None:
                self._kept[key] = (True,) * (nargs + 1)
                return self._kept[key]
            keep = [False] * (nargs + 1)
            for i in argnums:
                names = self.saves[min(i, len(self.saves) - 1)].split()
                rule = self.vjp[i]
                params = list(inspect.signature(rule).parameters.values())[1:]  # after y_bar
                for k, p in enumerate(params[:nargs + 1]):
                    if p.kind is p.VAR_POSITIONAL:  # n-ary rule: *xs
                        if p.name in names:
                            keep[k:] = [True] * (nargs + 1 - k)
                        break
                    keep[k] = keep[k] or p.name in names
            self._kept[key] = tuple(keep)
        return self._kept[key]

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


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

    def closed(self, prim: Primitive, args: Sequence[Any], params: dict) -> Any:
        """``prim`` on a box of this level after the level ended: an error by default."""
        raise DiffkitError(
            f"a traced value escaped its transform and was used in {prim.name}(): "
            "return values out of the differentiated function instead of storing them "
            "(e.g. use has_aux=True)")


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


def levels() -> tuple[Interpreter, ...]:
    """The transforms' levels open now, innermost last."""
    return tuple(_levels)


@contextlib.contextmanager
def reenter(trace: Interpreter) -> Iterator[Interpreter]:
    """Open a level again for a moment, even a finished one: a checkpoint replays its
    segment during the backward sweep, on the boxes of the level that recorded it."""
    alive = trace.alive
    _levels.append(trace)
    trace.alive = True
    try:
        yield trace
    finally:
        _levels.pop()
        trace.alive = alive


_namespace: list[Any] = [None]  # an array-API namespace while running on a peer's arrays


def namespace() -> Any:
    """The array library the primitives compute with (set by :func:`using`), or None for
    numpy and diffkit's own values."""
    return _namespace[0]


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
        for a in args:
            if type(a) in (list, tuple) and _holds_box(a):
                raise DiffkitError(
                    f"{prim.name} got a {type(a).__name__} of values being differentiated: a "
                    "list or tuple is a container of separate leaves (as in JAX), not an "
                    "array; stack it first (dnp.stack(x)) or pass an array (np.array([...]))")
        xp = _namespace[0]
        return prim.impl(*args, **params) if xp is None else prim.portable(xp, *args, **params)
    if not top.alive:
        return top.closed(prim, args, params)
    return top.process(prim, args, params)


# --------------------------------------------------------------------------- boxes


def _holds_box(seq: list | tuple) -> bool:
    return any(isinstance(v, Box) or type(v) in (list, tuple) and _holds_box(v) for v in seq)


def primal(x: Any) -> Any:
    """The plain numpy value under any number of boxes (or the abstract value of a graph
    being traced, which has a shape and dtype but no number yet)."""
    while isinstance(x, Box) and not x.abstract:
        x = x.value
    return x


def in_batch(x: Any) -> bool:
    """``x`` is a value of a ``vmap`` batch, at any depth under other boxes."""
    while isinstance(x, Box):
        if x.batched:
            return True
        x = x.value
    return False


def shape(x: Any) -> tuple[int, ...]:
    return x.shape if isinstance(x, (Box, np.ndarray, np.generic)) else np.shape(x)


def ndim(x: Any) -> int:
    return len(shape(x))


class Box:
    """A value being differentiated, owned by one interpreter; behaves like a numpy array.

    ``value`` is what the owning interpreter wraps (a lower level's box, or an array).
    :mod:`diffkit.numpy` gives boxes their arithmetic operators, array methods and the
    numpy protocols, so ``x * y`` on a box records or propagates exactly like
    ``dnp.multiply(x, y)``. Comparisons look at the primal value, so ``if x > 0:``
    branches as in plain Python (under ``vmap`` they give one mask per example).
    """

    __slots__ = ("_interp", "value")
    __array_priority__ = 100.0
    abstract = False  # True for the values of a graph being traced (no number yet)

    def __init__(self, interp: Interpreter, value: Any) -> None:
        self._interp, self.value = interp, value

    # shape and dtype of the primal
    @property
    def shape(self) -> tuple[int, ...]:
        return shape(self.value)

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

    __hash__ = object.__hash__
    batched = False  # True for boxes holding a batch of values (diffkit.interpreters.batching)
    expression = False  # True for boxes holding a formula, not a value (symbolic backend)

    def __bool__(self) -> bool:
        return bool(primal(self))

    def __float__(self) -> float:
        inside = converter(sys._getframe(1))
        if inside is not None:
            raise TypeError(f"{inside} took float() of a value being differentiated, "
                            f"{_DROPPED}")
        raise TypeError(
            "float() of a value being differentiated would drop its derivative: use "
            "diffkit.numpy functions (dnp.sin, not math.sin), or .item() to take the "
            "plain number on purpose"
        )

    def item(self) -> float:
        """The plain Python number (the derivative is not tracked through it)."""
        return primal(self).item()

    def detach(self) -> Any:
        """The same value with no derivative at this level (a constant to this transform)."""
        return self.value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        inside = converter(sys._getframe(1))
        if inside is not None:
            raise TypeError(f"{inside} converted a value being differentiated to a plain "
                            f"numpy array, {_DROPPED}")
        raise TypeError(
            "this numpy call would convert a value being differentiated to a plain "
            "array and drop its derivative: use the diffkit.numpy function instead "
            "(import diffkit.numpy as dnp), e.g. dnp.stack instead of np.array"
        )


_DIFFKIT = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NUMPY = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_COMPREHENSIONS = ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>")
_DROPPED = ("which would drop its derivative; that is diffkit's own code, not yours: it "
            "cannot take this transform's values there (please report it), so differentiate "
            "with another backend or transform meanwhile")


def converter(frame: Any) -> str | None:
    """The diffkit function that asked numpy for a plain number or array, named as users
    reach it (``dk.nn.Linear.forward``), from the first frame outside numpy; None when
    that frame is not diffkit's (the user's own numpy call: their line is in the traceback)."""
    while frame is not None and frame.f_code.co_filename.startswith(_NUMPY):
        frame = frame.f_back
    if frame is None or not os.path.abspath(frame.f_code.co_filename).startswith(_DIFFKIT):
        return None
    module = str(frame.f_globals.get("__name__", "diffkit"))
    qual = getattr(frame.f_code, "co_qualname", frame.f_code.co_name).split(".")
    while len(qual) > 2 and qual[-1] in _COMPREHENSIONS:  # (a list comprehension's frame)
        del qual[-2:]
    this, cls = frame.f_locals.get("self"), getattr(sys.modules.get(module), qual[0], None)
    if len(qual) == 2 and isinstance(cls, type) and isinstance(this, cls) \
            and type(this).__module__.startswith("diffkit"):
        module, qual[0] = type(this).__module__, type(this).__name__  # Conv2d, not _ConvNd
    parts = module.split(".")
    home = sys.modules.get(module)
    for k in range(1, len(parts)):  # the shortest package that exports it
        package = sys.modules.get(".".join(parts[:k]))
        if package is not None and qual[0] in vars(package) \
                and vars(package)[qual[0]] is getattr(home, qual[0], None):
            parts = parts[:k]
            break
    return ".".join(["dk", *parts[1:], *qual])
