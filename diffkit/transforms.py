"""Functional transforms (JAX/MindSpore style): ``grad``, ``value_and_grad``, ``jvp``,
``vjp``, ``jacobian`` (``jacfwd``, ``jacrev``), ``hessian``, ``hvp``, ``derivative``,
``stop_gradient``.

They take care of what every backend would otherwise repeat: ``argnums`` (an int, or a
tuple giving a tuple of results), arguments that are nested lists/dicts of arrays,
turning ints into floats, clear errors. A backend then sees a function of one array.

>>> import diffkit as dk, diffkit.numpy as dnp
>>> dk.grad(lambda x, y: x * dnp.sin(y), argnums=(0, 1))(2.0, 0.0)
(np.float64(0.0), np.float64(2.0))
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .backends import Backend, as_backend
from .checks import as_input
from .core import DiffkitError, primal, shape
from .mode import default_backend
from .primitives.compare import without_derivatives
from .pytree import flatten, ravel, tree_map
from .weights import FIRST, Weights, positions

BackendSpec = str | Backend
Argnums = int | Sequence[int]


class _Args:
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
        self.rebuilds, leaves = [], []
        first = flatten(args[self.nums[0]])[0]
        self.whole = len(self.nums) == 1 and len(first) == 1 and first[0] is args[self.nums[0]]
        for i in self.nums:
            ls, rebuild = flatten(args[i])
            leaves += [as_input(v, f"{transform}: argument {i}") for v in ls]
            self.rebuilds.append((len(ls), rebuild))
        self.leaves = leaves
        self.z, self.unravel = ravel(leaves)

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
        return fun

    def _split(self, leaves: list[Any]) -> list[Any]:
        parts, k = [], 0
        for n, rebuild in self.rebuilds:
            parts.append(rebuild(leaves[k:k + n]))
            k += n
        return parts

    def unpack(self, g: Any) -> Any:
        """A result with the shape of ``z`` (or ``out + z``) back in the arguments' shapes."""
        leaves = self.unravel(g) if len(self.leaves) > 1 else [g]
        parts = self._split([v[()] if type(v) is np.ndarray and v.ndim == 0 else v for v in leaves])
        return parts[0] if self.single else tuple(parts)


def value_and_grad(f: Callable, argnums: Argnums | None = FIRST, weights: Any = None, *,
                   grad_position: Argnums | None = FIRST, backend: BackendSpec | None = None,
                   has_aux: bool = False) -> Callable:
    """``f`` and its gradient together: ``(value, grad)``, or ``((value, aux), grad)``.

    ``argnums`` (JAX) or ``grad_position`` (MindSpore) names the differentiated arguments;
    ``weights`` (MindSpore) a model's parameters, whose gradients come back as a tuple in
    that order (after the arguments' when both are asked: ``(arg_grads, weight_grads)``);
    nothing is stored on them (see :mod:`diffkit.weights`). The default backend is the
    mode's (``dk.set_mode``): reverse mode when eager.

    >>> import diffkit as dk
    >>> dk.value_and_grad(lambda x: x ** 3)(2.0)
    (np.float64(8.0), np.float64(12.0))
    """
    be = as_backend(default_backend() if backend is None else backend)
    pos = positions(argnums, grad_position, weights)
    extra = None if weights is None else Weights(weights, pos)
    fun = f if extra is None else extra.wrap(f)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args, nums = (args, pos) if extra is None else extra.extend(args)
        a = _Args("grad", args, nums)
        value, aux, g = be.value_and_grad(a.call(fun, kwargs), a.z, has_aux)
        value, g = (value, a.unpack(g)) if extra is None else extra.split(value, a.unpack(g))
        return ((value, aux), g) if has_aux else (value, g)

    return wrapper


def grad(f: Callable, argnums: Argnums | None = FIRST, weights: Any = None, *,
         grad_position: Argnums | None = FIRST, backend: BackendSpec | None = None,
         has_aux: bool = False) -> Callable:
    """The gradient of scalar ``f`` w.r.t. argument(s) ``argnums`` (and/or ``weights``,
    as in :func:`value_and_grad`).

    >>> import diffkit as dk, diffkit.numpy as dnp
    >>> dk.grad(lambda x: dnp.sum(x ** 2))([1.0, 2.0])
    array([2., 4.])
    """
    vg = value_and_grad(f, argnums, weights, grad_position=grad_position, backend=backend,
                        has_aux=has_aux)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        (value_aux, g) = vg(*args, **kwargs)
        return (g, value_aux[1]) if has_aux else g

    return wrapper


def jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], *,
        backend: BackendSpec = "forward") -> tuple[Any, Any]:
    """``(f(*primals), J · tangents)``: the directional derivative.

    >>> import diffkit as dk, diffkit.numpy as dnp
    >>> dk.jvp(dnp.sin, (0.0,), (2.0,))
    (np.float64(0.0), np.float64(2.0))
    """
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise DiffkitError(f"jvp: {len(primals)} primals but {len(tangents)} tangents; "
                           "give one tangent per primal, as tuples")
    a = _Args("jvp", primals, tuple(range(len(primals))))
    t = _Args("jvp tangent", tangents, tuple(range(len(tangents))))
    if [shape(x) for x in a.leaves] != [shape(x) for x in t.leaves]:
        raise DiffkitError(f"jvp: tangent shapes {[shape(x) for x in t.leaves]} do not match "
                           f"primal shapes {[shape(x) for x in a.leaves]}")
    return as_backend(backend).jvp(a.call(f, {}), a.z, t.z)


def vjp(f: Callable, *primals: Any, backend: BackendSpec | None = None) -> tuple[Any, Callable]:
    """``(f(*primals), vjp_fn)`` where ``vjp_fn(u)`` gives ``uᵀ J``, one per primal.

    >>> import diffkit as dk
    >>> y, pull = dk.vjp(lambda x: 3.0 * x, 1.0)
    >>> pull(1.0)
    (np.float64(3.0),)
    """
    a = _Args("vjp", primals, tuple(range(len(primals))))
    y, pull = as_backend(default_backend() if backend is None else backend).vjp(a.call(f, {}), a.z)
    return y, lambda y_bar: a.unpack(pull(y_bar))


def jacobian(f: Callable, argnums: Argnums = 0, *, backend: BackendSpec | None = None) -> Callable:
    """The Jacobian, shape ``f(x).shape + x.shape``.

    With ``backend=None`` it picks forward mode when there are no more inputs than
    outputs (a pass per input), reverse mode otherwise (a pass per output).
    """
    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        a = _Args("jacobian", args, argnums)
        fun = a.call(f, kwargs)
        be = as_backend(backend) if backend is not None else _cheaper_mode(fun, a.z)
        return a.unpack(be.jacobian(fun, a.z))

    return wrapper


def _cheaper_mode(fun: Callable, z: Any) -> Backend:
    n, m = np.size(primal(z)), np.size(primal(fun(z)))
    return as_backend("forward" if n <= m else "reverse")


def hessian(f: Callable, argnums: int = 0, *, backend: BackendSpec | None = None) -> Callable:
    """Second derivatives, shape ``x.shape + x.shape``.

    Default: forward-over-reverse (a forward-mode Jacobian of the reverse-mode
    gradient); ``backend="reverse"`` is reverse-over-reverse, ``"forward"``
    forward-over-forward.
    """
    if not isinstance(argnums, (int, np.integer)):
        raise DiffkitError("hessian: argnums must be one int; for several arguments put them "
                           "in one array (or use jacobian of grad)")

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        a = _Args("hessian", args, argnums)
        if len(a.leaves) != 1:
            raise DiffkitError("hessian: the differentiated argument must be one array")
        fun = a.call(f, kwargs)
        if backend is not None:
            return as_backend(backend).hessian(fun, a.z)
        rev = as_backend("reverse")
        return as_backend("forward").jacobian(lambda z: rev.value_and_grad(fun, z, False)[2], a.z)

    return wrapper


def derivative(f: Callable, *, backend: BackendSpec = "forward") -> Callable:
    """The derivative of an elementwise f: R → R at every point of an array, in one pass.

    >>> import diffkit as dk, diffkit.numpy as dnp
    >>> dk.derivative(dnp.sin)([0.0, 3.141592653589793])
    array([ 1., -1.])
    """
    be = as_backend(backend)

    @functools.wraps(f)
    def wrapper(x: Any) -> Any:
        x = as_input(x, "derivative: the argument")
        d = be.derivative(f, x)
        if shape(d) != shape(x):
            raise DiffkitError(
                f"derivative needs f applied elementwise (output shape {shape(x)}), got shape "
                f"{shape(d)}; use dk.grad for f: Rⁿ → R and dk.jacobian for Rⁿ → Rᵐ")
        return d

    return wrapper


def jacfwd(f: Callable, argnums: Argnums = 0) -> Callable:
    """The Jacobian by forward mode: one batched JVP over every input direction."""
    return jacobian(f, argnums, backend="forward")


def jacrev(f: Callable, argnums: Argnums = 0) -> Callable:
    """The Jacobian by reverse mode: one backward sweep with a batch of output adjoints."""
    return jacobian(f, argnums, backend="reverse")


def hvp(f: Callable) -> Callable:
    """``(x, v) -> H(x) v`` for scalar ``f``, without forming the Hessian: the JVP of the
    reverse-mode gradient (forward-over-reverse), about the cost of two gradients.

    >>> import diffkit as dk, diffkit.numpy as dnp
    >>> dk.hvp(lambda x: dnp.sum(x ** 3))([1.0, 2.0], [1.0, 0.0])
    array([6., 0.])
    """
    @functools.wraps(f)
    def wrapper(x: Any, v: Any) -> Any:
        a, t = _Args("hvp", (x,), 0), _Args("hvp direction", (v,), 0)
        if [shape(u) for u in a.leaves] != [shape(u) for u in t.leaves]:
            raise DiffkitError(f"hvp: the direction has shapes {[shape(u) for u in t.leaves]} "
                               f"but x has {[shape(u) for u in a.leaves]}; they must match")
        fun, rev = a.call(f, {}), as_backend("reverse")
        return a.unpack(as_backend("forward").jvp(
            lambda z: rev.value_and_grad(fun, z, False)[2], a.z, t.z)[1])

    return wrapper


def stop_gradient(x: Any) -> Any:
    """``x``'s value as a constant to every derivative being taken (JAX's
    ``stop_gradient``; for one tensor, ``.detach()``). Under ``vmap`` it stays one value
    per example. Works on pytrees.

    >>> import diffkit as dk
    >>> dk.grad(lambda x: x * dk.stop_gradient(x))(3.0)
    np.float64(3.0)
    """
    return tree_map(without_derivatives, x)
