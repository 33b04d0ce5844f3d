"""Custom derivative rules: ``custom_jvp``, ``custom_vjp`` (JAX) and ``Function`` (PyTorch).

A function with a custom rule is differentiated by its rule, not through its body: the
place to fix a numerically delicate derivative (``log1pexp``, a norm at 0) or to give a
cheaper one. Each interpreter takes the rule one level at a time, on the values one
level down, so rules compose with nesting:

* forward mode: ``custom_jvp`` calls its JVP rule; ``custom_vjp`` builds ``J·v`` from its
  VJP rule (``bwd`` for every output direction at once, batched);
* reverse mode: ``custom_vjp`` runs ``fwd`` now and keeps its residuals on the tape,
  ``bwd`` runs in the backward sweep; ``custom_jvp`` is pulled back by transposing its
  (linear in the tangents) JVP rule with reverse mode;
* ``vmap``: the function and its rules are vmapped together (a custom rule of the batch);
* anything else (plain numbers, the numeric and symbolic backends) runs the body.

Rules are written with :mod:`diffkit.numpy`, so they can be differentiated again.

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> @dk.custom_jvp
... def safe_norm(x):
...     return dnp.sqrt(dnp.sum(x * x))
>>> @safe_norm.defjvp
... def _(primals, tangents):
...     (x,), (x_dot,) = primals, tangents
...     y = safe_norm(x)
...     return y, dnp.sum(x * x_dot) / dnp.where(y == 0.0, 1.0, y)
>>> dk.grad(safe_norm)(np.zeros(2))   # through the body: 0 * inf = nan
array([0., 0.])
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..interpreters.forward import Dual, ForwardInterpreter, zeros
from ..interpreters.tape import Node, ReverseInterpreter
from ..interpreters.batching import Batched, BatchInterpreter, vmap
from ..core import Box, DiffkitError, Each, Primitive, shape


class _Custom:
    """What every custom rule offers the interpreters (see :func:`apply`)."""

    fun: Callable[..., Any]
    name: str

    def __call__(self, *args: Any) -> Any:
        return apply(self, args)

    def jvp(self, xs: list, x_dots: list) -> tuple[Any, Any]:
        raise NotImplementedError

    def fwd(self, *xs: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def bwd(self, res: Any, y_bar: Any) -> tuple[Any, ...]:
        raise NotImplementedError

    def batched(self, axes: list[int | None]) -> _Custom:
        raise NotImplementedError


class custom_jvp(_Custom):  # noqa: N801 (JAX's name)
    """``f`` with its own JVP rule: ``@f.defjvp`` on ``rule(primals, tangents) -> (y, y_dot)``."""

    def __init__(self, fun: Callable[..., Any], rule: Callable[..., Any] | None = None) -> None:
        functools.update_wrapper(self, fun)
        self.fun, self.rule, self.name = fun, rule, getattr(fun, "__name__", "custom_jvp")

    def defjvp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        self.rule = rule
        return rule

    def __call__(self, *args: Any) -> Any:
        if self.rule is None:
            raise DiffkitError(f"custom_jvp function {self.name} has no rule yet: define it with "
                               f"@{self.name}.defjvp")
        return apply(self, args)

    def jvp(self, xs: list, x_dots: list) -> tuple[Any, Any]:
        return _pair(self.rule(tuple(xs), tuple(x_dots)), self.name, "its JVP rule")

    def fwd(self, *xs: Any) -> tuple[Any, Any]:
        return self(*xs), xs

    def bwd(self, xs: Any, y_bar: Any) -> tuple[Any, ...]:
        from .functional import vjp  # the JVP rule is linear in the tangents: transpose it

        dots = [zeros(x) for x in xs]
        return vjp(lambda *d: self.rule(tuple(xs), d)[1], *dots)[1](y_bar)

    def batched(self, axes: list[int | None]) -> _Custom:
        both = (tuple(axes), tuple(axes))
        return custom_jvp(vmap(self.fun, in_axes=tuple(axes)),
                          lambda xs, dots: vmap(self.rule, in_axes=both)(xs, dots))


class custom_vjp(_Custom):  # noqa: N801 (JAX's name)
    """``f`` with its own VJP rule: ``f.defvjp(fwd, bwd)`` where ``fwd(*args) -> (y, res)``
    and ``bwd(res, y_bar) -> (x_bar, ...)``, one cotangent per argument (None: zero)."""

    def __init__(self, fun: Callable[..., Any], fwd: Callable | None = None,
                 bwd: Callable | None = None) -> None:
        functools.update_wrapper(self, fun)
        self.fun, self.name = fun, getattr(fun, "__name__", "custom_vjp")
        self._fwd, self._bwd = fwd, bwd

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        self._fwd, self._bwd = fwd, bwd

    def __call__(self, *args: Any) -> Any:
        if self._fwd is None:
            raise DiffkitError(f"custom_vjp function {self.name} has no rule yet: call "
                               f"{self.name}.defvjp(fwd, bwd)")
        return apply(self, args)

    def fwd(self, *xs: Any) -> tuple[Any, Any]:
        return _pair(self._fwd(*xs), self.name, "fwd")

    def bwd(self, res: Any, y_bar: Any) -> tuple[Any, ...]:
        out = self._bwd(res, y_bar)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    def jvp(self, xs: list, x_dots: list) -> tuple[Any, Any]:
        """``J·v`` from the VJP rule: the rows of J are ``bwd`` of every output direction."""
        y, res = self.fwd(*xs)
        m = int(np.prod(shape(y)))
        seeds = np.eye(m).reshape((m,) + shape(y))
        rows = vmap(lambda u: tuple(_cotangents(self.bwd(res, u), xs, self.name)))(seeds)
        y_dot = 0.0
        for row, x, x_dot in zip(rows, xs, x_dots):
            k = len(shape(x))
            y_dot = y_dot + dnp.sum(row * x_dot, axis=tuple(range(1, k + 1))) if k else \
                y_dot + row * x_dot
        return y, dnp.reshape(y_dot, shape(y))

    def batched(self, axes: list[int | None]) -> _Custom:
        def bwd(res: Any, y_bar: Any) -> tuple[Any, ...]:
            per_example = vmap(lambda r, g: tuple(self.bwd(r, g)))(res, y_bar)
            return tuple(dnp.sum(ct, axis=0) if ax is None else ct
                         for ct, ax in zip(per_example, axes))
        return custom_vjp(vmap(self.fun, in_axes=tuple(axes)),
                          vmap(self.fwd, in_axes=tuple(axes)), bwd)


class FunctionCtx:
    """The ``ctx`` of a :class:`Function`: ``save_for_backward(*values)`` in ``forward``,
    ``saved_tensors`` in ``backward``; other attributes carry plain settings."""

    saved_tensors: tuple = ()

    def save_for_backward(self, *values: Any) -> None:
        self.saved_tensors = values


class Function:
    """PyTorch-style custom operation: subclass with static methods
    ``forward(ctx, *inputs)`` and ``backward(ctx, grad_output)`` (one gradient per input,
    or None), then call ``MyOp.apply(*inputs)``.

    >>> import diffkit as dk, diffkit.numpy as dnp
    >>> class Cube(dk.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x ** 3
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 3.0 * x ** 2 * g
    >>> x = dk.tensor(2.0, requires_grad=True)
    >>> Cube.apply(x).backward()
    >>> float(x.grad)
    12.0
    """

    _rule: custom_vjp | None = None

    @staticmethod
    def forward(ctx: FunctionCtx, *inputs: Any) -> Any:
        raise NotImplementedError("a dk.Function subclass defines forward(ctx, *inputs)")

    @staticmethod
    def backward(ctx: FunctionCtx, grad_output: Any) -> Any:
        raise NotImplementedError("a dk.Function subclass defines backward(ctx, grad_output)")

    @classmethod
    def apply(cls, *inputs: Any) -> Any:
        if cls.__dict__.get("_rule") is None:
            cls._rule = custom_vjp(lambda *xs: cls.forward(FunctionCtx(), *xs),
                                   functools.partial(_function_fwd, cls),
                                   functools.partial(_function_bwd, cls))
            cls._rule.name = cls.__name__
        return cls._rule(*inputs)


def _function_fwd(cls: type[Function], *xs: Any) -> tuple[Any, Any]:
    ctx = FunctionCtx()
    y = cls.forward(ctx, *xs)
    return y, (ctx.saved_tensors, ctx)  # the saved values as leaves: vmap batches them


def _function_bwd(cls: type[Function], res: Any, y_bar: Any) -> Any:
    saved, ctx = res
    ctx.saved_tensors = saved
    return cls.backward(ctx, y_bar)


# --------------------------------------------------------------------------- interpreters


def apply(c: _Custom, args: Sequence[Any]) -> Any:
    """Call the custom function ``c`` on ``args`` at the level of its top-most box."""
    top = None
    for a in args:
        if isinstance(a, Box) and (top is None or a._interp.level > top.level):
            top = a._interp
    if top is None or not top.alive:  # plain values (or an escaped box: bind says so)
        return c.fun(*args)
    mine = [isinstance(a, Box) and a._interp is top for a in args]
    xs = [a.value if m else a for a, m in zip(args, mine)]
    if isinstance(top, ForwardInterpreter):
        y, y_dot = c.jvp(xs, [a.tangent if m else zeros(a) for a, m in zip(args, mine)])
        return Dual(top, y, y_dot)
    if isinstance(top, ReverseInterpreter):
        return _record(c, top, args, mine, xs)
    if isinstance(top, BatchInterpreter):
        return Batched(top, apply(c.batched([0 if m else None for m in mine]), xs))
    return c.fun(*args)  # other interpreters (symbolic, plug-ins): the body


def _record(c: _Custom, interp: ReverseInterpreter, args: Sequence[Any], mine: list[bool],
            xs: list) -> Any:
    """One tape node for the whole call: ``fwd`` now, ``bwd`` in the backward sweep."""
    box = next(type(a) for a, m in zip(args, mine) if m)
    parents = tuple((i, a.node) for i, (a, m) in enumerate(zip(args, mine))
                    if m and a.node is not None)
    if not parents or not interp.recording:
        return box(interp, c.fun(*xs), None)
    y, res = c.fwd(*xs)
    memo: list = []

    def pull(i: int, y_bar: Any, out: Any, *inputs: Any) -> Any:
        if not memo or memo[0] is not y_bar:  # one bwd call serves every argument
            memo[:] = [y_bar, _cotangents(c.bwd(res, y_bar), xs, c.name)]
        return memo[1][i]

    node = Node(Primitive(c.name, c.fun, vjp=Each(pull)), {}, xs, y, parents)
    if interp.nodes is not None:
        interp.nodes.append(node)
    return box(interp, y, node)


def _cotangents(cts: tuple, xs: Sequence[Any], name: str) -> list:
    """One cotangent per argument, shaped like it (None: zeros)."""
    if len(cts) != len(xs):
        raise DiffkitError(f"the VJP rule of {name} returned {len(cts)} cotangents for "
                           f"{len(xs)} arguments; return one per argument (None for zero)")
    out = []
    for i, (ct, x) in enumerate(zip(cts, xs)):
        if ct is None:
            ct = zeros(x)
        elif shape(ct) != shape(x):
            raise DiffkitError(f"the VJP rule of {name} returned shape {shape(ct)} for argument "
                               f"{i} of shape {shape(x)}; they must match")
        out.append(ct)
    return out


def _pair(out: Any, name: str, what: str) -> tuple[Any, Any]:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise DiffkitError(f"{what} of {name} must return a pair (value, "
                           f"{'tangent' if 'JVP' in what else 'residuals'}), got "
                           f"{type(out).__name__}")
    return out[0], out[1]
