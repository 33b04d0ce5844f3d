"""Matrix functions of scipy.linalg: the Sylvester solve, the matrix exponential and the
principal square root, each on stacks of square matrices (leading axes broadcast).

Their derivatives are again calls of these primitives, so every order works; the three
are holomorphic, so the same rules hold for complex matrices (JAX's convention,
docs/complex.md: no conjugation):

* ``x = solve_sylvester(a, b, q)`` solves ``a x + x b = q``. Differentiating the
  equation, ``a dx + dx b = dq - da x - x db``: one more solve with the same ``a, b``.
  The adjoint solves the transposed equation ``aᵀ λ + λ bᵀ = x̄``; then ``q̄ = λ``,
  ``ā = -λ xᵀ``, ``b̄ = -xᵀ λ``.
* ``s = sqrtm(a)`` satisfies ``s s = a``, so ``s ds + ds s = da``: ``ds`` is a Sylvester
  solve with ``(s, s)``, its adjoint one with ``(sᵀ, sᵀ)``. The root is SciPy's: real
  where it is real, complex for a matrix with a negative eigenvalue or a complex matrix
  (principal: eigenvalues of ``s`` in the right half plane, ``sqrt(-x) = i sqrt(x)``);
  the Sylvester equation is uniquely solvable while no eigenvalue of ``a`` is 0.
* ``expm``'s Fréchet derivative ``L(a, e)`` is the upper right block of
  ``expm([[a, e], [0, a]])`` (the block-triangular identity, Higham's *Functions of
  Matrices*, §3.2); its adjoint is ``L(aᵀ, ē)`` (the integral form
  ``L(a, e) = ∫ exp(t a) e exp((1-t) a) dt`` transposes term by term).

SciPy computes the values (imported when first used).

>>> import numpy as np
>>> float(expm(np.array([[0.0, 1.0], [0.0, 0.0]]))[0, 1])
1.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import DiffkitError, Primitive, shape
from .linalg import _mT, _refuse, matmul
from .reductions import sum_to
from .structure import align, concatenate, getitem


def _stacked(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """``fn`` of single matrices applied to each trailing matrix of its arguments."""
    def run(*xs: Any) -> np.ndarray:
        xs = [np.asarray(x, dtype=np.result_type(x, float)) for x in xs]
        lead = np.broadcast_shapes(*(x.shape[:-2] for x in xs))
        if not lead:
            return fn(*xs)
        xs = [np.broadcast_to(x, lead + x.shape[-2:]) for x in xs]
        outs = [fn(*(x[i] for x in xs)) for i in np.ndindex(lead)]
        return np.stack(outs).reshape(lead + outs[0].shape)
    return run


def _scipy_linalg() -> Any:
    try:
        import scipy.linalg
    except ImportError:
        raise DiffkitError("matrix functions need SciPy, which is not installed: "
                           "pip install diffkit[scipy]") from None
    return scipy.linalg


def _peer(name: str) -> Callable[..., Any]:
    """The same function in another array library (JAX's scipy.linalg)."""
    def run(xp: Any, *args: Any) -> Any:
        if not xp.__name__.startswith("jax"):
            raise DiffkitError(f"{name} has no array-API form for {xp.__name__}")
        import jax.scipy.linalg as mod  # (deferred: a peer library, optional)
        return getattr(mod, name)(*args)
    return run


def _sylvester_one(a: np.ndarray, b: np.ndarray, q: np.ndarray) -> np.ndarray:
    return _scipy_linalg().solve_sylvester(a, b, q)


solve_sylvester = Primitive(  # a x + x b = q
    "solve_sylvester", _stacked(_sylvester_one),
    jvp=(lambda a_dot, x, a, b, q: solve_sylvester(a, b, -matmul(a_dot, x)),
         lambda b_dot, x, a, b, q: solve_sylvester(a, b, -matmul(x, b_dot)),
         lambda q_dot, x, a, b, q: solve_sylvester(a, b, q_dot)),
    vjp=(lambda x_bar, x, a, b, q: sum_to(-matmul(_adjoint(x_bar, a, b), _mT(x)), shape(a)),
         lambda x_bar, x, a, b, q: sum_to(-matmul(_mT(x), _adjoint(x_bar, a, b)), shape(b)),
         lambda x_bar, x, a, b, q: sum_to(_adjoint(x_bar, a, b), shape(q))),
    saves=("x a b", "x a b", "a b"),
    batch=lambda args, batched, size: solve_sylvester(*align(args, batched, size)),
    sympy=_refuse("solve_sylvester", " (use solve on the Kronecker form)"),
    array_api=_peer("solve_sylvester"),
    complex=True,
)


def _adjoint(x_bar: Any, a: Any, b: Any) -> Any:
    """λ with aᵀ λ + λ bᵀ = x̄: the adjoint of the Sylvester solve."""
    return solve_sylvester(_mT(a), _mT(b), x_bar)


def complex_root(a: Any) -> bool:
    """Whether SciPy's root of the real matrix (or stack) ``a`` is complex: a negative real
    eigenvalue. (False for a complex ``a``, whose root is complex anyway, and for a traced
    graph's abstract value.) ``diffkit.scipy.linalg.sqrtm`` then passes ``a + 0j``: the
    primitive's output dtype follows its input's, as a compiled graph needs."""
    if getattr(a, "abstract", False) or np.iscomplexobj(a):
        return False
    w = np.linalg.eigvals(np.asarray(a, dtype=float))
    return bool(np.any((w.imag == 0) & (w.real < 0)))


def _sqrtm_one(a: np.ndarray) -> np.ndarray:
    """SciPy's principal root (complex for a complex ``a``); a root that does not square
    back (a singular matrix with no root, e.g. [[0, 1], [0, 0]]) is refused, and so is a
    complex root of a real ``a`` (a graph traced for a real root)."""
    s = _scipy_linalg().sqrtm(a)
    if not np.allclose(s @ s, a, rtol=1e-8, atol=1e-10 * np.abs(a).max(initial=1.0)):
        raise DiffkitError("sqrtm: this matrix has no square root (a singular one whose "
                           "zero eigenvalue is defective); give a matrix with no zero "
                           "eigenvalue, where the root and its derivative exist")
    if np.iscomplexobj(s) and not np.iscomplexobj(a):
        raise DiffkitError("sqrtm: this real matrix has a negative eigenvalue, so its root is "
                           "complex, but the call was traced for a real root (a compiled "
                           "graph fixes dtypes); pass a complex matrix, sqrtm(a + 0j)")
    return s


sqrtm = Primitive(  # s s = a, s the principal root
    "sqrtm", _stacked(_sqrtm_one),
    jvp=(lambda a_dot, s, a: solve_sylvester(s, s, a_dot),),
    vjp=(lambda s_bar, s, a: solve_sylvester(_mT(s), _mT(s), s_bar),),
    saves=("s",),
    sympy=_refuse("sqrtm"),
    array_api=_peer("sqrtm"),  # (JAX's root is complex always: its values only),
    complex=True,
)


def _expm(a: np.ndarray) -> np.ndarray:
    return _scipy_linalg().expm(np.asarray(a, dtype=np.result_type(a, float)))


def frechet(a: Any, e: Any) -> Any:
    """The Fréchet derivative of ``expm`` at ``a`` in the direction ``e``: the upper right
    block of ``expm([[a, e], [0, a]])``."""
    n = shape(a)[-1]
    lead = np.broadcast_shapes(shape(a)[:-2], shape(e)[:-2])
    a_full = a if shape(a)[:-2] == lead else a + np.zeros(lead + (n, n))
    e_full = e if shape(e)[:-2] == lead else e + np.zeros(lead + (n, n))
    top = concatenate(a_full, e_full, axis=-1)
    bottom = concatenate(np.zeros(lead + (n, n)), a_full, axis=-1)
    block = expm(concatenate(top, bottom, axis=-2))
    return getitem(block, idx=(Ellipsis, slice(0, n), slice(n, None)))


expm = Primitive(
    "expm", _expm,
    jvp=(lambda a_dot, y, a: frechet(a, a_dot),),
    vjp=(lambda y_bar, y, a: frechet(_mT(a), y_bar),),
    saves=("a",),
    sympy=_refuse("expm", " here (SymPy's exp of a matrix needs its Jordan form)"),
    array_api=_peer("expm"),
    complex=True,
)
