"""``check_grads``: does a function's derivative (its custom rule, say) agree with finite
differences? (JAX's ``check_grads``, PyTorch's ``gradcheck``.)

Forward mode is checked directly: ``J v`` from ``dk.jvp`` against a fourth-order central
difference of f along a random direction ``v``. Reverse mode by the dot-product test
``⟨u, J v⟩ = ⟨Jᵀu, v⟩``: ``Jᵀu`` from ``dk.vjp``, ``J v`` from the differences. Order 2
repeats both checks on the derivative functions themselves (``x ↦ J(x) v`` and
``x ↦ J(x)ᵀ u``), so a rule whose own derivative is wrong is caught too.

>>> import diffkit as dk, diffkit.numpy as dnp
>>> dk.check_grads(dnp.sin, (0.3,), order=2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..checks import as_input
from ..core import DiffkitError
from ..numpy import concatenate, reshape
from .functional import jvp, vjp


def check_grads(f: Callable[..., Any], args: Sequence[Any], order: int = 1,
                modes: Sequence[str] = ("fwd", "rev"), eps: float = 1e-3, rtol: float = 1e-6,
                atol: float = 1e-6, seed: int = 0) -> None:
    """Raise ``AssertionError`` (one line: mode, order, both values) unless f's derivatives
    up to ``order`` agree with central differences of step ``eps``; None when they do."""
    if not isinstance(args, (tuple, list)):
        raise DiffkitError("check_grads: args must be a tuple of arguments, e.g. (x,)")
    if set(modes) - {"fwd", "rev"} or not modes:
        raise DiffkitError(f"check_grads: modes={tuple(modes)!r}; use 'fwd' and/or 'rev'")
    args = tuple(as_input(a, f"check_grads: argument {i}") for i, a in enumerate(args))
    rng = np.random.default_rng(seed)
    v = tuple(rng.normal(size=np.shape(a)) for a in args)
    slope = _central(f, args, v, eps)
    if "fwd" in modes:
        _close(np.asarray(jvp(f, args, v)[1]), slope, "forward mode (J·v)", order, rtol, atol)
    if "rev" in modes:
        u = rng.normal(size=np.shape(slope))
        pulled = vjp(f, *args)[1](u)
        lhs = sum(float(np.sum(w * t)) for w, t in zip(pulled, v))
        _close(np.asarray(lhs), np.asarray(float(np.sum(u * slope))),
               "reverse mode (⟨Jᵀu, v⟩ against ⟨u, J·v⟩)", order, rtol, atol)
    if order > 1:
        rest = dict(modes=modes, eps=eps, rtol=rtol, atol=atol, seed=seed + 1)
        if "fwd" in modes:
            check_grads(lambda *a: jvp(f, a, v)[1], args, order - 1, **rest)
        if "rev" in modes:
            check_grads(lambda *a: _flat(vjp(f, *a)[1](u)), args, order - 1, **rest)


def _central(f: Callable, args: tuple, v: tuple, eps: float) -> np.ndarray:
    """Fourth-order central difference of f along v: error O(eps⁴) + O(ε/eps)."""
    def at(s: float) -> np.ndarray:
        return np.asarray(f(*[a + s * t for a, t in zip(args, v)]), dtype=float)
    return (8.0 * (at(eps) - at(-eps)) - (at(2 * eps) - at(-2 * eps))) / (12.0 * eps)


def _flat(parts: tuple) -> Any:
    return concatenate([reshape(p, (-1,)) for p in parts])


def _close(got: np.ndarray, want: np.ndarray, what: str, order: int, rtol: float,
           atol: float) -> None:
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        err = float(np.max(np.abs(got - want)))
        raise AssertionError(
            f"check_grads: {what} at order {order} disagrees with finite differences: "
            f"max |error| {err:.3g} (derivative {np.ravel(got)[:4]}, differences "
            f"{np.ravel(want)[:4]}); rtol={rtol}, atol={atol}")
