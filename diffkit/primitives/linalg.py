"""Linear algebra: the matrix product ``z = x @ y``, and inv, det, log|det|, solve,
cholesky and eigh of numpy.linalg (their conditions: see :mod:`diffkit.nplib.linalg`).

The matrix product works on operands of at least two dimensions:
``diffkit.numpy.matmul`` promotes vectors to matrices before calling it, so the rules
need only the matrix case; leading (batch) axes broadcast as in numpy, and the
interpreters sum the adjoint back over them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import NotApplicable, Primitive, ndim, shape
from .contraction import einsum
from .reductions import sum_to
from .elementwise import where
from .structure import align, concatenate, getitem, reshape, transpose


def _mT(a: Any) -> Any:
    """Swap the last two axes."""
    n = ndim(a)
    return transpose(a, axes=tuple(range(n - 2)) + (n - 1, n - 2))


def _matmul(x: Any, y: Any) -> Any:
    """``x @ y``; a stack against one matrix is done as ONE matrix product (numpy would
    loop over the stack): this is what makes batched forward-mode Jacobians fast."""
    if type(x) is np.ndarray and type(y) is np.ndarray:
        if x.ndim > 2 and y.ndim == 2:
            rows = int(np.prod(x.shape[:-1]))  # (not -1: a zero-size stack has no inferable size)
            return (x.reshape(rows, x.shape[-1]) @ y).reshape(x.shape[:-1] + y.shape[-1:])
        if x.ndim == 2 and y.ndim > 2:
            ys = np.moveaxis(y, -2, 0)  # (k, ..., m)
            out = x @ ys.reshape(ys.shape[0], int(np.prod(ys.shape[1:])))
            return np.moveaxis(out.reshape((x.shape[0],) + ys.shape[1:]), 0, -2)
    return x @ y


matmul = Primitive(
    "matmul", _matmul,
    jvp=(lambda x_dot, z, x, y: matmul(x_dot, y), lambda y_dot, z, x, y: matmul(x, y_dot)),
    vjp=(lambda z_bar, z, x, y: matmul(z_bar, _mT(y)), lambda z_bar, z, x, y: matmul(_mT(x), z_bar)),
    saves=("y", "x"), broadcasts=True,  # symbolic: numpy matmul works on object arrays of expressions
)


# --------------------------------------------------------------------------- numpy.linalg
# All act on the last two axes (stacks of matrices, so the default batching rule fits).
# cholesky and eigh read only the lower triangle of their argument, as numpy does: their
# rules first form the symmetric matrix that triangle stands for (``_from_lower``), so
# the derivative with respect to the upper entries is zero, matching finite differences
# of numpy; JAX instead symmetrizes the tangent (equal on symmetric inputs and directions).


def _per_matrix(build: Any) -> Any:
    """A sympy translation from ``build(sp, *matrices)``, applied to each trailing matrix
    of object arrays (leading axes broadcast)."""
    def translate(sp: Any, *xs: Any) -> Any:
        xs = [np.asarray(x, dtype=object) for x in xs]
        lead = np.broadcast_shapes(*(x.shape[:-2] for x in xs))
        stacks = [np.broadcast_to(x, lead + x.shape[-2:]).reshape((-1,) + x.shape[-2:]) for x in xs]
        outs = [build(sp, *(sp.Matrix(m[k]) for m in stacks)) for k in range(len(stacks[0]))]
        outs = [np.array(o.tolist(), dtype=object) if isinstance(o, sp.MatrixBase) else o
                for o in outs]
        out = np.empty((len(outs),) + np.shape(outs[0]), dtype=object)
        for k, o in enumerate(outs):
            out[k] = o
        return out.reshape(lead + np.shape(outs[0]))
    return translate


def _refuse(name: str, why: str = "") -> Any:
    """The sympy translation of a function with no closed form: a clear error (a "n/a" cell)."""
    def refuse(sp: Any, *xs: Any) -> Any:
        raise NotApplicable(f"the symbolic backend needs a closed form, but {name} has no "
                           f"closed form here{why}; use another backend")
    return refuse


def _diag_embed(v: Any) -> Any:
    """Vectors (..., n) to diagonal matrices (..., n, n)."""
    n = ndim(v)
    return einsum(v, np.eye(shape(v)[-1]), subs="...i,ij->...ij".replace("...", "ZYXW"[:n - 1]))


inv = Primitive(
    "inv", np.linalg.inv,
    jvp=(lambda x_dot, y, x: -matmul(y, matmul(x_dot, y)),),
    vjp=(lambda y_bar, y, x: -matmul(_mT(y), matmul(y_bar, _mT(y))),),
    saves=("y",),
    sympy=_per_matrix(lambda sp, m: m.inv()),
    array_api=lambda xp, x: xp.linalg.inv(x),
)


def _scale(c: Any, m: Any) -> Any:
    """Scalars (...) times matrices (..., n, m)."""
    return reshape(c, shape=shape(c) + (1, 1)) * m


det = Primitive(  # d det(x) = det(x) tr(x^-1 x_dot); x must be invertible
    "det", np.linalg.det,
    jvp=(lambda x_dot, y, x: y * _trace(matmul(inv(x), x_dot)),),
    vjp=(lambda y_bar, y, x: _scale(y_bar * y, _mT(inv(x))),),
    saves=("y x",),
    sympy=_per_matrix(lambda sp, m: m.det()),
    array_api=lambda xp, x: xp.linalg.det(x),
)
logabsdet = Primitive(  # log |det x|, the second half of numpy's slogdet
    "logabsdet", lambda x: np.linalg.slogdet(x)[1],
    jvp=(lambda x_dot, y, x: _trace(matmul(inv(x), x_dot)),),
    vjp=(lambda y_bar, y, x: _scale(y_bar, _mT(inv(x))),),
    saves=("x",),
    sympy=_per_matrix(lambda sp, m: sp.log(sp.Abs(m.det()))),
    array_api=lambda xp, x: xp.linalg.slogdet(x)[1],
)


def _trace(m: Any) -> Any:
    lead = "ZYXW"[:ndim(m) - 2]
    return einsum(m, subs=f"{lead}ii->{lead}")


solve = Primitive(  # a y = b, b a stack of matrices (diffkit.numpy promotes a vector b)
    "solve", np.linalg.solve,
    jvp=(lambda a_dot, y, a, b: -solve(a, matmul(a_dot, y)),
         lambda b_dot, y, a, b: solve(a, b_dot)),
    vjp=(lambda y_bar, y, a, b: sum_to(-matmul(solve(_mT(a), y_bar), _mT(y)), shape(a)),
         lambda y_bar, y, a, b: sum_to(solve(_mT(a), y_bar), shape(b))),  # (leading axes broadcast)
    saves=("y a", "a b"),
    batch=lambda args, batched, size: solve(*align(args, batched, size)),
    sympy=_per_matrix(lambda sp, a, b: a.LUsolve(b)),
    array_api=lambda xp, a, b: xp.linalg.solve(a, b),
)


def _lower(n: int, diagonal: float) -> np.ndarray:
    """1 below the diagonal, ``diagonal`` on it, 0 above."""
    return np.tril(np.ones((n, n)), -1) + diagonal * np.eye(n)


def _from_lower(x_dot: Any) -> Any:
    """The symmetric matrix that the lower triangle of ``x_dot`` stands for."""
    n = shape(x_dot)[-1]
    return x_dot * _lower(n, 1.0) + _mT(x_dot * _lower(n, 0.0))


def _to_lower(g: Any) -> Any:
    """The adjoint of :func:`_from_lower`: the upper triangle folded onto the lower."""
    n = shape(g)[-1]
    return g * _lower(n, 1.0) + _mT(g) * _lower(n, 0.0)


def _cholesky_jvp(x_dot: Any, y: Any, x: Any) -> Any:
    l_inv = inv(y)
    return matmul(y, _lower(shape(y)[-1], 0.5) * matmul(l_inv, matmul(_from_lower(x_dot), _mT(l_inv))))


def _cholesky_vjp(y_bar: Any, y: Any, x: Any) -> Any:
    l_inv = inv(y)
    middle = _lower(shape(y)[-1], 0.5) * matmul(_mT(y), y_bar)
    return _to_lower(matmul(_mT(l_inv), matmul(middle, l_inv)))


cholesky = Primitive(  # x = y y^T, y lower triangular; x symmetric positive definite
    "cholesky", np.linalg.cholesky,
    jvp=(_cholesky_jvp,), vjp=(_cholesky_vjp,), saves=("y",),
    sympy=_per_matrix(lambda sp, m: sp.Matrix(m.rows, m.cols, lambda i, j: m[max(i, j), min(i, j)])
                      .cholesky(hermitian=False)),
    array_api=lambda xp, x: xp.linalg.cholesky(x),
)


def _eigh(x: Any) -> np.ndarray:
    w, v = np.linalg.eigh(x)
    return np.concatenate([w[..., None, :], v], axis=-2)


def _eig_parts(y: Any) -> tuple[Any, Any, Any]:
    """Eigenvalues (..., n), eigenvectors (..., n, n) and F_ij = 1 / (w_j - w_i), 0 on the
    diagonal, from eigh's packed output."""
    w = getitem(y, idx=(Ellipsis, 0, slice(None)))
    v = getitem(y, idx=(Ellipsis, slice(1, None), slice(None)))
    n = shape(w)[-1]
    gaps = reshape(w, shape=shape(w)[:-1] + (1, n)) - reshape(w, shape=shape(w)[:-1] + (n, 1))
    diagonal = np.eye(n, dtype=bool)
    return w, v, where(0.0, 1.0 / where(1.0, gaps, cond=diagonal), cond=diagonal)


def _eigh_jvp(x_dot: Any, y: Any, x: Any) -> Any:
    w, v, f = _eig_parts(y)
    rotated = matmul(_mT(v), matmul(_from_lower(x_dot), v))
    w_dot = einsum(rotated, subs="...ii->...i".replace("...", "ZYXW"[:ndim(rotated) - 2]))
    v_dot = matmul(v, f * rotated)
    return concatenate(reshape(w_dot, shape=shape(w_dot)[:-1] + (1, shape(w_dot)[-1])), v_dot,
                       axis=-2)


def _eigh_vjp(y_bar: Any, y: Any, x: Any) -> Any:
    w, v, f = _eig_parts(y)
    w_bar = getitem(y_bar, idx=(Ellipsis, 0, slice(None)))
    v_bar = getitem(y_bar, idx=(Ellipsis, slice(1, None), slice(None)))
    middle = _diag_embed(w_bar) + f * matmul(_mT(v), v_bar)
    return _to_lower(matmul(v, matmul(middle, _mT(v))))


eigh = Primitive(  # packed: row 0 the eigenvalues (ascending), rows 1.. the eigenvectors
    "eigh", _eigh, jvp=(_eigh_jvp,), vjp=(_eigh_vjp,), saves=("y",),
    sympy=_refuse("eigh", " (eigenvalues are roots of a polynomial)"),
    array_api=lambda xp, x: xp.concat([xp.linalg.eigh(x)[0][..., None, :], xp.linalg.eigh(x)[1]],
                                      axis=-2),
)

