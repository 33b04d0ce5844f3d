"""Solvers with derivatives: fixed points and roots, differentiated implicitly or unrolled.

A solver's answer x*(θ) satisfies F(x*, θ) = 0. Differentiating the iterations that found
it (``mode="unrolled"``) keeps every iteration on the tape, so memory and time grow with
their number, and it gives the derivative of the *iterations*, which reaches the
derivative of the answer only as they converge. The implicit function theorem gives the
derivative of the *answer* directly, whatever path led there:

    J · ẋ = −∂F/∂θ · θ̇,    J = ∂F/∂x at (x*, θ)

one linear solve for a JVP (matvecs: JVPs of F in x), one with Jᵀ for a VJP (matvecs:
VJPs of F in x, from one recording), after which θ̄ = −(∂F/∂θ)ᵀ λ. The solve is dense
(the Jacobian, then LU) for small systems and matrix-free (BiCGStab) otherwise. Both are
written with :mod:`diffkit.numpy`, so the rules can be differentiated again (a Hessian of
a root): each level takes the implicit rule on the values one level down.

The iterations themselves run on plain numbers: no tape, O(1) memory in their count.

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> sqrt = lambda a: dk.root(lambda x, a: x * x - a, 1.0, a)   # x* = √a
>>> float(dk.grad(sqrt)(4.0))                                  # 1 / (2√a)
0.25
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..core import Box, DiffkitError, NotApplicable, primal, shape
from ..pytree import flatten, ravel
from .custom import _Custom
from .functional import jacobian, jvp, vjp

MODES = ("implicit", "unrolled")
LINEAR = ("auto", "dense", "iterative")
DENSE_UP_TO = 32  # "auto": a dense solve up to this many unknowns, matrix-free above
SOLVERS = "fixed_point (or dk.root)"  # who decides, in messages


# --------------------------------------------------------------------------- public


def fixed_point(f: Callable[..., Any], x0: Any, *params: Any, mode: str = "implicit",
                tol: float = 1e-12, max_iter: int = 1000, linear: str = "auto") -> Any:
    """x* with ``x* = f(x*, *params)``, iterated from ``x0``; differentiable in ``params``.

    Stops when a step changes x by at most ``tol·(1 + |x|)`` (max norm); ``tol=0`` runs
    exactly ``max_iter`` iterations. ``mode="implicit"`` differentiates the answer (the
    residual ``f(x, θ) − x`` through the implicit function theorem), ``"unrolled"`` the
    iterations. ``x0`` and ``params`` may be trees; x0 receives no derivative (x* does
    not depend on it).

    >>> import diffkit as dk, diffkit.numpy as dnp
    >>> cosine = lambda a: dk.fixed_point(lambda x, a: a * dnp.cos(x), 0.5, a)
    >>> round(float(cosine(1.0)), 10)                    # the Dottie number
    0.7390851332
    >>> round(float(dk.grad(cosine)(1.0)), 10)           # cos x* / (1 + a sin x*)
    0.4416107917
    """
    return _solver("fixed_point", f, x0, params, mode, linear, tol,
                   lambda g: lambda z, *ps: g(z, *ps) - z,
                   lambda g, z, ps: _iterate(g, z, ps, tol, max_iter), max_iter)


def root(F: Callable[..., Any], x0: Any, *params: Any, method: str = "newton",
         mode: str = "implicit", tol: float = 1e-12, max_iter: int = 100,
         linear: str = "auto") -> Any:
    """x* with ``F(x*, *params) = 0``, from ``x0``; differentiable in ``params``.

    ``method="newton"``: Newton's method with a backtracking line search on ‖F‖² (the
    Jacobian by forward mode, dense); it stops when a step moves x by at most
    ``tol·(1 + |x|)``, ``tol=0`` runs exactly ``max_iter`` steps. ``mode`` and ``linear``
    as in :func:`fixed_point`.

    >>> import diffkit as dk
    >>> cube_root = lambda a: dk.root(lambda x, a: x ** 3 - a, 1.0, a)
    >>> round(float(dk.grad(cube_root)(8.0)), 12)          # 1 / (3 x*²)
    0.083333333333
    """
    if method != "newton":
        raise DiffkitError(f"dk.root: method must be 'newton', got {method!r} (for your own "
                           "solver use dk.custom_root)")
    return _solver("root", F, x0, params, mode, linear, tol, lambda g: g,
                   lambda g, z, ps: _newton(g, z, ps, tol, max_iter), max_iter)


def _solver(name: str, user: Callable[..., Any], x0: Any, params: tuple, mode: str,
            linear: str, tol: float, residual_of: Callable, run: Callable, max_iter: int) -> Any:
    """The user's function on one vector ``g(z, *leaves)``; its residual ``residual_of(g)``
    and its solve ``run(g, z, leaves)``, unrolled on the boxes or as the implicit rule."""
    _check(name, mode, tol, max_iter, linear)
    z0, unravel, leaves, rebuild = _flat(x0, params)

    def g(z: Any, *ps: Any) -> Any:
        return _vector(user(_shaped(unravel, z), *rebuild(list(ps))))

    def solve(z: Any, *ps: Any) -> Any:
        return run(g, z, ps)

    if mode == "unrolled":
        return _shaped(unravel, solve(z0, *leaves))
    rule = _Implicit(residual_of(g), solve, linear_solver(linear, tol, name), name)
    return _shaped(unravel, rule(z0, *leaves))


def custom_root(f: Callable[[Any], Any], initial_guess: Any,
                solve: Callable[[Callable, Any], Any],
                tangent_solve: Callable[[Callable, Any], Any], has_aux: bool = False) -> Any:
    """A root of ``f`` found by your own ``solve(f, initial_guess)``, differentiated
    implicitly with respect to the values ``f`` closes over (``jax.lax.custom_root``'s
    semantics): ``tangent_solve(g, y)`` returns x with ``g(x) = y`` for a linear ``g``
    (f linearized at the root, or its transpose for reverse mode), e.g.
    ``lambda g, y: y / g(1.0)`` for a scalar, ``lambda g, y: dnp.linalg.solve(
    dk.jacobian(g)(y), y)`` for a small vector.

    ``solve`` sees f with those values as plain numbers, so it may branch, loop and
    differentiate f in x; with ``has_aux`` it returns ``(root, aux)`` and so does
    custom_root. The values must be in f's closure (a variable f names), or in that of a
    function it names.

    >>> import diffkit as dk
    >>> def bisect(f, x0):                  # on [0, 10], whatever x0
    ...     lo, hi = 0.0, 10.0
    ...     for _ in range(80):
    ...         mid = 0.5 * (lo + hi)
    ...         lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    ...     return mid
    >>> sqrt = lambda a: dk.custom_root(lambda x: x * x - a, 1.0, bisect,
    ...                                 lambda g, y: y / g(1.0))
    >>> round(float(dk.grad(sqrt)(4.0)), 12)
    0.25
    """
    residual, leaves = _closure_converted(f)
    aux: list = []

    def run(x0: Any, *ps: Any) -> Any:
        out = solve(lambda x: residual(x, *ps), x0)
        if has_aux:
            aux[:] = [out[1]]
            out = out[0]
        return _array(out)

    x = _Implicit(residual, run, tangent_solve, "custom_root")(_array(initial_guess), *leaves)
    if isinstance(residual(primal(x), *[primal(p) for p in leaves]), Box):
        raise NotApplicable("dk.custom_root: f reads a value being differentiated that is not "
                            "in its closure or its functions' (through an object or a global); "
                            "name it in f, or pass it to dk.root(F, x0, *params)")
    return (x, aux[0]) if has_aux else x


def _closure_converted(f: Callable[[Any], Any]) -> tuple[Callable[..., Any], list]:
    """``f(x)`` as ``residual(x, *leaves)``: the boxes among f's closed-over values (trees
    too, and those of the functions it closes over) become arguments, swapped into their
    cells for the call."""
    cells = [c for c in _cells(f) if any(isinstance(v, Box) for v in _cell_leaves(c))]
    leaves, rebuild = flatten([c.cell_contents for c in cells])

    def residual(x: Any, *ps: Any) -> Any:
        saved = [c.cell_contents for c in cells]
        for c, v in zip(cells, rebuild(list(ps))):
            c.cell_contents = v
        try:
            return f(x)
        finally:
            for c, v in zip(cells, saved):
                c.cell_contents = v

    return residual, leaves


def _cells(f: Any, seen: set | None = None) -> list:
    """The closure cells of ``f`` and of the Python functions in them, each once."""
    seen = set() if seen is None else seen
    out = []
    for c in getattr(f, "__closure__", None) or ():
        if id(c) in seen:
            continue
        seen.add(id(c))
        out.append(c)
        inner = _cell_leaves(c)
        if len(inner) == 1 and isinstance(inner[0], types.FunctionType):
            out += _cells(inner[0], seen)
    return out


def _cell_leaves(cell: Any) -> list:
    try:
        return flatten(cell.cell_contents)[0]
    except ValueError:  # an empty cell (a name not bound yet)
        return []


# --------------------------------------------------------------------------- the implicit rule


class _Implicit(_Custom):
    """x*(θ) with ``residual(x*, θ) = 0``, found by ``solve(x0, *θ)``, as one custom rule;
    ``linear_solve(matvec, b)`` solves the linear systems of its derivatives."""

    def __init__(self, residual: Callable[..., Any], solve: Callable[..., Any],
                 linear_solve: Callable[[Callable, Any], Any], name: str) -> None:
        self.residual, self.fun, self.linear_solve, self.name = residual, solve, linear_solve, name

    def jvp(self, xs: list, x_dots: list) -> tuple[Any, Any]:
        x = self(*xs)
        params, param_dots = xs[1:], x_dots[1:]
        _, b = jvp(self.residual, (x, *params), (np.zeros(shape(x)), *param_dots))
        at_x = lambda z: self.residual(z, *params)  # noqa: E731
        return x, -self.linear_solve(lambda u: jvp(at_x, (x,), (u,))[1], b)

    def fwd(self, *xs: Any) -> tuple[Any, Any]:
        x = self(*xs)
        return x, (x, xs)

    def bwd(self, res: Any, y_bar: Any) -> tuple[Any, ...]:
        x, xs = res
        _, pull = vjp(self.residual, x, *xs[1:], backend="reverse")
        lam = self.linear_solve(lambda w: pull(w)[0], y_bar)  # Jᵀλ = ȳ
        return (None, *pull(-lam)[1:])

    def batched(self, axes: list[int | None]) -> _Custom:
        return per_example(self, axes)


def linear_solver(linear: str, tol: float, name: str) -> Callable[[Callable, Any], Any]:
    """``solve(matvec, b)``: dense (the matrix from n matvecs, then LU) or BiCGStab
    (matrix-free); ``"auto"`` is dense up to DENSE_UP_TO unknowns."""
    def solve(matvec: Callable[[Any], Any], b: Any) -> Any:
        if linear == "iterative" or linear == "auto" and b.size > DENSE_UP_TO:
            return _bicgstab(matvec, b, tol, name)
        units = np.eye(b.size).reshape((b.size,) + shape(b))
        matrix = dnp.reshape(dnp.stack([matvec(e) for e in units], axis=-1), (b.size, b.size))
        x = _solve(matrix, dnp.reshape(b, (-1,)), lambda: f"dk.{name}: the Jacobian of the "
                   "residual at the solution is singular, so the solution is not locally unique "
                   "and has no implicit derivative")
        return dnp.reshape(x, shape(b))
    return solve


class _Unrolled(_Custom):
    """``fun`` differentiated through its body, whose own custom calls carry their rules."""

    def __init__(self, fun: Callable[..., Any], name: str) -> None:
        self.fun, self.name = fun, name

    def jvp(self, xs: list, x_dots: list) -> tuple[Any, Any]:
        return jvp(self.fun, tuple(xs), tuple(x_dots))

    def fwd(self, *xs: Any) -> tuple[Any, Any]:
        return self.fun(*xs), xs

    def bwd(self, xs: Any, y_bar: Any) -> tuple[Any, ...]:
        return vjp(self.fun, *xs, backend="reverse")[1](y_bar)

    def batched(self, axes: list[int | None]) -> _Custom:
        return per_example(self, axes)


def per_example(c: _Custom, axes: list[int | None]) -> _Custom:
    """``c`` under vmap: one call per example (a solver's iteration count and step sizes
    differ per example), stacked; ``axes`` are 0 (batched) or None, as custom rules get them."""
    def each(*xs: Any) -> Any:
        n = next(shape(x)[0] for x, ax in zip(xs, axes) if ax is not None)
        return dnp.stack([c(*[x[i] if ax is not None else x for x, ax in zip(xs, axes)])
                          for i in range(n)])
    return _Unrolled(each, c.name)


# --------------------------------------------------------------------------- iterations


def _iterate(step: Callable[..., Any], x: Any, params: tuple, tol: float, max_iter: int) -> Any:
    return _until_still(lambda x: step(x, *params), x, tol, max_iter, lambda x: (
        f"dk.fixed_point did not converge in max_iter={max_iter} iterations (last change "
        f"{_moved(x, step(x, *params)):.3g}); raise max_iter or tol, or check that f is a "
        "contraction near x0"))


def _newton(residual: Callable[..., Any], x: Any, params: tuple, tol: float,
            max_iter: int) -> Any:
    def step(x: Any) -> Any:
        r = residual(x, *params)
        norm = _size(r)
        jac = jacobian(lambda z: residual(z, *params), backend="forward")(x)
        dx = _solve(jac, -r, lambda: f"dk.root: the Jacobian of F is singular at x = "
                    f"{decision_values(x, 'root')}; start Newton from another x0")
        s, x_new = 1.0, x + dx
        tiny = _size(dx) <= 1e-12 * (1.0 + _size(x))  # at rounding level: take the step
        for _ in range(0 if tiny else 30):  # backtrack until |F| falls (Armijo, c = 1e-4)
            if _size(residual(x_new, *params)) <= (1.0 - 1e-4 * s) * norm:
                return x_new
            s *= 0.5
            x_new = x + s * dx
        return x + dx  # no decrease found (or none needed): the full Newton step

    return _until_still(step, x, tol, max_iter, lambda x: (
        f"dk.root: Newton did not converge in max_iter={max_iter} steps (|F| = "
        f"{_size(residual(x, *params)):.3g}); try another x0, or raise max_iter or tol"))


def _until_still(update: Callable[[Any], Any], x: Any, tol: float, max_iter: int,
                 failure: Callable[[Any], str]) -> Any:
    """``x ← update(x)`` until a step moves x by at most ``tol·(1 + |x|)`` (max norm);
    ``tol = 0``: exactly ``max_iter`` updates."""
    for _ in range(max_iter):
        x_new = update(x)
        if tol and _moved(x_new, x) <= tol * (1.0 + _size(x_new)):
            return x_new
        x = x_new
    if tol:
        raise DiffkitError(failure(x))
    return x


def _solve(matrix: Any, b: Any, singular: Callable[[], str]) -> Any:
    try:
        return dnp.linalg.solve(matrix, b)
    except np.linalg.LinAlgError:
        raise DiffkitError(singular()) from None


def _bicgstab(matvec: Callable[[Any], Any], b: Any, tol: float, name: str) -> Any:
    """x with ``matvec(x) = b`` by BiCGStab (van der Vorst), in :mod:`diffkit.numpy` ops."""
    x, r = 0.0 * b, b
    r_hat, p, v = primal(b), 0.0 * b, 0.0 * b
    rho = alpha = omega = 1.0
    goal = max(tol, 1e-14) * _size(b)
    for _ in range(10 * b.size + 10):
        if _size(r) <= goal:
            return x
        rho_new = dnp.sum(r_hat * r)
        p = r + (rho_new / rho) * (alpha / omega) * (p - omega * v)
        v = matvec(p)
        alpha = rho_new / dnp.sum(r_hat * v)
        s = r - alpha * v
        if _size(s) <= goal:
            return x + alpha * p
        t = matvec(s)
        omega = dnp.sum(t * s) / dnp.sum(t * t)
        x, r, rho = x + alpha * p + omega * s, s - omega * t, rho_new
    raise DiffkitError(f"dk.{name}: the matrix-free linear solve of the implicit derivative did "
                       f"not converge (|r| = {_size(r):.3g}); pass linear='dense'")


# --------------------------------------------------------------------------- helpers


def _check(name: str, mode: str, tol: float, max_iter: int, linear: str) -> None:
    if mode not in MODES:
        raise DiffkitError(f"dk.{name}: mode must be one of {MODES}, got {mode!r}")
    if linear not in LINEAR:
        raise DiffkitError(f"dk.{name}: linear must be one of {LINEAR}, got {linear!r}")
    if not (isinstance(max_iter, int) and max_iter >= 1) or not tol >= 0:
        raise DiffkitError(f"dk.{name}: max_iter must be an int >= 1 and tol >= 0, got "
                           f"max_iter={max_iter!r}, tol={tol!r}")


def _flat(x0: Any, params: tuple) -> tuple[Any, Callable, list, Callable]:
    """x0 as one vector (and the way back), params as leaves (and the way back)."""
    x_leaves, x_rebuild = flatten(x0)
    z0, split = ravel([_array(x) for x in x_leaves])
    leaves, rebuild = flatten(params)
    return dnp.reshape(z0, (-1,)), (shape(z0), split, x_rebuild), leaves, rebuild


def _shaped(unravel: tuple, z: Any) -> Any:
    z_shape, split, x_rebuild = unravel
    return x_rebuild(split(dnp.reshape(z, z_shape)))


def _vector(tree: Any) -> Any:
    leaves, _ = flatten(tree)
    return dnp.reshape(ravel([_array(x) for x in leaves])[0], (-1,))


def _array(x: Any) -> Any:
    return x if isinstance(x, Box) else np.asarray(x, dtype=float)


def decision_values(x: Any, name: str, decides: str = "when to stop") -> Any:
    """The plain numbers of ``x``, for a solver's decisions (convergence, step sizes)."""
    box = x
    while isinstance(box, Box):
        if box.expression:  # a formula: the symbolic backend
            raise NotApplicable(f"n/a: dk.{name} decides {decides} on the values, so it has no "
                                "closed form to derive symbolically; use forward or reverse")
        if box.abstract:  # a graph being traced has no numbers
            raise NotApplicable(f"n/a: dk.{name} decides {decides} on the values, which the "
                                "compiled backend's trace (once for all values) does not have; "
                                "use an eager backend (forward, reverse)")
        box = box.value
    return box


def _size(x: Any) -> float:
    return float(np.max(np.abs(decision_values(x, SOLVERS)), initial=0.0))


def _moved(a: Any, b: Any) -> float:
    step = np.asarray(decision_values(a, SOLVERS)) - decision_values(b, SOLVERS)
    return float(np.max(np.abs(step), initial=0.0))
