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

from .. import numpy as dnp
from ..backends import Backend, as_backend
from ..checks import as_input, check_complex_inputs, check_output_dtype
from ..checks import holomorphic as complex_outputs
from ..core import Box, DiffkitError, primal, shape
from .arguments import Args, Argnums, Outputs, outputs_of
from .mode import default_backend
from ..primitives import is_complex
from ..primitives.compare import without_derivatives
from ..pytree import leaves, tree_map
from .weights import FIRST, Weights, positions

BackendSpec = str | Backend


def value_and_grad(f: Callable, argnums: Argnums | None = FIRST, weights: Any = None, *,
                   grad_position: Argnums | None = FIRST, backend: BackendSpec | None = None,
                   has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """``f`` and its gradient together: ``(value, grad)``, or ``((value, aux), grad)``.

    ``argnums`` (JAX) or ``grad_position`` (MindSpore) names the differentiated arguments;
    ``weights`` (MindSpore) a model's parameters, whose gradients come back as a tuple in
    that order (after the arguments' when both are asked: ``(arg_grads, weight_grads)``);
    nothing is stored on them (see :mod:`diffkit.transforms.weights`). The default backend is the
    mode's (``dk.set_mode``): reverse mode when eager.

    Parameters
    ----------
    f : callable
        The function; it returns a scalar (with ``has_aux``, a pair ``(scalar, aux)``).
    argnums : int or tuple of int, optional
        The differentiated positional arguments (default 0); a tuple gives a tuple of
        gradients. Each argument may be a number, an array or a tuple/list/dict of them.
    weights : sequence of Tensor, optional
        Parameters whose gradients come back too (MindSpore's ``weights``).
    grad_position : int or tuple of int, optional
        MindSpore's name for ``argnums``.
    backend : str or Backend, optional
        How to differentiate: a name or spec (``"forward"``, ``"compiled[fuse=false]"``,
        ``"numeric[method=central,order=4]"``) or a configured ``dk.backend(...)``.
    has_aux : bool
        ``f`` returns ``(value, aux)``; ``aux`` is passed through, not differentiated.
    holomorphic : bool
        ``f`` is holomorphic with complex inputs and output: the gradient is ``f'(z)``
        (as JAX). Without it a complex output is an error, and for a real ``f`` of complex
        ``z`` the gradient is JAX's ``df/dx - i df/dy`` (see docs/complex.md).

    Returns
    -------
    callable
        Taking ``f``'s arguments and returning ``(value, grad)`` (``((value, aux), grad)``).

    >>> import diffkit as dk
    >>> dk.value_and_grad(lambda x: x ** 3)(2.0)
    (np.float64(8.0), np.float64(12.0))
    """
    be = as_backend(default_backend() if backend is None else backend)
    pos = positions(argnums, grad_position, weights)
    extra = None if weights is None else Weights(weights, pos)
    fun = f if extra is None else extra.wrap(f)

    def whole(static: tuple, *arrays: Any) -> tuple:
        """One call (the weights' values last) from its ``static`` arguments (position,
        value) and the others: what the backend stages (the compiled backend: one
        program per static values and array shapes, the arrays as its inputs)."""
        args = list(arrays)
        for i, v in static:
            args.insert(i, v)
        nums = pos if extra is None else extra.positions(len(args) - len(extra.ws))
        a = Args("grad", tuple(args), nums)
        check_complex_inputs(a.leaves, "grad", holomorphic)
        with complex_outputs(holomorphic):
            value, aux, g = be.value_and_grad(a.call(fun, {}), a.z, has_aux)
        return (value, aux, a.unpack(g)) if has_aux else (value, a.unpack(g))

    staged = be.stage(whole)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args, nums = (args, pos) if extra is None else extra.extend(args)
        static = None if kwargs or _one_array(args) else _static(args, nums)
        if static is None:
            a = Args("grad", args, nums)  # f itself, or kwargs: the backend sees f(z) as is
            check_complex_inputs(a.leaves, "grad", holomorphic)
            with complex_outputs(holomorphic):
                value, aux, g = be.value_and_grad(a.call(fun, kwargs), a.z, has_aux)
            g = a.unpack(g)
        else:  # f would close over the other arguments: stage the whole call instead
            fixed = {i for i, _ in static}
            with complex_outputs(holomorphic):
                out = staged(static, *(a for i, a in enumerate(args) if i not in fixed))
            value, aux, g = out if has_aux else (out[0], None, out[1])
        value, g = (value, g) if extra is None else extra.split(value, g)
        return ((value, aux), g) if has_aux else (value, g)

    if hasattr(staged, "cache_info"):  # a compiled program per shapes: how many, how long
        wrapper.cache_info, wrapper.setup_s = staged.cache_info, staged.setup_s  # type: ignore[attr-defined]
    return wrapper


def _one_array(args: tuple) -> bool:
    """True when the call has one argument and it is a single array (no pytree)."""
    found = leaves(args[0]) if len(args) == 1 else ()
    return len(found) == 1 and found[0] is args[0]


def _static(args: tuple, nums: Any) -> tuple | None:
    """``(position, value)`` of the arguments a staged call bakes in rather than takes as
    inputs: those not differentiated that hold anything but arrays and floats (an int
    may be a size or a count, a string an option). None when one is not hashable (then
    the call is not staged)."""
    n = len(args)
    idx = (nums,) if isinstance(nums, (int, np.integer)) else tuple(nums or ())
    diffed = {int(i) % n for i in idx if isinstance(i, (int, np.integer)) and -n <= i < n}
    static = tuple((i, a) for i, a in enumerate(args) if i not in diffed and not all(
        isinstance(v, (np.ndarray, np.generic, float, Box)) for v in leaves(a)))
    try:
        hash(static)
    except TypeError:
        return None
    return static


def grad(f: Callable, argnums: Argnums | None = FIRST, weights: Any = None, *,
         grad_position: Argnums | None = FIRST, backend: BackendSpec | None = None,
         has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """The gradient of scalar ``f`` w.r.t. argument(s) ``argnums`` (and/or ``weights``,
    as in :func:`value_and_grad`).

    Parameters
    ----------
    f : callable
        A function returning a scalar (a pair ``(scalar, aux)`` with ``has_aux``).
    argnums : int or tuple of int, optional
        The differentiated positional arguments (default 0); a tuple gives a tuple of
        gradients, each shaped like its argument.
    weights, grad_position
        MindSpore's spellings, as in :func:`value_and_grad`.
    backend : str or Backend, optional
        How to differentiate: a name or spec (``"forward"``, ``"compiled[fuse=false]"``,
        ``"numeric[method=central,order=4]"``) or a configured ``dk.backend(...)``.
    has_aux : bool
        ``f`` returns ``(value, aux)``; the result is then ``(grad, aux)``.
    holomorphic : bool
        As JAX: complex ``f`` of complex inputs, holomorphic; the result is ``f'(z)``.

    Returns
    -------
    callable
        Taking ``f``'s arguments, returning the gradient.

    >>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
    >>> dk.grad(lambda x: dnp.sum(x ** 2))(np.array([1.0, 2.0]))
    array([2., 4.])
    >>> dk.grad(lambda z: dnp.real(z * dnp.conj(z)))(3 + 4j)  # |z|^2; as JAX: 2 conj(z)
    np.complex128(6-8j)
    """
    vg = value_and_grad(f, argnums, weights, grad_position=grad_position, backend=backend,
                        has_aux=has_aux, holomorphic=holomorphic)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        (value_aux, g) = vg(*args, **kwargs)
        return (g, value_aux[1]) if has_aux else g

    if hasattr(vg, "cache_info"):
        wrapper.cache_info, wrapper.setup_s = vg.cache_info, vg.setup_s  # type: ignore[attr-defined]
    return wrapper


def jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], *,
        backend: BackendSpec = "forward") -> tuple[Any, Any]:
    """``(f(*primals), J · tangents)``: the directional derivative.

    Parameters
    ----------
    f : callable
        The function, of as many arguments as ``primals`` has entries.
    primals : tuple
        The point: one entry per argument of ``f``.
    tangents : tuple
        The direction: one entry per primal, of the same shape.
    backend : str or Backend, optional
        How to differentiate: a name or spec (``"forward"``, ``"compiled[fuse=false]"``,
        ``"numeric[method=central,order=4]"``) or a configured ``dk.backend(...)``.
        Default: forward mode.

    >>> import diffkit as dk, diffkit.numpy as dnp
    >>> dk.jvp(dnp.sin, (0.0,), (2.0,))
    (np.float64(0.0), np.float64(2.0))
    """
    for name, seq in (("primals", primals), ("tangents", tangents)):
        if not isinstance(seq, (tuple, list)):
            raise DiffkitError(f"jvp: {name} must be a tuple or list with one entry per argument "
                               f"of f, got {type(seq).__name__}; write dk.jvp(f, (x,), (v,))")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise DiffkitError(f"jvp: {len(primals)} primals but {len(tangents)} tangents; "
                           "give one tangent per primal, as tuples")
    a = Args("jvp", primals, tuple(range(len(primals))))
    t = Args("jvp tangent", tangents, tuple(range(len(tangents))))
    if [shape(x) for x in a.leaves] != [shape(x) for x in t.leaves]:
        raise DiffkitError(f"jvp: tangent shapes {[shape(x) for x in t.leaves]} do not match "
                           f"primal shapes {[shape(x) for x in a.leaves]}")
    for k, (x, x_dot) in enumerate(zip(a.leaves, t.leaves)):
        if is_complex(x_dot) and not is_complex(x):
            raise DiffkitError(f"jvp: tangent {k} is complex but its primal is real; a real "
                               "input moves in real directions only (make the primal complex, "
                               "e.g. x + 0j, to differentiate along an imaginary direction)")
    out = outputs_of(f)
    y, y_dot = as_backend(backend).jvp(a.call(out, {}), a.z, t.z)
    return out.unpack(primals, {}, y), out.unpack(primals, {}, y_dot)


def vjp(f: Callable, *primals: Any, backend: BackendSpec | None = None) -> tuple[Any, Callable]:
    """``(f(*primals), vjp_fn)`` where ``vjp_fn(u)`` gives ``uᵀ J``, one per primal.

    Parameters
    ----------
    f : callable
        The function.
    *primals
        The point: one value per argument of ``f``.
    backend : str or Backend, optional
        How to differentiate: a name or spec (``"forward"``, ``"compiled[fuse=false]"``,
        ``"numeric[method=central,order=4]"``) or a configured ``dk.backend(...)``.
        Default: reverse mode.

    Returns
    -------
    tuple
        ``f(*primals)`` and the pull-back, which takes a cotangent shaped like the output
        and returns a tuple with one cotangent per primal.

    >>> import diffkit as dk
    >>> y, pull = dk.vjp(lambda x: 3.0 * x, 1.0)
    >>> pull(1.0)
    (np.float64(3.0),)
    """
    a = Args("vjp", primals, tuple(range(len(primals))))
    out = outputs_of(f)
    y, pull = as_backend(default_backend() if backend is None else backend).vjp(a.call(out, {}), a.z)

    return out.unpack(primals, {}, y), functools.partial(_pull_back, f, a, out, primals, pull)


def _pull_back(f: Callable, a: Args, out: Outputs, primals: tuple, pull: Callable,
               y_bar: Any) -> Any:
    """vjp's ``vjp_fn``. It holds ``f``: ``out`` holds f weakly, and a backend may call f
    again when pulling back (compiled traces it then), after the caller's f is gone."""
    return a.unpack(pull(out.ravel(primals, {}, y_bar)))


def jacobian(f: Callable, argnums: Argnums = 0, *, backend: BackendSpec | None = None,
             holomorphic: bool = False) -> Callable:
    """The Jacobian, shape ``f(x).shape + x.shape``; for a tuple or dict output, a tuple
    or dict of those (as JAX).

    With ``backend=None`` it picks forward mode when there are no more inputs than
    outputs (a pass per input), reverse mode otherwise (a pass per output).

    Parameters
    ----------
    f : callable
        The function.
    argnums : int or tuple of int
        The differentiated arguments (default 0); a tuple gives one Jacobian each.
    backend : str or Backend, optional
        How to differentiate: a name or spec (``"forward"``, ``"compiled[fuse=false]"``,
        ``"numeric[method=central,order=4]"``) or a configured ``dk.backend(...)``.
    holomorphic : bool
        As JAX: complex inputs and outputs, ``f`` holomorphic; the Jacobian is ``df/dz``.
        Without it, complex inputs need a real output (rows are JAX gradients, by
        reverse mode) and forward mode needs real inputs.

    Returns
    -------
    callable
        Taking ``f``'s arguments, returning the Jacobian.

    >>> import diffkit as dk
    >>> dk.jacobian(lambda x: {"twice": 2 * x, "square": x * x})(3.0)
    {'twice': np.float64(2.0), 'square': np.float64(6.0)}
    """
    out = outputs_of(f)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        a = Args("jacobian", args, argnums)
        name = {"forward": "jacfwd", "reverse": "jacrev"}.get(backend, "jacobian")
        check_complex_inputs(a.leaves, name, holomorphic, forward=name == "jacfwd")
        fun = a.call(out, kwargs)
        with complex_outputs(holomorphic):
            jac = as_backend(backend).jacobian(fun, a.z) if backend is not None else \
                _cheaper_jacobian(fun, a.z, holomorphic)
        return out.unpack(args, kwargs, jac, a.unpack)

    return wrapper


def _cheaper_jacobian(fun: Callable, z: Any, holomorphic: bool) -> Any:
    """Forward mode when there are no more inputs than outputs (a pass per input), else
    reverse mode (a pass per output) on the one recording that told the output's size.
    Complex inputs of a function that is not holomorphic go by reverse mode (as JAX's
    ``jacobian``, which is ``jacrev``)."""
    y, pull = as_backend("reverse").vjp(fun, z)
    n, m = np.size(primal(z)), np.size(primal(y))
    if n <= m and (holomorphic or not is_complex(z)):
        return as_backend("forward").jacobian(fun, z)
    check_output_dtype(y, "jacobian")
    seeds = np.eye(m, dtype=np.result_type(primal(y))).reshape((m,) + shape(y))
    rows = [pull(seed) for seed in seeds]
    return dnp.reshape(dnp.stack(rows), shape(y) + shape(z)) if rows else \
        np.zeros(shape(y) + shape(z), np.result_type(primal(y)))


def hessian(f: Callable, argnums: Argnums = 0, *, backend: BackendSpec | None = None,
            holomorphic: bool = False) -> Callable:
    """Second derivatives, shape ``x.shape + x.shape``. With several arguments
    (``argnums`` a tuple) or a dict/list argument, the blocks come nested as JAX gives
    them: ``H[i][j]`` is the block of arguments (leaves) i and j.

    Default: forward-over-reverse (a forward-mode Jacobian of the reverse-mode
    gradient); ``backend="reverse"`` is reverse-over-reverse, ``"forward"``
    forward-over-forward.

    Parameters
    ----------
    f : callable
        A function returning a scalar.
    argnums : int or tuple of int
        The differentiated arguments (default 0).
    backend : str or Backend, optional
        How to differentiate: a name or spec (``"forward"``, ``"compiled[fuse=false]"``,
        ``"numeric[method=central,order=4]"``) or a configured ``dk.backend(...)``.
        Default: forward over reverse.
    holomorphic : bool
        As JAX: complex ``f`` of complex inputs, holomorphic; the result is ``f''(z)``.

    Returns
    -------
    callable
        Taking ``f``'s arguments, returning the Hessian (nested blocks for a tuple).

    >>> import diffkit as dk
    >>> dk.hessian(lambda x, y: x * x * y, argnums=(0, 1))(1.0, 2.0)
    ((np.float64(4.0), np.float64(2.0)), (np.float64(2.0), np.float64(0.0)))
    """
    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        a = Args("hessian", args, argnums)
        check_complex_inputs(a.leaves, "hessian", holomorphic, forward=True)
        fun = a.call(f, kwargs)
        with complex_outputs(holomorphic):
            if backend is not None:
                h = as_backend(backend).hessian(fun, a.z)
            else:
                rev = as_backend("reverse")
                h = as_backend("forward").jacobian(lambda z: rev.value_and_grad(fun, z, False)[2],
                                                   a.z)
        return a.unpack_square(h)

    return wrapper


def derivative(f: Callable, *, backend: BackendSpec = "forward") -> Callable:
    """The derivative of an elementwise f: R → R at every point of an array, in one pass.

    Parameters
    ----------
    f : callable
        Elementwise: ``f(x)[i]`` depends on ``x[i]`` alone.
    backend : str or Backend, optional
        How to differentiate: a name or spec (``"forward"``, ``"compiled[fuse=false]"``,
        ``"numeric[method=central,order=4]"``) or a configured ``dk.backend(...)``.
        Default: forward mode (one tangent of ones).

    Returns
    -------
    callable
        Taking an array (or a number), returning ``f'`` at each of its entries.

    >>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
    >>> dk.derivative(dnp.sin)(np.array([0.0, 3.141592653589793]))
    array([ 1., -1.])
    """
    be = as_backend(backend)
    checked: set[tuple[int, ...]] = set()  # input shapes f was found elementwise at

    @functools.wraps(f)
    def wrapper(x: Any) -> Any:
        x = as_input(x, "derivative: the argument")
        if shape(x) not in checked:
            _check_elementwise(f, primal(x))
            checked.add(shape(x))
        d = be.derivative(f, x)
        if shape(d) != shape(x):
            raise DiffkitError(
                f"derivative needs f applied elementwise (output shape {shape(x)}), got shape "
                f"{shape(d)}; use dk.grad for f: Rⁿ → R and dk.jacobian for Rⁿ → Rᵐ")
        return d

    return wrapper


def jacfwd(f: Callable, argnums: Argnums = 0, *, holomorphic: bool = False) -> Callable:
    """The Jacobian by forward mode: one batched JVP over every input direction."""
    return jacobian(f, argnums, backend="forward", holomorphic=holomorphic)


def jacrev(f: Callable, argnums: Argnums = 0, *, holomorphic: bool = False) -> Callable:
    """The Jacobian by reverse mode: one backward sweep with a batch of output adjoints."""
    return jacobian(f, argnums, backend="reverse", holomorphic=holomorphic)


def hvp(f: Callable) -> Callable:
    """``(x, v) -> H(x) v`` for scalar ``f``, without forming the Hessian: the JVP of the
    reverse-mode gradient (forward-over-reverse), about the cost of two gradients.

    >>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
    >>> dk.hvp(lambda x: dnp.sum(x ** 3))(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    array([6., 0.])
    """
    @functools.wraps(f)
    def wrapper(x: Any, v: Any) -> Any:
        a, t = Args("hvp", (x,), 0), Args("hvp direction", (v,), 0)
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


def _check_elementwise(f: Callable, x: Any) -> None:
    """Refuse an f whose output entry i depends on input entries other than i.

    ``derivative`` computes J·1 (forward) or 1ᵀJ (reverse): both are the diagonal of J
    only when J is diagonal. Probe, on plain arrays: move a fixed pseudo-random half of
    the entries, then the first entry alone; an elementwise f leaves the output entries of
    the unmoved ones bit-for-bit alone.
    """
    if np.size(x) < 2:
        return
    half = np.random.default_rng(0).random(np.shape(x)) < 0.5
    half.flat[:2] = True, False
    first = np.zeros(np.shape(x), bool)
    first.flat[0] = True  # (catches what a half maps to itself: x[::-1] moves its middle)
    try:
        with np.errstate(all="ignore"):
            y0 = np.asarray(primal(f(x)))
            ys = [(moved, np.asarray(primal(f(np.where(moved, x + 0.25 * (1.0 + np.abs(x)), x)))))
                  for moved in (half, first)] if y0.shape == np.shape(x) else []
    except Exception:  # f runs on plain arrays only inside a transform: the backend judges it
        return
    if y0.shape != np.shape(x):
        raise DiffkitError(
            f"derivative needs f applied elementwise (output shape {np.shape(x)}), got shape "
            f"{y0.shape}; use dk.grad for f: Rⁿ → R and dk.jacobian for Rⁿ → Rᵐ")
    if not all(np.array_equal(y0[~moved], y[~moved], equal_nan=True) for moved, y in ys):
        raise DiffkitError(
            "derivative needs f applied elementwise, but an output entry of f changes when "
            "other input entries change (f mixes entries: a sum, an index, a matmul...); "
            "use dk.jacobian, or dk.grad of dnp.sum(f(x)) for the gradient of the sum")
